// Parking (DESIGN §3): a question that waits outlives its agent. These tests stop and restart the
// server, so each runs its own (the browser tests' build with the scripted agent, on a free port and a
// fresh data folder), started and killed by the `server` fixture whatever the test's outcome.
import { expect, type Page } from "@playwright/test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import {
  agentReplies,
  call,
  card,
  claudeEnv,
  composerHint,
  openInList,
  OwnMock,
  OwnServer,
  ownServerTest,
  sessionStatus,
  startSession,
  waitForHydration,
  waitForTurnEnd,
} from "./helpers";

const test = ownServerTest;

/** The question the "park" turn of end2end/fixtures/scenario.toml asks. */
function logsQuestion(page: Page) {
  return card(page).getByRole("radiogroup", { name: "Where should the logs go?" });
}

/** The session's last question as stored: whether it is parked, and how the turn ended. */
async function stored(page: Page, session: string): Promise<{ parked: boolean; pending: boolean; turn: any }> {
  const view = await call<any>(page.request, "load_session", { id: session });
  const question = view.thread.messages
    .flatMap((m: any) => m.blocks)
    .map((b: any) => b.tool_call)
    .filter((c: any) => c?.interaction)
    .at(-1);
  return {
    parked: question.interaction.parked === true,
    pending: question.interaction.outcome == null,
    turn: view.thread.turn.last_outcome,
  };
}

async function parkedAndPending(page: Page, session: string): Promise<boolean> {
  const { parked, pending } = await stored(page, session);
  return parked && pending;
}

/**
 * A pending card whose options can still be chosen; `status` as the card, the header and the
 * session list all say it: "Waiting for you" while the agent waits, "Paused" once it let go.
 */
async function expectPending(page: Page, status: "Waiting for you" | "Paused") {
  await expect(card(page)).toHaveAttribute("data-state", "pending");
  await expect(card(page).getByRole("status")).toHaveText(status);
  await expect(sessionStatus(page)).toContainText(status);
  await expect(openInList(page)).toContainText(status);
  for (const option of ["Files", "Journald"]) {
    await expect(logsQuestion(page).getByRole("radio", { name: option })).toBeEnabled();
    await expect(logsQuestion(page).getByRole("radio", { name: option })).not.toBeChecked();
  }
}

test("a question waiting at a restart is still pending after it, and its answer resumes the turn", async ({ page, server }) => {
  const session = await startSession(page, "park this question");
  await expectPending(page, "Waiting for you");
  await expect(agentReplies(page).first()).toContainText("One thing first.");

  // A graceful stop parks the question; the server comes back on the same port and data folder.
  expect(await server.stop(), server.log()).toBe(0);
  await server.start();
  expect(await stored(page, session)).toEqual({ parked: true, pending: true, turn: "parked" });

  await page.reload();
  await waitForHydration(page);
  // The card, the header and the list say Paused; the tab's title, no Stop button, the composer's
  // hint and the card's own note say that the agent waits for the person.
  await expectPending(page, "Paused");
  await expect(card(page)).toContainText("The agent is paused until you answer.");
  await expect(page).toHaveTitle(/^● /);
  await expect(page.getByRole("button", { name: "Stop" })).toHaveCount(0);
  await expect(composerHint(page)).toHaveText(/asks you something above/);
  // A message waits until the question is settled: it is queued, and goes after the answer.
  const message = await page.request.post("/api/send_message", { data: { session, text: "hello?" } });
  expect(message.status()).toBe(200);
  await expect(page.getByRole("article", { name: "Queued message" })).toContainText("hello?");
  expect(await stored(page, session)).toEqual({ parked: true, pending: true, turn: "parked" });

  await logsQuestion(page).getByRole("radio", { name: "Journald" }).click();
  await expect(card(page)).toHaveAttribute("data-state", "answered");
  await expect(page.getByText('Resumed: you chose "Where should the logs go?"="Journald".')).toBeVisible();
  await expect(agentReplies(page).last()).toContainText("Echo: hello?");
  await waitForTurnEnd(page);
  expect(await stored(page, session)).toMatchObject({ pending: false, turn: "completed" });
  // Settled: the composer takes messages again.
  await page.getByRole("textbox", { name: "Message" }).fill("thanks");
  await expect(page.getByRole("button", { name: "Send" })).toBeEnabled();
});

test.describe("with --park-after 1s", () => {
  test.use({ serverArgs: ["--park-after", "1s"] });

  test("a question nobody answers parks by itself, and the answer resumes the turn", async ({ page }) => {
    const session = await startSession(page, "park this question too");
    // Waiting for you, for a second (a busy machine may show it Paused already).
    await expect(card(page)).toHaveAttribute("data-state", "pending");
    await expect.poll(() => parkedAndPending(page, session), { timeout: 15_000 }).toBe(true);

    // The open page follows: the turn has ended, the card stays pending, and says Paused.
    await expect(page.getByRole("button", { name: "Stop" })).toHaveCount(0);
    await expectPending(page, "Paused");
    expect(await stored(page, session)).toEqual({ parked: true, pending: true, turn: "parked" });

    await logsQuestion(page).getByRole("radio", { name: "Files" }).click();
    await expect(card(page)).toHaveAttribute("data-state", "answered");
    await expect(agentReplies(page).last()).toContainText('Resumed: you chose "Where should the logs go?"="Files".');
    await waitForTurnEnd(page);
    expect(await stored(page, session)).toMatchObject({ pending: false, turn: "completed" });
  });

  test("a turn with two questions, each parked, goes on after the second", async ({ page }) => {
    const session = await startSession(page, "ask me twice");
    const port = card(page).getByRole("radiogroup", { name: "Which port?" });
    await expect(port.getByRole("radio", { name: "8080" })).toBeEnabled();
    await expect.poll(() => parkedAndPending(page, session), { timeout: 15_000 }).toBe(true);
    await port.getByRole("radio", { name: "8080" }).click();

    const level = card(page).getByRole("radiogroup", { name: "Which log level?" });
    await expect(level.getByRole("radio", { name: "debug" })).toBeEnabled();
    await expect.poll(() => parkedAndPending(page, session), { timeout: 15_000 }).toBe(true);
    await level.getByRole("radio", { name: "debug" }).click();
    await expect(agentReplies(page).last()).toContainText('Level: "Which log level?"="debug".');
    await waitForTurnEnd(page);
    await expect(page.getByRole("group", { name: "The agent asks you" })).toHaveCount(2);
  });
});

test("a question not yet parked when the server is killed is cancelled after the restart, and the card says why", async ({ page, server }) => {
  const session = await startSession(page, "park this one, then crash");
  await expectPending(page, "Waiting for you");
  await server.crash();
  await server.start();
  await page.reload();
  await waitForHydration(page);
  await expect(card(page)).toHaveAttribute("data-state", "cancelled");
  await expect(card(page)).toContainText("Cancelled: the server stopped. The agent is no longer waiting for an answer.");
  await expect(logsQuestion(page).getByRole("radio", { name: "Files" })).toBeDisabled();
  await expect(page.getByText("The server stopped while the agent was working, so that turn was cut short.")).toBeVisible();
  expect(await stored(page, session)).toEqual({ parked: false, pending: false, turn: "abandoned" });
});

test.describe("a question being written", () => {
  test.use({ serverArgs: ["--scenario", "end2end/fixtures/slow-question.toml"] });

  test("a question the server stopped while it was being written says it was cut short after the restart, never that it is coming", async ({
    page,
    server,
  }) => {
    await startSession(page, "How should people sign in?");
    const question = card(page);
    await expect(question.getByRole("radio").first()).toBeVisible();
    await expect(question).toHaveAttribute("data-state", "streaming");
    await server.stop();
    await server.start();
    await page.reload();
    await waitForHydration(page);
    await expect(sessionStatus(page)).toContainText("last turn cut short");
    await expect(question).toHaveAttribute("data-state", "cancelled");
    await expect(question).toContainText("Cut short");
    await expect(question).toContainText("so it was never asked and cannot be answered. The agent was told nothing of it");
    await expect(question).not.toContainText("writing a question");
    for (const radio of await question.getByRole("radio").all()) await expect(radio).toBeDisabled();

    // The next message goes on: the agent asks that question again, on a card of its own.
    await page.getByRole("textbox", { name: "Message" }).click();
    await page.keyboard.type("go on");
    await page.keyboard.press("Enter");
    const cards = page.getByRole("group", { name: "The agent asks you" });
    await expect(cards.nth(1).getByRole("radio", { name: "JWT" })).toBeVisible({ timeout: 30_000 });
    await expect(cards.first()).toHaveAttribute("data-state", "cancelled");
  });
});

// The real Claude Code CLI dies with AskBridge (left alone, it would tell the model that the person
// declined). After the restart the card says what the model is told of the call (that it was
// interrupted), and the person can still answer: the answer goes to the agent as a message,
// never as the tool's result.
test("a question lost in a crash can still be answered, as a message to the agent", async ({ page }) => {
  const auth = "Which auth method should we use?";
  const mock = await OwnMock.start([
    {
      content: [
        {
          type: "tool_use",
          id: "toolu_lost",
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
    "Thanks, JWT then.",
  ]);
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "askbridge-e2e-claude-"));
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

    await server.crash();
    await server.start();
    await page.reload();
    await waitForHydration(page);
    await expect(card(page)).toHaveAttribute("data-state", "lost");
    await expect(card(page).getByRole("status")).toHaveText("Not answered");
    await expect(card(page)).toContainText("You can still answer, as a message.");
    await expect(card(page)).toContainText("[Tool call interrupted");

    // Picking does not send: the message goes on purpose.
    await question.getByRole("radio", { name: "JWT" }).click();
    await expect(question.getByRole("radio", { name: "JWT" })).toBeChecked();
    await card(page).getByRole("button", { name: "Send my answer as a message" }).click();

    await expect(page.getByRole("article", { name: "You" }).last()).toContainText(
      'My answer: "Which auth method should we use?"="JWT".',
    );
    await expect(agentReplies(page).last()).toContainText("Thanks, JWT then.", { timeout: 30_000 });
    await expect(card(page).getByRole("button", { name: "Send my answer as a message" })).toBeHidden();
    await expect(question.getByRole("radio", { name: "Sessions" })).toBeDisabled();
    const sent = JSON.stringify((await mock.requests()).at(-1).messages);
    expect(sent).toContain("my answer did not reach you then. My answer:");
    // Nobody told the model that the person declined.
    expect(JSON.stringify(await mock.requests())).not.toContain("doesn't want to take this action");
    // Sent once: the pick itself sent nothing.
    await expect(page.getByRole("article", { name: "You" })).toHaveCount(2);
    // The card still says what happened: the answer was never the tool's result.
    await expect(card(page)).toHaveAttribute("data-state", "lost");
  } finally {
    await server.kill();
    await mock.kill();
    fs.rmSync(home, { recursive: true, force: true });
  }
});
