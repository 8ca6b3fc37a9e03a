// What the person gave is never dropped (issue 20), as a person meets it on the release build:
// an answer the server accepted reaches the agent even when the server is killed right after it,
// and a parked question expires when its timeout says, whatever parking and restarts came in
// between. Each test runs its own server (the scripted agent, a free port, a fresh data folder).
import { test as base, expect, type Page } from "@playwright/test";
import {
  agentReplies,
  call,
  OwnServer,
  startSession,
  waitForHydration,
  waitForTurnEnd,
} from "./helpers";

const test = base.extend<{ serverArgs: string[]; server: OwnServer }>({
  serverArgs: [[], { option: true }],
  server: async ({ serverArgs }, use) => {
    const server = await OwnServer.start(serverArgs);
    try {
      await use(server);
    } finally {
      await server.kill();
    }
  },
  baseURL: async ({ server }, use) => use(server.url),
});

/** The question card of the "park" turn (end2end/fixtures/scenario.toml), as a person finds it. */
function card(page: Page) {
  return page.getByRole("group", { name: "The agent asks you" }).last();
}

function logsQuestion(page: Page) {
  return card(page).getByRole("radiogroup", { name: "Where should the logs go?" });
}

/** Whether the session's question is parked (its agent let go) and still waits for the person. */
async function parkedAndPending(page: Page, session: string): Promise<boolean> {
  const view = await call<any>(page.request, "load_session", { id: session });
  const question = view.thread.messages
    .flatMap((m: any) => m.blocks)
    .map((b: any) => b.tool_call)
    .filter((c: any) => c?.interaction)
    .at(-1);
  return question?.interaction.parked === true && question.interaction.outcome == null;
}

test("an answer accepted, then SIGKILL at once, then a restart: the agent goes on", async ({ page, server }) => {
  await startSession(page, "park this question");
  await expect(logsQuestion(page).getByRole("radio", { name: "Journald" })).toBeEnabled();
  // Parked by a graceful restart: no agent runs for it, and the answer is what resumes it.
  expect(await server.stop(), server.log()).toBe(0);
  await server.start();
  await page.reload();
  await waitForHydration(page);
  await expect(card(page).getByRole("status")).toHaveText("Paused");

  // The person answers; the server says it has the answer, and is killed that very moment.
  const accepted = page.waitForResponse((response) => response.url().endsWith("/api/submit_answers"));
  await logsQuestion(page).getByRole("radio", { name: "Journald" }).click();
  expect((await accepted).status()).toBe(200);
  await server.crash();

  await server.start();
  await page.reload();
  await waitForHydration(page);
  await expect(card(page)).toHaveAttribute("data-state", "answered");
  await expect(agentReplies(page).last()).toContainText('Resumed: you chose "Where should the logs go?"="Journald".');
  await waitForTurnEnd(page);
});

test.describe("with --question-timeout 4s --park-after 1s", () => {
  test.use({ serverArgs: ["--question-timeout", "4s", "--park-after", "1s"] });

  /** Asks the "park" question, and waits until its agent has let go of it. Returns when it was asked. */
  async function askAndPark(page: Page): Promise<{ session: string; asked: number }> {
    const session = await startSession(page, "park this question");
    await expect(logsQuestion(page).getByRole("radio", { name: "Files" })).toBeEnabled();
    const asked = Date.now();
    await expect.poll(() => parkedAndPending(page, session), { timeout: 15_000 }).toBe(true);
    await expect(card(page).getByRole("status")).toHaveText("Paused");
    return { session, asked };
  }

  /** The card says it expired, the agent was told so and went on; within `within` ms of `asked`. */
  async function expectExpiredOnTime(page: Page, asked: number) {
    await expect(card(page)).toHaveAttribute("data-state", "expired", { timeout: 15_000 });
    const elapsed = Date.now() - asked;
    // Its deadline is 4 s after it opened (the card appeared a moment after that); 9 s was the
    // pending question the issue found.
    expect(elapsed).toBeGreaterThanOrEqual(3_000);
    expect(elapsed).toBeLessThan(9_000);
    await expect(card(page)).toContainText("Not answered in time.");
    await expect(logsQuestion(page).getByRole("radio", { name: "Files" })).toBeDisabled();
    await expect(agentReplies(page).last()).toContainText("Resumed: you chose nothing: nobody answered in time.");
    await waitForTurnEnd(page);
  }

  test("a parked question expires on time, and the agent is told", async ({ page }) => {
    const { asked } = await askAndPark(page);
    await expectExpiredOnTime(page, asked);
  });

  test("a parked question expires on time after the server was killed and restarted", async ({ page, server }) => {
    const { asked } = await askAndPark(page);
    await server.crash();
    await server.start();
    await page.reload();
    await waitForHydration(page);
    await expectExpiredOnTime(page, asked);
  });
});
