import { test, expect } from "@playwright/test";
import { agentReplies, composerHint, sessionStatus, startSession, waitForHydration, waitForTurnEnd } from "./helpers";

test("a message gets a reply that streams in, with a tool card", async ({ page }) => {
  // The page records whether it offered Stop while the reply was still being written, at each
  // change: a test that looks once may look after the turn ended (failed so in a make test).
  await page.addInitScript(() => {
    new MutationObserver(() => {
      const reply = document.querySelector('article[aria-label="Agent"]');
      const stop = [...document.querySelectorAll("button")].some(
        (b) => b.getAttribute("aria-label") === "Stop" || b.textContent?.trim() === "Stop",
      );
      if (stop && reply && !(reply.textContent ?? "").includes("All done.")) (window as any).stopWhileWriting = true;
    }).observe(document, { childList: true, subtree: true, characterData: true });
  });
  await startSession(page, "please stream something");
  await expect(page.getByRole("article", { name: "You" })).toHaveText("please stream something");

  const reply = agentReplies(page).first();
  await expect(reply).toContainText("Streaming reply:");
  // Streaming: the text grows while the turn runs.
  const early = (await reply.innerText()).length;
  await expect.poll(async () => (await reply.innerText()).length).toBeGreaterThan(early);

  await expect(reply).toContainText("zulu. The end.");
  const card = page.getByRole("group", { name: /^Bash: echo hello, (running|done)$/ });
  await expect(card).toBeVisible();
  await expect(page.getByRole("group", { name: "Bash: echo hello, done" })).toBeVisible();
  await expect(reply).toContainText("All done.");
  expect(await page.evaluate(() => (window as any).stopWhileWriting), "Stop was offered while the reply was written").toBe(true);
  await waitForTurnEnd(page);

  // The card opens to show the arguments and the result.
  await page.getByRole("group", { name: "Bash: echo hello, done" }).locator("summary").click();
  await expect(card.getByText('"command": "echo hello"')).toBeVisible();
  await expect(card.locator(".tool-result")).toHaveText("hello");
});

test("a reload shows the same history", async ({ page }) => {
  // Titled apart from the sessions of other runs against the same server (--repeat-each).
  const text = `stream please (run ${test.info().repeatEachIndex})`;
  await startSession(page, text);
  await expect(agentReplies(page).first()).toContainText("All done.");
  await waitForTurnEnd(page);
  const before = await page.locator(".thread").innerText();

  await page.reload();
  await waitForHydration(page);
  await expect(page.getByRole("article", { name: "You" })).toHaveText(text);
  await expect(page.getByRole("group", { name: "Bash: echo hello, done" })).toBeVisible();
  expect(await page.locator(".thread").innerText()).toBe(before);
  // The session list titles the session after its first message.
  await expect(page.getByRole("link", { name: text })).toHaveAttribute("aria-current", "page");
});

test("a reply in markdown streams in block by block and ends as the server renders it", async ({ page }) => {
  // The page itself records whether it ever showed the reply half-written: the list rendered and
  // the reply's last words not yet there (the turn pauses after the list). Watched from inside
  // the page, at each change, rather than by a test that may look only once the turn has ended.
  await page.addInitScript(() => {
    new MutationObserver(() => {
      const reply = document.querySelector('[role="article"][aria-label="Agent"], article[aria-label="Agent"]');
      const text = reply?.textContent ?? "";
      if (text.includes("rotated daily") && !text.includes("Done.")) (window as any).halfWritten = true;
    }).observe(document, { childList: true, subtree: true, characterData: true });
  });
  await startSession(page, "markdown please");
  const reply = agentReplies(page).first();
  await expect(reply.getByText("rotated daily")).toBeVisible();
  await expect(reply.getByRole("heading", { name: "Plan for the auth" })).toBeVisible();
  await expect(reply).toContainText("Done.");
  expect(await page.evaluate(() => (window as any).halfWritten), "the reply was shown half-written").toBe(true);
  await waitForTurnEnd(page);
  await expect(reply.getByRole("listitem")).toHaveCount(4);
  await expect(reply.getByRole("link", { name: "the RFC" })).toHaveAttribute("href", "https://example.com/rfc");
  await expect(reply.locator("pre code")).toHaveText("CREATE TABLE sessions (id text PRIMARY KEY);");
  await expect(reply.getByRole("table")).toContainText("review");
  await expect(reply.locator("blockquote em")).toHaveText("one hour");
  // The rendered elements (a page made in the browser may hold an empty comment node too).
  const html = async () =>
    (await agentReplies(page).first().locator(".markdown").innerHTML()).replace(/<!--[^>]*-->/g, "");
  const streamed = await html();

  // The whole text rendered at once by the server (and hydrated) is the same page.
  await page.reload();
  await waitForHydration(page);
  expect(await html()).toBe(streamed);
});

test("Enter sends, Shift+Enter starts a new line, and the composer says why it cannot send", async ({ page }) => {
  await startSession(page, "hello there");
  await expect(agentReplies(page).first()).toContainText("Echo: hello there");
  await waitForTurnEnd(page);

  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill("first line");
  await box.press("Shift+Enter");
  await box.pressSequentially("second line");
  await expect(box).toHaveValue("first line\nsecond line");
  await box.press("Enter");
  await expect(page.getByRole("article", { name: "You" }).nth(1)).toHaveText("first line\nsecond line");
  await expect(box).toHaveValue("");
  await waitForTurnEnd(page);

  // While the agent works, Send stays enabled: what is sent now is queued for its next turn.
  await box.fill("a long one");
  await box.press("Enter");
  await expect(page.getByRole("button", { name: "Stop" })).toBeVisible();
  await box.fill("next message");
  await expect(page.getByRole("button", { name: "Send" })).toBeEnabled();
  await expect(composerHint(page)).toHaveText(
    "The agent is working: what you send now is queued for its next turn. Esc stops it.",
  );
});

test("Stop interrupts the turn", async ({ page }) => {
  await startSession(page, "a long one please");
  const reply = agentReplies(page).first();
  await expect(reply).toContainText("w005");
  await page.getByRole("button", { name: "Stop" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Stopped. Send a message to go on." })).toBeVisible();
  await expect(sessionStatus(page)).toContainText("Ready · last turn stopped");
  const stoppedAt = await reply.innerText();
  expect(stoppedAt).not.toContain("w300");
  // The composer works again.
  await expect(page.getByRole("button", { name: "Send" })).toBeDisabled();
  await page.getByRole("textbox", { name: "Message" }).fill("again");
  await expect(page.getByRole("button", { name: "Send" })).toBeEnabled();
  // Nothing more arrives after the stop: the next turn streams in and ends, and meanwhile the
  // stopped reply has not grown by a word (a reply still streaming would have, at the
  // scenario's pace of a word every 40 ms).
  await page.getByRole("button", { name: "Send" }).click();
  await expect(agentReplies(page).nth(1)).toContainText("Echo: again");
  await waitForTurnEnd(page);
  expect(await reply.innerText()).toBe(stoppedAt);
});

test("a failing tool is shown as failed", async ({ page }) => {
  await startSession(page, "make it fail");
  const card = page.getByRole("group", { name: "Bash: false, failed" });
  await expect(card).toBeVisible();
  await card.locator("summary").click();
  await expect(card.getByRole("heading", { name: "Error" })).toBeVisible();
  await expect(card.locator(".tool-result")).toHaveText("exit status 1");
});

test("agent output cannot run script or link to javascript", async ({ page }) => {
  await startSession(page, "say something unsafe");
  const reply = agentReplies(page).first();
  await expect(reply).toContainText("<script>window.__pwned = true</script>");
  await expect(reply).toContainText("<b>raw html</b>");
  await expect(reply.locator("script, b")).toHaveCount(0);
  await expect(reply.getByRole("link", { name: "bad link" })).toHaveAttribute("href", "#");
  await reply.getByRole("link", { name: "bad link" }).click();
  expect(await page.evaluate(() => (window as any).__pwned)).toBeUndefined();
});
