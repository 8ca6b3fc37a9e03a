import { test, expect } from "@playwright/test";
import { sessionWithReply } from "./helpers";

test.describe("server-side rendering", () => {
  test("the HTML holds the thread before any script runs", async ({ request }) => {
    const id = await sessionWithReply(request, "stream for the server render");
    const response = await request.get(`/s/${id}`);
    expect(response.status()).toBe(200);
    const html = await response.text();
    expect(html).toMatch(/<h1 class="session-title">stream for the server render/);
    expect(html).toContain("Streaming reply: alpha bravo");
    expect(html).toMatch(/aria-label="Bash: echo hello, done"/);
    expect(html).toContain("All done.");
  });

  test.describe("without JavaScript", () => {
    test.use({ javaScriptEnabled: false });

    test("the page shows the conversation, and controls wait for hydration", async ({ page, request }) => {
      const id = await sessionWithReply(request, "stream without scripts");
      await page.goto(`/s/${id}`);
      await expect(page.getByRole("article", { name: "You" })).toHaveText("stream without scripts");
      await expect(page.getByRole("article", { name: "Agent" })).toContainText("zulu. The end.");
      await expect(page.getByRole("group", { name: "Bash: echo hello, done" })).toBeVisible();
      // Before hydration nothing pretends to work.
      await expect(page.getByRole("button", { name: "Send" })).toBeDisabled();
      await expect(page.locator("#composer-hint")).toHaveText("Loading…");
    });
  });
});
