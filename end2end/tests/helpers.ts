import { expect, type Page, type APIRequestContext } from "@playwright/test";

/** Starts a session from the welcome page by sending `text`; resolves with the session's id. */
export async function startSession(page: Page, text: string): Promise<string> {
  await page.goto("/");
  await waitForHydration(page);
  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill(text);
  await box.press("Enter");
  await page.waitForURL(/\/s\/[0-9a-f]+$/);
  return page.url().split("/s/")[1];
}

/** The page is interactive once its controls are enabled (they are disabled until hydrated). */
export async function waitForHydration(page: Page) {
  await expect(page.getByRole("button", { name: "New session", exact: true })).toBeEnabled();
}

export function agentReplies(page: Page) {
  return page.getByRole("article", { name: "Agent" });
}

export function composerHint(page: Page) {
  return page.locator("#composer-hint");
}

/** Waits until the agent has finished its turn (the Stop button is gone, the status says Ready). */
export async function waitForTurnEnd(page: Page) {
  await expect(page.getByRole("button", { name: "Stop" })).toHaveCount(0, { timeout: 30_000 });
  await expect(page.locator(".turn-status")).toHaveText(/Ready|Stopped|Failed/, { timeout: 30_000 });
}

/** Server functions, for setting up without clicking. */
export async function call<T>(request: APIRequestContext, name: string, body: object): Promise<T> {
  const response = await request.post(`/api/${name}`, { data: body });
  expect(response.ok(), `${name}: ${response.status()} ${await response.text()}`).toBeTruthy();
  return (await response.json()) as T;
}

export async function sessionWithReply(request: APIRequestContext, text: string): Promise<string> {
  const session = await call<{ id: string }>(request, "create_session", {});
  await call(request, "send_message", { session: session.id, text });
  await expect
    .poll(async () => (await call<any>(request, "load_session", { id: session.id })).thread.turn.working, {
      timeout: 30_000,
    })
    .toBe(false);
  return session.id;
}

export const LONG_REPLY = Array.from({ length: 300 }, (_, i) => `w${String(i + 1).padStart(3, "0")}`).join(" ");
