// A session's link opened while the agent waits for the person (a notification's, say): the
// card the server drew answers with one click before the page's code runs, and the page's
// WebAssembly waits until then (issue 38, src/ui/early_answer.rs).
import { test, expect, type Page } from "@playwright/test";
import { agentReplies, card, startSession, waitForHydration, waitForTurnEnd } from "./helpers";

/** A session whose agent waits on a card, started in `page`; its link opened in a new tab. */
async function openedFromItsLink(page: Page, text: string, cardOf: (p: Page) => ReturnType<typeof card>): Promise<Page> {
  const session = await startSession(page, text);
  await expect(cardOf(page)).toHaveAttribute("data-state", "pending");
  const tab = await page.context().newPage();
  await tab.goto(`/s/${session}`);
  await expect(tab.locator("html")).toHaveAttribute("data-answers", "early");
  return tab;
}

const newSession = (p: Page) => p.getByRole("button", { name: "New session", exact: true });
const commandCard = (p: Page) => p.getByRole("group", { name: "The agent wants to run a command" }).last();

test("a question opened from its link is answered with one click before the page's code runs", async ({ page }) => {
  const tab = await openedFromItsLink(page, "ask me a single question", card);
  // Nothing of the page's own has run: it is not interactive yet, and its card answers.
  await expect(newSession(tab)).toBeDisabled();
  await expect(card(tab)).toHaveAttribute("data-state", "pending");
  await card(tab).getByRole("radio", { name: "Postgres" }).click();
  // Sent from the server's card; then the page takes over and shows what holds.
  await waitForHydration(tab);
  await expect(card(tab)).toHaveAttribute("data-state", "answered");
  await expect(card(tab).getByRole("radio", { name: "Postgres" })).toBeChecked();
  await expect(agentReplies(tab).first()).toContainText('Received "Which database should we use?"="Postgres".');
  // The first tab, live all along, shows the same.
  await expect(card(page)).toHaveAttribute("data-state", "answered");
  await waitForTurnEnd(tab);
});

test("a permission opened from its link is allowed with one click before the page's code runs", async ({ page }) => {
  const tab = await openedFromItsLink(page, "run the command", commandCard);
  await expect(newSession(tab)).toBeDisabled();
  await commandCard(tab).getByRole("button", { name: "Allow once" }).click();
  await waitForHydration(tab);
  await expect(commandCard(tab)).toHaveAttribute("data-state", "allowed");
  await expect(agentReplies(tab).last()).toContainText("Ran the command.");
});

test("typing in the message box instead starts the page at once, and what was typed stays", async ({ page }) => {
  const tab = await openedFromItsLink(page, "ask me a single question", card);
  const box = tab.getByRole("textbox", { name: "Message" });
  await box.click();
  await tab.keyboard.type("and then the tests");
  await waitForHydration(tab);
  await expect(box).toHaveValue("and then the tests");
  // The card is the page's own now, and answers as always.
  await card(tab).getByRole("radio", { name: "Postgres" }).click();
  await expect(card(tab)).toHaveAttribute("data-state", "answered");
  await expect(box).toHaveValue("and then the tests");
});

test("a card that needs Submit is not answered early: the page starts at once", async ({ page }) => {
  const session = await startSession(page, "a pair of questions");
  await expect(card(page)).toHaveAttribute("data-state", "pending");
  const tab = await page.context().newPage();
  await tab.goto(`/s/${session}`);
  await waitForHydration(tab);
  await expect(tab.locator("html")).not.toHaveAttribute("data-answers", "early");
  await expect(card(tab).getByRole("button", { name: "Submit" })).toBeVisible();
});
