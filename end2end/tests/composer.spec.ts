import { test, expect, type Page } from "@playwright/test";
import { call, sessionStatus, startSession, waitForTurnEnd } from "./helpers";

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
  await startSession(page, "stream please");
  await expect(page.getByRole("button", { name: "Stop" })).toBeVisible();
  await messageBox(page).press("Escape");
  await expect(sessionStatus(page)).toContainText("last turn stopped", { timeout: 30_000 });
});
