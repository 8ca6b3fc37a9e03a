import { test, expect } from "@playwright/test";
import { call, sessionWithReply, waitForHydration } from "./helpers";

test.describe("server-side rendering", () => {
  test("the HTML holds the thread before any script runs", async ({ request }) => {
    const id = await sessionWithReply(request, "stream for the server render");
    const response = await request.get(`/s/${id}`);
    expect(response.status()).toBe(200);
    const html = await response.text();
    expect(html).toMatch(/<h1[^>]*class="session-title"[^>]*>stream for the server render/);
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

  // The server's HTML must be exactly what the browser would draw: where it is not (a table
  // without its tbody, say), hydration panics and the page stays dead. Every kind of page, with
  // every kind of card, is loaded with its errors watched.
  test("every kind of page hydrates without an error", async ({ page, request }) => {
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    page.on("console", (message) => {
      // A page whose status is 404 logs its own load as failed: not an error of the page's.
      if (message.text().startsWith("Failed to load resource")) return;
      if (message.type() === "error" || message.text().includes("panicked")) errors.push(message.text());
    });
    const waiting = async (text: string) => {
      const { id } = await call<{ id: string }>(request, "create_session", {});
      await call(request, "send_message", { session: id, text });
      await expect
        .poll(async () => (await call<any>(request, "load_session", { id })).thread.messages.flatMap((m: any) => m.blocks)
          .some((b: any) => b.tool_call?.interaction && !b.tool_call.interaction.outcome), { timeout: 30_000 })
        .toBe(true);
      return id;
    };
    const pages = [
      "/",
      `/s/${await sessionWithReply(request, "stream for hydration")}`,
      `/s/${await waiting("a pair of questions to hydrate")}`,
      `/s/${await waiting("edit the config to hydrate")}`,
      `/s/${await waiting("plan something to hydrate")}`,
      "/s/no-such-session",
    ];
    for (const path of pages) {
      await page.goto(path);
      await waitForHydration(page);
      // The page answers a person (a problem page has no message box).
      if (!path.includes("no-such-session")) {
        await page.getByRole("textbox", { name: "Message", exact: true }).fill("typed after hydration");
      }
      expect(errors, path).toEqual([]);
    }
  });
});
