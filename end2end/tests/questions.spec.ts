import { test, expect, type Page, type APIRequestContext } from "@playwright/test";
import {
  agentReplies,
  call,
  card,
  openInList,
  sessionStatus,
  startSession,
  waitForHydration,
  waitForTurnEnd,
} from "./helpers";

/** What the scripted agent recorded as received for the session's last question. */
async function received(request: APIRequestContext, session: string): Promise<any> {
  const view = await call<any>(request, "load_session", { id: session });
  const calls = view.thread.messages
    .flatMap((m: any) => m.blocks)
    .filter((b: any) => b.tool_call?.interaction)
    .map((b: any) => b.tool_call);
  const last = calls[calls.length - 1];
  return last.result ? JSON.parse(last.result) : null;
}

test("a single single-select question is answered by one click", async ({ page, request }) => {
  const session = await startSession(page, "ask me a single question");
  const question = card(page).getByRole("radiogroup", { name: "Which database should we use?" });
  await expect(question).toBeVisible();
  // No Submit button: the click is the answer.
  await expect(card(page).getByRole("button", { name: "Submit" })).toBeHidden();
  await question.getByRole("radio", { name: "Postgres" }).click();

  await expect(card(page)).toHaveAttribute("data-state", "answered");
  await expect(question.getByRole("radio", { name: "Postgres" })).toBeChecked();
  await expect(agentReplies(page).first()).toContainText('Received "Which database should we use?"="Postgres".');
  await waitForTurnEnd(page);
  expect(await received(request, session)).toEqual({
    answered: { answers: [{ question: "Which database should we use?", labels: ["Postgres"], other: null, notes: null }] },
  });
});

// The answering card is drawn as answered only once the agent has the answer (`CardLife::phase`):
// until then its controls look as they did, and take nothing more.
test("a second option clicked while the first answer is on its way is not sent, and the card shows the first", async ({ page, request }) => {
  const session = await startSession(page, "ask me a single question");
  const question = card(page).getByRole("radiogroup", { name: "Which database should we use?" });
  const postgres = question.getByRole("radio", { name: "Postgres" });
  const sqlite = question.getByRole("radio", { name: "SQLite" });
  await expect(postgres).toBeVisible();
  const [first, second] = [await postgres.boundingBox(), await sqlite.boundingBox()];
  // Both clicks as the mouse gives them, the second at once, before the page draws the first.
  await page.mouse.click(first!.x + first!.width / 2, first!.y + first!.height / 2);
  await page.mouse.click(second!.x + second!.width / 2, second!.y + second!.height / 2);

  await expect(card(page)).toHaveAttribute("data-state", "answered");
  await expect(postgres).toBeChecked();
  await expect(sqlite).not.toBeChecked();
  // The focus left the card with the first click: what the person types next goes to the box.
  await expect(page.getByRole("textbox", { name: "Message" })).toBeFocused();
  await waitForTurnEnd(page);
  expect(await received(request, session)).toEqual({
    answered: { answers: [{ question: "Which database should we use?", labels: ["Postgres"], other: null, notes: null }] },
  });
});

test("the options show while the agent writes, and the card opens without drawing them again", async ({ page }) => {
  // Every radio the page ever adds, with the card's state at that moment (recorded in the page:
  // the card may open within a frame of its options showing).
  await page.addInitScript(() => {
    const seen: { node: Element; state: string | null }[] = ((window as any).__radios = []);
    new MutationObserver(() => {
      for (const node of document.querySelectorAll(".question-card input[type=radio]")) {
        if (!seen.some((s) => s.node === node)) {
          seen.push({ node, state: node.closest(".question-card")!.getAttribute("data-state") });
        }
      }
    }).observe(document, { subtree: true, childList: true });
  });
  await startSession(page, "ask me a single question");
  const postgres = card(page).getByRole("radio", { name: "Postgres" });
  await expect(card(page)).toHaveAttribute("data-state", "pending");
  await expect(postgres).toBeEnabled();
  const drawn = await postgres.evaluate((radio) => {
    const seen: { node: Element; state: string | null }[] = (window as any).__radios;
    const now = [...radio.closest(".question-card")!.querySelectorAll("input[type=radio]")];
    return { states: [...new Set(seen.map((s) => s.state))], drawn: seen.length, now: now.length, same: seen.some((s) => s.node === radio) };
  });
  // SQLite, Postgres and Other, each drawn once, while the agent was still writing; the radio
  // clicked is that very one.
  expect(drawn).toEqual({ states: ["streaming"], drawn: 3, now: 3, same: true });
  await postgres.click();
  await expect(card(page)).toHaveAttribute("data-state", "answered");
});

test("a two-question card with multi-select and an Other text", async ({ page, request }) => {
  const session = await startSession(page, "a pair of questions");
  const features = card(page).getByRole("group", { name: "Which features do you want?" });
  const auth = card(page).getByRole("radiogroup", { name: "Which auth method?" });
  const submit = card(page).getByRole("button", { name: "Submit" });

  await features.getByRole("checkbox", { name: "Dark mode" }).click();
  // The focused option's preview shows.
  await expect(card(page).locator(".qc-preview").first()).toContainText("Dark colours everywhere");
  await features.getByRole("checkbox", { name: "Analytics" }).click();
  await features.getByRole("checkbox", { name: "Other" }).click();
  await features.getByRole("textbox", { name: "Other answer" }).fill("Offline support");
  // The card says what is missing.
  await expect(card(page).getByText("1 of 2 answered")).toBeVisible();
  await expect(auth.getByText("Unanswered")).toBeVisible();
  await expect(submit).toBeDisabled();

  await auth.getByRole("radio", { name: "Other" }).click();
  await auth.getByRole("textbox", { name: "Other answer" }).fill("OAuth via Google, please");
  await auth.getByRole("button", { name: "Add a note" }).click();
  await auth.getByRole("textbox", { name: "Note on “Auth”" }).fill("short-lived tokens");
  await expect(submit).toBeEnabled();
  await submit.click();

  await expect(card(page)).toHaveAttribute("data-state", "answered");
  await expect(features.getByRole("checkbox", { name: "Dark mode" })).toBeChecked();
  await expect(features.getByRole("checkbox", { name: "i18n" })).not.toBeChecked();
  await expect(auth.getByRole("textbox", { name: "Other answer" })).toHaveValue("OAuth via Google, please");
  await waitForTurnEnd(page);
  expect(await received(request, session)).toEqual({
    answered: {
      answers: [
        { question: "Which features do you want?", labels: ["Dark mode", "Analytics"], other: "Offline support", notes: null },
        { question: "Which auth method?", labels: [], other: "OAuth via Google, please", notes: "short-lived tokens" },
      ],
    },
  });
  await expect(agentReplies(page).first()).toContainText(
    'Received "Which features do you want?"="Dark mode, Analytics, Offline support", "Which auth method?"="OAuth via Google, please" (note: short-lived tokens).',
  );
});

test("pressing an option moves nothing under the pointer, so the click lands", async ({ page }) => {
  await startSession(page, "a pair of questions");
  const features = card(page).getByRole("group", { name: "Which features do you want?" });
  await features.getByRole("checkbox", { name: "Dark mode" }).click();
  const preview = card(page).locator(".qc-preview").first();
  await expect(preview).toContainText("Dark colours everywhere");
  // Analytics has no preview: pressed, the open one stays until the click is done.
  const analytics = features.getByRole("checkbox", { name: "Analytics" });
  const before = (await analytics.boundingBox())!;
  await page.mouse.move(before.x + before.width / 2, before.y + before.height / 2);
  await page.mouse.down();
  await expect(preview).toBeVisible();
  expect(await analytics.boundingBox()).toEqual(before);
  await page.mouse.up();
  await expect(analytics).toBeChecked();
  await expect(preview).toBeHidden();
});

test("Skip declines the question and the agent is told so", async ({ page, request }) => {
  const session = await startSession(page, "flat question please");
  await expect(card(page).getByRole("radiogroup", { name: "Proceed with the refactor?" })).toBeVisible();
  await card(page).getByRole("button", { name: "Skip" }).click();
  await expect(card(page)).toHaveAttribute("data-state", "declined");
  await expect(card(page)).toContainText("You skipped this question. The agent was told that you declined to answer.");
  await expect(agentReplies(page).first()).toContainText("Received nothing: you skipped the question.");
  await waitForTurnEnd(page);
  expect(await received(request, session)).toEqual({ declined: { reason: null } });
  // The composer works again once the agent is done.
  await page.getByRole("textbox", { name: "Message" }).fill("next");
  await expect(page.getByRole("button", { name: "Send" })).toBeEnabled();
});

test("a question answered with the keyboard only", async ({ page, request }) => {
  const session = await startSession(page, "pair again");
  const features = card(page).getByRole("group", { name: "Which features do you want?" });
  // The card takes the focus when it appears.
  await expect(features.getByRole("checkbox", { name: "Dark mode" })).toBeFocused();
  await page.keyboard.press("1");
  await page.keyboard.press("2");
  await page.keyboard.press("Enter"); // on to the next unanswered question
  await expect(card(page).getByRole("radiogroup", { name: "Which auth method?" }).getByRole("radio", { name: "JWT" })).toBeFocused();
  await page.keyboard.press("2");
  await page.keyboard.press("Enter"); // submit
  await expect(card(page)).toHaveAttribute("data-state", "answered");
  await waitForTurnEnd(page);
  expect(await received(request, session)).toEqual({
    answered: {
      answers: [
        { question: "Which features do you want?", labels: ["Dark mode", "i18n"], other: null, notes: null },
        { question: "Which auth method?", labels: ["Sessions"], other: null, notes: null },
      ],
    },
  });
});

test("Esc twice skips only the card, and the turn goes on", async ({ page }) => {
  await startSession(page, "single once more");
  await expect(card(page).getByRole("radio", { name: "SQLite" })).toBeFocused();
  // The first Esc says what the second does; the card still waits.
  await page.keyboard.press("Escape");
  await expect(card(page).getByText("Esc again to skip the question")).toBeVisible();
  await expect(card(page)).toHaveAttribute("data-state", "pending");
  await page.keyboard.press("Escape");
  await expect(card(page)).toHaveAttribute("data-state", "declined");
  await expect(agentReplies(page).first()).toContainText("Received nothing: you skipped the question.");
});

test("a reload mid-question keeps the choices and the typed text, and the answer still goes through", async ({ page, request }) => {
  const session = await startSession(page, "pair to reload");
  const features = () => card(page).getByRole("group", { name: "Which features do you want?" });
  await features().getByRole("checkbox", { name: "i18n" }).click();
  await features().getByRole("checkbox", { name: "Other" }).click();
  await features().getByRole("textbox", { name: "Other answer" }).fill("Keyboard shortcuts");

  await page.reload();
  await waitForHydration(page);
  await expect(features().getByRole("checkbox", { name: "i18n" })).toBeChecked();
  await expect(features().getByRole("checkbox", { name: "Other" })).toBeChecked();
  await expect(features().getByRole("textbox", { name: "Other answer" })).toHaveValue("Keyboard shortcuts");
  await expect(openInList(page)).toContainText("Waiting for you");
  await expect(page).toHaveTitle(/^● /);

  await card(page).getByRole("radiogroup", { name: "Which auth method?" }).getByRole("radio", { name: "JWT" }).click();
  await card(page).getByRole("button", { name: "Submit" }).click();
  await expect(card(page)).toHaveAttribute("data-state", "answered");
  await waitForTurnEnd(page);
  expect(await received(request, session)).toEqual({
    answered: {
      answers: [
        { question: "Which features do you want?", labels: ["i18n"], other: "Keyboard shortcuts", notes: null },
        { question: "Which auth method?", labels: ["JWT"], other: null, notes: null },
      ],
    },
  });
  // (The title's `●` says whether any session waits, and other tests' sessions may: the list
  // says this one's.)
  await expect(openInList(page)).not.toContainText("Waiting");
  // Nothing is left behind in the browser once the answer is stored.
  expect(await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith("askbridge:answer:")))).toEqual([]);
});

test("two tabs: answered in one, the other shows it answered", async ({ page, context }) => {
  const session = await startSession(page, "single for two tabs");
  const other = await context.newPage();
  await other.goto(`/s/${session}`);
  await waitForHydration(other);
  await expect(card(other)).toHaveAttribute("data-state", "pending");

  await card(page).getByRole("radio", { name: "SQLite" }).click();
  await expect(card(other)).toHaveAttribute("data-state", "answered", { timeout: 1_000 });
  await expect(card(other).getByRole("radio", { name: "SQLite" })).toBeChecked();
  await expect(card(other).getByRole("radio", { name: "Postgres" })).not.toBeChecked();
});

test("an answered card shows the chosen options after a reload", async ({ page }) => {
  await startSession(page, "single to look back on");
  await card(page).getByRole("radio", { name: "Postgres" }).click();
  await waitForTurnEnd(page);
  await page.reload();
  await waitForHydration(page);
  await expect(card(page)).toHaveAttribute("data-state", "answered");
  await expect(card(page).getByRole("status")).toHaveText("Answered");
  await expect(card(page).getByRole("radio", { name: "Postgres" })).toBeChecked();
  await expect(card(page).getByRole("radio", { name: "Postgres" })).toBeDisabled();
});

test("a malformed question shows a clear error card", async ({ page, request }) => {
  const session = await startSession(page, "a broken question");
  await expect(card(page)).toHaveAttribute("data-state", "unreadable");
  await expect(card(page)).toContainText("The agent's question could not be read: the arguments are not valid JSON");
  await card(page).getByText("What the agent sent").click();
  await expect(card(page).locator(".qc-raw pre")).toContainText('{"questions": [{"question": "Broken');
  await waitForTurnEnd(page);
  const outcome = await received(request, session);
  expect(outcome.failed.error).toMatch(/^the arguments are not valid JSON/);
});

test("a wrong answer sent by a script gets a clear error and changes nothing", async ({ page, request }) => {
  const session = await startSession(page, "single for a script");
  await expect(card(page)).toHaveAttribute("data-state", "pending");
  const view = await call<any>(request, "load_session", { id: session });
  const toolUseId = view.thread.messages.flatMap((m: any) => m.blocks).find((b: any) => b.tool_call)?.tool_call.id;
  const wrong = await request.post("/api/submit_answers", {
    data: { session, tool_use_id: toolUseId, answers: [{ question: "Which database should we use?", labels: ["Mongo"] }] },
  });
  expect(wrong.status()).toBe(400);
  expect(await wrong.json()).toMatchObject({ error: "invalid_answer", message: "“Which database should we use?”: “Mongo” is not one of the options." });
  await expect(card(page)).toHaveAttribute("data-state", "pending");
  const right = await request.post("/api/submit_answers", {
    data: { session, tool_use_id: toolUseId, answers: [{ question: "Which database should we use?", labels: ["SQLite"] }] },
  });
  expect(right.status()).toBe(200);
  await expect(card(page)).toHaveAttribute("data-state", "answered");
  const again = await request.post("/api/submit_answers", {
    data: { session, tool_use_id: toolUseId, answers: [{ question: "Which database should we use?", labels: ["Postgres"] }] },
  });
  expect(again.status()).toBe(409);
  expect((await again.json()).error).toBe("already_answered");
});
