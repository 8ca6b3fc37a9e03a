import { test, expect, type Page, type APIRequestContext } from "@playwright/test";
import { agentReplies, call, startSession, waitForHydration, waitForTurnEnd } from "./helpers";

/** The approval card, found as a person would: the group named for what the agent wants. */
function commandCard(page: Page) {
  return page.getByRole("group", { name: "The agent wants to run a command" }).last();
}

/** The session's tool calls that asked permission, as the server stored them. */
async function approvals(request: APIRequestContext, session: string): Promise<any[]> {
  const view = await call<any>(request, "load_session", { id: session });
  return view.thread.messages
    .flatMap((m: any) => m.blocks)
    .map((b: any) => b.tool_call)
    .filter((c: any) => c?.interaction?.request?.approval);
}

test("a command is allowed with a click, runs, and the card says so", async ({ page, request }) => {
  const session = await startSession(page, "run the command");
  const card = commandCard(page);
  await expect(card).toHaveAttribute("data-state", "pending");
  await expect(card.getByText("touch deployed.txt", { exact: true })).toBeVisible();
  await expect(card.getByText("Mark the deploy")).toBeVisible();
  await expect(card.getByText("Why it asks: Writes a file in the project")).toBeVisible();
  // The composer waits for the decision.
  await expect(page.locator("#composer-hint")).toContainText("asks you something above");

  await card.getByRole("button", { name: "Allow once" }).click();
  await expect(card).toHaveAttribute("data-state", "allowed");
  await expect(card.getByRole("status")).toHaveText("Allowed once");
  await expect(agentReplies(page).last()).toContainText("Ran the command.");
  await waitForTurnEnd(page);
  const [bash] = await approvals(request, session);
  expect(bash.interaction.outcome).toEqual({ allowed: { always: null } });
  expect(bash.result).toBe("marked");
});

test("a command is denied with a message for the agent", async ({ page, request }) => {
  const session = await startSession(page, "run the command");
  const card = commandCard(page);
  await card.getByRole("textbox", { name: "Message for the agent" }).fill("Not on a Friday");
  await card.getByRole("button", { name: "Deny" }).click();

  await expect(card).toHaveAttribute("data-state", "denied");
  await expect(card).toContainText("You denied this. Your message: “Not on a Friday”");
  await expect(agentReplies(page).last()).toContainText("did not run Bash");
  await expect(agentReplies(page).last()).toContainText("“Not on a Friday”");
  // The tool never ran: its card says denied, not failed.
  await expect(page.getByRole("group", { name: /^Bash: .*, denied$/ })).toBeVisible();
  await waitForTurnEnd(page);
  const [bash] = await approvals(request, session);
  expect(bash.interaction.outcome).toEqual({ denied: { message: "Not on a Friday" } });
  expect(bash.status).toBe("failed");
});

test("the keyboard decides: y allows, n denies, Enter in the message denies with it", async ({ page, request }) => {
  // The card takes the focus when it appears, so its keys work at once.
  const first = await startSession(page, "run the command");
  await expect(commandCard(page)).toBeFocused();
  await page.keyboard.press("y");
  await expect(commandCard(page)).toHaveAttribute("data-state", "allowed");
  await waitForTurnEnd(page);

  await startSession(page, "run the command");
  await expect(commandCard(page)).toBeFocused();
  await page.keyboard.press("n");
  await expect(commandCard(page)).toHaveAttribute("data-state", "denied");
  await waitForTurnEnd(page);

  const third = await startSession(page, "run the command");
  await expect(commandCard(page)).toBeFocused();
  const message = commandCard(page).getByRole("textbox", { name: "Message for the agent" });
  await message.focus();
  // Typing y and n in the message box is just typing.
  await page.keyboard.type("only on staging, not yet");
  await page.keyboard.press("Enter");
  await expect(commandCard(page)).toHaveAttribute("data-state", "denied");
  await waitForTurnEnd(page);
  const [bash] = await approvals(request, third);
  expect(bash.interaction.outcome).toEqual({ denied: { message: "only on staging, not yet" } });
  expect((await approvals(request, first))[0].interaction.outcome).toEqual({ allowed: { always: null } });
});

test("a card that asks before the sent message is confirmed keeps the focus", async ({ page }) => {
  // The agent can ask before the answer to send_message reaches the page (a loaded machine, a slow
  // network): the message box then took the focus back from the card, and `y` typed a letter.
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  await page.route("**/api/send_message", async (route) => {
    const response = await route.fetch();
    await held;
    await route.fulfill({ response });
  });
  const finished = page.waitForEvent("requestfinished", (r) => r.url().endsWith("/api/send_message"));
  await startSession(page, "run the command");
  await expect(commandCard(page)).toBeFocused();
  release();
  await finished;
  // The page has handled the answer once two frames have passed after it.
  await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
  await expect(commandCard(page)).toBeFocused();
  await page.keyboard.press("y");
  await expect(commandCard(page)).toHaveAttribute("data-state", "allowed");
  await waitForTurnEnd(page);
});

test("always allow: the same command runs without a card next time", async ({ page, request }) => {
  const session = await startSession(page, "run the command");
  const always = commandCard(page).getByRole("button", {
    name: "Always allow Bash(touch deployed.txt) for this session",
  });
  await always.click();
  await expect(commandCard(page).getByRole("status")).toHaveText("Always allowed");
  await expect(commandCard(page)).toContainText("You chose: Always allow Bash(touch deployed.txt) for this session.");
  await waitForTurnEnd(page);

  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill("run the command again");
  await box.press("Enter");
  await expect(agentReplies(page)).toHaveCount(2);
  await expect(agentReplies(page).last()).toContainText("Ran the command.");
  await waitForTurnEnd(page);
  await expect(page.getByRole("group", { name: "The agent wants to run a command" })).toHaveCount(1);
  const calls = await approvals(request, session);
  expect(calls).toHaveLength(1);
});

test("an edit shows its file and diff", async ({ page }) => {
  await startSession(page, "edit the config");
  const card = page.getByRole("group", { name: "The agent wants to edit a file" });
  await expect(card.getByText("/srv/app/config.toml", { exact: true })).toBeVisible();
  const diff = card.getByLabel("The change");
  await expect(diff.locator('[data-sign="-"]')).toHaveText(["- port = 80"]);
  await expect(diff.locator('[data-sign="+"]')).toHaveText(["+ port = 8080"]);
  await expect(diff.locator('[data-sign=" "]')).toHaveText(['  host = "a"']);
  await card.getByRole("button", { name: "Allow once" }).click();
  await expect(agentReplies(page).last()).toContainText("Edited the config.");
});

test("the plan card: keep planning with a message, then approve", async ({ page, request }) => {
  const session = await startSession(page, "make a plan");
  const card = page.getByRole("group", { name: "The agent's plan is ready" }).last();
  await expect(card.getByRole("heading", { name: "Migrate the database" })).toBeVisible();
  await expect(card.getByRole("listitem")).toHaveText(["Back up the data", "Run the migration"]);
  await card.getByRole("textbox", { name: "Message for the agent" }).fill("Add a dry run first");
  await card.getByRole("button", { name: "Keep planning" }).click();
  await expect(card.getByRole("status")).toHaveText("Kept planning");
  await expect(card).toContainText("You asked the agent to keep planning. Your message: “Add a dry run first”");
  // The plan stays readable on a decided card.
  await expect(card.getByRole("heading", { name: "Migrate the database" })).toBeVisible();
  await expect(agentReplies(page).last()).toContainText("I will keep planning");
  await waitForTurnEnd(page);

  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill("new plan");
  await box.press("Enter");
  const second = page.getByRole("group", { name: "The agent's plan is ready" }).last();
  await second.getByRole("button", { name: "Approve plan" }).click();
  await expect(second.getByRole("status")).toHaveText("Approved");
  await expect(agentReplies(page).last()).toContainText("Starting on the plan.");
  const calls = await approvals(request, session);
  expect(calls.map((c) => c.interaction.outcome)).toEqual([
    { denied: { message: "Add a dry run first" } },
    { allowed: { always: null } },
  ]);
});

test("a plan is approved with every edit accepted from then on, as the terminal offers", async ({ page, request }) => {
  const session = await startSession(page, "make a plan");
  const card = page.getByRole("group", { name: "The agent's plan is ready" }).last();
  await card.getByRole("button", { name: "Approve, and accept every edit" }).click();
  await expect(card.getByRole("status")).toHaveText("Approved");
  await expect(agentReplies(page).last()).toContainText("Starting on the plan.");
  await expect(page.getByRole("combobox", { name: "Permission mode" })).toHaveValue("acceptEdits");
  const [plan] = await approvals(request, session);
  expect(plan.interaction.outcome).toEqual({ allowed: { always: 0 } });
});

test("a pending approval survives a reload and is decided live in a second tab", async ({ page, context }) => {
  const session = await startSession(page, "run the command");
  await expect(commandCard(page)).toHaveAttribute("data-state", "pending");
  // A message half typed for the agent is kept too.
  await commandCard(page).getByRole("textbox", { name: "Message for the agent" }).fill("wait for the backup");
  await page.reload();
  await waitForHydration(page);
  await expect(commandCard(page)).toHaveAttribute("data-state", "pending");
  await expect(commandCard(page).getByText("touch deployed.txt", { exact: true })).toBeVisible();
  await expect(commandCard(page).getByRole("textbox", { name: "Message for the agent" })).toHaveValue(
    "wait for the backup",
  );

  const other = await context.newPage();
  await other.goto(`/s/${session}`);
  await waitForHydration(other);
  await commandCard(other).getByRole("button", { name: "Allow once" }).click();
  // The first tab follows without a reload.
  await expect(commandCard(page)).toHaveAttribute("data-state", "allowed");
  await expect(agentReplies(page).last()).toContainText("Ran the command.");
  // And a reload shows the decision.
  await page.reload();
  await expect(commandCard(page).getByRole("status")).toHaveText("Allowed once");
  await expect(commandCard(page).getByRole("button", { name: "Allow once" })).toBeHidden();
});

test("the mode switcher: bypass asks for confirmation, then commands run without a card but questions still ask", async ({
  page,
  request,
}) => {
  const session = await startSession(page, "hello");
  await waitForTurnEnd(page);
  const mode = page.getByRole("combobox", { name: "Permission mode" });
  await expect(mode).toHaveValue("default");

  // Dismissing the warning keeps the mode.
  let warning = "";
  page.once("dialog", (dialog) => {
    warning = dialog.message();
    void dialog.dismiss();
  });
  await mode.selectOption("bypassPermissions");
  await expect(mode).toHaveValue("default");
  expect(warning).toContain("without asking you first");
  expect(warning).toContain("questions still come to you");

  page.once("dialog", (dialog) => void dialog.accept());
  await mode.selectOption("bypassPermissions");
  await expect
    .poll(async () => (await call<any>(request, "load_session", { id: session })).thread.turn.permission_mode)
    .toBe("bypassPermissions");

  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill("mixed work");
  await box.press("Enter");
  const question = page.getByRole("group", { name: "The agent asks you" });
  await question.getByRole("radio", { name: "Yes" }).click();
  await expect(agentReplies(page).last()).toContainText('Cleaned, and you said "Ship it now?"="Yes".');
  await expect(page.getByRole("group", { name: "The agent wants to run a command" })).toHaveCount(0);

  // The mode belongs to the session: a reload shows it.
  await page.reload();
  await expect(page.getByRole("combobox", { name: "Permission mode" })).toHaveValue("bypassPermissions");
});

test("the mode is chosen when the session starts", async ({ page }) => {
  await page.goto("/");
  await waitForHydration(page);
  await page.getByRole("combobox", { name: "Permission mode" }).selectOption("acceptEdits");
  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill("edit the config");
  await box.press("Enter");
  await page.waitForURL(/\/s\/[0-9a-f]+$/);
  // Accept edits lets the file edit through without a card.
  await expect(agentReplies(page).last()).toContainText("Edited the config.");
  await expect(page.getByRole("group", { name: "The agent wants to edit a file" })).toHaveCount(0);
  await expect(page.getByRole("combobox", { name: "Permission mode" })).toHaveValue("acceptEdits");
});

test("a permission card shows at most four buttons: the scopes in one menu, each once, a long command shortened", async ({ page, request }) => {
  const session = await startSession(page, "scopes for the build");
  const approval = commandCard(page);
  await expect(approval).toHaveAttribute("data-state", "pending");
  const command = "npm run build -- --watch --mode production --verbose --color";
  // The card shows the command whole.
  await expect(approval.locator(".ac-command")).toHaveText(command);
  // Each key the card takes is on its button (Y, N), and not in the button's name.
  await expect(approval.getByRole("button")).toHaveText([/^Allow once\s*Y$/, "Always allow…", /^Deny\s*N$/]);
  await expect(approval.getByRole("button").first()).toHaveAccessibleName("Allow once");
  await approval.getByRole("textbox", { name: "Message for the agent" }).fill("not now");
  await expect(approval.getByRole("button")).toHaveText([/^Allow once\s*Y$/, "Always allow…", /^Deny with message\s*N$/]);
  await approval.getByRole("textbox", { name: "Message for the agent" }).fill("");

  // Esc closes the menu and denies nothing.
  await approval.getByRole("button", { name: "Always allow…" }).click();
  const menu = approval.getByRole("menu", { name: "Always allow" });
  await expect(menu).toBeVisible();
  await page.keyboard.press("Escape");
  await expect(menu).toBeHidden();
  await expect(approval).toHaveAttribute("data-state", "pending");
  await approval.getByRole("button", { name: "Always allow…" }).click();
  await expect(menu.getByRole("menuitem")).toHaveText([
    "Always allow Bash(npm run build -- --watch --mode…) for this session",
    "Always allow Bash(npm run build -- --watch --mode…) in this project, on this machine (.claude/settings.local.json)",
    "Accept every edit without asking for this session",
  ]);
  await menu.getByRole("menuitem", { name: /for this session$/ }).first().click();
  await expect(approval).toHaveAttribute("data-state", "allowed");
  await expect(approval).toContainText(`You chose: Always allow Bash(${command}) for this session.`);
  await waitForTurnEnd(page);
  const [bash] = await approvals(request, session);
  expect(bash.interaction.outcome).toEqual({ allowed: { always: 0 } });
});
