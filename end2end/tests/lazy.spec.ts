// The open session's pane is a WASM chunk of its own (src/ui/lazy.rs, docs/size.md): the welcome
// page hydrates without it and fetches it when idle; a session page hydrates without it too, and
// the chunk takes the server's pane over when it lands; a chunk that cannot be fetched leaves a
// note, not a dead page.
import { test, expect } from "@playwright/test";
import { agentReplies, composerHint, sessionWithReply, waitForHydration } from "./helpers";

const CHUNK = /\/pkg\/split_session_pane\.[^/]+\.wasm$/;

test("the welcome page hydrates without the session's chunk, then fetches it when idle", async ({ page }) => {
  const fetched: string[] = [];
  page.on("request", (request) => fetched.push(request.url()));
  const html = await (await page.goto("/"))!.text();
  expect(html).not.toMatch(/split_session_pane/);
  await waitForHydration(page);
  await expect.poll(() => fetched.some((url) => CHUNK.test(url)), { timeout: 10_000 }).toBe(true);
  // Then a new session draws at once, from the chunk already here.
  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill("drawn from the chunk");
  await box.press("Enter");
  await expect(page.getByRole("article", { name: "You" })).toHaveText("drawn from the chunk");
});

test("a session page hydrates without the chunk, which then takes the server's pane over where it stands", async ({ page, request }) => {
  const id = await sessionWithReply(request, "lazy pane");
  const html = await (await request.get(`/s/${id}`)).text();
  expect(html, "the page's first load does not name the chunk").not.toMatch(/split_session_pane/);
  // The chunk held back until the test lets it go: the page goes on without it meanwhile.
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  await page.route(CHUNK, async (route) => {
    await held;
    await route.continue();
  });
  const asked = page.waitForRequest(CHUNK);
  await page.goto(`/s/${id}`);
  // Asked for by the page's own code as it starts, not by its HTML.
  await asked;
  const box = page.getByRole("textbox", { name: "Message" });
  await box.click();
  await page.keyboard.type("typed while the pane comes");
  await expect(page.getByRole("article", { name: "You" })).toHaveText("lazy pane");
  // Not sendable before the pane is live: the box would write to a thread nothing follows yet.
  await expect(composerHint(page)).toHaveText("Loading…");
  release();
  await waitForHydration(page);
  // Drawn once: the chunk took the server's thread over instead of adding a second.
  await expect(page.locator(".thread")).toHaveCount(1);
  await expect(page.getByRole("article", { name: "You" })).toHaveText("lazy pane");
  await expect(box).toHaveValue("typed while the pane comes");
  // And the pane it took over is live: what is sent now is drawn in it, and the reply after it.
  await box.press("Enter");
  await expect(page.getByRole("article", { name: "You" })).toHaveText(["lazy pane", "typed while the pane comes"]);
  await expect(agentReplies(page)).toHaveCount(2, { timeout: 30_000 });
  await expect(page.locator(".thread")).toHaveCount(1);
});

test("a chunk that cannot be fetched leaves a note, and the page still works", async ({ page }) => {
  await page.route(CHUNK, (route) => route.abort());
  await page.goto("/");
  await waitForHydration(page);
  // The idle prefetch failed already; drawing the session tries again, and fails too.
  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill("a first session");
  await box.press("Enter");
  await page.waitForURL(/\/s\/[0-9a-f]+$/);
  await expect(page.getByRole("heading", { name: "This session could not be shown" })).toBeVisible();
  const first = page.url();
  // Not a dead page (a failed fetch must not abort the WASM): New session, and another opens.
  await page.getByRole("button", { name: "New session", exact: true }).click();
  await page.waitForURL((url) => url.pathname === "/");
  await box.fill("a second session");
  await box.press("Enter");
  await expect.poll(() => page.url()).toMatch(/\/s\/[0-9a-f]+$/);
  expect(page.url()).not.toBe(first);
  await expect(page.getByRole("heading", { name: "This session could not be shown" })).toBeVisible();
});
