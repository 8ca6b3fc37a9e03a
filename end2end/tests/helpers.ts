import { test as base, expect, type Page, type APIRequestContext } from "@playwright/test";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";

/**
 * The server the browser tests run: the Rust tests' debug build (`make test-servers`), or
 * ASKBRIDGE_BIN. It serves the release site from target/site, found beside its own folder.
 */
export const ASKBRIDGE = process.env.ASKBRIDGE_BIN ?? path.resolve(__dirname, "../../target/debug/askbridge");

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

/** The session header's status: Working, Waiting for you, Paused or Ready (and how the last turn ended). */
export function sessionStatus(page: Page) {
  return page.getByRole("status", { name: "Session status" });
}

/** The open session's entry in the session list (its link, which says its status and time). */
export function openInList(page: Page) {
  return page.getByRole("navigation", { name: "Session list" }).locator('[aria-current="page"]');
}

/** Waits until the agent has finished its turn (the Stop button is gone, the status says Ready). */
export async function waitForTurnEnd(page: Page) {
  await expect(page.getByRole("button", { name: "Stop" })).toHaveCount(0, { timeout: 30_000 });
  await expect(sessionStatus(page)).toContainText("Ready", { timeout: 30_000 });
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

/**
 * The first `http://127.0.0.1:PORT` a server started on port 0 prints on its standard output (an
 * AskBridge server's sign-in link, the mock API's "listening on"): where it listens, once it does.
 */
export function printedAddress(child: ChildProcess, name: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let printed = "";
    const read = (chunk: Buffer) => {
      printed += chunk;
      const address = /http:\/\/127\.0\.0\.1:\d+/.exec(printed);
      if (address) {
        child.stdout!.off("data", read);
        child.stdout!.resume();
        resolve(address[0]);
      }
    };
    child.stdout!.on("data", read);
    child.once("error", reject);
    child.once("exit", (code, signal) => reject(new Error(`${name} exited (${code ?? signal}) before it listened:\n${printed}`)));
  });
}

/**
 * A free loopback port below Linux's ephemeral range (32768–60999), for a server that is restarted
 * on the port it had. A port the kernel picks (port 0) is from that range, and a server restarted
 * on it could find it taken meanwhile by some process's outgoing connection ("Address already in
 * use": seen once, in trust.spec's restart after SIGKILL). Free when probed, which another test
 * may change before the server binds it: `OwnServer` then starts on another.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const probe = net.createServer();
      probe.once("error", () => resolve(false));
      probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error("no free loopback port found between 20000 and 32000");
}

/**
 * An AskBridge server of a test's own (the browser tests' build, with the scripted agent playing
 * end2end/fixtures/scenario.toml unless its args give a `--scenario`), on a free port and a fresh data folder, for tests that stop
 * and restart it. `stop()` is a graceful stop (SIGTERM); `kill()` ends it at once and is safe to
 * call whatever state it is in (fixtures call it on teardown, so a failing test leaves nothing
 * running).
 */
export class OwnServer {
  private child: ChildProcess | null = null;
  private exited: Promise<number | null> = Promise.resolve(null);
  private stderr = "";
  /** Folders of the test's own (an agent's home) that go with the data folder at `kill()`. */
  private owned: string[] = [];

  private constructor(
    private port: number,
    readonly dataDir: string,
    private readonly args: string[],
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** `env` is added to this process's environment (for `--agent claude`, see `claudeEnv`). */
  static async start(args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<OwnServer> {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "askbridge-e2e-"));
    const server = new OwnServer(await freePort(), dataDir, args, env);
    for (let attempt = 1; ; attempt++) {
      try {
        await server.start();
        return server;
      } catch (error) {
        // Taken between the probe and the bind: another port, a few times. A restart keeps its port.
        if (attempt === 5 || !/cannot listen on .*in use/i.test(server.stderr)) throw error;
        server.port = await freePort();
        server.stderr = "";
      }
    }
  }

  /** Starts the server (again: same port, same data folder) and resolves once it answers. */
  async start(): Promise<void> {
    const root = path.resolve(__dirname, "../..");
    const child = spawn(
      ASKBRIDGE,
      ["serve", "--addr", `127.0.0.1:${this.port}`, "--data-dir", this.dataDir,
        ...(this.args.includes("--scenario") ? [] : ["--scenario", "end2end/fixtures/scenario.toml"]),
        ...this.args],
      { cwd: root, stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...this.env } },
    );
    this.child = child;
    child.stderr!.on("data", (chunk) => (this.stderr = (this.stderr + chunk).slice(-8_000)));
    this.exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? (signal ? -1 : null))));
    const killOnExit = () => child.kill("SIGKILL");
    process.once("exit", killOnExit);
    child.once("exit", () => process.removeListener("exit", killOnExit));

    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`askbridge exited before it answered:\n${this.stderr}`);
      }
      try {
        const signedIn = { headers: { Authorization: `Bearer ${this.token}` } };
        if ((await fetch(`${this.url}/`, signedIn)).ok) return;
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`askbridge did not answer within 30 s:\n${this.stderr}`);
  }

  /** `folder` is removed with the data folder at `kill()`. */
  owns(folder: string): this {
    this.owned.push(folder);
    return this;
  }

  /** A graceful stop (SIGTERM, as systemd or Ctrl-C would); resolves with the exit code. */
  async stop(): Promise<number | null> {
    this.child?.kill("SIGTERM");
    return this.exited;
  }

  /** The access token it asks for (`env.ASKBRIDGE_TOKEN`, else the suite's). */
  get token(): string {
    return this.env.ASKBRIDGE_TOKEN ?? process.env.ASKBRIDGE_TOKEN!;
  }

  /** A crash: SIGKILL, nothing recorded on the way out; the data folder stays for a restart. */
  async crash(): Promise<void> {
    this.child?.kill("SIGKILL");
    await this.exited;
  }

  /** Ends the server at once if it still runs, and removes its data folder. */
  async kill(): Promise<void> {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill("SIGKILL");
      await this.exited;
    }
    for (const folder of [this.dataDir, ...this.owned]) fs.rmSync(folder, { recursive: true, force: true });
  }

  /** What the server logged last (for failure messages). */
  log(): string {
    return this.stderr;
  }
}

/**
 * The environment the real Claude Code CLI runs offline in: its own HOME and config folder under
 * `home`, the mock at `mockURL` as the API, and no traffic of its own
 * (../shared/protocol/claude-cli.md §1). Makes the folders it names.
 */
export function claudeEnv(home: string, mockURL: string): Record<string, string> {
  for (const dir of [".claude", "tmp", "project"]) {
    fs.mkdirSync(path.join(home, dir), { recursive: true });
  }
  return {
    HOME: home,
    CLAUDE_CONFIG_DIR: path.join(home, ".claude"),
    TMPDIR: path.join(home, "tmp"),
    XDG_RUNTIME_DIR: path.join(home, "tmp"),
    CLAUDE_CODE_TMPDIR: path.join(home, "tmp"),
    ANTHROPIC_BASE_URL: mockURL,
    ANTHROPIC_API_KEY: "dummy",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_ERROR_REPORTING: "1",
  };
}

/** Starts the mock `example` (`target/debug/examples/`) on a script of `script`, in a folder of
 * its own; it is killed if this process exits first. */
async function startMockProgram(
  example: string,
  script: unknown,
): Promise<{ url: string; child: ChildProcess; script: string }> {
  const root = path.resolve(__dirname, "../..");
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), `askbridge-${example}-`)), "script.json");
  fs.writeFileSync(file, JSON.stringify(script));
  const child = spawn(path.join(root, "target/debug/examples", example), [file], { stdio: ["ignore", "pipe", "ignore"] });
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  child.once("exit", () => process.removeListener("exit", killOnExit));
  return { url: await printedAddress(child, example), child, script: file };
}

/** Ends a mock started by `startMockProgram`, and removes its script's folder. */
async function killMockProgram(child: ChildProcess, script: string): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
  }
  fs.rmSync(path.dirname(script), { recursive: true, force: true });
}

/**
 * A mock Messages API of a test's own (`target/debug/examples/mock_anthropic`) playing `replies`
 * in order (the format of `script_from_json` in tests/support/mock_anthropic.rs).
 */
export class OwnMock {
  private constructor(
    readonly url: string,
    private readonly child: ChildProcess,
    private readonly script: string,
  ) {}

  /** `side`: the text for the requests an agent makes beside the conversation (titles,
   * suggestions: Claude's ACP adapter makes them), which then leave the script alone. */
  static async start(replies: unknown[], side?: string): Promise<OwnMock> {
    const { url, child, script } = await startMockProgram("mock_anthropic", side === undefined ? replies : { replies, side });
    return new OwnMock(url, child, script);
  }

  /** What it was sent so far, oldest first. */
  async requests(): Promise<any[]> {
    return (await fetch(`${this.url}/_requests`)).json();
  }

  /** The tokens each of its replies said it used, oldest first. */
  async usage(): Promise<{ model: string; input_tokens: number; output_tokens: number; side: boolean }[]> {
    return (await fetch(`${this.url}/_usage`)).json();
  }

  async kill(): Promise<void> {
    await killMockProgram(this.child, this.script);
  }
}

/** A mock of another model API, `replies` one per streamed request, a string a text and
 * `{call, args}` a function call: Gemini's (`examples/mock_gemini.rs`) or OpenAI's Responses API
 * (`examples/mock_openai.rs`, for Codex and OpenCode; its API at `${url}/v1`). */
export class ScriptedMock {
  private constructor(
    readonly url: string,
    private readonly child: ChildProcess,
    private readonly script: string,
  ) {}

  static async start(example: "mock_gemini" | "mock_openai", replies: unknown[]): Promise<ScriptedMock> {
    const { url, child, script } = await startMockProgram(example, replies);
    return new ScriptedMock(url, child, script);
  }

  /** The streamed requests so far, oldest first. */
  async requests(): Promise<any[]> {
    return (await fetch(`${this.url}/_requests`)).json();
  }

  async kill(): Promise<void> {
    await killMockProgram(this.child, this.script);
  }
}

/** The question card the page shows last. */
export function card(page: Page) {
  return page.getByRole("group", { name: "The agent asks you" }).last();
}

/** A test with a server of its own, started with `serverArgs` (`test.use`), killed after it. */
export const ownServerTest = base.extend<{ serverArgs: string[]; server: OwnServer }>({
  serverArgs: [[], { option: true }],
  server: async ({ serverArgs }, use) => {
    const server = await OwnServer.start(serverArgs);
    try {
      await use(server);
    } finally {
      await server.kill();
    }
  },
  baseURL: async ({ server }, use) => use(server.url),
});

/** `git args…` in `folder`, its output trimmed. */
export function git(folder: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd: folder, encoding: "utf8" }).trim();
}

/** A git repository on `main` with one commit (a README), in `folder` (a new one by default). */
export function gitRepository(folder = fs.mkdtempSync(path.join(os.tmpdir(), "askbridge-repo-"))): string {
  fs.mkdirSync(folder, { recursive: true });
  git(folder, "init", "--quiet", "-b", "main");
  git(folder, "config", "user.email", "me@example.com");
  git(folder, "config", "user.name", "Me");
  fs.writeFileSync(path.join(folder, "README.md"), "# A project\n");
  git(folder, "add", ".");
  git(folder, "commit", "--quiet", "-m", "first");
  return folder;
}
