// The access token as a person meets it: every server asks for it, even on loopback. A browser
// without it sees the sign-in page; the printed link, or the token typed there, lets it in.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { test, expect } from "@playwright/test";
import { baseURL, token } from "../playwright.config";
import { waitForHydration } from "./helpers";

// A browser that has not signed in: no bearer header, no cookie.
test.use({ extraHTTPHeaders: {} });

test("a browser without the token gets the sign-in page, and the token typed there lets it in", async ({ page }) => {
  const response = await page.goto("/s/whatever");
  expect(response?.status()).toBe(401);
  await expect(page.getByRole("heading", { name: "Sign in to AskBridge" })).toBeVisible();
  const field = page.getByLabel("Access token");
  await field.fill("not-the-token-at-all");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("alert")).toHaveText("That access token is not right.");

  await page.getByLabel("Access token").fill(token!);
  await page.getByRole("button", { name: "Sign in" }).click();
  // Back where it was going, signed in: the app itself answers (a session that does not exist).
  await expect(page).toHaveURL(/\/s\/whatever$/);
  await expect(page.getByRole("button", { name: "New session", exact: true })).toBeVisible();
});

test("the link with the token signs in, and the token leaves the address bar", async ({ page, context }) => {
  await page.goto(`/?token=${encodeURIComponent(token!)}`);
  await waitForHydration(page);
  expect(new URL(page.url()).search).toBe("");
  // One cookie per server: its name carries a digest of the token (servers on other ports of the
  // same host keep their own).
  const cookie = (await context.cookies()).find((c) => c.name.startsWith("askbridge_token_"));
  expect(cookie?.httpOnly).toBe(true);
  // The page works: its server calls and live stream carry the cookie.
  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill("signed in by the link");
  await box.press("Enter");
  await expect(page.getByRole("article", { name: "You" })).toHaveText("signed in by the link");
});

// Another site's page that the person happens to have open: a page of another app on this
// machine, served by the test on a port of its own, at `localhost` (another site than AskBridge's
// `127.0.0.1`). Chromium itself blocks a public site's requests to a loopback address.
async function elsewhere(body: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((_, response) => {
    response.writeHead(200, { "content-type": "text/html" });
    response.end(`<!doctype html><title>Elsewhere</title>${body}`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://localhost:${port}/`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

test("ten wrong tokens from another site's page never lock the person out", async ({ page }) => {
  await page.goto(`/?token=${encodeURIComponent(token!)}`);
  await waitForHydration(page);
  // Ten images pointing at AskBridge with a guessed token, as any page could hold.
  const images = Array.from({ length: 10 }, (_, i) => `<img src="${baseURL}/?token=guess-${i}" alt="">`).join("");
  const site = await elsewhere(images);
  // Each image reaches the server, which answers with its sign-in page; the browser then drops
  // that answer, which is not an image (ORB), or shows nothing of it.
  const guesses: string[] = [];
  const guessed = (request: { url(): string }) => request.url().startsWith(`${baseURL}/?token=guess-`);
  page.on("requestfinished", (request) => guessed(request) && guesses.push("answered"));
  page.on("requestfailed", (request) => guessed(request) && guesses.push(request.failure()?.errorText ?? "failed"));
  // `load` waits for every image.
  await page.goto(site.url, { waitUntil: "load" });
  await site.close();
  expect(guesses).toHaveLength(10);
  expect(guesses.every((what) => what === "answered" || what === "net::ERR_BLOCKED_BY_ORB")).toBe(true);

  // The person's own tab, with the right cookie, is let in at once, again and again.
  for (let i = 0; i < 3; i++) {
    const response = await page.goto("/");
    expect(response?.status()).toBe(200);
  }
  await waitForHydration(page);
  await expect(page.getByRole("button", { name: "New session", exact: true })).toBeVisible();
});

test("no other site's page can frame AskBridge", async ({ page }) => {
  await page.goto(`/?token=${encodeURIComponent(token!)}`);
  await waitForHydration(page);
  const response = await page.request.get("/");
  expect(response.status()).toBe(200);
  const headers = response.headers();
  expect(headers["x-frame-options"]).toBe("DENY");
  expect(headers["content-security-policy"]).toContain("frame-ancestors 'none'");
  expect(headers["x-content-type-options"]).toBe("nosniff");
  expect(headers["referrer-policy"]).toBe("no-referrer");

  // Framed by another site's page, with the person signed in: the browser refuses to show it.
  const site = await elsewhere(`<iframe src="${baseURL}/" title="AskBridge, framed"></iframe>`);
  const framed = page.waitForResponse(`${baseURL}/`);
  await page.goto(site.url, { waitUntil: "load" });
  await site.close();
  // Without the cookie (SameSite) it would be the sign-in page; either way, not to be framed.
  expect((await framed).headers()["x-frame-options"]).toBe("DENY");
  const frame = page.frames().find((f) => f !== page.mainFrame());
  expect(frame?.url()).not.toBe(`${baseURL}/`);
  await expect(page.frameLocator("iframe").getByRole("button", { name: "New session", exact: true })).toHaveCount(0);
});

// The page runs the scripts it was rendered with and what they load (the app, its WASM, its
// chunks, the service worker), and nothing else: markup that got in (agent output is rendered
// safely, but should anything slip through) runs no handler and no inline script.
test("a page runs only the scripts it was rendered with", async ({ page }) => {
  await page.addInitScript(() => {
    (window as any).__violations = [];
    document.addEventListener("securitypolicyviolation", (e) =>
      (window as any).__violations.push(`${e.effectiveDirective} ${e.blockedURI}`),
    );
  });
  await page.goto(`/?token=${encodeURIComponent(token!)}`);
  const response = await page.goto("/");
  const policy = response!.headers()["content-security-policy"];
  const nonce = /script-src 'nonce-([A-Za-z0-9_-]+)' 'strict-dynamic' 'wasm-unsafe-eval'/.exec(policy)?.[1];
  expect(nonce, policy).toBeTruthy();
  expect(policy).toContain("frame-ancestors 'none'");
  // Every script the server wrote that runs carries this response's nonce.
  const html = await response!.text();
  const scripts = [...html.matchAll(/<script(?![^>]*type="application\/json")[^>]*>/g)].map((m) => m[0]);
  expect(scripts.length).toBeGreaterThan(0);
  for (const script of scripts) expect(script).toContain(`nonce="${nonce}"`);
  // Under that policy the app hydrates, and nothing of its own was refused.
  await waitForHydration(page);
  await expect(page.getByRole("button", { name: "New session", exact: true })).toBeEnabled();
  expect(await page.evaluate(() => (window as any).__violations)).toEqual([]);

  // Injected markup: its inline handler is refused (the refusal is the event waited for).
  await page.evaluate(() => {
    document.body.insertAdjacentHTML("beforeend", `<img alt="" src="data:," onerror="window.__injected = 1">`);
    document.body.insertAdjacentHTML("beforeend", `<img alt="" src="/nothing-here.png" onerror="window.__injected = 1">`);
  });
  await expect.poll(() => page.evaluate(() => (window as any).__violations.length)).toBeGreaterThan(0);
  expect(await page.evaluate(() => (window as any).__injected)).toBeUndefined();

  // Another load, another nonce.
  const again = (await page.request.get("/")).headers()["content-security-policy"];
  expect(again).not.toContain(nonce);
});
