// Browser tests: Debian's Chromium (Playwright's own download cannot work offline) against the
// release server, started here with an empty data folder and the end-to-end scenario.
import { defineConfig, devices } from "@playwright/test";
import * as path from "node:path";

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
        `rm -rf end2end/.data && exec target/release/askbridge serve --addr 127.0.0.1:${port} ` +
        `--data-dir end2end/.data --agent scripted --scenario end2end/fixtures/scenario.toml`,
      cwd: "..",
      url: `${baseURL}/`,
      reuseExistingServer: false,
      timeout: 60_000,
      stdout: "ignore",
      stderr: "pipe",
    },
    {
      command: `exec target/debug/examples/mock_anthropic end2end/fixtures/claude-mock.json --port ${mockPort}`,
      cwd: "..",
      url: `${mockURL}/_requests`,
      reuseExistingServer: false,
      timeout: 30_000,
      stdout: "ignore",
      stderr: "pipe",
    },
    {
      // The CLI runs offline: its own HOME and config folder, the mock as the API, and no
      // traffic of its own (../shared/protocol/claude-cli.md §1).
      command:
        `rm -rf ${claudeHome} && mkdir -p ${claudeHome}/.claude ${claudeHome}/tmp ${claudeHome}/project && ` +
        `exec target/release/askbridge serve --addr 127.0.0.1:${claudePort} --data-dir ${claudeHome}/data ` +
        `--agent claude --claude-bin ${root}/node_modules/.bin/claude --workdir ${claudeHome}/project`,
      cwd: "..",
      url: `${claudeURL}/`,
      reuseExistingServer: false,
      timeout: 60_000,
      stdout: "ignore",
      stderr: "pipe",
      env: {
        HOME: claudeHome,
        CLAUDE_CONFIG_DIR: `${claudeHome}/.claude`,
        TMPDIR: `${claudeHome}/tmp`,
        XDG_RUNTIME_DIR: `${claudeHome}/tmp`,
        CLAUDE_CODE_TMPDIR: `${claudeHome}/tmp`,
        ANTHROPIC_BASE_URL: mockURL,
        ANTHROPIC_API_KEY: "dummy",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_TELEMETRY: "1",
        DISABLE_AUTOUPDATER: "1",
        DISABLE_ERROR_REPORTING: "1",
      },
    },
    {
      command: `exec target/debug/examples/mock_anthropic end2end/fixtures/anthropic-mock.json --port ${apiMockPort}`,
      cwd: "..",
      url: `${apiMockURL}/_requests`,
      reuseExistingServer: false,
      timeout: 30_000,
      stdout: "ignore",
      stderr: "pipe",
    },
    {
      command:
        `rm -rf end2end/.data-api && exec target/release/askbridge serve --addr 127.0.0.1:${apiPort} ` +
        `--data-dir end2end/.data-api --agent anthropic --base-url ${apiMockURL} --model claude-sonnet-5-5`,
      cwd: "..",
      url: `${anthropicURL}/`,
      reuseExistingServer: false,
      timeout: 60_000,
      stdout: "ignore",
      stderr: "pipe",
      env: { ANTHROPIC_API_KEY: "dummy" },
    },
  ],
});
