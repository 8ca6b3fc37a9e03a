import { test, expect } from "@playwright/test";
import { startSession, waitForHydration, waitForTurnEnd } from "./helpers";

test("sessions can be created, switched, renamed and deleted; most recent first", async ({ page }) => {
  // Other tests add sessions to the shared server meanwhile, as many as fill the list's first
  // page on a busy machine: this test's own are found by a word of their own, through the search.
  const topic = `topic-${Date.now().toString(36)}`;
  const first = await startSession(page, `first ${topic}`);
  await waitForTurnEnd(page);
  const second = await startSession(page, `second ${topic}`);
  await waitForTurnEnd(page);

  // Most recent first, once the list has shown the second. Each entry's first line is its title
  // (its status and time follow beneath).
  const list = page.getByRole("navigation", { name: "Session list" });
  await page.getByRole("searchbox", { name: "Search sessions" }).fill(topic);
  await expect(list.getByRole("link", { name: `second ${topic}` })).toBeVisible();
  await expect(list.getByRole("link", { name: `first ${topic}` })).toBeVisible();
  const entries = await list.getByRole("link").allInnerTexts();
  const titles = entries.map((entry) => entry.split("\n")[0].trim());
  expect(titles.indexOf(`second ${topic}`)).toBeGreaterThanOrEqual(0);
  expect(titles.indexOf(`second ${topic}`)).toBeLessThan(titles.indexOf(`first ${topic}`));

  // Switch.
  await list.getByRole("link", { name: `first ${topic}` }).click();
  await page.waitForURL(`**/s/${first}`);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(`first ${topic}`);
  await expect(page.getByRole("article", { name: "You" })).toHaveText(`first ${topic}`);

  // Rename.
  await page.getByRole("button", { name: `Rename first ${topic}` }).click();
  const title = page.getByRole("textbox", { name: "Session title" });
  await title.fill(`Renamed ${topic}`);
  await title.press("Enter");
  await expect(page.getByRole("link", { name: `Renamed ${topic}` })).toBeVisible();
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(`Renamed ${topic}`);
  // (A `●` in front says that some session waits: other tests' sessions may.)
  await expect(page).toHaveTitle(new RegExp(`^(● )?Renamed ${topic} · AskBridge$`));

  // Delete the open session: back to the welcome page, and it is gone from the list.
  await page.getByRole("button", { name: `Delete Renamed ${topic}` }).click();
  await page.getByRole("group", { name: "Confirm delete" }).getByRole("button", { name: "Delete" }).click();
  await page.waitForURL(/\/$/);
  await page.getByRole("searchbox", { name: "Search sessions" }).fill(topic);
  await expect(page.getByRole("link", { name: `second ${topic}` })).toBeVisible();
  await expect(page.getByRole("link", { name: `Renamed ${topic}` })).toHaveCount(0);

  await page.goto(`/s/${first}`);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("This session does not exist");
  void second;
});

test("New session opens the new-session page and leaves no empty session behind", async ({ page }) => {
  const first = await startSession(page, "a topic before");
  await waitForTurnEnd(page);
  const created: string[] = [];
  page.on("request", (request) => {
    if (request.url().endsWith("/api/create_session")) created.push(request.url());
  });
  await page.getByRole("button", { name: "New session", exact: true }).click();
  await page.waitForURL((url) => url.pathname === "/");
  // Its choices: the folder (with the recent ones), the agent's, the permission mode.
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("New session");
  await expect(page.getByRole("combobox", { name: "Permission mode" })).toBeVisible();
  const box = page.getByRole("textbox", { name: "Message" });
  await expect(box).toBeFocused();
  // Clicked again, and nothing typed: still no session.
  await page.getByRole("button", { name: "New session", exact: true }).click();
  await expect(box).toBeFocused();
  expect(created).toEqual([]);

  // The session comes with its first message.
  await box.fill("the new topic");
  await box.press("Enter");
  await page.waitForURL((url) => /^\/s\/[0-9a-f]+$/.test(url.pathname) && !url.pathname.endsWith(first));
  await expect(page.getByRole("article", { name: "You" })).toHaveText("the new topic");
  expect(created).toHaveLength(1);
});

test("a message typed at once after New session is never lost", async ({ page }) => {
  await page.goto("/");
  await waitForHydration(page);
  const newSession = page.getByRole("button", { name: "New session", exact: true });
  const box = page.getByRole("textbox", { name: "Message" });
  let previous = "";
  for (let i = 1; i <= 8; i++) {
    const text = `typed at once, try ${i}`;
    // As a person would: click, type straight away, press Enter; no waiting in between.
    await newSession.click();
    await box.pressSequentially(text);
    await box.press("Enter");

    // Landed: the address names a new session and the pane shows it (its tab title is its own).
    await page.waitForURL((url) => /^\/s\/[0-9a-f]+$/.test(url.pathname) && url.pathname !== previous);
    previous = new URL(page.url()).pathname;
    await expect(page).toHaveTitle(new RegExp(`^(● )?(New session|${text}) · AskBridge$`));
    // The message was sent there as its first message, or waits in its message box.
    const you = page.getByRole("article", { name: "You" });
    await expect
      .poll(async () => ((await you.count()) > 0 ? await you.first().innerText() : await box.inputValue()))
      .toBe(text);
  }
});

test("an unknown session id gets a clear page with status 404", async ({ page }) => {
  const response = await page.goto("/s/does-not-exist");
  expect(response?.status()).toBe(404);
  await expect(page.getByRole("alert")).toContainText("There is no session with id “does-not-exist”");
  await expect(page.getByRole("link", { name: "Start a new session" })).toBeVisible();
});
