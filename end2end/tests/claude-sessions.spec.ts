// The sessions Claude Code keeps on this machine (issue 21): one a terminal made (`claude -p`,
// the real CLI against a mock of the API) is listed, opened read-only, and continued here; the
// continued turn lands in Claude Code's own transcript, so that `claude --resume` in a terminal
// goes on from it. A server, a mock and a Claude Code home of the test's own.
import { test, expect } from "@playwright/test";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { agentReplies, claudeEnv, OwnMock, OwnServer, waitForHydration, waitForTurnEnd } from "./helpers";

const claudeBin = path.resolve(__dirname, "../../node_modules/.bin/claude");

/** Every text the model was sent in a request, flattened. */
function sentTexts(request: any): string {
  return JSON.stringify(request.messages);
}

test("a terminal's Claude Code session is listed, opened, and continued here; the terminal goes on from the new turn", async ({
  page,
}) => {
  const mock = await OwnMock.start([
    "Pelican noted.",
    "You asked me to remember the word pelican.",
    "We were talking about a pelican.",
  ]);
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "askbridge-e2e-transcripts-"));
  const env = claudeEnv(home, mock.url);
  const project = path.join(home, "project");
  // A terminal's `claude`: print mode, in the project folder.
  execFileSync(claudeBin, ["-p", "remember the word pelican"], {
    cwd: project,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 60_000,
  });
  const server = await OwnServer.start(["--agent", "claude", "--claude-bin", claudeBin, "--workdir", project], env);
  try {
    await page.goto(server.url);
    await waitForHydration(page);
    // Listed, grouped by its folder.
    await page.getByText("Claude Code sessions").click();
    const folder = page.getByRole("region", { name: fs.realpathSync(project) });
    const listed = folder.getByRole("link", { name: /remember the word pelican/ });
    await expect(listed).toBeVisible();

    // Opened: its history, read-only.
    await listed.click();
    await page.waitForURL(/\/c\/[0-9a-f-]+$/);
    const claudeId = page.url().split("/c/")[1];
    await expect(page.getByRole("article", { name: "You" })).toHaveText("remember the word pelican");
    await expect(agentReplies(page).last()).toContainText("Pelican noted.");
    await expect(page.getByRole("textbox", { name: "Command to continue in a terminal" })).toHaveValue(
      new RegExp(`claude --resume ${claudeId}$`),
    );
    // Loaded cold at its address, it hydrates and shows the same (it once panicked while hydrating).
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    await page.reload();
    await waitForHydration(page);
    await expect(page.getByRole("article", { name: "You" })).toHaveText("remember the word pelican");
    await expect(agentReplies(page).last()).toContainText("Pelican noted.");
    await expect(page.getByRole("button", { name: "Continue here" })).toBeEnabled();
    expect(errors).toEqual([]);

    // Continued here: the next message resumes it.
    await page.getByRole("button", { name: "Continue here" }).click();
    await page.waitForURL(/\/s\/[0-9a-f]+$/);
    // Titled as the transcript is, at once; and no longer in Claude Code's own list (it is ours now).
    await expect(page.getByRole("heading", { level: 1 })).toHaveText("remember the word pelican");
    const own = (await (await page.request.post(`${server.url}/api/list_claude_sessions`, { data: {} })).json()) as any[];
    expect(own.flatMap((p) => p.sessions).map((s: any) => s.id)).not.toContain(claudeId);
    await expect(page.getByRole("article", { name: "You" }).first()).toHaveText("remember the word pelican");
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("what did I ask you to remember?");
    await box.press("Enter");
    await expect(agentReplies(page).last()).toContainText("You asked me to remember the word pelican.", {
      timeout: 60_000,
    });
    await waitForTurnEnd(page);
    // The model got the old conversation with the new message.
    const continued = (await mock.requests()).at(-1);
    expect(sentTexts(continued)).toContain("remember the word pelican");
    expect(sentTexts(continued)).toContain("what did I ask you to remember?");
    // The header names the Claude session and the command that goes on with it in a terminal.
    await page.getByText(`Claude session ${claudeId.slice(0, 8)}…`).click();
    await expect(page.getByRole("textbox", { name: "Command to continue in a terminal" })).toHaveValue(
      new RegExp(`claude --resume ${claudeId}$`),
    );

    // A terminal's `claude --resume` goes on from the turn made here.
    execFileSync(claudeBin, ["-p", "--resume", claudeId, "and what were we talking about?"], {
      cwd: project,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 60_000,
    });
    const resumed = (await mock.requests()).at(-1);
    expect(sentTexts(resumed)).toContain("what did I ask you to remember?");
    expect(sentTexts(resumed)).toContain("You asked me to remember the word pelican.");
  } finally {
    await server.kill();
    await mock.kill();
    fs.rmSync(home, { recursive: true, force: true });
  }
});

test("a crafted Claude Code session id is refused, and reads nothing outside the projects folder", async ({ request }) => {
  for (const id of ["../../etc/passwd", "..%2F..%2Fetc%2Fpasswd", "not-an-id", "/etc/passwd"]) {
    const response = await request.post("/api/load_transcript", { data: { id } });
    expect([400, 404]).toContain(response.status());
    expect(await response.text()).not.toContain("root:");
  }
});
