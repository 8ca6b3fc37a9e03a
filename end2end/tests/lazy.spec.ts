// The open session's pane is a WASM chunk of its own (src/ui/lazy.rs, docs/size.md): the welcome
// page hydrates without it and fetches it when idle; a session page preloads it and hydrates
// with it; a chunk that cannot be fetched leaves a note, not a dead page.
import { test, expect } from "@playwright/test";
import { sessionWithReply, waitForHydration } from "./helpers";

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

test("a session page preloads the chunk and hydrates with it", async ({ page, request }) => {
  const id = await sessionWithReply(request, "lazy pane");
  const html = await (await request.get(`/s/${id}`)).text();
  expect(html).toMatch(/<link[^>]*href="\/pkg\/split_session_pane\.[^"]+\.wasm"[^>]*rel="preload"|<link[^>]*rel="preload"[^>]*href="\/pkg\/split_session_pane\./);
  await page.goto(`/s/${id}`);
  await waitForHydration(page);
  // Drawn once: hydration took over the server's thread instead of adding a second.
  await expect(page.locator(".thread")).toHaveCount(1);
  await expect(page.getByRole("article", { name: "You" })).toHaveText("lazy pane");
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
