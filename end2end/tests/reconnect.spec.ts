// What a tab does when its server goes away and comes back, and what two servers on one machine
// do to each other (issue 26). Each test runs servers of its own (the release build with the
// scripted agent), killed whatever the test's outcome.
import { expect, type Page } from "@playwright/test";
import {
  agentReplies,
  call,
  card,
  composerHint,
  OwnServer,
  ownServerTest,
  startSession,
  waitForHydration,
  waitForTurnEnd,
} from "./helpers";

const test = ownServerTest;

/** The banner that says the live stream is down (or why it ended). */
function banner(page: Page) {
  return page.locator(".connection-banner");
}

test("a tab waits out a server that stops for several seconds: it reconnects, and an answer clicked meanwhile is sent", async ({
  page,
  server,
}) => {
  await startSession(page, "park this question");
  const logs = card(page).getByRole("radiogroup", { name: "Where should the logs go?" });
  await expect(logs.getByRole("radio", { name: "Files" })).toBeEnabled();

  // A graceful stop parks the question; the tab says it is reconnecting, never that the session
  // is gone.
  expect(await server.stop(), server.log()).toBe(0);
  await expect(banner(page)).toContainText("Reconnecting…");
  await expect(composerHint(page)).not.toContainText("no longer available");
  await expect(page.getByRole("heading", { level: 1 })).not.toHaveText("This session does not exist");

  // An option clicked while the server is down: the card keeps the choice and says so plainly.
  await logs.getByRole("radio", { name: "Journald" }).click();
  await expect(card(page)).toContainText("the server cannot be reached. Your choice is kept");
  await expect(card(page)).not.toHaveAttribute("data-state", "submitting");
  await expect(logs.getByRole("radio", { name: "Journald" })).toBeChecked();
  // Down for several seconds, as a restart by hand would be (the tab retries meanwhile).
  await page.waitForTimeout(4_000);
  await expect(banner(page)).toContainText("Reconnecting…");

  // The banner offers to try at once (the tab also tries by itself, well within a second).
  const retry = banner(page).getByRole("button", { name: "Retry now" });
  await expect(retry).toBeVisible();
  await retry.click();
  await expect(banner(page)).toContainText("Reconnecting…");

  await server.start();
  // Back: the tab reconnects by itself (it tries every 0.8 s at most, issue 37: the unit test of
  // `live::retry_delay` holds that bound, which a wait here would only measure on a loaded
  // machine), the kept answer is sent, and the parked agent resumes with it.
  await expect(banner(page)).toBeHidden();
  await expect(retry).toBeHidden();
  await expect(card(page)).toHaveAttribute("data-state", "answered");
  await expect(agentReplies(page).last()).toContainText('Resumed: you chose "Where should the logs go?"="Journald".');
  await waitForTurnEnd(page);
});

test.describe("with --park-after 3s", () => {
  test.use({ serverArgs: ["--park-after", "3s"] });

  test("the list stays put while another session parks in the background, and marks it instead", async ({ page }) => {
    // A session that asks, and will park in a few seconds, in the background.
    const background = await call<{ id: string }>(page.request, "create_session", {});
    await call(page.request, "send_message", { session: background.id, text: "park this question in the background" });
    // The person then works in another one: it is first in the list.
    await startSession(page, "please stream something");
    const list = page.getByRole("navigation", { name: "Session list" });
    const entries = list.getByRole("link");
    await expect(entries.first()).toContainText("please stream something");

    // The background session parks: it says Paused where it is, and does not move up.
    const parked = list.getByRole("link", { name: /park this question in the background/ });
    await expect(parked).toContainText("Paused", { timeout: 15_000 });
    await expect(entries.first()).toContainText("please stream something");
    await expect(entries.nth(1)).toContainText("park this question in the background");
    // Every entry shows a time.
    await expect(parked.locator(".session-time")).toHaveText(/^\d\d:\d\d$/);

    // Answering it is the person's own doing: then it moves up.
    await parked.click();
    await card(page).getByRole("radio", { name: "Files" }).click();
    await expect(entries.first()).toContainText("park this question in the background");
  });
});

test.describe("two servers on one machine", () => {
  // Browsers that have not signed in: no bearer header, only cookies.
  test.use({ extraHTTPHeaders: {} });

  test("signed in to both at once, on two ports, neither signs the other out", async ({ browser }) => {
    const first = await OwnServer.start([], { ASKBRIDGE_TOKEN: "first-server-token-0123456789abcdef" });
    const second = await OwnServer.start([], { ASKBRIDGE_TOKEN: "second-server-token-0123456789abcdef" });
    const context = await browser.newContext({ extraHTTPHeaders: {} });
    try {
      const a = await context.newPage();
      const b = await context.newPage();
      await a.goto(`${first.url}/?token=${first.token}`);
      await waitForHydration(a);
      await b.goto(`${second.url}/?token=${second.token}`);
      await waitForHydration(b);
      // Cookies belong to the host, not the port: each server has a cookie of its own name.
      const names = (await context.cookies()).map((c) => c.name).filter((n) => n.startsWith("askbridge_token"));
      expect(new Set(names).size).toBe(2);

      // Both tabs still work, after a reload of each.
      for (const [page, url] of [
        [a, first.url],
        [b, second.url],
      ] as const) {
        await page.goto(`${url}/`);
        await waitForHydration(page);
        await expect(page.getByRole("heading", { name: "Sign in to AskBridge" })).toHaveCount(0);
        const box = page.getByRole("textbox", { name: "Message" });
        await box.fill(`hello from ${url}`);
        await box.press("Enter");
        await expect(page.getByRole("article", { name: "You" })).toHaveText(`hello from ${url}`);
      }
    } finally {
      await context.close();
      await first.kill();
      await second.kill();
    }
  });

  test("a tab whose sign-in went stale stops retrying and says so", async ({ browser }) => {
    const server = await OwnServer.start([], { ASKBRIDGE_TOKEN: "token-before-the-change-0123456789" });
    const context = await browser.newContext({ extraHTTPHeaders: {} });
    try {
      const page = await context.newPage();
      await page.goto(`${server.url}/?token=${server.token}`);
      await waitForHydration(page);
      // The server comes back with another token (its data folder kept).
      await server.stop();
      (server as any).env.ASKBRIDGE_TOKEN = "token-after-the-change-0123456789ab";
      await server.start();
      await expect(banner(page)).toContainText("Signed out", { timeout: 30_000 });
      await expect(composerHint(page)).toHaveText("Signed out: open the new sign-in link.");
      // The new link signs in again.
      await page.goto(`${server.url}/?token=${server.token}`);
      await waitForHydration(page);
      await expect(banner(page)).toBeHidden();
    } finally {
      await context.close();
      await server.kill();
    }
  });
});
