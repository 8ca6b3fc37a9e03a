// Keys go only where the person put them (issue 32), with the real agents: the Claude Code CLI and
// the Messages API agent, each against a mock of the API of the test's own, which records what
// the model was sent. A sentence typed while a card appears is queued, never an answer; a message
// typed ahead reaches the model in the next request, after the answer; the message box's keys.
import { test, expect, type Page } from "@playwright/test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { agentReplies, card, claudeEnv, OwnMock, OwnServer, sessionStatus, waitForHydration, waitForTurnEnd } from "./helpers";

const claudeBin = path.resolve(__dirname, "../../node_modules/.bin/claude");
const QUESTION = "Which authentication method should we use?";
const SENTENCE = "and please keep the old login page working for now";

type Agent = "claude" | "anthropic";
const AGENTS: [Agent, string][] = [
  ["claude", "Claude Code"],
  ["anthropic", "the Messages API agent"],
];

/** The agent's server against `mock`; `files` are written into its folder first (Claude Code's). */
async function serverFor(agent: Agent, mock: OwnMock, files: Record<string, string> = {}): Promise<OwnServer> {
  if (agent === "anthropic") {
    return OwnServer.start(["--agent", "anthropic", "--base-url", mock.url, "--model", "claude-sonnet-5-5"], {
      ANTHROPIC_API_KEY: "dummy",
    });
  }
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "askbridge-e2e-keys-"));
  const env = claudeEnv(home, mock.url);
  const project = path.join(home, "project");
  for (const [file, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(project, file)), { recursive: true });
    fs.writeFileSync(path.join(project, file), content);
  }
  const server = await OwnServer.start(["--agent", "claude", "--claude-bin", claudeBin, "--workdir", project], env);
  return server.owns(home);
}

/** Runs `use` with a mock playing `replies` and the agent's server against it; both killed after. */
async function withAgent(
  agent: Agent,
  replies: unknown[],
  use: (server: OwnServer, mock: OwnMock) => Promise<void>,
  files: Record<string, string> = {},
) {
  const mock = await OwnMock.start(replies);
  try {
    const server = await serverFor(agent, mock, files);
    try {
      await use(server, mock);
    } finally {
      await server.kill();
    }
  } finally {
    await mock.kill();
  }
}

/** The model's question, after `delay_ms`: time to be typing the next thought when it comes. */
function asking(when: string, delay_ms = 1500) {
  return {
    content: [
      { type: "text", text: "One question first." },
      {
        type: "tool_use",
        name: "AskUserQuestion",
        input: {
          questions: [
            {
              question: QUESTION,
              header: "Auth",
              multiSelect: false,
              options: [
                { label: "JWT", description: "Signed tokens" },
                { label: "Sessions", description: "Server-side sessions" },
              ],
            },
          ],
        },
      },
    ],
    when,
    delay_ms,
  };
}

function messageBox(page: Page) {
  return page.getByRole("textbox", { name: "Message" });
}

function question(page: Page) {
  return card(page).getByRole("radiogroup", { name: QUESTION });
}

async function start(page: Page, server: OwnServer, text: string) {
  await page.goto(server.url);
  await waitForHydration(page);
  await messageBox(page).fill(text);
  await messageBox(page).press("Enter");
  await page.waitForURL(/\/s\/[0-9a-f]+$/);
}

/** What the person wrote in a request to the model: the text of its user messages, in order. */
function userTexts(request: any): string[] {
  return request.messages
    .filter((m: any) => m.role === "user")
    .flatMap((m: any) => (typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content))
    .map((block: any) => (block.type === "text" ? block.text : JSON.stringify(block)));
}

/** The model's requests that came from the person's turns (not the CLI's own side requests). */
async function turnRequests(mock: OwnMock): Promise<any[]> {
  return (await mock.requests()).filter((r) => Array.isArray(r.messages) && r.messages.length > 0);
}

for (const [agent, name] of AGENTS) {
  test.describe(`with ${name}`, () => {
    test("a sentence typed on while the card appears is queued, never an answer; the model gets the answer, then the sentence", async ({
      page,
    }) => {
      await withAgent(agent, [
        asking("set up auth"),
        { content: ["Sessions it is."], when: "Sessions" },
        { content: ["Keeping the old login page."], when: "old login page" },
      ], async (server, mock) => {
        await start(page, server, "set up auth");
        await expect(messageBox(page)).toBeFocused();
        await page.keyboard.type("and please keep");
        await expect(question(page)).toBeVisible({ timeout: 30_000 });
        await page.keyboard.type(" the old login page working for now");
        await page.keyboard.press("Enter");

        const queued = page.getByRole("article", { name: "Queued message" });
        await expect(queued).toContainText(SENTENCE);
        await expect(card(page)).toHaveAttribute("data-state", "pending");
        for (const option of ["JWT", "Sessions"]) {
          await expect(question(page).getByRole("radio", { name: option })).not.toBeChecked();
        }
        expect(await turnRequests(mock)).toHaveLength(1);

        await page.keyboard.press("Escape");
        await expect(question(page).getByRole("radio", { name: "JWT" })).toBeFocused();
        await page.keyboard.press("2");
        await expect(card(page)).toHaveAttribute("data-state", "answered");
        await expect(agentReplies(page).last()).toContainText("Keeping the old login page.", { timeout: 60_000 });
        await expect(queued).toHaveCount(0);
        await waitForTurnEnd(page);

        // The answer reached the model first, as the answer; the sentence after it, as a message.
        const requests = await turnRequests(mock);
        expect(requests).toHaveLength(3);
        const answer = JSON.stringify(requests[1].messages.at(-1));
        expect(answer).toContain("tool_result");
        expect(answer).toContain("Sessions");
        expect(JSON.stringify(requests[1].messages)).not.toContain("old login page");
        expect(userTexts(requests[2]).join("\n")).toContain(SENTENCE);
      });
    });

    test("0 the moment the card shows, then text and Enter: that text as Other, or nothing yet", async ({ page }) => {
      await withAgent(agent, [asking("which auth", 500), { content: ["Noted."] }, { content: ["Noted too."] }], async (server, mock) => {
        await start(page, server, "which auth");
        await expect(question(page)).toBeVisible({ timeout: 30_000 });
        await page.keyboard.press("0");
        await page.keyboard.type("OAuth 2 via Google");
        await page.keyboard.press("Enter");
        // A message queued, or the card answered (drawn so once the agent has the answer).
        const queued = page.getByRole("article", { name: "Queued message" });
        const answered = card(page).and(page.locator('[data-state="answered"]'));
        await expect(queued.or(answered).first()).toBeVisible({ timeout: 30_000 });
        if (await queued.isVisible()) {
          // The 0 went to the message box: all of it is a message, queued for after the answer.
          await expect(page.getByRole("article", { name: "Queued message" })).toContainText("0OAuth 2 via Google");
          for (const option of ["JWT", "Sessions"]) {
            await expect(question(page).getByRole("radio", { name: option })).not.toBeChecked();
          }
          expect(await turnRequests(mock)).toHaveLength(1);
        } else {
          await expect(question(page).getByRole("textbox", { name: "Other answer" })).toHaveValue("OAuth 2 via Google");
          await expect.poll(async () => JSON.stringify((await turnRequests(mock))[1]?.messages ?? [])).toContain("OAuth 2 via Google");
        }
      });
    });

    test("a message sent while the agent works is queued, shown, and is the model's next request", async ({ page }) => {
      await withAgent(agent, [
        { content: ["Working on the first task."], when: "first task", delay_ms: 8000 },
        { content: ["On the second thought now."], when: "second thought" },
      ], async (server, mock) => {
        await start(page, server, "the first task");
        await expect(page.getByRole("button", { name: "Stop" })).toBeVisible({ timeout: 30_000 });
        await messageBox(page).fill("a second thought");
        await messageBox(page).press("Enter");
        const queued = page.getByRole("article", { name: "Queued message" });
        await expect(queued).toContainText(/a second thought[\s\S]*Queued: sent when the agent's turn ends/);

        await expect(agentReplies(page).last()).toContainText("On the second thought now.", { timeout: 60_000 });
        await expect(queued).toHaveCount(0);
        await waitForTurnEnd(page);
        const requests = await turnRequests(mock);
        expect(requests).toHaveLength(2);
        expect(userTexts(requests[0]).join("\n")).not.toContain("second thought");
        expect(userTexts(requests[1]).join("\n")).toContain("a second thought");
      });
    });

    test("the message box's keys: ↑ brings back the last message, Esc stops the turn", async ({ page }) => {
      await withAgent(agent, [
        { content: ["Hello there."], when: "hello" },
        { content: ["This takes a while."], when: "slowly", delay_ms: 60_000 },
      ], async (server, mock) => {
        await start(page, server, "hello");
        await expect(agentReplies(page).last()).toContainText("Hello there.", { timeout: 60_000 });
        await waitForTurnEnd(page);
        await messageBox(page).press("ArrowUp");
        await expect(messageBox(page)).toHaveValue("hello");
        await messageBox(page).fill("do it slowly");
        await messageBox(page).press("Enter");
        await expect(page.getByRole("button", { name: "Stop" })).toBeVisible({ timeout: 30_000 });
        await expect.poll(async () => (await turnRequests(mock)).length, { timeout: 30_000 }).toBe(2);
        await messageBox(page).press("Escape");
        await expect(sessionStatus(page)).toContainText("last turn stopped", { timeout: 30_000 });
      });
    });
  });
}

test("with Claude Code, Shift+Tab switches to plan mode and the next request to the model is in it; @ lists the folder's files", async ({
  page,
}) => {
  const replies = [
    { content: ["Hello there."], when: "hello" },
    { content: ["A plan, then."], when: "make a plan" },
  ];
  const files = { "src/session/manager.rs": "", "src/main.rs": "", "README.md": "" };
  await withAgent("claude", replies, async (server, mock) => {
    await start(page, server, "hello");
    await expect(agentReplies(page).last()).toContainText("Hello there.", { timeout: 60_000 });
    await waitForTurnEnd(page);
    const mode = page.getByRole("combobox", { name: "Permission mode" });
    await expect(mode).toHaveValue("default");
    await messageBox(page).press("Shift+Tab");
    await expect(mode).toHaveValue("acceptEdits");
    await messageBox(page).press("Shift+Tab");
    await expect(mode).toHaveValue("plan");

    // `@` lists the files of the session's folder; what follows filters them.
    await messageBox(page).pressSequentially("make a plan for @");
    const list = page.getByRole("listbox", { name: "Files" });
    await expect(list.getByRole("option")).toHaveCount(3);
    await messageBox(page).pressSequentially("mana");
    await expect(list.getByRole("option").first()).toContainText("manager.rs");
    await messageBox(page).press("Enter");
    await expect(messageBox(page)).toHaveValue("make a plan for @src/session/manager.rs ");
    await expect(list).toHaveCount(0);
    await messageBox(page).press("Enter");
    await expect(agentReplies(page).last()).toContainText("A plan, then.", { timeout: 60_000 });
    await waitForTurnEnd(page);

    const requests = await turnRequests(mock);
    const last = JSON.stringify(requests.at(-1).messages);
    expect(last).toContain("make a plan for @src/session/manager.rs");
    expect(last.toLowerCase()).toContain("plan mode");
    expect(JSON.stringify(requests[0].messages).toLowerCase()).not.toContain("plan mode is active");
  }, files);
});

test("with Claude Code, New session opens the new-session page and leaves no empty session behind", async ({ page }) => {
  await withAgent("claude", [{ content: ["First."], when: "a topic" }, { content: ["Second."], when: "the new topic" }], async (server) => {
    await start(page, server, "a topic before");
    await expect(agentReplies(page).last()).toContainText("First.", { timeout: 60_000 });
    const sessions = async () => (await (await page.request.post(`${server.url}/api/list_sessions`, { data: {} })).json()).length;
    expect(await sessions()).toBe(1);
    await page.getByRole("button", { name: "New session", exact: true }).click();
    await page.waitForURL((url) => url.pathname === "/");
    await expect(page.getByRole("heading", { level: 1 })).toHaveText("New session");
    await expect(page.getByRole("textbox", { name: "Working folder" })).toBeVisible();
    await expect(page.getByRole("combobox", { name: "Agent" })).toHaveValue("claude");
    await expect(messageBox(page)).toBeFocused();
    await page.getByRole("button", { name: "New session", exact: true }).click();
    expect(await sessions()).toBe(1);
    await messageBox(page).fill("the new topic");
    await messageBox(page).press("Enter");
    await expect(agentReplies(page).last()).toContainText("Second.", { timeout: 60_000 });
    expect(await sessions()).toBe(2);
  });
});

for (const viewport of [
  { width: 1280, height: 800 },
  { width: 375, height: 812 },
]) {
  test(`after a reload with two cards pending, the one that takes the focus is wholly on screen (${viewport.width}×${viewport.height})`, async ({
    page,
  }) => {
    await page.setViewportSize(viewport);
    const long = Array.from({ length: 40 }, (_, i) => `Step ${i + 1} of the plan, explained at some length.`).join("\n\n");
    const ask = (id: string, q: string, a: string, b: string) => ({
      type: "tool_use",
      id,
      name: "AskUserQuestion",
      input: {
        questions: [
          {
            question: q,
            header: q.slice(0, 10),
            multiSelect: false,
            options: [
              { label: a, description: `Choose ${a}` },
              { label: b, description: `Choose ${b}` },
            ],
          },
        ],
      },
    });
    await withAgent("anthropic", [
      {
        content: [
          { type: "text", text: long },
          ask("toolu_first", "Which database should we use?", "SQLite", "Postgres"),
          ask("toolu_second", "Where should the logs go?", "Files", "Journald"),
        ],
      },
    ], async (server) => {
      await start(page, server, "plan it, and ask me two things");
      await expect(page.getByRole("group", { name: "The agent asks you" })).toHaveCount(2, { timeout: 30_000 });

      await page.reload();
      await waitForHydration(page);
      const first = page.getByRole("group", { name: "The agent asks you" }).first();
      await expect(first.getByRole("radio", { name: "SQLite" })).toBeFocused();
      await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
      const box = (await first.boundingBox())!;
      const composer = (await page.locator("form.composer").boundingBox())!;
      expect(box.y).toBeGreaterThanOrEqual(0);
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(viewport.width);
      expect(box.y + box.height).toBeLessThanOrEqual(composer.y);

      // Answered, the focus goes on to the second card, brought wholly into view too.
      await page.keyboard.press("2");
      const second = page.getByRole("group", { name: "The agent asks you" }).nth(1);
      await expect(second.getByRole("radio", { name: "Files" })).toBeFocused();
      await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
      const next = (await second.boundingBox())!;
      expect(next.y).toBeGreaterThanOrEqual(0);
      expect(next.y + next.height).toBeLessThanOrEqual((await page.locator("form.composer").boundingBox())!.y);
    });
  });
}
