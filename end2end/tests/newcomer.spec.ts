// What a new user met (issue 26), each as a person meets it: typing an Other answer with the
// keyboard, the header, list and card saying the same thing, the list staying put, the bell for
// every session, the welcome page's examples and the keys behind `?`. The tests that stop a server,
// or need two, are in reconnect.spec.ts.
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

test("0 then typing: the Other answer is what was typed, digits and spaces included, and Enter sends it", async ({
  page,
  request,
}) => {
  const session = await startSession(page, "ask me a single question");
  const question = card(page).getByRole("radiogroup", { name: "Which database should we use?" });
  await expect(question.getByRole("radio", { name: "SQLite" })).toBeFocused();

  // Typed at once, as a person types: a digit or a space in the text must not pick an option.
  await page.keyboard.press("0");
  await page.keyboard.type("MySQL 8 on 2 hosts");
  const other = question.getByRole("textbox", { name: "Other answer" });
  await expect(other).toBeFocused();
  await expect(other).toHaveValue("MySQL 8 on 2 hosts");
  await expect(question.getByRole("radio", { name: "Other" })).toBeChecked();
  await expect(question.getByRole("radio", { name: "SQLite" })).not.toBeChecked();
  await expect(question.getByRole("radio", { name: "Postgres" })).not.toBeChecked();
  await expect(card(page)).toHaveAttribute("data-state", "pending");

  await page.keyboard.press("Enter");
  await expect(card(page)).toHaveAttribute("data-state", "answered");
  await expect(agentReplies(page).first()).toContainText('Received "Which database should we use?"="MySQL 8 on 2 hosts".');
  await waitForTurnEnd(page);
  expect(await received(request, session)).toEqual({
    answered: { answers: [{ question: "Which database should we use?", labels: [], other: "MySQL 8 on 2 hosts", notes: null }] },
  });
  // The answered card lets go of the focus: the message box has it, and no ring stays on the card.
  await expect(page.getByRole("textbox", { name: "Message" })).toBeFocused();
});

test("on a two-question card, the keyboard answers both: Other typed, Enter moves on, a note is typed into", async ({
  page,
  request,
}) => {
  const session = await startSession(page, "a pair of questions");
  const features = card(page).getByRole("group", { name: "Which features do you want?" });
  const auth = card(page).getByRole("radiogroup", { name: "Which auth method?" });
  await expect(features.getByRole("checkbox", { name: "Dark mode" })).toBeFocused();

  await page.keyboard.press("1");
  await page.keyboard.press("0");
  await page.keyboard.type("Offline 2 go");
  await expect(features.getByRole("textbox", { name: "Other answer" })).toHaveValue("Offline 2 go");
  await expect(features.getByRole("checkbox", { name: "Dark mode" })).toBeChecked();
  await expect(features.getByRole("checkbox", { name: "i18n" })).not.toBeChecked();
  await expect(card(page).getByText("1 of 2 answered")).toBeVisible();

  // Enter in the text box moves to the question still unanswered; its number keys pick there.
  await page.keyboard.press("Enter");
  await expect(auth.getByRole("radio", { name: "JWT" })).toBeFocused();
  await page.keyboard.press("2");
  await expect(auth.getByRole("radio", { name: "Sessions" })).toBeChecked();
  await expect(card(page).getByText("Ready to submit")).toBeVisible();

  // Add a note: the focus goes into it, and what is typed lands there.
  await auth.getByRole("button", { name: "Add a note" }).click();
  const note = auth.getByRole("textbox", { name: "Note on “Auth”" });
  await expect(note).toBeFocused();
  await page.keyboard.type("keep 1 session per device");
  await expect(note).toHaveValue("keep 1 session per device");
  await expect(auth.getByRole("radio", { name: "Sessions" })).toBeChecked();

  await card(page).getByRole("button", { name: "Submit" }).click();
  await expect(card(page)).toHaveAttribute("data-state", "answered");
  await waitForTurnEnd(page);
  expect(await received(request, session)).toEqual({
    answered: {
      answers: [
        { question: "Which features do you want?", labels: ["Dark mode"], other: "Offline 2 go", notes: null },
        { question: "Which auth method?", labels: ["Sessions"], other: null, notes: "keep 1 session per device" },
      ],
    },
  });
});

test("while a question waits, the header, the session list and the card all say Waiting for you", async ({ page }) => {
  await startSession(page, "ask me a single question");
  await expect(card(page).getByRole("status")).toHaveText("Waiting for you");
  await expect(sessionStatus(page)).toContainText("Waiting for you");
  await expect(sessionStatus(page)).not.toContainText("Working");
  await expect(openInList(page)).toContainText("Waiting for you");
  await expect(page).toHaveTitle(/^● /);

  await card(page).getByRole("radio", { name: "Postgres" }).click();
  await waitForTurnEnd(page);
  await expect(openInList(page)).not.toContainText("Waiting");
});

/** Stands in for the browser's notifications and the tab's visibility, recording what is shown. */
async function fakeNotificationsAndVisibility(page: Page) {
  await page.addInitScript(() => {
    const w = window as any;
    const shown: { title: string; body: string }[] = (w.__notifications = []);
    let permission = "granted";
    w.__setPermission = (value: string) => {
      permission = value;
      window.dispatchEvent(new Event("focus"));
    };
    w.Notification = class {
      constructor(title: string, options?: { body?: string }) {
        shown.push({ title, body: options?.body ?? "" });
      }
      static get permission() {
        return permission;
      }
      static requestPermission() {
        permission = "granted";
        return Promise.resolve(permission);
      }
    };
    let hidden = false;
    w.__setHidden = (value: boolean) => {
      hidden = value;
      document.dispatchEvent(new Event("visibilitychange"));
    };
    Object.defineProperty(document, "hidden", { get: () => hidden, configurable: true });
    Object.defineProperty(document, "visibilityState", { get: () => (hidden ? "hidden" : "visible"), configurable: true });
  });
}

/** The notifications shown so far whose title names `about` (other tests' sessions ask too). */
async function notifications(page: Page, about: string): Promise<{ title: string; body: string }[]> {
  const shown: { title: string; body: string }[] = await page.evaluate(() => (window as any).__notifications);
  return shown.filter((n) => n.title.includes(about));
}

test("the bell: another session's question notifies a hidden tab and marks its title; it turns off; it follows the permission", async ({
  page,
  request,
}) => {
  await fakeNotificationsAndVisibility(page);
  await page.goto("/");
  await waitForHydration(page);
  // On every page, the welcome page included.
  const bell = page.getByRole("button", { name: /^Notifications are on/ });
  await expect(bell).toHaveAttribute("aria-pressed", "true");

  await page.evaluate(() => (window as any).__setHidden(true));
  const other = await call<{ id: string }>(request, "create_session", {});
  await call(request, "send_message", { session: other.id, text: "ask me a single question (in the background)" });
  await expect.poll(() => notifications(page, "(in the background)")).toEqual([
    { title: "“ask me a single question (in the background)” needs you", body: "The agent is waiting for your answer." },
  ]);
  await expect(page).toHaveTitle(/^● /);

  // Off: the next question, in yet another session, shows in the list but notifies nobody.
  await page.evaluate(() => (window as any).__setHidden(false));
  await bell.click();
  await expect(page.getByRole("button", { name: "Notifications are off: turn them on" })).toHaveAttribute(
    "aria-pressed",
    "false",
  );
  await page.evaluate(() => (window as any).__setHidden(true));
  const third = await call<{ id: string }>(request, "create_session", {});
  await call(request, "send_message", { session: third.id, text: "ask me a single question, quietly" });
  const list = page.getByRole("navigation", { name: "Session list" });
  await expect(list.getByRole("link", { name: /ask me a single question, quietly/ })).toContainText("Waiting for you");
  expect(await notifications(page, "quietly")).toEqual([]);

  // The permission taken back in the browser's settings: the bell says so when the tab is back.
  await page.evaluate(() => (window as any).__setPermission("default"));
  await expect(page.getByRole("button", { name: "Notify me when the agent asks something" })).toBeVisible();

  for (const id of [other.id, third.id]) {
    await call(request, "delete_session", { id });
  }
});

test("the welcome page offers the demo's messages as buttons, and one starts a session", async ({ page }) => {
  await page.goto("/");
  await waitForHydration(page);
  const examples = page.getByRole("group", { name: "Try a message" });
  await examples.getByRole("button", { name: "ask me a single question" }).click();
  await page.waitForURL(/\/s\/[0-9a-f]+$/);
  await expect(page.getByRole("article", { name: "You" })).toHaveText("ask me a single question");
  await card(page).getByRole("radio", { name: "SQLite" }).click();
  await waitForTurnEnd(page);
});

test("? lists the keys, and Esc closes the list", async ({ page }) => {
  await page.goto("/");
  await waitForHydration(page);
  // The message box has the focus on arrival (there, ? is a character): a click elsewhere first.
  await page.getByRole("heading", { level: 2 }).click();
  await page.keyboard.press("?");
  const help = page.getByRole("dialog", { name: "Keyboard shortcuts" });
  await expect(help).toBeVisible();
  await expect(help).toContainText("Other: type your own answer");
  await page.keyboard.press("Escape");
  await expect(help).toBeHidden();
  // In the message box, ? is a character.
  const box = page.getByRole("textbox", { name: "Message" });
  await box.click();
  await page.keyboard.type("why?");
  await expect(box).toHaveValue("why?");
  await expect(help).toBeHidden();
});
