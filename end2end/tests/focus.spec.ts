import { test, expect, type Page } from "@playwright/test";
import { agentReplies, card, composerHint, startSession, waitForHydration, waitForTurnEnd } from "./helpers";

// Keys go only where the person put them: a card that opens while they write in the message box
// leaves the keyboard there, and says where it is instead.

const QUESTION = "Which authentication method should we use?";

function messageBox(page: Page) {
  return page.getByRole("textbox", { name: "Message" });
}

function question(page: Page) {
  return card(page).getByRole("radiogroup", { name: QUESTION });
}

/** Two frames: whatever a card does once it opens (it takes the focus in the next frame) is done. */
async function twoFrames(page: Page) {
  await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
}

test("a sentence typed on while a card appears stays in the message box, and Enter queues it: it answers nothing", async ({ page }) => {
  await startSession(page, "meanwhile: set up auth");
  await expect(messageBox(page)).toBeFocused();
  // The person goes on with their next thought while the agent works.
  await page.keyboard.type("and please keep");
  await expect(card(page)).toHaveAttribute("data-state", "pending");
  await twoFrames(page);
  await page.keyboard.type(" the old login page working for now");
  await page.keyboard.press("Enter");

  // The whole sentence is a message, typed ahead: it waits for the answer.
  const queued = page.getByRole("article", { name: "Queued message" });
  await expect(queued).toContainText("and please keep the old login page working for now");
  await expect(queued).toContainText("Queued: sent once you have answered above");
  await expect(messageBox(page)).toBeFocused();
  await expect(messageBox(page)).toHaveValue("");
  await expect(card(page)).toHaveAttribute("data-state", "pending");
  for (const option of ["JWT", "Sessions", "Other"]) {
    await expect(question(page).getByRole("radio", { name: option })).not.toBeChecked();
  }
  // The card says where it is, and the key that goes to it.
  await expect(composerHint(page)).toHaveText(/asks you something above: press Esc to go to it/);

  // Text typed and not sent stays in the box; Esc goes to the card.
  await page.keyboard.type("draft");
  await page.keyboard.press("Escape");
  await expect(question(page).getByRole("radio", { name: "JWT" })).toBeFocused();
  await expect(messageBox(page)).toHaveValue("draft");
  await page.keyboard.press("2");
  await expect(card(page)).toHaveAttribute("data-state", "answered");
  await expect(page.getByText(`Received "${QUESTION}"="Sessions".`)).toBeVisible();
  // Then the queued message gets the next turn, as the person wrote it.
  await expect(agentReplies(page).last()).toContainText("Echo: and please keep the old login page working for now");
  await expect(queued).toHaveCount(0);
  await waitForTurnEnd(page);
  await expect(messageBox(page)).toHaveValue("draft");
});

test("0 the moment the card shows, then text and Enter: that text as Other, or nothing yet", async ({ page }) => {
  await startSession(page, "meanwhile: which auth");
  await expect(question(page)).toBeVisible();
  await page.keyboard.press("0");
  await page.keyboard.type("OAuth 2 via Google");
  await page.keyboard.press("Enter");

  // Where the keys went shows once the page has drawn it: a message queued, or the card answered
  // (drawn so once the agent has the answer, `CardLife::phase`).
  const queued = page.getByRole("article", { name: "Queued message" });
  const answered = card(page).and(page.locator('[data-state="answered"]'));
  await expect(queued.or(answered).first()).toBeVisible();
  if (await queued.isVisible()) {
    // The 0 came before the card could take the keyboard: everything went to the message box, and
    // Enter queued it as a message for after the answer.
    await expect(page.getByRole("article", { name: "Queued message" })).toContainText("0OAuth 2 via Google");
    for (const option of ["JWT", "Sessions"]) {
      await expect(question(page).getByRole("radio", { name: option })).not.toBeChecked();
    }
  } else {
    await expect(card(page)).toHaveAttribute("data-state", "answered");
    await expect(question(page).getByRole("textbox", { name: "Other answer" })).toHaveValue("OAuth 2 via Google");
    await expect(agentReplies(page).last()).toContainText(`Received "${QUESTION}"="OAuth 2 via Google".`);
  }
});

test("a focus the card placed chooses nothing: Space and Enter there leave it waiting", async ({ page }) => {
  await startSession(page, "ask me a single question");
  const sqlite = card(page).getByRole("radio", { name: "SQLite" });
  await expect(sqlite).toBeFocused();
  await page.keyboard.press(" ");
  await page.keyboard.press("Enter");
  await twoFrames(page);
  await expect(sqlite).not.toBeChecked();
  await expect(card(page)).toHaveAttribute("data-state", "pending");
  // A key the person chose still answers.
  await page.keyboard.press("2");
  await expect(card(page)).toHaveAttribute("data-state", "answered");
  await expect(card(page).getByRole("radio", { name: "Postgres" })).toBeChecked();
});

test("a permission card that took the focus itself takes no Enter: y allows", async ({ page }) => {
  await startSession(page, "run the command");
  const approval = page.getByRole("group", { name: "The agent wants to run a command" });
  await expect(approval).toBeFocused();
  await page.keyboard.press("Enter");
  await twoFrames(page);
  await expect(approval).toHaveAttribute("data-state", "pending");
  await page.keyboard.press("y");
  await expect(approval).toHaveAttribute("data-state", "allowed");
  await waitForTurnEnd(page);
});

for (const viewport of [
  { width: 1280, height: 800 },
  { width: 375, height: 812 },
]) {
  test(`after a reload the card that takes the focus is wholly on screen, above the message box (${viewport.width}×${viewport.height})`, async ({
    page,
  }) => {
    await page.setViewportSize(viewport);
    // Enough thread above the card that it could open below the fold.
    await startSession(page, "markdown first");
    await waitForTurnEnd(page);
    await messageBox(page).fill("meanwhile: and which auth?");
    await expect(page.getByRole("button", { name: "Send" })).toBeEnabled();
    await messageBox(page).press("Enter");
    await expect(page.getByRole("article", { name: "You" }).last()).toHaveText("meanwhile: and which auth?");
    await expect(card(page)).toHaveAttribute("data-state", "pending");

    await page.reload();
    await waitForHydration(page);
    const jwt = question(page).getByRole("radio", { name: "JWT" });
    await expect(jwt).toBeFocused();
    await twoFrames(page);
    const box = (await card(page).boundingBox())!;
    const composer = (await page.locator("form.composer").boundingBox())!;
    expect(box.y).toBeGreaterThanOrEqual(0);
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(viewport.width);
    expect(box.y + box.height).toBeLessThanOrEqual(composer.y);
  });
}

test("a two-question card asks before Esc skips both", async ({ page }) => {
  await startSession(page, "a pair of questions");
  await expect(card(page).getByRole("checkbox", { name: "Dark mode" })).toBeFocused();
  await page.keyboard.press("Escape");
  await expect(card(page).getByText("Esc again to skip both questions")).toBeVisible();
  // Any other key keeps the card.
  await page.keyboard.press("1");
  await expect(card(page).getByText("Esc again to skip both questions")).toBeHidden();
  await expect(card(page).getByRole("checkbox", { name: "Dark mode" })).toBeChecked();
  await page.keyboard.press("Escape");
  await page.keyboard.press("Escape");
  await expect(card(page)).toHaveAttribute("data-state", "declined");
});
