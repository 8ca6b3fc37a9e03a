// An agent over the Agent Client Protocol (issue 35): Claude's adapter (the pinned
// @agentclientprotocol/claude-agent-acp, with the Claude binary its SDK brings) run with
// `--acp`, its model the mock Messages API. Its AskUserQuestion arrives as a form elicitation and is
// the very card of Claude Code's own; its permission requests are the approval card.
import { expect, test, type Page } from "@playwright/test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { OwnMock, ScriptedMock, OwnServer, agentReplies, card, claudeEnv, waitForHydration } from "./helpers";

const adapter = path.resolve(__dirname, "../../node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js");
const auth = "Which auth method should we use?";
const features = "Which features?";

const authQuestion = {
  question: auth, header: "Auth", multiSelect: false,
  options: [{ label: "JWT", description: "Stateless tokens" }, { label: "Sessions", description: "Server-side" }],
};
const featuresQuestion = {
  question: features, header: "Features", multiSelect: true,
  options: [{ label: "Dark mode", description: "Theme" }, { label: "i18n", description: "Languages" }],
};
const ask = (questions: object[]) => ({
  content: [{ type: "tool_use", id: "toolu_acp", name: "AskUserQuestion", input: { questions } }],
});

/** A server whose default agent is Claude's ACP adapter, talking to `mock`. */
async function acpServer(mock: OwnMock, home: string): Promise<OwnServer> {
  return OwnServer.start(
    ["--acp", `claude-acp=node ${adapter}`, "--agent", "claude-acp", "--workdir", path.join(home, "project")],
    // The adapter's SDK starts Claude in a mode that root may use only in a sandbox; tests run as root.
    { ...claudeEnv(home, mock.url), IS_SANDBOX: "1" },
  );
}

/**
 * Ends the hosts of `server`'s ACP agents, as a reboot would: each host leads a process group with
 * its agent in it, written down in `<data>/acp/<session>.group` ("boot pid start host").
 */
function endHosts(server: OwnServer): void {
  const dir = path.join(server.dataDir, "acp");
  if (!fs.existsSync(dir)) return;
  for (const file of fs.readdirSync(dir).filter((name) => name.endsWith(".group"))) {
    const [, pid, , kind] = fs.readFileSync(path.join(dir, file), "utf8").trim().split(" ");
    expect(kind).toBe("host");
    try {
      process.kill(-Number(pid), "SIGKILL");
    } catch {
      // ended already
    }
  }
}

/** Ends `server` and its agents' hosts, which outlive it by design (a test's teardown). */
async function endAll(server: OwnServer): Promise<void> {
  endHosts(server);
  await server.kill();
}

/** Opens `server`'s page and sends `text`, the session's first message. */
async function sendFirst(page: Page, server: OwnServer, text: string): Promise<void> {
  await page.goto(server.url);
  await waitForHydration(page);
  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill(text);
  await box.press("Enter");
}

/** What the model was sent as the result of the question's call. */
async function toolResult(mock: OwnMock): Promise<string> {
  for (const request of await mock.requests()) {
    for (const message of request.messages ?? []) {
      for (const block of Array.isArray(message.content) ? message.content : []) {
        if (block.type === "tool_result" && block.tool_use_id === "toolu_acp") return JSON.stringify(block.content);
      }
    }
  }
  return "";
}

test.describe("an ACP agent", () => {
  let home: string;
  test.beforeEach(() => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), "askbridge-e2e-acp-"));
  });
  // An agent that was ending as its host went may still write in its HOME for a moment.
  test.afterEach(() => fs.rmSync(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 }));

  test("Claude's question over ACP is answered with one click and the model reads the answer", async ({ page }) => {
    const mock = await OwnMock.start([ask([authQuestion]), "JWT it is."], "Mock title");
    const server = await acpServer(mock, home);
    try {
      await sendFirst(page, server, "Set up auth; ask me which.");
      const question = card(page).getByRole("radiogroup", { name: auth });
      await expect(question.getByRole("radio", { name: "JWT" })).toBeEnabled({ timeout: 60_000 });
      await question.getByRole("radio", { name: "JWT" }).click();
      await expect(card(page)).toHaveAttribute("data-state", "answered");
      await expect(agentReplies(page).last()).toContainText("JWT it is.", { timeout: 30_000 });
      expect(await toolResult(mock)).toContain('\\"Which auth method should we use?\\"=\\"JWT\\"');
      await expect(page.getByText("(ACP)")).toBeVisible();
    } finally {
      await endAll(server);
      await mock.kill();
    }
  });

  test("a two-question form over ACP takes a multi-select and an Other text", async ({ page }) => {
    const mock = await OwnMock.start([ask([authQuestion, featuresQuestion]), "Noted."], "Mock title");
    const server = await acpServer(mock, home);
    try {
      await sendFirst(page, server, "Plan the app; ask me.");
      const featureGroup = card(page).getByRole("group", { name: features });
      await expect(featureGroup.getByRole("checkbox", { name: "Dark mode" })).toBeEnabled({ timeout: 60_000 });
      await featureGroup.getByRole("checkbox", { name: "Dark mode" }).click();
      await featureGroup.getByRole("checkbox", { name: "Other" }).click();
      await featureGroup.getByRole("textbox", { name: "Other answer" }).fill("Offline support");
      await card(page).getByRole("radiogroup", { name: auth }).getByRole("radio", { name: "Sessions" }).click();
      await card(page).getByRole("button", { name: "Submit" }).click();
      await expect(card(page)).toHaveAttribute("data-state", "answered");
      await expect(agentReplies(page).last()).toContainText("Noted.", { timeout: 30_000 });
      const result = await toolResult(mock);
      expect(result).toContain('\\"Which auth method should we use?\\"=\\"Sessions\\"');
      expect(result).toContain('\\"Which features?\\"=\\"Dark mode, Offline support\\"');
    } finally {
      await endAll(server);
      await mock.kill();
    }
  });

  test("Stop while an ACP question waits cancels the card and the turn", async ({ page }) => {
    const mock = await OwnMock.start([ask([authQuestion])], "Mock title");
    const server = await acpServer(mock, home);
    try {
      await sendFirst(page, server, "Set up auth; ask me which.");
      await expect(card(page).getByRole("radio", { name: "JWT" })).toBeEnabled({ timeout: 60_000 });
      await page.getByRole("button", { name: "Stop" }).click();
      await expect(card(page)).toHaveAttribute("data-state", "cancelled");
      await expect(page.getByRole("button", { name: "Stop" })).toHaveCount(0);
      // The model was never told an answer.
      expect(await toolResult(mock)).not.toContain("=\\\"");
    } finally {
      await endAll(server);
      await mock.kill();
    }
  });

  // The agent runs under AskBridge's host, which outlives the server: killed while the question
  // waits, the restarted server shows the card waiting still, and its answer reaches the agent,
  // which goes on (its prompt was never interrupted).
  test("a question waits through a server crash, and its answer reaches the agent", async ({ page }) => {
    const mock = await OwnMock.start([ask([authQuestion]), "JWT it is."], "Mock title");
    const server = await acpServer(mock, home);
    try {
      await sendFirst(page, server, "Set up auth; ask me which.");
      const question = card(page).getByRole("radiogroup", { name: auth });
      await expect(question.getByRole("radio", { name: "JWT" })).toBeEnabled({ timeout: 60_000 });

      await server.crash();
      await server.start();
      await page.reload();
      await waitForHydration(page);
      await expect(card(page)).toHaveAttribute("data-state", "pending");
      // Paused for the person, not cut short: nothing of the turn was lost.
      await expect(page.getByRole("status", { name: "Session status" })).toContainText("Paused");
      await expect(page.getByText("cut short")).toHaveCount(0);
      await question.getByRole("radio", { name: "JWT" }).click();
      await expect(card(page)).toHaveAttribute("data-state", "answered");
      await expect(agentReplies(page).last()).toContainText("JWT it is.", { timeout: 60_000 });
      expect(await toolResult(mock)).toContain('\\"Which auth method should we use?\\"=\\"JWT\\"');
    } finally {
      await endAll(server);
      await mock.kill();
    }
  });

  // Where the host is gone too (a reboot; here its process group killed), the agent never had the
  // answer and records its call as failed. After the restart the card says so, and the person can
  // still answer: the answer goes to the agent as a message, never as the tool's result.
  test("a question whose agent is gone says so and can still be answered, as a message", async ({ page }) => {
    const mock = await OwnMock.start(
      [ask([authQuestion]), { content: [{ type: "text", text: "Thanks, JWT then." }], when: "My answer" }],
      "Mock title",
    );
    const server = await acpServer(mock, home);
    try {
      await sendFirst(page, server, "Set up auth; ask me which.");
      const question = card(page).getByRole("radiogroup", { name: auth });
      await expect(question.getByRole("radio", { name: "JWT" })).toBeEnabled({ timeout: 60_000 });

      await server.crash();
      endHosts(server);
      await server.start();
      await page.reload();
      await waitForHydration(page);
      await expect(card(page)).toHaveAttribute("data-state", "lost");
      await expect(card(page)).toContainText("You can still answer, as a message.");
      await question.getByRole("radio", { name: "JWT" }).click();
      await card(page).getByRole("button", { name: "Send my answer as a message" }).click();
      await expect(agentReplies(page).last()).toContainText("Thanks, JWT then.", { timeout: 60_000 });
      const sent = JSON.stringify((await mock.requests()).at(-1).messages);
      expect(sent).toContain('\\"Which auth method should we use?\\"=\\"JWT\\"');
      // The answer was never the tool's result.
      expect(await toolResult(mock)).not.toContain("=\\\"JWT");
    } finally {
      await endAll(server);
      await mock.kill();
    }
  });

  // Gemini CLI of the project's own install (node_modules/.bin/gemini), found by the server itself
  // and signed in with a key; its model the mock Gemini API. It asks before each shell command.
  test("a Gemini shell command allowed once runs, and the next one denied does not", async ({ page }) => {
    const touch = (file: string) => ({ call: "run_shell_command", args: { command: `touch ${file}`, description: "Make a file" } });
    const gemini = await ScriptedMock.start("mock_gemini", [touch("allowed.txt"), "Made it.", touch("denied.txt"), "Fine."]);
    const project = path.join(home, "project");
    fs.mkdirSync(path.join(home, "tmp"), { recursive: true });
    fs.mkdirSync(project, { recursive: true });
    const server = await OwnServer.start(["--agent", "gemini", "--workdir", project], {
      HOME: home,
      TMPDIR: path.join(home, "tmp"),
      GOOGLE_GEMINI_BASE_URL: gemini.url,
      GEMINI_API_KEY: "dummy",
    });
    const command = () => page.getByRole("group", { name: "The agent wants to run a command" }).last();
    try {
      await sendFirst(page, server, "Make a file.");
      await expect(command()).toContainText("touch allowed.txt", { timeout: 60_000 });
      await command().getByRole("button", { name: "Allow once" }).click();
      await expect(agentReplies(page).last()).toContainText("Made it.", { timeout: 60_000 });
      expect(fs.existsSync(path.join(project, "allowed.txt"))).toBe(true);

      const box = page.getByRole("textbox", { name: "Message" });
      await box.fill("Now another.");
      await box.press("Enter");
      await expect(command()).toContainText("touch denied.txt", { timeout: 60_000 });
      await command().getByRole("button", { name: "Deny" }).click();
      await expect(command()).toHaveAttribute("data-state", "denied");
      await expect(agentReplies(page).last()).toContainText("Fine.", { timeout: 60_000 });
      expect(fs.existsSync(path.join(project, "denied.txt"))).toBe(false);
      // The model was told the command did not run.
      const told = JSON.stringify((await gemini.requests()).at(-1).contents);
      expect(told).toContain("functionResponse");
    } finally {
      await endAll(server);
      await gemini.kill();
    }
  });
  // Codex's adapter of the project's install (node_modules/.bin/codex-acp), found by the server
  // itself and signed in with a key; its model the mock Responses API, set in its config.toml. It
  // asks questions in its Plan mode (its own `/plan`), and names its own permission modes.
  test("Codex's question in Plan mode is answered with one click, and its own modes are the Permissions choice", async ({ page }) => {
    const ask = { call: "request_user_input", args: { questions: [{ id: "auth", header: "Auth", question: auth, options: [
      { label: "JWT (Recommended)", description: "Stateless tokens" }, { label: "Sessions", description: "Server-side" }] }] } };
    const openai = await ScriptedMock.start("mock_openai", [ask, "JWT it is."]);
    const project = path.join(home, "project");
    const codexHome = path.join(home, ".codex");
    for (const dir of [path.join(home, "tmp"), project, codexHome]) fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(codexHome, "config.toml"), [
      'model = "gpt-5.5"', 'model_provider = "mock"', "", "[model_providers.mock]", 'name = "mock"',
      `base_url = "${openai.url}/v1"`, 'env_key = "OPENAI_API_KEY"', 'wire_api = "responses"', ""].join("\n"));
    const server = await OwnServer.start(["--agent", "codex", "--workdir", project], {
      HOME: home, TMPDIR: path.join(home, "tmp"), CODEX_HOME: codexHome, OPENAI_API_KEY: "dummy",
    });
    const box = page.getByRole("textbox", { name: "Message" });
    const mode = page.getByRole("combobox", { name: "Permission mode" });
    try {
      await sendFirst(page, server, "/plan");
      await expect(page.getByRole("status", { name: "Session status" })).toContainText("Ready", { timeout: 60_000 });
      // Codex's own modes, by its names, in the mode like AskBridge's "Ask before acting".
      await expect(mode).toHaveValue("read-only");
      await expect(mode.getByRole("option")).toHaveText(["Read-only", "Workspace access", "Auto review", "Full access"]);

      await box.fill("Set up auth; ask me which.");
      await box.press("Enter");
      const question = card(page).getByRole("radiogroup", { name: auth });
      await expect(question.getByRole("radio", { name: "JWT (Recommended)" })).toBeEnabled({ timeout: 60_000 });
      // Its "None of the above" is the card's Other, not an option of its own.
      await expect(question.getByRole("radio", { name: "None of the above" })).toHaveCount(0);
      await question.getByRole("radio", { name: "JWT (Recommended)" }).click();
      await expect(card(page)).toHaveAttribute("data-state", "answered");
      await expect(agentReplies(page).last()).toContainText("JWT it is.", { timeout: 30_000 });
      const outputs = (await openai.requests()).flatMap((r) => r.input).filter((item) => item.type === "function_call_output");
      expect(JSON.stringify(outputs)).toContain("JWT (Recommended)");

      // A switch reaches Codex, and the session keeps it (reloaded once the switch is answered: a
      // reload at once could cancel the request before it left).
      const switched = page.waitForResponse((response) => response.url().endsWith("/api/set_agent_mode"));
      await mode.selectOption("workspace-write");
      expect((await switched).ok()).toBe(true);
      await page.reload();
      await expect(mode).toHaveValue("workspace-write");
    } finally {
      await endAll(server);
      await openai.kill();
    }
  });
});
