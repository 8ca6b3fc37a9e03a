// Issue 25: "click → the API receives the tool_result" for the peer product CloudCLI
// (siteboon/claudecodeui v1.37.2, installed by scripts/peer/setup.sh into target/peer/claudecodeui),
// measured the way scripts/bench/questions.mjs measures it for AskBridge: the real Claude Code CLI
// (node_modules/.bin/claude, pinned) against the bench's mock Messages API, a headless Chromium, the
// same question and the same think time.
//
//   node scripts/peer/answer-path.mjs [runs]     (default 10; or PEER_RUNS; BENCH_THINK_MS as the bench)
//
// CloudCLI runs the CLI through @anthropic-ai/claude-agent-sdk with `canUseTool`: the question comes
// to the page as a permission request over its WebSocket, and the answer goes back as
// `chat.permission-response` and on to the CLI as the can_use_tool control_response, the bench's
// "can-use-tool" answer path. Its card answers in two clicks: the option, then "Submit". Measured,
// per run, on the bench's clock (page marks brought to it by `clockOffset`):
// - submit click → tool_result: the click on Submit (the click that answers) → the mock has the
//   whole request carrying the question's tool_result. Comparable to AskBridge's
//   "click → API receives tool_result" (where the option click answers).
// - submit click → WS send: the click → the page's WebSocket.send of chat.permission-response.
// - WS send → tool_result: the rest (server, SDK, CLI, request to the mock).
// - option click → tool_result: from the first of the two clicks (includes the 2nd click's gap).
// - tool_use → card: the mock's end of the tool_use → the option buttons in the page.
//
// Everything started here (the mock, the CloudCLI server and the CLIs it runs, Chromium) is stopped
// by pid at the end; CloudCLI's HOME is a fresh folder under target/peer/runs (its workspace guard
// refuses project folders under /tmp), removed at the end unless PEER_KEEP=1.

import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

import { clockOffset, launchChromium } from "../bench/browser.mjs";
import { chromiumSettled } from "../bench/cores.mjs";
import { figure, spread, stats } from "../bench/figures.mjs";
import { MockApi, newToolResults, textBlock, toolUseBlock } from "../bench/mock-api.mjs";
import { CLAUDE_BIN, claudeEnv, freePort, root, sleep, spawnTracked, waitFor } from "../bench/processes.mjs";
import { answerReached, INPUT, QUESTION } from "../bench/question.mjs";

const APP = path.join(root, "target/peer/claudecodeui");
const RUNS = Number(process.argv[2] ?? process.env.PEER_RUNS ?? 10);
const THINK_MS = Number(process.env.BENCH_THINK_MS ?? 300);

/** A CloudCLI server of our own: loopback, a fresh HOME and database, one user, one project. */
export class CloudCli {
  /** `mockUrl`: the Messages API the CLI is pointed at (ANTHROPIC_BASE_URL). */
  static async start(mockUrl) {
    if (!fs.existsSync(path.join(APP, "dist-server/server/index.js"))) {
      throw new Error(`${APP} is not built: run scripts/peer/setup.sh first`);
    }
    fs.mkdirSync(path.join(root, "target/peer/runs"), { recursive: true });
    const home = fs.mkdtempSync(path.join(root, "target/peer/runs/cloudcli-"));
    const server = new CloudCli(home, await freePort());
    await server.start(mockUrl);
    return server;
  }

  constructor(home, port) {
    this.home = home;
    this.port = port;
    this.url = `http://127.0.0.1:${port}`;
    this.project = path.join(home, "project");
    this.log = "";
  }

  async start(mockUrl) {
    const env = {
      ...process.env,
      // HOME, CLAUDE_CONFIG_DIR, TMPDIR, ANTHROPIC_BASE_URL=mock, ANTHROPIC_API_KEY=dummy, no traffic:
      // the environment the bench runs the CLI in; CloudCLI passes its whole env on to the CLI.
      ...claudeEnv(this.home, mockUrl),
      SERVER_PORT: String(this.port),
      HOST: "127.0.0.1",
      DATABASE_PATH: path.join(this.home, "auth.db"),
      CLAUDE_CLI_PATH: CLAUDE_BIN,
      NODE_ENV: "production",
    };
    this.child = spawnTracked(process.execPath, ["dist-server/server/index.js"], { cwd: APP, env, stdio: ["ignore", "pipe", "pipe"] });
    const keep = (chunk) => (this.log = (this.log + chunk).slice(-8000));
    this.child.stdout.on("data", keep);
    this.child.stderr.on("data", keep);
    this.exited = new Promise((resolve) => this.child.once("exit", (code, signal) => resolve(code ?? signal)));
    await waitFor("CloudCLI to listen", 60_000, async () => {
      if (this.child.exitCode !== null) throw new Error(`CloudCLI exited at start:\n${this.log}`);
      try {
        return (await fetch(`${this.url}/api/auth/status`)).ok;
      } catch {
        return false;
      }
    });
    // Its single user, created through its API (the page's first-run form does the same), then
    // onboarding marked done and the project folder registered.
    ({ token: this.token } = await this.api("/api/auth/register", { username: "bench", password: "bench-password" }));
    await this.api("/api/user/complete-onboarding", {});
    await this.api("/api/projects/create-project", { path: this.project });
  }

  async api(route, body) {
    const response = await fetch(`${this.url}${route}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(this.token ? { authorization: `Bearer ${this.token}` } : {}) },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${route}: ${response.status} ${text}`);
    return JSON.parse(text);
  }

  /** SIGTERM (it stops its CLIs and exits), SIGKILL after 10 s; then removes its HOME. */
  async dispose() {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill("SIGTERM");
      const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
      await this.exited;
      clearTimeout(timer);
    }
    if (process.env.PEER_KEEP !== "1") fs.rmSync(this.home, { recursive: true, force: true });
  }
}

/** Runs in the page before CloudCLI's scripts: marks clicks, the answer's WS send, the card. */
function installMarks(token) {
  localStorage.setItem("auth-token", token);
  const stamp = () => performance.timeOrigin + performance.now();
  const marks = (window.__peer = { clicks: [], wsSends: [], card: null });
  addEventListener("click", (event) => marks.clicks.push({ at: stamp(), text: (event.target.closest("button") ?? event.target).textContent.trim() }), true);
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (data) {
    if (typeof data === "string" && data.includes("chat.permission-response")) marks.wsSends.push(stamp());
    return send.call(this, data);
  };
  new MutationObserver(() => {
    if (marks.card === null && document.querySelector('[role="radiogroup"]')) marks.card = stamp();
  }).observe(document, { childList: true, subtree: true });
}

async function main() {
  let asked = 0;
  let latest = null;
  const mock = await new MockApi((body, index) => {
    if (newToolResults(body).length) return { blocks: [textBlock("Postgres it is. I will write the migration next.")] };
    const id = `toolu_peer_${++asked}`;
    latest = { id, index };
    return { blocks: [textBlock("Before I start, one question."), toolUseBlock(id, "AskUserQuestion", INPUT)] };
  }).start();
  let server = null;
  let browser = null;
  const stop = async () => {
    await browser?.close().catch(() => {});
    await server?.dispose();
    await mock.close();
  };
  for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, () => stop().finally(() => process.exit(130)));
  try {
    server = await CloudCli.start(mock.url);
    browser = await launchChromium();
    const runs = [];
    for (let run = 0; run < RUNS; run++) {
      const r = await oneRun(browser, server, mock, () => latest, run);
      runs.push(r);
      console.log(
        `run ${run + 1}/${RUNS}: submit click → tool_result ${r.submitToResult.toFixed(1)} ms ` +
          `(click → WS send ${r.submitToWs.toFixed(1)}, WS send → tool_result ${r.wsToResult.toFixed(1)}); ` +
          `option click → tool_result ${r.optionToResult.toFixed(1)} ms; tool_use → card ${r.toolUseToCard.toFixed(1)} ms`,
      );
    }
    const row = (name, key) => {
      const s = stats(runs.map((r) => r[key]));
      const f = figure("peer", `CloudCLI ${CLOUDCLI_VERSION}: ${name}`, s.median, "ms", { shown: spread(s, "ms", { p95: true }) });
      console.log(`${name.padEnd(44)} ${f.shown}`);
      return f;
    };
    console.log(`\nCloudCLI ${CLOUDCLI_VERSION}, ${RUNS} runs, think time ${THINK_MS} ms:`);
    const figures = [
      row("click (Submit) → API receives tool_result", "submitToResult"),
      row("  click → WS send leaves the page", "submitToWs"),
      row("  WS send → API receives", "wsToResult"),
      row("option click → API receives tool_result", "optionToResult"),
      row("tool_use → card in page", "toolUseToCard"),
    ];
    if (process.env.PEER_JSON) fs.writeFileSync(process.env.PEER_JSON, JSON.stringify({ figures, runs }, null, 2));
  } catch (error) {
    if (server) console.error(`CloudCLI log (tail):\n${server.log}`);
    throw error;
  } finally {
    await stop();
  }
}

const CLOUDCLI_VERSION = (() => {
  try {
    return JSON.parse(fs.readFileSync(path.join(APP, "package.json"), "utf8")).version;
  } catch {
    return "?";
  }
})();

/** Opens CloudCLI's page and a new session in its project: the project in the sidebar (expanded
 * on its own once it has been used), then its "New Session". */
/**
 * Answers CloudCLI's card as a person does, after the think time: the option, then Submit. What
 * the mock received, the page's marks, and `ours`, which brings the page's times to the bench's
 * clock.
 */
async function answerCard(page, option, mock, toolUseId) {
  const clock = await clockOffset(page);
  await sleep(THINK_MS);
  await option.click();
  await page.getByRole("button", { name: /^Submit/ }).click();
  const result = await answerReached(mock, toolUseId);
  await page.waitForFunction(() => window.__peer.wsSends.length > 0);
  const m = await page.evaluate(() => window.__peer);
  return { result, m, ours: (t) => t - clock.offset, clock };
}

async function openNewSession(page, server) {
  await page.goto(`${server.url}/`);
  const newSession = page.getByRole("button", { name: "New Session", exact: true }).first();
  const project = page.getByRole("button", { name: /^project\b/ }).first();
  await project.waitFor({ timeout: 30_000 });
  await waitFor("the project's New Session button", 30_000, async () => {
    if (await newSession.isVisible()) return true;
    await sleep(500); // the sidebar may still be expanding the selected project on its own
    if (await newSession.isVisible()) return true;
    await project.click();
    return false;
  }, 1000);
  await newSession.click();
}

/**
 * One run in a cold page: a new session in the project, the question, Postgres, Submit; the times
 * in ms on the bench's clock. `latest()` gives the mock's last question `{ id, index }`; the mock
 * must answer a request with a tool_result with a text containing "Postgres it is." (as main's does).
 * Exported so that the bench can interleave these runs with AskBridge's in one process.
 */
export async function oneRun(browser, server, mock, latest, run) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    const page = await context.newPage();
    await chromiumSettled();
    await context.addInitScript(installMarks, server.token);
    await openNewSession(page, server);
    const box = page.getByRole("textbox", { name: /ask Claude anything/ });
    await box.fill(`Set up the database for my app (run ${run + 1}). Ask me which one.`);
    const before = mock.requests.length;
    await box.press("Enter");
    const option = page.getByRole("radiogroup", { name: QUESTION }).getByRole("button", { name: /Postgres/ });
    await option.waitFor({ timeout: 60_000 });
    const q = latest();
    if (!q || q.index < before) throw new Error("the card is up but the mock asked no new question");
    const record = mock.requests[q.index];
    await record.sent.done;
    const { result, m, ours, clock } = await answerCard(page, option, mock, q.id);
    const clicks = m.clicks.filter((c) => c.at > m.card);
    const optionClick = ours(clicks.find((c) => c.text.includes("Postgres")).at);
    const submitClick = ours(clicks.find((c) => c.text.startsWith("Submit")).at);
    const wsSend = ours(m.wsSends[0]);
    // The turn ends: the model's reply is shown.
    await page.getByText("Postgres it is.").first().waitFor({ timeout: 60_000 });
    return {
      submitToResult: result.receivedAt - submitClick,
      submitToWs: wsSend - submitClick,
      wsToResult: result.receivedAt - wsSend,
      optionToResult: result.receivedAt - optionClick,
      toolUseToCard: ours(m.card) - record.sent.completeAt,
      clockUncertainty: clock.uncertainty,
    };
  } finally {
    await context.close();
  }
}

/**
 * One run on a page opened fresh at the session's link while its question waits, as after a
 * notification's tap (issue 38): the question asked in one page, that page closed, the session's
 * address opened in a new context (CloudCLI sends a waiting permission to a page that subscribes),
 * the option and Submit clicked once they are there and the think time has passed. The times as `oneRun`'s, and
 * `openToAnswerable`: navigation → the card's option in the page.
 */
export async function coldRun(browser, server, mock, latest, run) {
  const asking = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  let address;
  try {
    await asking.addInitScript(installMarks, server.token);
    const page = await asking.newPage();
    await openNewSession(page, server);
    const box = page.getByRole("textbox", { name: /ask Claude anything/ });
    await box.fill(`Set up the database for my app (cold run ${run + 1}). Ask me which one.`);
    await box.press("Enter");
    await page.getByRole("radiogroup", { name: QUESTION }).getByRole("button", { name: /Postgres/ }).waitFor({ timeout: 60_000 });
    await waitFor("the session's address", 10_000, async () => /\/session\//.test(page.url()), 50);
    address = page.url();
  } finally {
    await asking.close();
  }
  const q = latest();
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    const page = await context.newPage();
    await chromiumSettled();
    await context.addInitScript(installMarks, server.token);
    await page.goto(address);
    const option = page.getByRole("radiogroup", { name: QUESTION }).getByRole("button", { name: /Postgres/ });
    await option.waitFor({ timeout: 60_000 });
    const { result, m, ours, clock } = await answerCard(page, option, mock, q.id);
    const submitClick = ours(m.clicks.find((c) => c.text.startsWith("Submit")).at);
    const navigation = await page.evaluate(() => performance.timeOrigin);
    await page.getByText("Postgres it is.").first().waitFor({ timeout: 60_000 });
    return {
      submitToResult: result.receivedAt - submitClick,
      openToAnswerable: ours(m.card) - ours(navigation),
      clockUncertainty: clock.uncertainty,
    };
  } finally {
    await context.close();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await main();
  process.exit(0);
}
