// Browser tests: Debian's Chromium (Playwright's own download cannot work offline) against the
// server the Rust tests built (target/debug, or ASKBRIDGE_BIN) serving the release site
// (target/site), started here with an empty data folder and the end-to-end scenario.
import { defineConfig, devices } from "@playwright/test";
import * as path from "node:path";
import { ASKBRIDGE, claudeEnv } from "./tests/helpers";

const port = Number(process.env.E2E_PORT ?? 3217);
export const baseURL = `http://127.0.0.1:${port}`;
// AskBridge driving the real Claude Code CLI, which talks to a mock of the Messages API.
const claudePort = port + 1;
const mockPort = port + 2;
export const claudeURL = `http://127.0.0.1:${claudePort}`;
export const mockURL = `http://127.0.0.1:${mockPort}`;
// AskBridge talking to the Messages API itself (--agent anthropic), against a second mock.
const apiPort = port + 3;
const apiMockPort = port + 4;
export const anthropicURL = `http://127.0.0.1:${apiPort}`;
export const apiMockURL = `http://127.0.0.1:${apiMockPort}`;
const root = path.resolve(__dirname, "..");
// Every server of the suite asks for this access token, given the documented way (ASKBRIDGE_TOKEN,
// inherited by the servers started here and by the tests' own); the browser and the API client
// send it as a bearer token. Fixed, so that every worker process agrees on it.
process.env.ASKBRIDGE_TOKEN ??= "askbridge-e2e-token-5d1c0a7e";
export const token = process.env.ASKBRIDGE_TOKEN;
// The servers' logs (stderr, shown here) say only what went wrong.
const quiet = { RUST_LOG: "warn" };
const claudeHome = path.join(root, "end2end/.claude-home");

export default defineConfig({
  testDir: "tests",
  timeout: 60_000,
  expect: { timeout: 15_000 },
  fullyParallel: true,
  workers: 2,
  retries: 0,
  reporter: [["list"]],
  outputDir: "test-results",
  use: {
    baseURL,
    extraHTTPHeaders: { Authorization: `Bearer ${token}` },
    trace: "retain-on-failure",
    screenshot: "only-on-failure",
  },
  projects: [
    {
      name: "chromium",
      use: {
        ...devices["Desktop Chrome"],
        launchOptions: {
          executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
          args: [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
          ],
        },
      },
    },
  ],
  webServer: [
    {
      command:
        `rm -rf end2end/.data && exec ${ASKBRIDGE} serve --addr 127.0.0.1:${port} ` +
        `--data-dir end2end/.data --agent scripted --scenario end2end/fixtures/scenario.toml`,
      cwd: "..",
      url: `${baseURL}/`,
      reuseExistingServer: false,
      timeout: 60_000,
      stdout: "ignore",
      stderr: "pipe",
      env: quiet,
    },
    {
      command: `exec target/debug/examples/mock_anthropic end2end/fixtures/claude-mock.json --port ${mockPort}`,
      cwd: "..",
      url: `${mockURL}/_requests`,
      reuseExistingServer: false,
      timeout: 30_000,
      stdout: "ignore",
      stderr: "pipe",
      env: quiet,
    },
    {
      // The CLI runs offline: its own HOME and config folder, the mock as the API, and no
      // traffic of its own (../shared/protocol/claude-cli.md §1).
      command:
        `rm -rf ${claudeHome} && mkdir -p ${claudeHome}/.claude ${claudeHome}/tmp ${claudeHome}/project && ` +
        `exec ${ASKBRIDGE} serve --addr 127.0.0.1:${claudePort} --data-dir ${claudeHome}/data ` +
        `--agent claude --claude-bin ${root}/node_modules/.bin/claude --workdir ${claudeHome}/project`,
      cwd: "..",
      url: `${claudeURL}/`,
      reuseExistingServer: false,
      timeout: 60_000,
      stdout: "ignore",
      stderr: "pipe",
      env: { ...claudeEnv(claudeHome, mockURL), ...quiet },
    },
    {
      command: `exec target/debug/examples/mock_anthropic end2end/fixtures/anthropic-mock.json --port ${apiMockPort}`,
      cwd: "..",
      url: `${apiMockURL}/_requests`,
      reuseExistingServer: false,
      timeout: 30_000,
      stdout: "ignore",
      stderr: "pipe",
      env: quiet,
    },
    {
      command:
        `rm -rf end2end/.data-api && exec ${ASKBRIDGE} serve --addr 127.0.0.1:${apiPort} ` +
        `--data-dir end2end/.data-api --agent anthropic --base-url ${apiMockURL} --model claude-sonnet-5-5`,
      cwd: "..",
      url: `${anthropicURL}/`,
      reuseExistingServer: false,
      timeout: 60_000,
      stdout: "ignore",
      stderr: "pipe",
      env: { ANTHROPIC_API_KEY: "dummy", ...quiet },
    },
  ],
});
