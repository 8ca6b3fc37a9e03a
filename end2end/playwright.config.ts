// Browser tests: Debian's Chromium (Playwright's own download cannot work offline) against the
// server the Rust tests built (target/debug, or ASKBRIDGE_BIN) serving the release site
// (target/site), with empty data folders and the end-to-end scenario (end2end/servers.ts).
import { defineConfig, devices } from "@playwright/test";

// The shared servers' addresses: end2end/servers.ts starts them on ports of their own choosing
// before the first test, and every worker (which loads this file again) reads them here.
export const baseURL = process.env.E2E_BASE_URL!;
// AskBridge driving the real Claude Code CLI, which talks to a mock of the Messages API.
export const claudeURL = process.env.E2E_CLAUDE_URL!;
export const mockURL = process.env.E2E_MOCK_URL!;
// AskBridge talking to the Messages API itself (--agent anthropic), against a second mock.
export const anthropicURL = process.env.E2E_ANTHROPIC_URL!;
export const apiMockURL = process.env.E2E_API_MOCK_URL!;
// Every server of the suite asks for this access token, given the documented way (ASKBRIDGE_TOKEN,
// inherited by the servers started here and by the tests' own); the browser and the API client
// send it as a bearer token. Fixed, so that every worker process agrees on it.
process.env.ASKBRIDGE_TOKEN ??= "askbridge-e2e-token-5d1c0a7e";
export const token = process.env.ASKBRIDGE_TOKEN;

/** The specs that need the full browser: notifications and the Push API. */
const FULL_BROWSER = [/notify\.spec\.ts/, /push\.spec\.ts/];

function browser(executablePath: string) {
  return {
    ...devices["Desktop Chrome"],
    launchOptions: {
      executablePath,
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
  };
}

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
    // No trace by default: recording one for every test (to keep it on a failure) cost a quarter of
    // the browser tests' CPU, the screencast's frames most (questions + approvals, 24 tests: 89 s
    // and 173 CPU-seconds with it, 78 s and 149 with its screenshots off, 69 s and 132 without;
    // 29 Nov, BENCHMARKS.md §7). To look into a failure: make test-e2e E2E_ARGS="--trace
    // retain-on-failure". A failing test still leaves its screenshot and error context.
    trace: "off",
    screenshot: "only-on-failure",
    // The browser asks for reduced motion, which the stylesheet honours (no animation at all): on
    // 2 cores the tests are CPU-bound, and the pulsing dots, spinners and carets of a working
    // session kept headless Chromium compositing in software. questions + approvals, 24 tests:
    // 108 s and 210 CPU-seconds with them, 80 s and 155 without (29 Nov, BENCHMARKS.md §7). No
    // behaviour waits on an animation (no animationend or transitionend anywhere).
    contextOptions: { reducedMotion: "reduce" },
  },
  // Debian's Chromium in two builds. Most tests run in its headless shell, the build Playwright
  // itself runs headless: a fresh context with our page opened and hydrated costs 0.8
  // CPU-seconds in it against 2.3 in the full browser, and the whole suite took 295 s and 481
  // CPU-seconds against 563 s and 1,035 (that one with traces; 29 Nov, BENCHMARKS.md §7). The
  // shell has no notifications and no push messaging: the tests of those run in the full browser.
  projects: [
    {
      name: "chromium",
      testIgnore: FULL_BROWSER,
      use: browser(process.env.CHROMIUM_HEADLESS_SHELL_PATH ?? "/usr/bin/chromium-headless-shell"),
    },
    {
      name: "chromium-full",
      testMatch: FULL_BROWSER,
      use: browser(process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"),
    },
  ],
  globalSetup: "./servers.ts",
});
