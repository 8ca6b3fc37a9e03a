import { test, expect, type Page } from "@playwright/test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import {
  agentReplies,
  call,
  card,
  composerHint,
  sessionStatus,
  startSession,
  waitForHydration,
  waitForTurnEnd,
} from "./helpers";

// The message box takes a terminal's keys: ↑/↓ bring back earlier messages, Shift+Tab switches
// the permission mode, Esc stops the turn.

function messageBox(page: Page) {
  return page.getByRole("textbox", { name: "Message" });
}

async function send(page: Page, text: string) {
  await messageBox(page).fill(text);
  await messageBox(page).press("Enter");
  await waitForTurnEnd(page);
}

test("↑ and ↓ in the empty box bring back the session's earlier messages, then what was typed", async ({ page }) => {
  await startSession(page, "first words");
  await waitForTurnEnd(page);
  await send(page, "second words\nwith a second line");
  const box = messageBox(page);
  await expect(box).toHaveValue("");
  await box.press("ArrowUp");
  await expect(box).toHaveValue("second words\nwith a second line");
  await box.press("ArrowUp");
  await expect(box).toHaveValue("first words");
  // The oldest stays.
  await box.press("ArrowUp");
  await expect(box).toHaveValue("first words");
  await box.press("ArrowDown");
  await expect(box).toHaveValue("second words\nwith a second line");
  await box.press("ArrowDown");
  await expect(box).toHaveValue("");

  // In text being written, ↑ moves the caret, as ever.
  await box.fill("line one\nline two");
  await box.press("ArrowUp");
  await expect(box).toHaveValue("line one\nline two");
});

test("Enter pressed while the message before is still on its way sends the new one after it, each once", async ({
  page,
}) => {
  await startSession(page, "first words");
  await waitForTurnEnd(page);
  // The answer to the next message is held back (a loaded machine, a slow network): the page
  // still has it on its way when the next Enter comes. Enter used to do nothing then.
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let sends = 0;
  await page.route("**/api/send_message", async (route) => {
    sends += 1;
    const response = await route.fetch();
    if (sends === 1) await held;
    await route.fulfill({ response });
  });
  const box = messageBox(page);
  await box.click();
  await page.keyboard.type("second words");
  await page.keyboard.press("Enter");
  await expect(composerHint(page)).toHaveText("Sending…");
  // The box still holds the text on its way: the next message replaces it, as a person would.
  await page.keyboard.press("ControlOrMeta+a");
  await page.keyboard.type("third words");
  await page.keyboard.press("Enter");
  release();
  await expect(page.getByRole("article", { name: "You" })).toHaveText(["first words", "second words", "third words"]);
  await expect(box).toHaveValue("");
  await waitForTurnEnd(page);
  await expect(agentReplies(page)).toHaveCount(3);
  expect(sends).toBe(2);
});

test("Shift+Tab in the box switches the permission mode, and the session runs in it", async ({ page, request }) => {
  const session = await startSession(page, "hello there");
  await waitForTurnEnd(page);
  const mode = page.getByRole("combobox", { name: "Permission mode" });
  await expect(mode).toHaveValue("default");
  await messageBox(page).press("Shift+Tab");
  await expect(mode).toHaveValue("acceptEdits");
  await expect(messageBox(page)).toBeFocused();
  await expect
    .poll(async () => (await call<any>(request, "load_session", { id: session })).thread.turn.permission_mode)
    .toBe("acceptEdits");
  await messageBox(page).press("Shift+Tab");
  await expect(mode).toHaveValue("plan");
  await messageBox(page).press("Shift+Tab");
  await expect(mode).toHaveValue("default");
});

test("Esc in the box stops the agent's turn", async ({ page }) => {
  // A turn that stays open for a minute: the Esc cannot land after its end (a reply of a few
  // seconds once ended first on a busy machine, 29 Nov).
  await startSession(page, "holdopen please");
  await expect(agentReplies(page).last()).toContainText("Holding the turn open.");
  await expect(page.getByRole("button", { name: "Stop" })).toBeVisible();
  await messageBox(page).press("Escape");
  await expect(sessionStatus(page)).toContainText("last turn stopped", { timeout: 30_000 });
  await expect(page.getByText("Held to the end.")).toHaveCount(0);
});

// Typing ahead: what is sent while the agent works or waits is queued, shown under the thread,
// editable and removable, and the agent's next turn takes it.

function queued(page: Page) {
  return page.getByRole("article", { name: "Queued message" });
}

test("a message sent while the agent works is queued, shown, and is the agent's next turn", async ({ page }) => {
  // Three hundred words at the scenario's pace: a turn long enough to look at its queue, however
  // busy the machine.
  await startSession(page, "a long one please");
  await expect(agentReplies(page).first()).toContainText("w001");
  await messageBox(page).fill("and then the tests");
  await expect(page.getByRole("button", { name: "Send" })).toBeEnabled();
  await messageBox(page).press("Enter");
  await expect(queued(page)).toContainText(/and then the tests[\s\S]*Queued: sent when the agent's turn ends/);
  await expect(messageBox(page)).toHaveValue("");

  // The turn ends; the queued message is the next one's, in the thread where it starts.
  await expect(agentReplies(page).last()).toContainText("Echo: and then the tests", { timeout: 30_000 });
  await expect(queued(page)).toHaveCount(0);
  await expect(page.getByRole("article", { name: "You" }).last()).toHaveText("and then the tests");
  await expect(agentReplies(page).first()).toContainText("w300");
  await waitForTurnEnd(page);
});

test("a message sent while a card waits is queued, can be edited and removed, survives a reload, and goes after the answer", async ({
  page,
}) => {
  const session = await startSession(page, "ask me a single question");
  await expect(card(page)).toHaveAttribute("data-state", "pending");
  await messageBox(page).click();
  await messageBox(page).fill("use migrations too");
  await messageBox(page).press("Enter");
  await expect(queued(page)).toHaveCount(1);
  await messageBox(page).fill("never mind this one");
  await messageBox(page).press("Enter");
  await expect(queued(page)).toHaveCount(2);
  await expect(queued(page).first()).toContainText("Queued: sent once you have answered above");
  await expect(card(page)).toHaveAttribute("data-state", "pending");

  // Edited: Enter saves; removed: gone.
  await queued(page).first().getByRole("button", { name: "Edit" }).click();
  const editor = queued(page).first().getByRole("textbox", { name: "Edit the queued message" });
  await expect(editor).toBeFocused();
  await editor.fill("use migrations too, with sqlx");
  await editor.press("Enter");
  await expect(queued(page).first()).toContainText("use migrations too, with sqlx");
  await queued(page).nth(1).getByRole("button", { name: "Remove" }).click();
  await expect(queued(page)).toHaveCount(1);

  // A reload shows it as it is: the server keeps the queue.
  await page.reload();
  await waitForHydration(page);
  await expect(queued(page)).toHaveCount(1);
  await expect(queued(page)).toContainText("use migrations too, with sqlx");

  await card(page).getByRole("radio", { name: "Postgres" }).click();
  await expect(page.getByText('Received "Which database should we use?"="Postgres".')).toBeVisible();
  await expect(agentReplies(page).last()).toContainText("Echo: use migrations too, with sqlx");
  await expect(queued(page)).toHaveCount(0);
  await waitForTurnEnd(page);
  const thread = (await call<any>(page.request, "load_session", { id: session })).thread;
  const mine = thread.messages.filter((m: any) => m.role === "user").map((m: any) => m.blocks[0].text.text);
  expect(mine).toEqual(["ask me a single question", "use migrations too, with sqlx"]);
});

test("after Stop, what was queued waits for Send now", async ({ page }) => {
  await startSession(page, "a long one please");
  await expect(agentReplies(page).first()).toContainText("w005");
  await messageBox(page).fill("then summarise");
  await messageBox(page).press("Enter");
  await expect(queued(page)).toHaveCount(1);
  await page.getByRole("button", { name: "Stop" }).click();
  await expect(queued(page)).toContainText("Not sent: you stopped the agent");
  await page.getByRole("button", { name: "Send now" }).click();
  await expect(agentReplies(page).last()).toContainText("Echo: then summarise");
  await expect(queued(page)).toHaveCount(0);
  await waitForTurnEnd(page);
});

test("@ lists the session folder's files, filtered as typed; Enter puts the path in the box, Esc closes the list", async ({
  page,
}) => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), "askbridge-at-"));
  for (const file of ["src/session/manager.rs", "src/main.rs", "README.md"]) {
    fs.mkdirSync(path.dirname(path.join(folder, file)), { recursive: true });
    fs.writeFileSync(path.join(folder, file), "");
  }
  try {
    const summary = await call<any>(page.request, "create_session", { workdir: folder });
    await page.goto(`/s/${summary.id}`);
    await waitForHydration(page);
    const box = messageBox(page);
    await box.click();
    await box.pressSequentially("look at @");
    const list = page.getByRole("listbox", { name: "Files" });
    await expect(list.getByRole("option")).toHaveCount(3);
    await box.pressSequentially("mana");
    await expect(list.getByRole("option")).toHaveCount(1);
    await expect(list.getByRole("option").first()).toHaveAttribute("aria-selected", "true");
    await expect(box).toHaveAttribute("aria-activedescendant", "file-option-0");
    // The next word typed at once, as a quick hand does: the path and the caret are in place
    // before the next key lands. The keys go one after another, as a keyboard sends them (sent
    // side by side, the two calls could reach the page in either order, "a" before Enter: a
    // flake of 29 Nov that no person's keyboard can make).
    await page.keyboard.press("Enter");
    await page.keyboard.type("and");
    await expect(box).toHaveValue("look at @src/session/manager.rs and");
    await expect(list).toHaveCount(0);
    await box.pressSequentially(" @READ");
    await expect(list.getByRole("option").first()).toContainText("README.md");
    await box.press("Escape");
    await expect(list).toHaveCount(0);
    await expect(box).toHaveValue("look at @src/session/manager.rs and @READ");
    // Esc closed the list and nothing else: no turn ran.
    await expect(page.getByRole("button", { name: "Send" })).toBeEnabled();
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
  }
});
