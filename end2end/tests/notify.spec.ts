// Only what nobody sees is announced (issue 37): the page tells the server which session a tab
// shows, and a webhook (`--notify-url`) is posted a question only when no tab showed it through
// the grace period (`--notify-after 1s` here, ten seconds by default), as pushes are.
import { test, expect } from "@playwright/test";
import * as http from "node:http";
import { card, OwnServer, startSession, waitForHydration } from "./helpers";

/** A webhook receiver on loopback: keeps every body posted to it. */
async function webhookReceiver(): Promise<{ url: string; posts: any[]; close: () => void }> {
  const posts: any[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      posts.push(JSON.parse(Buffer.concat(chunks).toString()));
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/hook`, posts, close: () => server.close() };
}

test("a webhook gets nothing for a card on screen, and one post for a card nobody sees", async ({ page }) => {
  const receiver = await webhookReceiver();
  const server = await OwnServer.start(["--notify-url", receiver.url, "--notify-after", "1s", "--park-after", "10m"]);
  try {
    await page.goto(server.url);
    const shown = await startSession(page, "ask me a single question");
    await expect(card(page).getByRole("radio", { name: "SQLite" })).toBeEnabled();

    // A question in another session, which no tab shows, opens after the first: once its post
    // has come, the first one's grace period is long over.
    const api = async (name: string, body: object) => {
      const response = await page.request.post(`${server.url}/api/${name}`, { data: body });
      expect(response.ok(), `${name}: ${await response.text()}`).toBeTruthy();
      return response.json();
    };
    const unseen = (await api("create_session", {})).id;
    await api("send_message", { session: unseen, text: "ask me a single question" });
    await expect.poll(() => receiver.posts.length, { timeout: 30_000 }).toBeGreaterThan(0);
    expect(receiver.posts).toHaveLength(1);
    expect(receiver.posts[0]).toMatchObject({ event: "opened", session: unseen, question: "Which database should we use?" });
    expect(receiver.posts.some((post) => post.session === shown)).toBe(false);
  } finally {
    await server.kill();
    receiver.close();
  }
});

test.describe("the bell", () => {
  // Signed in by the cookie alone, as on a phone: the service worker's own requests carry no
  // token header.
  test.use({ extraHTTPHeaders: {} });

  test("says why when notifications are blocked, and when this browser cannot be subscribed", async ({ context }) => {
    const server = await OwnServer.start();
    try {
      const page = await context.newPage();
      await page.goto(`${server.url}/?token=${encodeURIComponent(server.token)}`);
      await waitForHydration(page);

      // Blocked in the browser's settings: the click says where to allow them.
      // Blocked as the browser's site settings block it (Playwright grants, but cannot deny).
      const { targetInfo } = await (await context.newCDPSession(page)).send("Target.getTargetInfo");
      const browser = await context.browser()!.newBrowserCDPSession();
      await browser.send("Browser.setPermission", {
        permission: { name: "notifications" },
        setting: "denied",
        origin: server.url,
        browserContextId: targetInfo.browserContextId,
      });
      await page.reload();
      await waitForHydration(page);
      await page.getByRole("button", { name: "Notifications are blocked in this browser's settings" }).click();
      await expect(page.getByRole("alert")).toContainText(
        "Notifications are blocked for this site in your browser's settings. Allow them there",
      );

      // Allowed, but this offline browser has no push service: the tab's own notifications
      // stay, and the bell says that pushes could not be turned on.
      await context.grantPermissions(["notifications"], { origin: server.url });
      await page.reload();
      await waitForHydration(page);
      await page.getByRole("button", { name: "Notifications are on for new questions: turn them off" }).click();
      await page.getByRole("button", { name: "Notifications are off: turn them on" }).click();
      await expect(page.getByRole("alert")).toContainText("Notifications with every tab closed could not be turned on (");
      await expect(page.getByRole("alert")).toContainText("This tab still notifies while it is open");
    } finally {
      await server.kill();
    }
  });
});
