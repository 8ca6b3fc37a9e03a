import { test, expect, type Page } from "@playwright/test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { call, claudeEnv, git, gitRepository, OwnMock, OwnServer, waitForHydration, waitForTurnEnd } from "./helpers";

// The session's Changes: what the agent changed in its folder, by turn and for the whole
// session, live, kept when the agent commits, and a turn undone. The scripted agent's `writes`
// steps really write (end2end/fixtures/scenario.toml, "scribble" and "redraft").

async function send(page: Page, text: string) {
  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill(text);
  await box.press("Enter");
  await waitForTurnEnd(page);
}

function changedFiles(page: Page) {
  return page.getByRole("list", { name: "Changed files" }).getByRole("listitem");
}

test("each turn's changes show in Changes as they happen, stay after a commit, and a turn can be undone", async ({
  page,
}) => {
  const folder = gitRepository();
  git(folder, "checkout", "--quiet", "-b", "work");
  try {
    const summary = await call<any>(page.request, "create_session", { workdir: folder });
    await page.goto(`/s/${summary.id}`);
    await waitForHydration(page);
    await send(page, "scribble the notes");
    await page.getByRole("button", { name: "Changes" }).click();
    const panel = page.getByRole("complementary", { name: "Changes" });
    await expect(changedFiles(page)).toHaveCount(1);
    await expect(changedFiles(page).first()).toContainText("notes.md");
    await expect(panel.getByRole("cell", { name: "first line" })).toBeVisible();

    // A write in the folder while the view is open shows by itself.
    fs.writeFileSync(path.join(folder, "by-hand.txt"), "typed in an editor\n");
    await expect(changedFiles(page).filter({ hasText: "by-hand.txt" })).toHaveCount(1);

    await send(page, "redraft the notes");
    await expect(changedFiles(page).filter({ hasText: "src/todo.txt" })).toHaveCount(1);
    await expect(panel.getByRole("cell", { name: "second line" })).toBeVisible();

    // The agent commits its work: the turns still show what they changed.
    git(folder, "add", "-A");
    git(folder, "commit", "--quiet", "-m", "the agent's commit");
    const scope = panel.getByRole("combobox", { name: "Changes of" });
    // Against the branch the work started from: all of it, committed now.
    await scope.selectOption({ label: "Against main (all of this branch)" });
    await expect(changedFiles(page)).toHaveCount(3);
    await expect(changedFiles(page).filter({ hasText: "by-hand.txt" })).toHaveCount(1);
    await scope.selectOption({ label: "Turn 2: redraft the notes" });
    await expect(changedFiles(page)).toHaveCount(2);
    await expect(changedFiles(page).filter({ hasText: "notes.md" })).toHaveCount(1);
    await expect(changedFiles(page).filter({ hasText: "src/todo.txt" })).toHaveCount(1);
    await scope.selectOption({ label: "Turn 1: scribble the notes" });
    await expect(changedFiles(page)).toHaveCount(2);
    await expect(changedFiles(page).filter({ hasText: "by-hand.txt" })).toHaveCount(1);

    // Undo turn 2, after seeing which files it puts back.
    await scope.selectOption({ label: "Turn 2: redraft the notes" });
    await panel.getByRole("button", { name: "Undo this turn…" }).click();
    const confirm = panel.getByRole("alertdialog", { name: "Undo turn 2" });
    await expect(confirm.getByRole("listitem")).toHaveText(["notes.md", "src/todo.txt"]);
    await confirm.getByRole("button", { name: "Undo turn 2" }).click();
    await expect(panel.getByRole("status")).toContainText("Turn 2 undone");
    expect(fs.existsSync(path.join(folder, "src/todo.txt"))).toBe(false);
    expect(fs.readFileSync(path.join(folder, "notes.md"), "utf8")).toBe("# Notes\n\nfirst line\n");
    await expect(changedFiles(page)).toHaveCount(0);
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
  }
});

test("the diff is side by side on a wide screen and unified on a phone", async ({ page }) => {
  const folder = gitRepository();
  try {
    const summary = await call<any>(page.request, "create_session", { workdir: folder });
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`/s/${summary.id}`);
    await waitForHydration(page);
    await send(page, "scribble the notes");
    await page.getByRole("button", { name: "Changes" }).click();
    const panel = page.getByRole("complementary", { name: "Changes" });
    const layout = panel.getByRole("button", { name: "Side by side" });
    await expect(layout).toHaveAttribute("aria-pressed", "true");
    await expect(panel.getByRole("table")).toHaveAttribute("data-layout", "split");
    await layout.click();
    await expect(panel.getByRole("table")).toHaveAttribute("data-layout", "unified");
    await page.getByRole("button", { name: "Close changes" }).click();
    await expect(panel).toHaveCount(0);

    await page.setViewportSize({ width: 375, height: 740 });
    await page.reload();
    await waitForHydration(page);
    await page.getByRole("button", { name: "Changes" }).click();
    await expect(page.getByRole("complementary", { name: "Changes" }).getByRole("table")).toHaveAttribute("data-layout", "unified");
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
  }
});

// The real Claude Code CLI writes the files itself (the mock API only asks it to): each turn's
// checkpoint is taken before the CLI hears of the message.
test("Claude Code's own edits show in Changes, each in its turn", async ({ page }) => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "askbridge-e2e-changes-"));
  const env = claudeEnv(home, "");
  const project = gitRepository(path.join(home, "project"));
  const write = (file: string, content: string) => ({
    content: [{ type: "tool_use", name: "Write", input: { file_path: path.join(project, file), content } }],
  });
  const mock = await OwnMock.start([
    write("hello.txt", "hello from Claude\n"),
    "Wrote hello.txt.",
    write("second.txt", "two\n"),
    "Wrote second.txt.",
  ]);
  const server = await OwnServer.start(
    ["--agent", "claude", "--claude-bin", path.resolve(__dirname, "../../node_modules/.bin/claude"),
      "--workdir", project, "--permission-mode", "acceptEdits"],
    { ...env, ANTHROPIC_BASE_URL: mock.url },
  );
  try {
    await page.goto(server.url);
    await waitForHydration(page);
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("write hello");
    await box.press("Enter");
    await expect(page.getByText("Wrote hello.txt.")).toBeVisible({ timeout: 60_000 });
    await waitForTurnEnd(page);
    await send(page, "write a second file");
    await expect(page.getByText("Wrote second.txt.")).toBeVisible();
    expect(fs.readFileSync(path.join(project, "second.txt"), "utf8")).toBe("two\n");

    await page.getByRole("button", { name: "Changes" }).click();
    const panel = page.getByRole("complementary", { name: "Changes" });
    await expect(changedFiles(page)).toHaveCount(2);
    const scope = panel.getByRole("combobox", { name: "Changes of" });
    await scope.selectOption({ label: "Turn 1: write hello" });
    await expect(changedFiles(page)).toHaveCount(1);
    await expect(changedFiles(page).first()).toContainText("hello.txt");
    await expect(panel.getByRole("cell", { name: "hello from Claude" })).toBeVisible();
    await scope.selectOption({ label: "Turn 2: write a second file" });
    await expect(changedFiles(page)).toHaveCount(1);
    await expect(changedFiles(page).first()).toContainText("second.txt");
  } finally {
    await server.kill();
    await mock.kill();
    fs.rmSync(home, { recursive: true, force: true });
  }
});

test("Files lists the folder as git would, shows a file with its line numbers, and refuses paths that leave the folder", async ({
  page,
}) => {
  const folder = gitRepository();
  const outside = fs.mkdtempSync(path.join(os.tmpdir(), "askbridge-outside-"));
  try {
    fs.writeFileSync(path.join(outside, "secret.txt"), "a secret\n");
    fs.mkdirSync(path.join(folder, "src"));
    fs.writeFileSync(path.join(folder, "src/main.rs"), 'fn main() {\n    println!("hi");\n}\n');
    fs.writeFileSync(path.join(folder, ".gitignore"), "target/\n");
    fs.mkdirSync(path.join(folder, "target"));
    fs.writeFileSync(path.join(folder, "target/out.txt"), "built\n");
    fs.symlinkSync(path.join(outside, "secret.txt"), path.join(folder, "link.txt"));
    const summary = await call<any>(page.request, "create_session", { workdir: folder });
    await page.goto(`/s/${summary.id}`);
    await waitForHydration(page);
    await page.getByRole("button", { name: "Files" }).click();
    const panel = page.getByRole("complementary", { name: "Files" });
    const list = panel.getByRole("list", { name: "Files in the folder" });
    // A tree: the folder's own files, and its folders closed until opened.
    await expect(list.getByRole("button", { name: "README.md" })).toBeVisible();
    await expect(list.getByRole("button", { name: "main.rs" })).toHaveCount(0);
    await expect(list.getByText("target/", { exact: true })).toHaveCount(0);
    await list.getByText("src/", { exact: true }).click();
    await expect(list.getByRole("button", { name: "main.rs" })).toBeVisible();
    await panel.getByRole("searchbox", { name: "Filter files" }).click();
    await page.keyboard.type("main");
    await expect(list.getByRole("listitem")).toHaveCount(1);
    await list.getByRole("button", { name: "src/main.rs" }).click();
    const shown = panel.getByRole("table", { name: "src/main.rs" });
    await expect(shown.getByRole("row")).toHaveCount(3);
    await expect(shown.getByRole("row").nth(1)).toContainText('2    println!("hi");');
    // Coloured as Rust once the highlighter is here; the lines and their numbers stay as they were.
    await expect(shown).toHaveAttribute("data-language", "rs");
    await expect(shown.locator(".hljs-keyword").first()).toHaveText("fn");
    await expect(shown.getByRole("row").nth(1)).toContainText('2    println!("hi");');

    // A link that leads out of the folder is listed (git lists it) but never read through.
    await panel.getByRole("button", { name: "All files" }).click();
    await panel.getByRole("searchbox", { name: "Filter files" }).fill("");
    await page.keyboard.type("link");
    await list.getByRole("button", { name: "link.txt" }).click();
    await expect(panel.getByRole("alert")).toContainText("is not inside the session's folder");
    await expect(panel.getByText("a secret")).toHaveCount(0);

    // Whoever asks, the server refuses a path that leaves the folder.
    for (const asked of ["../secret.txt", "/etc/passwd", path.join(outside, "secret.txt"), "src/../../secret.txt"]) {
      const response = await page.request.post("/api/folder_file", { data: { session: summary.id, path: asked } });
      expect(response.status(), asked).toBe(400);
      expect(await response.text()).toContain("is not inside the session's folder");
    }
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
    fs.rmSync(outside, { recursive: true, force: true });
  }
});
