import { test, expect } from "@playwright/test";
import { agentReplies, LONG_REPLY, startSession, waitForHydration, waitForTurnEnd } from "./helpers";

test("a second tab on the same session sees the same live events", async ({ page, context }) => {
  const id = await startSession(page, "hello");
  await waitForTurnEnd(page);

  const other = await context.newPage();
  await other.goto(`/s/${id}`);
  await waitForHydration(other);

  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill("stream from the first tab");
  await box.press("Enter");

  // The other tab sees the message, the streaming reply and the tool card, live.
  await expect(other.getByRole("article", { name: "You" }).nth(1)).toHaveText("stream from the first tab");
  await expect(other.getByRole("button", { name: "Stop" })).toBeVisible();
  await expect(agentReplies(other).nth(1)).toContainText("Streaming reply:");
  await expect(other.getByRole("group", { name: "Bash: echo hello, done" })).toBeVisible();
  await expect(agentReplies(other).nth(1)).toContainText("All done.");
  await waitForTurnEnd(other);
  expect(await other.locator(".thread").innerText()).toBe(await page.locator(".thread").innerText());
});

test("a dropped connection recovers without losing or repeating an event", async ({ page, context }) => {
  await startSession(page, "a long one");
  const reply = agentReplies(page).first();
  await expect(reply).toContainText("w010");

  await context.setOffline(true);
  await expect(page.getByRole("status").filter({ hasText: "Reconnecting" })).toBeVisible();
  const whileOffline = await reply.innerText();
  await page.waitForTimeout(2_000);
  // Nothing arrives while offline.
  expect(await reply.innerText()).toBe(whileOffline);

  await context.setOffline(false);
  await expect(page.getByRole("status").filter({ hasText: "Reconnecting" })).toHaveCount(0);
  await waitForTurnEnd(page);
  // Every word exactly once, in order.
  expect((await reply.innerText()).trim()).toBe(LONG_REPLY);
});

test("the session list follows changes made in another tab", async ({ page, context }) => {
  await page.goto("/");
  await waitForHydration(page);
  const other = await context.newPage();
  await startSession(other, "made elsewhere");
  await expect(page.getByRole("link", { name: "made elsewhere" })).toBeVisible();
});
