import { test, expect, type Page } from "@playwright/test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { claudeEnv, git, gitRepository, OwnMock, OwnServer, waitForHydration, waitForTurnEnd } from "./helpers";

// A session in a worktree of its own (issue 36): a new branch from a base, checked out outside the
// person's checkout, where the agent works; then Commit, Merge into the base (a conflict merges
// nothing), Discard. Real git, the scripted agent (end2end/fixtures/scenario.toml, "scribble" and
// "redraft") and the real Claude Code CLI.

/** The worktree of `branch`, as git lists it. */
function worktreeOf(repo: string, branch: string): string {
  const blocks = git(repo, "worktree", "list", "--porcelain").split("\n\n");
  const block = blocks.find((b) => b.includes(`branch refs/heads/${branch}`));
  if (!block) throw new Error(`no worktree on ${branch}: ${blocks.join(" | ")}`);
  return block.split("\n")[0].replace(/^worktree /, "");
}

/** Sends `text` and waits for the agent's last words, `reply`, and the turn's end. */
async function send(page: Page, text: string, reply: string) {
  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill(text);
  await box.press("Enter");
  await expect(page.getByText(reply, { exact: true })).toBeVisible();
  await waitForTurnEnd(page);
}

test("a session in a new worktree edits only the worktree; Commit and Merge bring its work to main, a conflict merges nothing, Discard removes it", async ({
  page,
}) => {
  const repo = gitRepository();
  // The scripted agent, working in the repository by default: the new-session page offers it.
  const server = await OwnServer.start(["--workdir", repo]);
  try {
    await page.goto(server.url);
    await waitForHydration(page);
    await expect(page.getByRole("textbox", { name: "Working folder" })).toHaveValue(repo);
    await page.getByRole("checkbox", { name: "In a new worktree" }).check();
    await expect(page.getByRole("combobox", { name: "From" })).toHaveValue("main");
    // Typed as a person types: each key into the field it belongs to.
    await page.getByRole("textbox", { name: "New branch" }).fill("");
    await page.getByRole("textbox", { name: "New branch" }).click();
    await page.keyboard.type("askbridge/notes");
    await page.getByRole("textbox", { name: "Set-up command" }).click();
    await page.keyboard.type("echo set > setup.txt");
    await expect(page.getByRole("textbox", { name: "Message" })).toHaveValue("");
    await send(page, "scribble the notes", "Wrote the notes.");

    await expect(page.getByText("⎇ askbridge/notes")).toBeVisible();
    const worktree = worktreeOf(repo, "askbridge/notes");
    expect(path.dirname(worktree)).not.toBe(repo);
    expect(fs.readFileSync(path.join(worktree, "notes.md"), "utf8")).toContain("first line");
    expect(fs.readFileSync(path.join(worktree, "setup.txt"), "utf8")).toBe("set\n");
    expect(fs.existsSync(path.join(repo, "notes.md")), "the checkout is untouched").toBe(false);

    // Commit the notes, not the set-up's file.
    await page.getByRole("button", { name: "Worktree" }).click();
    const panel = page.getByRole("complementary", { name: "Worktree" });
    const files = panel.getByRole("list", { name: "Files to commit" });
    await expect(files.getByRole("checkbox")).toHaveCount(2);
    await files.getByRole("checkbox", { name: "setup.txt" }).uncheck();
    await panel.getByRole("textbox", { name: "Commit message" }).click();
    await page.keyboard.type("Add the notes");
    await panel.getByRole("button", { name: "Commit" }).click();
    await expect(panel.getByRole("status")).toHaveText("Committed 1 file on askbridge/notes.");
    expect(git(repo, "log", "-1", "--format=%s", "askbridge/notes")).toBe("Add the notes");
    await expect(files.getByRole("checkbox")).toHaveCount(1);

    await panel.getByRole("button", { name: "Merge into main" }).click();
    await expect(panel.getByRole("status")).toHaveText("Merged into main, moved forward to the branch.");
    expect(fs.readFileSync(path.join(repo, "notes.md"), "utf8")).toContain("first line");

    // The agent and the person both change the notes: the merge shows where, and merges nothing.
    await panel.getByRole("button", { name: "Close worktree" }).click();
    await send(page, "redraft the notes", "Redrafted.");
    await page.getByRole("button", { name: "Worktree" }).click();
    await files.getByRole("checkbox", { name: "setup.txt" }).uncheck();
    await panel.getByRole("textbox", { name: "Commit message" }).click();
    await page.keyboard.type("Redraft");
    await panel.getByRole("button", { name: "Commit" }).click();
    await expect(panel.getByRole("status")).toHaveText("Committed 2 files on askbridge/notes.");
    fs.writeFileSync(path.join(repo, "notes.md"), "# Notes\n\nfirst line\nmy own second line\n");
    git(repo, "commit", "--quiet", "-am", "Mine");
    const before = git(repo, "rev-parse", "HEAD");
    await panel.getByRole("button", { name: "Merge into main" }).click();
    await expect(panel.getByRole("status")).toContainText("Not merged: main and this branch changed the same lines in 1 file");
    const conflicts = panel.getByRole("list", { name: "Conflicts" });
    await expect(conflicts.getByRole("listitem")).toHaveCount(1);
    await expect(conflicts.getByText("notes.md", { exact: true })).toBeVisible();
    await expect(conflicts).toContainText("my own second line");
    expect(git(repo, "rev-parse", "HEAD")).toBe(before);
    expect(git(repo, "status", "--porcelain")).toBe("");
    expect(fs.existsSync(path.join(repo, ".git", "MERGE_HEAD"))).toBe(false);

    // Discard says what goes, then takes the worktree and the branch.
    await panel.getByRole("button", { name: "Discard…" }).click();
    const confirm = panel.getByRole("group", { name: "Discard the worktree" });
    await expect(confirm).toContainText("1 uncommitted file (setup.txt)");
    await expect(confirm).toContainText("1 commit not merged into main");
    await confirm.getByRole("button", { name: "Discard the worktree" }).click();
    await expect(panel.getByRole("status")).toHaveText("The worktree and its branch were removed.");
    expect(fs.existsSync(worktree)).toBe(false);
    expect(git(repo, "branch", "--list", "askbridge/notes")).toBe("");
    await expect(page.getByText("⎇ askbridge/notes")).toHaveCount(0);
  } finally {
    await server.kill();
    fs.rmSync(repo, { recursive: true, force: true });
  }
});

test("a worktree's name cannot leave its folder, and a failing set-up leaves no branch behind", async ({ page }) => {
  const repo = gitRepository();
  try {
    for (const branch of ["../../escape", "-f", "a..b"]) {
      const response = await page.request.post("/api/create_session", {
        data: { workdir: repo, worktree: { base: "main", branch } },
      });
      expect(response.status(), branch).toBe(400);
      expect(await response.text(), branch).toContain("cannot be a branch's name");
    }
    const failing = await page.request.post("/api/create_session", {
      data: { workdir: repo, worktree: { base: "main", branch: "askbridge/setup", setup: "echo no network; exit 3" } },
    });
    expect(failing.status()).toBe(400);
    expect(await failing.text()).toContain("no network");
    expect(git(repo, "branch", "--list", "askbridge/setup")).toBe("");
    expect(git(repo, "worktree", "list").split("\n")).toHaveLength(1);
  } finally {
    fs.rmSync(repo, { recursive: true, force: true });
  }
});

test("Claude Code works in the session's worktree, not in the checkout", async ({ page }) => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "askbridge-e2e-worktree-"));
  const env = claudeEnv(home, "");
  const project = gitRepository(path.join(home, "project"));
  const mock = await OwnMock.start([
    {
      content: [
        { type: "tool_use", name: "Bash", input: { command: "printf 'from Claude\\n' > claude.txt && pwd", description: "Write a file" } },
      ],
    },
    "Wrote claude.txt.",
  ]);
  const server = await OwnServer.start(
    ["--agent", "claude", "--claude-bin", path.resolve(__dirname, "../../node_modules/.bin/claude"), "--workdir", project],
    { ...env, ANTHROPIC_BASE_URL: mock.url },
  );
  try {
    const response = await page.request.post(`${server.url}/api/create_session`, {
      data: { workdir: project, worktree: { base: "main", branch: "askbridge/claude" } },
    });
    expect(response.status(), await response.text()).toBe(200);
    const summary = await response.json();
    await page.goto(`${server.url}/s/${summary.id}`);
    await waitForHydration(page);
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("write a file here");
    await box.press("Enter");
    const card = page.getByRole("group", { name: "The agent wants to run a command" }).last();
    await card.getByRole("button", { name: "Allow once" }).click({ timeout: 60_000 });
    await expect(page.getByText("Wrote claude.txt.")).toBeVisible({ timeout: 60_000 });
    await waitForTurnEnd(page);
    const worktree = worktreeOf(project, "askbridge/claude");
    expect(fs.readFileSync(path.join(worktree, "claude.txt"), "utf8")).toBe("from Claude\n");
    expect(fs.existsSync(path.join(project, "claude.txt"))).toBe(false);
    await expect(page.getByText("⎇ askbridge/claude")).toBeVisible();
  } finally {
    await server.kill();
    await mock.kill();
    fs.rmSync(home, { recursive: true, force: true });
  }
});
