// The access token as a person meets it: every server asks for it, even on loopback. A browser
// without it sees the sign-in page; the printed link, or the token typed there, lets it in.
import { test, expect } from "@playwright/test";
import { token } from "../playwright.config";
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
