import { test, expect } from "@playwright/test";
import { claudeURL, mockURL } from "../playwright.config";
import { sessionStatus } from "./helpers";

test.use({ baseURL: claudeURL });

test("the whole loop with the real Claude Code CLI: message, card, click, the model gets the answer, the reply streams", async ({
  page,
  request,
}) => {
  await page.goto("/");
  await expect(page.getByRole("button", { name: "New session", exact: true })).toBeEnabled();
  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill("Set up the database for my app. Ask me which one.");
  await box.press("Enter");
  await page.waitForURL(/\/s\/[0-9a-f]+$/);

  // Claude Code streams its text, then asks: the card appears.
  await expect(page.getByRole("article", { name: "Agent" }).first()).toContainText("Before I start, one question.");
  const question = page.getByRole("radiogroup", { name: "Which database should we use?" });
  await expect(question).toBeVisible({ timeout: 30_000 });
  await expect(page.locator(".agent-info")).toContainText("Claude Code 2.1.332");
  await question.getByRole("radio", { name: "Postgres" }).click();
  await expect(page.getByRole("group", { name: "The agent asks you" })).toHaveAttribute("data-state", "answered");

  // The model was sent exactly the answer given, as the CLI words it.
  await expect
    .poll(async () => {
      const requests: any[] = await (await request.get(`${mockURL}/_requests`)).json();
      return JSON.stringify(requests.map((r) => r.messages));
    })
    .toContain(
      'Your questions have been answered: \\"Which database should we use?\\"=\\"Postgres\\". You can now continue with these answers in mind.',
    );

  // And the reply streams in.
  await expect(page.getByRole("article", { name: "Agent" }).last()).toContainText(
    "Postgres it is. I will write the migration for it next",
  );
  await expect(sessionStatus(page)).toContainText("Ready", { timeout: 30_000 });
  // What the turn used, under its reply; the session's tokens and how full the context is, in
  // the header (Claude Code's own counts and its model's context window).
  await expect(page.getByRole("article", { name: "Agent" }).last().getByTitle("What this turn used")).toHaveText(
    /^[\d,]+ in · [\d,]+ out( · [\d,]+ cached)?( · \$[\d.]+)?( · context \d+% of [\d.]+[kM]?)?$/,
  );
  await expect(page.getByTitle("Tokens this session used so far (in, out and cached)")).toHaveText(/^[\d.]+k? tokens$/);
  await expect(page.getByTitle("How full the model's context window was at the last turn")).toHaveText(
    /^context \d+% of [\d.]+[kM]$/,
  );
});

test("a working folder that does not exist is explained on the new-session page, and nothing is started", async ({
  page,
  request,
}) => {
  await page.goto("/");
  await expect(page.getByRole("button", { name: "New session", exact: true })).toBeEnabled();
  const before = (await (await request.post("/api/list_sessions", { data: {} })).json()).length;
  await page.getByRole("textbox", { name: "Working folder" }).fill("/no/such/folder");
  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill("Work in that folder, please.");
  await box.press("Enter");
  await expect(page.locator("#composer-hint")).toContainText("there is no folder “/no/such/folder” on the server");
  await expect(page).toHaveURL(/\/$/);
  await expect(box).toHaveValue("Work in that folder, please.");
  expect((await (await request.post("/api/list_sessions", { data: {} })).json()).length).toBe(before);
});
