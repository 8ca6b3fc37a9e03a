// A team server (issue 14): two AskBridge servers on one Postgres, behind two URLs, as two people
// of a team (or one person with two tabs that a load balancer sent to different servers) see it.
// The Postgres is a private one that the test starts (the test_postgres example: initdb into a
// temporary folder, a free loopback port) and that stops with it.
import { test as base, expect, type Page } from "@playwright/test";
import { spawn, type ChildProcess } from "node:child_process";
import * as path from "node:path";
import { agentReplies, card, OwnServer, startSession, waitForHydration } from "./helpers";

/** The test's own Postgres: started by the example, stopped when its standard input closes. */
class OwnPostgres {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
  ) {}

  static async start(): Promise<OwnPostgres> {
    const root = path.resolve(__dirname, "../..");
    const child = spawn(path.join(root, "target/debug/examples/test_postgres"), [], {
      cwd: root,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr!.on("data", (chunk) => (stderr = (stderr + chunk).slice(-8_000)));
    const url = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout!.on("data", (chunk) => {
        out += chunk;
        const line = out.split("\n").find((l) => l.startsWith("postgres://"));
        if (line) resolve(line.trim());
      });
      child.once("exit", (code) => reject(new Error(`test_postgres exited (${code}) before it was ready:\n${stderr}`)));
    });
    return new OwnPostgres(child, url);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once("exit", resolve));
    this.child.stdin!.end();
    await exited;
  }
}

const test = base.extend<{ team: { a: OwnServer; b: OwnServer } }>({
  team: async ({}, use) => {
    const postgres = await OwnPostgres.start();
    const flags = ["--agent", "scripted", "--database-url", postgres.url];
    const servers: OwnServer[] = [];
    try {
      servers.push(await OwnServer.start(flags));
      servers.push(await OwnServer.start(flags));
      await use({ a: servers[0], b: servers[1] });
    } finally {
      for (const server of servers) await server.kill();
      await postgres.stop();
    }
  },
});

function databaseQuestion(page: Page) {
  return card(page).getByRole("radiogroup", { name: "Which database should we use?" });
}

test("a question asked through one server is answered through the other, and both tabs show it answered", async ({
  team,
  browser,
}) => {
  // A browser tab on each server's URL (as a load balancer may send two tabs to two servers).
  const signedIn = { Authorization: `Bearer ${process.env.ASKBRIDGE_TOKEN}` };
  const onA = await browser.newContext({ baseURL: team.a.url, extraHTTPHeaders: signedIn });
  const onB = await browser.newContext({ baseURL: team.b.url, extraHTTPHeaders: signedIn });
  const [pageA, pageB] = [await onA.newPage(), await onB.newPage()];

  // Asked through server A, whose agent runs the turn.
  const session = await startSession(pageA, "ask me a single question");
  await expect(databaseQuestion(pageA)).toBeVisible();

  // The same session through server B: the card is there, live.
  await pageB.goto(`/s/${session}`);
  await waitForHydration(pageB);
  await expect(databaseQuestion(pageB)).toBeVisible();

  // Answered on B with one click; the agent on A gets it, and both cards are answered.
  await databaseQuestion(pageB).getByRole("radio", { name: "Postgres" }).click();
  await expect(card(pageB)).toHaveAttribute("data-state", "answered");
  await expect(card(pageA)).toHaveAttribute("data-state", "answered", { timeout: 1_000 });
  await expect(databaseQuestion(pageA).getByRole("radio", { name: "Postgres" })).toBeChecked();
  await expect(agentReplies(pageA).last()).toContainText('Received "Which database should we use?"="Postgres".');
  await expect(agentReplies(pageB).last()).toContainText('Received "Which database should we use?"="Postgres".');
  await onA.close();
  await onB.close();
});
