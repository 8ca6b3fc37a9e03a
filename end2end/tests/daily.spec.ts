// The daily driver (issue 21): an agent and a model per session, picked on the new-session page
// and switched in the header before the next turn; the `/` commands of the agent, listed as
// the box is typed in and taken with the keyboard; `/compact` reaching Claude Code. The real
// CLI against a mock of the API of the test's own, and a Messages API server for its model list.
import { test, expect, type Page } from "@playwright/test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { agentReplies, claudeEnv, OwnMock, OwnServer, waitForHydration, waitForTurnEnd } from "./helpers";

const claudeBin = path.resolve(__dirname, "../../node_modules/.bin/claude");

async function claudeServer(mock: OwnMock): Promise<OwnServer> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "askbridge-e2e-daily-"));
  const env = claudeEnv(home, mock.url);
  const server = await OwnServer.start(["--agent", "claude", "--claude-bin", claudeBin, "--workdir", path.join(home, "project")], env);
  return server.owns(home);
}

/** The new-session page once its Model select offers `label` (the CLI is asked at start). */
async function openWithModel(page: Page, url: string, label: string) {
  await expect(async () => {
    await page.goto(url);
    await waitForHydration(page);
    await expect(page.getByRole("combobox", { name: "Model" }).getByRole("option", { name: label, exact: true })).toHaveCount(1, {
      timeout: 1_000,
    });
  }).toPass({ timeout: 30_000 });
}

async function send(page: Page, text: string) {
  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill(text);
  await box.press("Enter");
}

test("the model picked on the new-session page is the model of the request, and a switch in the header takes the next turn", async ({
  page,
}) => {
  const mock = await OwnMock.start(["The first answer.", "The second answer."]);
  const server = await claudeServer(mock);
  try {
    await openWithModel(page, server.url, "Sonnet");
    // Every agent that works here is offered (the API key the CLI gets makes the Messages API one
    // too, and Claude's ACP adapter of the project's own install); the server's --agent is the
    // one picked.
    const agent = page.getByRole("combobox", { name: "Agent" });
    await expect(agent.getByRole("option")).toHaveText(["Claude Code", "Messages API", "Offline demo", "Claude (ACP)"]);
    await expect(agent).toHaveValue("claude");
    await page.getByRole("combobox", { name: "Model" }).selectOption({ label: "Sonnet" });
    await send(page, "Which model are you?");
    await page.waitForURL(/\/s\/[0-9a-f]+$/);
    await expect(agentReplies(page).last()).toContainText("The first answer.", { timeout: 60_000 });
    await waitForTurnEnd(page);
    expect((await mock.requests()).map((r) => r.model)).toEqual(["claude-sonnet-5-5"]);

    // The header shows the session's model and switches it for the next turn.
    const model = page.getByRole("combobox", { name: "Model" });
    await expect(model).toHaveValue("sonnet");
    await model.selectOption({ label: "Haiku" });
    await expect(model).toHaveValue("haiku");
    await send(page, "And now?");
    await expect(agentReplies(page).last()).toContainText("The second answer.", { timeout: 60_000 });
    await waitForTurnEnd(page);
    expect((await mock.requests()).map((r) => r.model)).toEqual(["claude-sonnet-5-5", "claude-haiku-5-5"]);

    // Kept with the session.
    await page.reload();
    await expect(page.getByRole("combobox", { name: "Model" })).toHaveValue("haiku");
  } finally {
    await server.kill();
    await mock.kill();
  }
});

test("each turn costs what its tokens cost at the model's list price, a local command nothing, and the session the sum, through a reload", async ({
  page,
}) => {
  const mock = await OwnMock.start(["The first answer, at some length.", "The second answer."]);
  const server = await claudeServer(mock);
  try {
    await openWithModel(page, server.url, "Sonnet");
    await page.getByRole("combobox", { name: "Model" }).selectOption({ label: "Sonnet" });
    await send(page, "How much does this cost?");
    await page.waitForURL(/\/s\/[0-9a-f]+$/);
    await expect(agentReplies(page).last()).toContainText("The first answer", { timeout: 60_000 });
    await waitForTurnEnd(page);
    const turnUsage = (n: number) => agentReplies(page).nth(n).getByTitle("What this turn used");
    const context = page.getByTitle("How full the model's context window was at the last turn");
    const contextBefore = await context.textContent();
    expect(contextBefore).toMatch(/^context [1-9]\d*% of /);

    // A local command asks the model nothing: no cost, no counts, and the gauge stays.
    await send(page, "/context");
    await expect(agentReplies(page)).toHaveCount(2, { timeout: 60_000 });
    await waitForTurnEnd(page);
    await expect(turnUsage(1)).not.toContainText("$");
    await expect(context).toHaveText(contextBefore!);

    // Another model: its own prices, and the process's running total is not counted again.
    const model = page.getByRole("combobox", { name: "Model" });
    await model.selectOption({ label: "Haiku" });
    await expect(model).toHaveValue("haiku");
    await send(page, "And with Haiku?");
    await expect(agentReplies(page).last()).toContainText("The second answer.", { timeout: 60_000 });
    await waitForTurnEnd(page);

    // Claude Code's list prices per million tokens (the mock sends no cache figures).
    const prices: Record<string, [number, number]> = { "claude-sonnet-5-5": [2, 10], "claude-haiku-5-5": [0.1, 0.5] };
    const served = (await mock.usage()).filter((u) => !u.side);
    expect(served.map((u) => u.model)).toEqual(["claude-sonnet-5-5", "claude-haiku-5-5"]);
    const costs = served.map((u) => (u.input_tokens * prices[u.model][0] + u.output_tokens * prices[u.model][1]) / 1e6);
    const count = (n: number) => n.toLocaleString("en-US");
    const checkFigures = async () => {
      for (const [reply, turn] of [[0, 0], [2, 1]]) {
        const u = served[turn];
        await expect(turnUsage(reply)).toHaveText(
          new RegExp(`^${count(u.input_tokens)} in · ${count(u.output_tokens)} out · \\$${costs[turn].toFixed(4)}( · context .*)?$`),
        );
      }
      await expect(turnUsage(1)).not.toContainText("$");
      await expect(page.getByTitle("What this session has cost so far")).toHaveText(`$${(costs[0] + costs[1]).toFixed(4)}`);
    };
    await checkFigures();
    // Kept with the session.
    await page.reload();
    await waitForHydration(page);
    await checkFigures();
  } finally {
    await server.kill();
    await mock.kill();
  }
});

test("/ lists the agent's commands as the box is typed in, the keyboard takes one, and /compact reaches Claude Code", async ({
  page,
}) => {
  const summary = { content: ["<summary>We said hello.</summary>"], when: "TEXT ONLY" };
  const mock = await OwnMock.start([{ content: ["Hello."], when: "hello" }, summary, summary]);
  const server = await claudeServer(mock);
  try {
    await page.goto(server.url);
    await waitForHydration(page);
    await send(page, "hello");
    await page.waitForURL(/\/s\/[0-9a-f]+$/);
    await expect(agentReplies(page).last()).toContainText("Hello.", { timeout: 60_000 });
    await waitForTurnEnd(page);

    const box = page.getByRole("textbox", { name: "Message" });
    const list = page.getByRole("listbox", { name: "Commands" });
    await box.pressSequentially("/");
    await expect(list.getByRole("option", { name: /^\/compact/ })).toBeVisible();
    await expect(list.getByRole("option", { name: /^\/clear/ })).toBeVisible();
    // Filtered as the name is typed; the best match first, and chosen.
    await box.pressSequentially("comp");
    await expect(list.getByRole("option").first()).toContainText("/compact");
    await expect(list.getByRole("option").first()).toHaveAttribute("aria-selected", "true");
    await expect(list.getByRole("option").first()).toContainText("Free up context by summarizing the conversation so far");
    await box.press("ArrowDown");
    await expect(list.getByRole("option").first()).toHaveAttribute("aria-selected", "false");
    await box.press("ArrowUp");
    await expect(list.getByRole("option").first()).toHaveAttribute("aria-selected", "true");
    // Esc closes it; typing opens it again.
    await box.press("Escape");
    await expect(list).toBeHidden();
    await box.pressSequentially("a");
    await expect(list).toBeVisible();
    // Tab fills the command in, for its arguments.
    await box.press("Tab");
    await expect(box).toHaveValue("/compact ");
    await expect(list).toBeHidden();
    await expect(box).toBeFocused();

    // Enter on the list sends it: Claude Code compacts, and the thread says so.
    await box.fill("/compa");
    await expect(list).toBeVisible();
    await box.press("Enter");
    await expect(page.getByRole("article", { name: "You" }).last()).toHaveText("/compact");
    await expect(page.getByText(/^The conversation was compacted \(\/compact\): [\d,]+ → [\d,]+ tokens of context\.$/)).toBeVisible({
      timeout: 60_000,
    });
    await waitForTurnEnd(page);
    expect(JSON.stringify((await mock.requests()).at(-1).messages)).toContain("TEXT ONLY");

    // /model is the header's model switch. The page's models come from the CLI's first start,
    // which a loaded machine (a full run's two workers) can take longer than the page waits
    // for (3 s): by now the server knows them, and a reload shows them.
    await page.reload();
    await waitForHydration(page);
    await expect(page.getByRole("combobox", { name: "Model" })).toBeVisible();
    await box.fill("/model");
    await box.press("Escape");
    await box.press("Enter");
    await expect(page.getByRole("combobox", { name: "Model" })).toBeFocused();
    await expect(box).toHaveValue("");
  } finally {
    await server.kill();
    await mock.kill();
  }
});

test("a Messages API session offers the models the API lists, and the one picked is the request's model", async ({
  page,
}) => {
  const mock = await OwnMock.start(["From Haiku."]);
  const server = await OwnServer.start(["--agent", "anthropic", "--base-url", mock.url, "--model", "claude-sonnet-5-5"], {
    ANTHROPIC_API_KEY: "dummy",
  });
  try {
    await openWithModel(page, server.url, "Claude Haiku 5.5");
    const model = page.getByRole("combobox", { name: "Model" });
    await expect(model.getByRole("option")).toHaveText(["Default", "Claude Opus 5.5", "Claude Sonnet 5.5", "Claude Haiku 5.5"]);
    await model.selectOption({ label: "Claude Haiku 5.5" });
    await send(page, "Hello, Haiku.");
    await expect(agentReplies(page).last()).toContainText("From Haiku.", { timeout: 30_000 });
    expect((await mock.requests()).map((r) => r.model)).toEqual(["claude-haiku-5-5"]);
  } finally {
    await server.kill();
    await mock.kill();
  }
});
