// A `claude` started in a terminal, the ordinary way, answered from AskBridge in a browser (issue
// 22), on the server the browser tests run: the real Claude Code CLI runs interactively in tmux against a mock of
// the Messages API, with a HOME of its own, after `askbridge connect` to a server of the test's
// own. Its session shows in the page's session list; opened with a click, its question (and its
// permission prompt) is a card, and a click on the card answers the terminal: the terminal shows
// the answer and the model gets it. tests/terminal_bridge.rs checks the same through the API.
import { expect, type Page } from "@playwright/test";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ASKBRIDGE, card, claudeEnv, OwnMock, type OwnServer, ownServerTest, waitForHydration } from "./helpers";

const test = ownServerTest;
test.use({ serverArgs: ["--agent", "scripted"] });
// A cold start of the CLI on a busy 2-core machine takes 20-30 s; the whole loop, a few more.
test.setTimeout(180_000);

const root = path.resolve(__dirname, "../..");
const CLAUDE = path.join(root, "node_modules/.bin/claude");
/** Its last 20 characters are approved in `.claude.json`, or the UI stops at "Detected a custom API key". */
const API_KEY = "askbridge-terminal-test-key-not-a-secret-0123456789";
/** Waiting for the terminal's UI to be ready for input (the CLI's cold start). */
const UI_START = 90_000;
/** Waiting for one step: a screen, a card, the model's next request. */
const STEP = 30_000;
const AUTH = "Which auth method should we use?";

/**
 * The CLI's HOME (a temporary folder: `.claude/` its config folder, `project/` the trusted folder
 * it starts in), started unattended in manual mode (docs/claude-terminal.md §9).
 */
function claudeHome(mockURL: string): { home: string; project: string; env: Record<string, string> } {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "askbridge-e2e-terminal-"));
  const env = {
    ...claudeEnv(home, mockURL),
    PATH: "/usr/local/bin:/usr/bin:/bin",
    TERM: "xterm-256color",
    LANG: "C.UTF-8",
    ANTHROPIC_API_KEY: API_KEY,
    // The machine runs tests as root.
    IS_SANDBOX: "1",
    // The hook takes a server slower than 150 ms for one that is down, and the terminal asks by
    // itself: on two cores busy with the other workers a live server has been that slow.
    ASKBRIDGE_HOOK_REACH_WITHIN: "10s",
  };
  const project = path.join(home, "project");
  const config = env.CLAUDE_CONFIG_DIR;
  fs.writeFileSync(
    path.join(config, ".claude.json"),
    JSON.stringify({
      hasCompletedOnboarding: true,
      theme: "dark",
      hasSeenAutoDefaultNudge: true,
      customApiKeyResponses: { approved: [API_KEY.slice(-20)], rejected: [] },
      projects: { [project]: { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true } },
    }),
  );
  // This CLI's own default mode is "auto", which lets a classifier decide many prompts.
  fs.writeFileSync(path.join(config, "settings.json"), JSON.stringify({ permissions: { defaultMode: "default" } }));
  return { home, project, env };
}

/** `askbridge connect` to `serverURL`, run as a person runs it in that HOME; what it said. */
function connect(home: string, env: Record<string, string>, serverURL: string, token: string): string {
  const tokenFile = path.join(home, "askbridge-token");
  fs.writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
  return run(ASKBRIDGE, ["connect", "--url", serverURL, "--token-file", tokenFile], env);
}

/** One `claude` in the interactive UI, in a tmux server of its own (a private socket). */
class Terminal {
  private constructor(
    private readonly socket: string,
    /** The pane's process: `claude` itself (`env` execs it). */
    private readonly claudePid: number,
    private readonly socketPath: string,
    private readonly killServer: () => void,
  ) {}

  static start(home: string, folder: string, env: Record<string, string>): Terminal {
    const socket = `askbridge-e2e-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
    // A config of its own: the runner's ~/.tmux.conf must not change the pane.
    const conf = path.join(home, "tmux.conf");
    fs.writeFileSync(conf, "set -g remain-on-exit on\nset -g history-limit 10000\nset -g status off\n");
    const command = ["env", "-i", ...Object.entries(env).map(([k, v]) => `${k}=${v}`), CLAUDE];
    const killServer = () => {
      try {
        run("tmux", ["-L", socket, "kill-server"]);
      } catch {
        // already gone
      }
    };
    // A worker that ends without the test's `finally` (a timeout, say) leaves no tmux behind.
    process.once("exit", killServer);
    try {
      run("tmux", ["-L", socket, "-f", conf, "new-session", "-d", "-s", "main", "-x", "160", "-y", "50",
        "-c", folder, ...command]);
      const shown = run("tmux", ["-L", socket, "display-message", "-p", "-t", "main", "#{pane_pid} #{socket_path}"]);
      const [pid, socketPath] = shown.trim().split(" ");
      return new Terminal(socket, Number(pid), socketPath, killServer);
    } catch (error) {
      killServer();
      process.removeListener("exit", killServer);
      throw error;
    }
  }

  private tmux(...args: string[]): string {
    return run("tmux", ["-L", this.socket, ...args]);
  }

  /** The visible screen, as text. */
  screen(): string {
    return this.tmux("capture-pane", "-p", "-t", "main");
  }

  /** Types `text` and presses Enter. */
  say(text: string) {
    this.tmux("send-keys", "-t", "main", "-l", text);
    this.tmux("send-keys", "-t", "main", "Enter");
  }

  /** Waits until `text` is on the screen. */
  async waitFor(text: string, timeout = STEP) {
    await expect
      .poll(() => this.screen(), { message: `the terminal shows ${JSON.stringify(text)}`, timeout, intervals: [100] })
      .toContain(text);
  }

  /** Kills the CLI at once (SIGKILL): it says nothing on the way out, no `SessionEnd` hook runs. */
  crash() {
    process.kill(this.claudePid, "SIGKILL");
  }

  /**
   * Ends the tmux server, and with it the CLI (SIGHUP), and waits until the CLI has exited: it
   * writes in its HOME on the way out. A CLI still there after 10 s is killed.
   */
  async kill() {
    this.killServer();
    process.removeListener("exit", this.killServer);
    const deadline = Date.now() + 10_000;
    while (isAlive(this.claudePid) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (isAlive(this.claudePid)) {
      try {
        process.kill(this.claudePid, "SIGKILL");
      } catch {
        // it exited meanwhile
      }
    }
    fs.rmSync(this.socketPath, { force: true });
  }
}

/** Runs `file args…`; its stdout (stderr goes in the error when it fails). */
function run(file: string, args: string[], env?: Record<string, string>): string {
  return execFileSync(file, args, { env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

/** Whether `pid` runs (a zombie, exited and not yet reaped, does not). */
function isAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/** The `tool_result` blocks the model was sent, first of each id: [id, text, is_error]. */
async function toolResults(mock: OwnMock): Promise<[string, string, boolean][]> {
  const seen = new Map<string, [string, string, boolean]>();
  for (const request of await mock.requests()) {
    for (const message of request.messages ?? []) {
      if (!Array.isArray(message.content)) continue;
      for (const block of message.content) {
        if (block.type !== "tool_result" || seen.has(block.tool_use_id)) continue;
        const text = Array.isArray(block.content)
          ? block.content.filter((p: any) => p.type === "text").map((p: any) => p.text).join("\n")
          : String(block.content ?? "");
        seen.set(block.tool_use_id, [block.tool_use_id, text, block.is_error === true]);
      }
    }
  }
  return [...seen.values()];
}

/** The terminal's session in the page's session list (`project · terminal on <host>`). */
function terminalSession(page: Page) {
  return page
    .getByRole("navigation", { name: "Session list" })
    .getByRole("link", { name: `project · terminal on ${os.hostname()}` });
}

/**
 * The mock, the CLI's HOME, `askbridge connect` to the test's server, the page open on it, and
 * `claude` in tmux, ready for input; `body` runs with them, and everything is ended after it.
 */
async function withTerminal(
  page: Page,
  server: OwnServer,
  script: unknown[],
  body: (t: { terminal: Terminal; mock: OwnMock; project: string }) => Promise<void>,
) {
  const mock = await OwnMock.start(script);
  const { home, project, env } = claudeHome(mock.url);
  let terminal: Terminal | null = null;
  try {
    expect(connect(home, env, server.url, server.token)).toContain("answers and takes the token");
    await page.goto("/");
    await waitForHydration(page);
    terminal = Terminal.start(home, project, env);
    await terminal.waitFor("manual mode on", UI_START);
    await body({ terminal, mock, project });
  } catch (error) {
    let screen = "(no terminal)";
    try {
      screen = terminal?.screen() ?? screen;
    } catch (cause) {
      screen = `(could not be read: ${cause})`;
    }
    console.log(`The terminal showed:\n${screen}\nThe server logged:\n${server.log()}`);
    throw error;
  } finally {
    await terminal?.kill();
    await mock.kill();
    fs.rmSync(home, { recursive: true, force: true, maxRetries: 5 });
  }
}

test("a question asked in the terminal is a card in the browser, and a click answers the terminal", async ({
  page,
  server,
}) => {
  const question = {
    question: AUTH,
    header: "Auth",
    multiSelect: false,
    options: [
      { label: "JWT", description: "Stateless tokens" },
      { label: "Sessions", description: "Server-side sessions" },
    ],
  };
  const script = [
    { content: ["Let me ask.", { type: "tool_use", id: "toolu_ask", name: "AskUserQuestion", input: { questions: [question] } }] },
    "Thanks for answering.",
  ];
  await withTerminal(page, server, script, async ({ terminal, mock, project }) => {
    terminal.say("Ask me about auth");
    await terminal.waitFor("Enter to select");

    // The terminal's session is in the list, waiting for the person; a click opens it.
    const session = terminalSession(page);
    await expect(session).toContainText("Waiting for you", { timeout: STEP });
    await session.click();
    await page.waitForURL(/\/s\/[0-9a-f]+$/);
    await expect(page.getByText(`Claude Code in a terminal on ${os.hostname()}, in ${project}, asks you:`)).toBeVisible();
    // Around the card, the conversation as the terminal's transcript has it: the prompt typed
    // there, and what the agent said before it asked.
    await expect(page.getByRole("article", { name: "You" })).toHaveText("Ask me about auth");
    await expect(page.getByRole("article", { name: "Agent" }).first()).toContainText("Let me ask.");
    const asked = card(page).getByRole("radiogroup", { name: AUTH });
    await expect(card(page)).toHaveAttribute("data-state", "pending");
    await expect(asked.getByRole("radio", { name: "JWT" })).toBeEnabled();
    // The header says what the list says: the terminal waits for the person (never "Paused").
    const status = page.getByRole("status", { name: "Session status" });
    await expect(status).toContainText("Waiting for you");
    await expect(session).toContainText("Waiting for you");
    // Its messages are typed in the terminal, in the terminal's mode: no box here, no mode switch.
    await expect(page.getByRole("note")).toContainText("This conversation runs in a terminal: type your messages there.");
    await expect(page.getByRole("textbox", { name: "Message" })).toBeHidden();
    await expect(page.getByRole("combobox", { name: "Permission mode" })).toHaveCount(0);

    // One click answers it: the terminal's own question closes with that answer, and the model
    // reads it as Claude Code's own.
    await asked.getByRole("radio", { name: "Sessions" }).click();
    await expect(card(page)).toHaveAttribute("data-state", "answered");
    await expect(asked.getByRole("radio", { name: "Sessions" })).toBeChecked();
    await terminal.waitFor("Thanks for answering");
    expect(terminal.screen()).toContain(`${AUTH} → Sessions`);
    const answered = `Your questions have been answered: "${AUTH}"="Sessions". You can now continue with these answers in mind.`;
    await expect.poll(() => toolResults(mock), { timeout: STEP }).toEqual([["toolu_ask", answered, false]]);
    // And what it said once it had the answer.
    await expect(page.getByRole("article", { name: "Agent" }).last()).toContainText("Thanks for answering.", { timeout: STEP });
    // Done in the terminal: the list no longer says it waits.
    await expect(session).not.toContainText("Waiting for you", { timeout: STEP });

    // Killed without a word (no hook runs): the session ends within seconds, here and in the list.
    terminal.crash();
    await expect(status).toContainText("Ended", { timeout: 10_000 });
    await expect(session).toContainText("Ended");
  });
});

test("Bash commands the terminal asks permission for are decided with clicks in the browser: one allowed runs, one denied with a message does not", async ({
  page,
  server,
}) => {
  const bash = (id: string, file: string) => ({
    type: "tool_use",
    id,
    name: "Bash",
    input: { command: `touch ${file}`, description: `Create ${file}` },
  });
  const script = [
    { content: ["Creating x.", bash("toolu_x", "x")] },
    { content: ["Creating y.", bash("toolu_y", "y")] },
    "All done.",
  ];
  const message = "Not y, please: x is enough.";
  await withTerminal(page, server, script, async ({ terminal, mock, project }) => {
    terminal.say("Make two files");
    await terminal.waitFor("Do you want to proceed?");

    const session = terminalSession(page);
    await expect(session).toContainText("Waiting for you", { timeout: STEP });
    await session.click();
    await page.waitForURL(/\/s\/[0-9a-f]+$/);
    const commands = page.getByRole("group", { name: "The agent wants to run a command" });
    const first = commands.filter({ hasText: "touch x" });
    await expect(first).toHaveAttribute("data-state", "pending");
    await first.getByRole("button", { name: "Allow once" }).click();
    await expect(first).toHaveAttribute("data-state", "allowed");

    const second = commands.filter({ hasText: "touch y" });
    await expect(second).toHaveAttribute("data-state", "pending", { timeout: STEP });
    await second.getByRole("textbox", { name: "Message for the agent" }).fill(message);
    await second.getByRole("button", { name: "Deny" }).click();
    await expect(second).toHaveAttribute("data-state", "denied");
    await expect(second).toContainText(`You denied this. Your message: “${message}”`);

    await terminal.waitFor("All done");
    const screen = terminal.screen();
    expect(screen).toContain("Allowed by PermissionRequest hook");
    expect(screen).toContain("Denied by PermissionRequest hook");
    await expect
      .poll(() => toolResults(mock), { timeout: STEP })
      .toEqual([
        ["toolu_x", "(Bash completed with no output)", false],
        ["toolu_y", message, true],
      ]);
    expect(fs.existsSync(path.join(project, "x"))).toBe(true);
    expect(fs.existsSync(path.join(project, "y"))).toBe(false);
  });
});
