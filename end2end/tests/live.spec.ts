import { test, expect, type APIRequestContext } from "@playwright/test";
import { agentReplies, call, LONG_REPLY, startSession, waitForHydration, waitForTurnEnd } from "./helpers";

/** How many of the long reply's numbered words `text` holds. */
function numberedWords(text: string): number {
  return (text.match(/\bw\d{3}\b/g) ?? []).length;
}

/** The agent's first reply in `session` as the server has stored it so far. */
async function storedReply(request: APIRequestContext, session: string): Promise<string> {
  const view = await call<any>(request, "load_session", { id: session });
  const reply = view.thread.messages.find((m: any) => m.role === "assistant");
  return (reply?.blocks ?? []).map((b: any) => b.text?.text ?? "").join("");
}

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

test("a dropped connection recovers without losing or repeating an event", async ({ page, context, request }) => {
  const session = await startSession(page, "a long one");
  // The reply's words, without the line under it that says what the turn used.
  const reply = agentReplies(page).first().locator(".markdown");
  await expect(reply).toContainText("w010");

  await context.setOffline(true);
  await expect(page.getByRole("status").filter({ hasText: "Reconnecting" })).toBeVisible();
  const whileOffline = await reply.innerText();
  // Nothing arrives while offline, although the turn goes on: the server stores words the page
  // has not shown. Ten words ahead (0.4 s at the scenario's pace) rather than one, so that a
  // connection wrongly left open would have had the time to deliver the first of them.
  await expect
    .poll(async () => numberedWords(await storedReply(request, session)))
    .toBeGreaterThanOrEqual(numberedWords(whileOffline) + 10);
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
  // Titled apart from the sessions of other runs against the same server (--repeat-each).
  const title = `made elsewhere (run ${test.info().repeatEachIndex})`;
  await startSession(other, title);
  await expect(page.getByRole("link", { name: title })).toBeVisible();
});
