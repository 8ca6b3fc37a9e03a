// The servers every browser test shares, started before the first test and stopped after the
// last (Playwright's global setup). Each binds port 0 and says where it listens on its standard
// output, which is read here: no port is chosen in advance, so two runs on one machine, or a port
// some other program holds, cannot collide with them. Their addresses reach the tests through the
// environment (`E2E_*_URL`, read by playwright.config.ts in every worker).
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { ASKBRIDGE, claudeEnv, printedAddress } from "./tests/helpers";

const root = path.resolve(__dirname, "..");
const claudeHome = path.join(root, "end2end/.claude-home");
// The servers' logs (stderr, passed through) say only what went wrong.
const quiet = { RUST_LOG: "warn" };
const started: ChildProcess[] = [];

/** Starts `command` and resolves with where it listens, once it prints it. */
function listening(name: string, command: string, args: string[], env: Record<string, string>): Promise<string> {
  const child = spawn(command, args, { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  started.push(child);
  child.stderr!.pipe(process.stderr);
  return printedAddress(child, name);
}

/** Resolves once `url` answers (a server may print its address a moment before it serves). */
async function answering(url: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const response = await fetch(url, { headers: { Authorization: `Bearer ${process.env.ASKBRIDGE_TOKEN}` } }).catch(() => null);
    if (response?.ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not answer within a minute`);
}

function askbridge(name: string, dataDir: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  fs.rmSync(path.join(root, dataDir), { recursive: true, force: true });
  return listening(name, ASKBRIDGE, ["serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir, ...args], { ...env, ...quiet });
}

function mock(name: string, script: string): Promise<string> {
  return listening(name, path.join(root, "target/debug/examples/mock_anthropic"), [script, "--port", "0"], quiet);
}

export default async function startServers(): Promise<() => Promise<void>> {
  try {
    const [mockURL, apiMockURL] = await Promise.all([
      mock("the Claude Code loop's mock API", "end2end/fixtures/claude-mock.json"),
      mock("the Messages API agent's mock API", "end2end/fixtures/anthropic-mock.json"),
    ]);
    // The CLI runs offline: its own HOME and config folder, the mock as the API, and no traffic of
    // its own (../shared/protocol/claude-cli.md §1).
    fs.rmSync(claudeHome, { recursive: true, force: true });
    for (const folder of [".claude", "tmp", "project"]) fs.mkdirSync(path.join(claudeHome, folder), { recursive: true });
    const [baseURL, claudeURL, anthropicURL] = await Promise.all([
      askbridge("the scripted agent's server", "end2end/.data", ["--agent", "scripted", "--scenario", "end2end/fixtures/scenario.toml"]),
      askbridge("the Claude Code server", path.join(claudeHome, "data"), [
        "--agent", "claude", "--claude-bin", path.join(root, "node_modules/.bin/claude"), "--workdir", path.join(claudeHome, "project"),
      ], claudeEnv(claudeHome, mockURL)),
      askbridge("the Messages API server", "end2end/.data-api", [
        "--agent", "anthropic", "--base-url", apiMockURL, "--model", "claude-sonnet-5-5",
      ], { ANTHROPIC_API_KEY: "dummy" }),
    ]);
    await Promise.all([baseURL, claudeURL, anthropicURL].map((url) => answering(`${url}/`)));
    Object.assign(process.env, {
      E2E_BASE_URL: baseURL,
      E2E_CLAUDE_URL: claudeURL,
      E2E_MOCK_URL: mockURL,
      E2E_ANTHROPIC_URL: anthropicURL,
      E2E_API_MOCK_URL: apiMockURL,
    });
  } catch (error) {
    await stopServers();
    throw error;
  }
  return stopServers;
}

/** SIGTERM, so that a server stops the Claude Code CLIs it runs; then waits for each to exit. */
async function stopServers(): Promise<void> {
  await Promise.all(started.map((child) => new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
    setTimeout(() => child.kill("SIGKILL"), 10_000).unref();
  })));
}
