import { test, expect } from "@playwright/test";
import { anthropicURL, apiMockURL } from "../playwright.config";
import { sessionStatus, waitForHydration } from "./helpers";

test.use({ baseURL: anthropicURL });

const ANSWERED =
  'Your questions have been answered: \\"Which auth method should we use?\\"=\\"JWT\\". You can now continue with these answers in mind.';

/** Every messages list the mock was sent, as one JSON string. */
async function sentToModel(request: import("@playwright/test").APIRequestContext): Promise<string> {
  const requests: any[] = await (await request.get(`${apiMockURL}/_requests`)).json();
  return JSON.stringify(requests.map((r) => r.messages));
}

test("the Messages API agent: the question pauses the turn, survives a reload, and the answer resumes it", async ({
  page,
  request,
}) => {
  await page.goto("/");
  await waitForHydration(page);
  // The new-session page says which agent a session will talk to.
  await expect(page.getByText("New sessions talk to Messages API")).toBeVisible();
  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill("Help me set up auth for my app.");
  await box.press("Enter");
  await page.waitForURL(/\/s\/[0-9a-f]+$/);

  // The reply streams, then the card: the turn has ended at the question (paused).
  await expect(page.getByRole("article", { name: "Agent" }).first()).toContainText("First, a question about auth.");
  const question = page.getByRole("radiogroup", { name: "Which auth method should we use?" });
  await expect(question).toBeVisible();
  await expect(page.locator(".agent-badge")).toHaveText("anthropic");
  await expect(page.locator(".agent-info")).toHaveText("Messages API · claude-sonnet-5-5");
  await expect(page.getByRole("button", { name: "Stop" })).toHaveCount(0);
  expect((await (await request.get(`${apiMockURL}/_requests`)).json()).length).toBe(1);

  // Nothing waits in memory: a reload shows the same pending card.
  await page.reload();
  await waitForHydration(page);
  const card = page.getByRole("group", { name: "The agent asks you" });
  await expect(card).toHaveAttribute("data-state", "pending");
  await question.getByRole("radio", { name: "JWT" }).click();
  await expect(card).toHaveAttribute("data-state", "answered");

  // The answer went to the model as Claude Code's tool_result, and the reply streams in.
  await expect.poll(() => sentToModel(request)).toContain(ANSWERED);
  await expect(page.getByRole("article", { name: "Agent" }).last()).toContainText(
    "JWT it is. I will add token signing and a refresh endpoint next.",
  );
  await expect(sessionStatus(page)).toContainText("Ready");
  // What the session cost so far, from the API's usage.
  await expect(page.locator(".session-cost")).toHaveText(/^\$\d+\.\d{4}$/);
});
