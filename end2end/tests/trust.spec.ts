// What the person gave is never dropped (issue 20), as a person meets it in the browser:
// an answer the server accepted reaches the agent even when the server is killed right after it,
// and a parked question expires when its timeout says, whatever parking and restarts came in
// between. Each test runs its own server (on a free port, with a fresh data folder).
import { expect, type Page } from "@playwright/test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import {
  agentReplies,
  call,
  card,
  claudeEnv,
  OwnMock,
  OwnServer,
  ownServerTest,
  startSession,
  waitForHydration,
  waitForTurnEnd,
} from "./helpers";

const test = ownServerTest;

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

// Claude Code, as the issue found it: its resume starts a new CLI, which takes a moment before it
// asks its parked call again, and the server is killed in that moment (with the scripted agent,
// which resumes within milliseconds, the kill lands after the answer reached it).
test("an answer accepted, then SIGKILL at once, then a restart: the agent goes on", async ({ page }) => {
  const auth = "Which auth method should we use?";
  const mock = await OwnMock.start([
    {
      content: [
        {
          type: "tool_use",
          id: "toolu_trust",
          name: "AskUserQuestion",
          input: {
            questions: [
              {
                question: auth,
                header: "Auth",
                multiSelect: false,
                options: [
                  { label: "JWT", description: "Stateless tokens" },
                  { label: "Sessions", description: "Server-side" },
                ],
              },
            ],
          },
        },
      ],
    },
    "JWT it is.",
    // Once more, for a resume that the kill cut short after it asked the model (see below).
    "JWT it is.",
  ]);
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "askbridge-e2e-trust-"));
  const server = await OwnServer.start(
    ["--agent", "claude", "--claude-bin", path.resolve(__dirname, "../../node_modules/.bin/claude"),
      "--workdir", path.join(home, "project")],
    claudeEnv(home, mock.url),
  );
  try {
    await page.goto(server.url);
    await waitForHydration(page);
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("Set up auth; ask me which.");
    await box.press("Enter");
    const question = card(page).getByRole("radiogroup", { name: auth });
    await expect(question.getByRole("radio", { name: "JWT" })).toBeEnabled({ timeout: 30_000 });
    // Parked by a graceful restart: no CLI runs for it, and the answer is what resumes it.
    expect(await server.stop(), server.log()).toBe(0);
    await server.start();
    await page.reload();
    await waitForHydration(page);
    await expect(card(page).getByRole("status")).toHaveText("Paused");

    // The person answers; the server says it has the answer, and is killed that very moment.
    const accepted = page.waitForResponse((response) => response.url().endsWith("/api/submit_answers"));
    await question.getByRole("radio", { name: "JWT" }).click();
    expect((await accepted).status()).toBe(200);
    await server.crash();
    const killed = server.log();

    await server.start();
    await page.reload();
    await waitForHydration(page);
    await expect(card(page)).toHaveAttribute("data-state", "answered");
    try {
      await expect(agentReplies(page).last()).toContainText("JWT it is.", { timeout: 30_000 });
      await waitForTurnEnd(page);
    } catch (error) {
      // Seen once in a full run under load, never alone: say what each server did.
      const asked = (await mock.requests()).length;
      console.log(`The killed server logged:\n${killed}\nThe restarted one:\n${server.log()}\nThe model was asked ${asked} times.`);
      throw error;
    }
    // The model got the person's answer, as the tool's result. The kill lands before the resumed
    // CLI asks the model, or just after (then the resume, cut short, is started again after the
    // restart, and the model is asked once more): at least once, never without the answer. The
    // CLI dies with the server: left alone, it would have told the model that the person declined.
    const requests = await mock.requests();
    expect(requests.length).toBeGreaterThanOrEqual(2);
    for (const resumed of requests.slice(1)) {
      expect(JSON.stringify(resumed.messages)).toContain(`\\"${auth}\\"=\\"JWT\\"`);
    }
  } finally {
    await server.kill();
    await mock.kill();
    fs.rmSync(home, { recursive: true, force: true });
  }
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
    // (Not at once: the card appeared about a second after it opened; timers are a few ms coarse.)
    expect(elapsed).toBeGreaterThanOrEqual(2_500);
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
