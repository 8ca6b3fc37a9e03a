// Section 3, question latency: the real Claude Code CLI (node_modules/.bin/claude, pinned) against
// the bench's mock Messages API, through AskBridge and a browser, and alone.
//
// Through AskBridge (`--agent claude`, one server per answer path), each run is a cold page: a
// person types a message on `/`; the mock answers with a single-select AskUserQuestion; the card
// turns pending; after a short think time the person clicks an option, which answers it. Measured:
// - tool_use → card: from the mock writing the end of the tool_use (content_block_stop,
//   message_delta, message_stop in one write) to the card turning pending in the page (a
//   MutationObserver mark). Split into the live event that opens it arriving in the page, and the
//   page drawing it.
// - click → tool_result: from the click event in the page to the mock having received the whole
//   request that carries the question's tool_result. Split into the click → the POST to
//   /api/submit_answers leaving the page (Resource Timing), and the rest.
// With no page open, the same server answered through the API: the answer path without a browser
// drawing it on the same cores (POST → the mock has the tool_result).
// Alone, the same CLI with the same flags, driven over stdio (claude-cli.mjs), in the same runs,
// alternating with AskBridge's: tool_use → the CLI's hook_callback / can_use_tool line read from its
// stdout; our control_response written → the next request at the mock.
//
// The peer, CloudCLI v1.37.2 (scripts/peer: installed by its setup.sh into target/peer), in the
// same runs when it is installed (BENCH_PEER=0 leaves it out): its card on the same CLI and mock,
// answered by its "Submit" (its card takes two clicks), alternating with AskBridge's runs. It
// answers through can_use_tool (the Agent SDK's canUseTool). Each AskBridge path's click → tool_result
// is then shown as a ratio to CloudCLI's, to be ≤ 1 (issue 25).
//
// Page marks are brought to the bench's clock by `clockOffset`; the uncertainty of that offset (half
// the tightest round trip, usually well under 1 ms) is kept with each run.

import * as path from "node:path";

import { clockOffset, hydrated, launchChromium, marks, signedInPage } from "./browser.mjs";
import { ClaudeCli } from "./claude-cli.mjs";
import { benchGroups, coresWindow } from "./cores.mjs";
import { figure, format, spread, stats } from "./figures.mjs";
import { MockApi, newToolResults, textBlock, toolUseBlock } from "./mock-api.mjs";
import { answerReached, INPUT, QUESTION } from "./question.mjs";
import { AskBridge, CLAUDE_BIN, claudeEnv, now, root, sleep, tempDir, waitFor } from "./processes.mjs";
import * as fs from "node:fs";

const RUNS = Number(process.env.BENCH_QUESTION_RUNS ?? 7);
const PATHS = (process.env.BENCH_ANSWER_PATHS ?? "hook,can-use-tool").split(",");
/** How long the person looks at the card before clicking, here and in the CLI-alone runs alike. */
const THINK_MS = Number(process.env.BENCH_THINK_MS ?? 300);
/** BENCH_REDUCED_MOTION=1: the page as a person who asked for reduced motion has it (no animation). */
const REDUCED_MOTION = process.env.BENCH_REDUCED_MOTION === "1";
/** BENCH_TRACE=folder: a Chromium performance trace of each run's click → tool_result, one file a run. */
const TRACE_DIR = process.env.BENCH_TRACE;
/** BENCH_COLD_RUNS: runs on a page opened fresh at the session's link, the question waiting (issue 38). */
const COLD_RUNS = Number(process.env.BENCH_COLD_RUNS ?? 15);
/** The answer paths of those runs. */
const COLD_PATHS = (process.env.BENCH_COLD_PATHS ?? "hook").split(",").filter((p) => PATHS.includes(p));
const CARD_BUDGET_MS = 30;
const ANSWER_SLACK_MS = 5;

export async function questions() {
  // Every new user turn gets the question; the answer gets a short reply.
  let asked = 0;
  let latest = null;
  const mock = await new MockApi((body, index) => {
    if (newToolResults(body).length) return { blocks: [textBlock("Postgres it is. I will write the migration next.")] };
    const id = `toolu_bench_${++asked}`;
    latest = { id, index };
    return { blocks: [textBlock("Before I start, one question."), toolUseBlock(id, "AskUserQuestion", INPUT)] };
  }).start();
  // The question of the run under way: its id, and when the mock finished sending its tool_use.
  const lastQuestion = async () => {
    const record = mock.requests[latest.index];
    await record.sent.done;
    return { id: latest.id, sentAt: record.sent.completeAt };
  };

  const servers = {};
  const browser = await launchChromium();
  let peer = null;
  try {
    const peerInstalled = fs.existsSync(path.join(root, "target/peer/claudecodeui/dist-server/server/index.js"));
    const peerRuns = process.env.BENCH_PEER !== "0" && peerInstalled ? await import("../peer/answer-path.mjs") : null;
    if (peerRuns) peer = await peerRuns.CloudCli.start(mock.url);
    for (const answerPath of PATHS) {
      const home = tempDir(`claude-${answerPath}`);
      servers[answerPath] = await AskBridge.start({
        name: `questions-${answerPath}`,
        args: ["--agent", "claude", "--claude-bin", CLAUDE_BIN, "--workdir", path.join(home, "project"), "--answer-path", answerPath],
        env: claudeEnv(home, mock.url),
      });
    }
    const cliHome = tempDir("claude-alone");
    const runs = Object.fromEntries(PATHS.map((p) => [p, { askbridge: [], noPage: [], alone: [] }]));
    const peerResults = [];
    for (let run = 0; run < RUNS; run++) {
      for (const answerPath of PATHS) {
        runs[answerPath].askbridge.push(await throughAskBridge(browser, servers[answerPath], mock, lastQuestion, run));
        runs[answerPath].noPage.push(await withNoPage(servers[answerPath], mock, run));
        runs[answerPath].alone.push(await alone(cliHome, mock, answerPath, lastQuestion));
      }
      if (peer) peerResults.push(await peerRuns.oneRun(browser, peer, mock, () => latest, run));
    }
    const peerAnswer = peerResults.length ? stats(peerResults.map((r) => r.submitToResult)) : null;
    // Freshly opened pages: a fresh server (and a fresh CloudCLI) each run, alternating.
    const cold = Object.fromEntries(COLD_PATHS.map((p) => [p, []]));
    const peerCold = [];
    for (let run = 0; run < COLD_RUNS; run++) {
      for (const answerPath of COLD_PATHS) cold[answerPath].push(await coldThroughAskBridge(browser, mock, lastQuestion, answerPath, run));
      if (peerRuns) {
        const fresh = await peerRuns.CloudCli.start(mock.url);
        try {
          peerCold.push(await peerRuns.coldRun(browser, fresh, mock, () => latest, run));
        } finally {
          await fresh.dispose();
        }
      }
    }

    const figures = [];
    for (const answerPath of PATHS) {
      const { askbridge, noPage, alone: cli } = runs[answerPath];
      const of = (list, key) => stats(list.map((r) => r[key]));
      const row = (name, s, options = {}) =>
        figure("questions", `${answerPath}: ${name}`, s.median, "ms", { shown: spread(s, "ms", { p95: true }), ...options });
      const cliAnswer = of(cli, "answerToRequest");
      figures.push(
        row("tool_use → card in page", of(askbridge, "toolUseToCard"), {
          budget: { max: CARD_BUDGET_MS, text: `≤ ${CARD_BUDGET_MS} ms (median)` },
        }),
        row("  tool_use → live event in page", of(askbridge, "toolUseToLive")),
        row("  live event → card pending", of(askbridge, "liveToCard")),
        row("  (CLI alone: tool_use → CLI asks)", of(cli, "toolUseToAsk")),
        row("click → API receives tool_result", of(askbridge, "clickToResult"), {
          budget: {
            max: cliAnswer.median + ANSWER_SLACK_MS,
            text: `≤ CLI alone + ${ANSWER_SLACK_MS} ms = ${(cliAnswer.median + ANSWER_SLACK_MS).toFixed(1)} ms (median)`,
          },
        }),
        row("  click → POST leaves the page", of(askbridge, "clickToPost")),
        row("  POST leaves → API receives", of(askbridge, "postToResult")),
        row("  (no page open: POST → API receives)", of(noPage, "postToResult")),
        row("  (CLI alone: answer → API receives)", cliAnswer),
        ...coresRows(answerPath, { "page open": askbridge, "no page": noPage, "CLI alone": cli }),
      );
      if (peerAnswer) {
        const ratio = of(askbridge, "clickToResult").median / peerAnswer.median;
        figures.push(
          figure("questions", `${answerPath}: click → tool_result, ÷ CloudCLI's`, ratio, "ratio", {
            budget: { max: 1, text: "≤ 1 (ahead of CloudCLI, same run)" },
          }),
        );
      }
    }
    const peerColdAnswer = peerCold.length ? stats(peerCold.map((r) => r.submitToResult)) : null;
    for (const answerPath of COLD_PATHS) {
      const of = (key) => stats(cold[answerPath].map((r) => r[key]));
      const row = (name, s, unit = "ms", options = {}) =>
        figure("questions", `${answerPath}, fresh page: ${name}`, s.median, unit, { shown: spread(s, unit, { p95: true }), ...options });
      const answer = of("clickToResult");
      figures.push(
        row("link opened → card answers", of("openToAnswerable")),
        row("  bytes it waits for (the page, its stylesheet)", of("bytesToAnswerable"), "bytes"),
        row("  bytes come by then", of("bytesArrived"), "bytes"),
        row("click → API receives tool_result", answer),
        row("  click → POST leaves the page", of("clickToPost")),
        row("  POST leaves → API receives", of("postToResult")),
        figure("questions", `${answerPath}, fresh page: slowest click → tool_result ÷ median`, answer.max / answer.median, "ratio", {
          budget: { max: 1.5, text: "≤ 1.5" },
        }),
        ...coresRows(`${answerPath}, fresh page`, { "page open": cold[answerPath] }),
      );
      if (peerColdAnswer) {
        figures.push(
          figure("questions", `${answerPath}, fresh page: click → tool_result, ÷ CloudCLI's`, answer.median / peerColdAnswer.median, "ratio", {
            budget: { max: 1, text: "≤ 1 (CloudCLI's fresh page, same runs)" },
          }),
        );
      }
    }
    if (peerColdAnswer) {
      const s = (key) => stats(peerCold.map((r) => r[key]));
      figures.push(
        figure("questions", "CloudCLI, fresh page: link opened → card answers", s("openToAnswerable").median, "ms", {
          shown: spread(s("openToAnswerable"), "ms", { p95: true }),
        }),
        figure("questions", "CloudCLI, fresh page: Submit click → API receives tool_result", peerColdAnswer.median, "ms", {
          shown: spread(peerColdAnswer, "ms", { p95: true }),
        }),
      );
    }
    if (peerAnswer) {
      const peerRow = (name, key) =>
        figure("questions", `CloudCLI: ${name}`, stats(peerResults.map((r) => r[key])).median, "ms", {
          shown: spread(stats(peerResults.map((r) => r[key])), "ms", { p95: true }),
        });
      figures.push(
        peerRow("tool_use → card in page", "toolUseToCard"),
        peerRow("Submit click → API receives tool_result", "submitToResult"),
        peerRow("  Submit click → WebSocket send", "submitToWs"),
        peerRow("  WebSocket send → API receives", "wsToResult"),
      );
    }
    return {
      figures,
      details: { runs: RUNS, thinkMs: THINK_MS, answerPaths: PATHS, byPath: runs, cloudcli: peerResults, cold, cloudcliCold: peerCold },
    };
  } finally {
    if (peer) await peer.dispose();
    await browser.close();
    for (const server of Object.values(servers)) await server.dispose();
    await mock.close();
  }
}

/**
 * Who had the cores from the answer to the request at the API (cores.mjs), medians over the runs:
 * the CLI's own run time and its wait for a core, then what ran beside it. With the page open, the
 * window starts just before the mouse click is sent to the page.
 */
function coresRows(answerPath, kinds) {
  const median = (list, group, key) => stats(list.map((r) => r.cores[group][key])).median;
  const ms = (value) => format(value, "ms");
  return Object.entries(kinds).flatMap(([kind, list]) => {
    const beside = ["server", "renderer", "gpu", "utility", "browser", "bench", "elsewhere"]
      .map((group) => [group, median(list, group, "run")])
      .filter(([, value]) => value >= 0.5)
      .map(([group, value]) => `${group} ${ms(value)}`);
    return [
      figure("questions", `${answerPath}:   cores (${kind}): CLI waited for one`, median(list, "cli", "wait"), "ms", {
        shown: `${ms(median(list, "cli", "wait"))} (ran ${ms(median(list, "cli", "run"))}); beside it: ${beside.join(", ") || "nothing"}`,
      }),
    ];
  });
}

/** One run through AskBridge and a cold page; the times in ms on the bench's clock. */
async function throughAskBridge(browser, server, mock, lastQuestion, run) {
  const { context, page } = await signedInPage(browser, server, { cards: true });
  try {
    if (REDUCED_MOTION) await page.emulateMedia({ reducedMotion: "reduce" });
    await page.goto(`${server.url}/`);
    await hydrated(page);
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill(`Set up the database for my app (run ${run + 1}). Ask me which one.`);
    await box.press("Enter");
    await page.waitForURL(/\/s\/[0-9a-f]+$/);
    const session = page.url().split("/s/")[1];
    await page.waitForFunction(() => window.__bench.cards.pending, null, { timeout: 60_000 });
    const asked = await lastQuestion();
    const clock = await clockOffset(page);
    await sleep(THINK_MS);

    // The click as the mouse gives it: Playwright's own checks before a click (scrolling, waiting
    // for two stable frames) are done before, so that the cores' window holds only the answer.
    const { result, took } = await clickTheAnswer(browser, page, server, mock, asked.id, `run-${run + 1}`);
    await page.locator('.question-card[data-state="answered"]').waitFor({ timeout: 30_000 });
    const post = await postLeft(page);
    const m = await marks(page);
    const ours = (pageTime) => pageTime - clock.offset;
    const card = ours(m.cards.pending);
    const live = ours(m.liveOpened[0]);
    const click = ours(m.clicks.find((t) => t > m.cards.pending));
    await page.getByRole("article", { name: "Agent" }).last().filter({ hasText: "Postgres it is." }).waitFor({ timeout: 60_000 });
    await page.locator(".turn-status", { hasText: "Ready" }).waitFor({ timeout: 60_000 });
    await server.api("delete_session", { id: session });
    return {
      toolUseToCard: card - asked.sentAt,
      toolUseToLive: live - asked.sentAt,
      liveToCard: card - live,
      ...answerTimes({ result, click, post, ours, clock, took }),
    };
  } finally {
    await context.close();
  }
}

/** When the page's POST of the answer left it (its Resource Timing), on the page's clock. */
/**
 * The person's click on "Postgres", with who had the cores until the mock received the
 * tool_result (and, with BENCH_TRACE, Chromium's trace of it as `<trace>.json`).
 */
async function clickTheAnswer(browser, page, server, mock, toolUseId, trace) {
  const option = await page.getByRole("radio", { name: "Postgres" }).boundingBox();
  if (TRACE_DIR) {
    fs.mkdirSync(TRACE_DIR, { recursive: true });
    await browser.startTracing(page, { path: path.join(TRACE_DIR, `${trace}.json`), screenshots: false });
    // The trace's start interrupts the page's next script for 50–80 ms (V8 logs its code for the
    // profiler): a script of the bench's own takes that, not the click's listeners.
    await page.evaluate(() => 0);
  }
  const cores = coresWindow(benchGroups({ serverPid: server.pid }));
  await page.mouse.click(option.x + option.width / 2, option.y + option.height / 2);
  const result = await answerReached(mock, toolUseId);
  const took = cores();
  if (TRACE_DIR) await browser.stopTracing();
  return { result, took };
}

/** A click's way to the API, on the bench's clock: to the POST, on to the mock, in all. */
function answerTimes({ result, click, post, ours, clock, took }) {
  return {
    clickToResult: result.receivedAt - click,
    clickToPost: ours(post) - click,
    postToResult: result.receivedAt - ours(post),
    clockUncertainty: clock.uncertainty,
    cores: took,
  };
}

async function postLeft(page) {
  await page.waitForFunction(() => performance.getEntriesByType("resource").some((r) => r.name.includes("/api/submit_answers")));
  return page.evaluate(() => {
    const entry = performance.getEntriesByType("resource").find((r) => r.name.includes("/api/submit_answers"));
    return performance.timeOrigin + entry.startTime;
  });
}

/**
 * One run on a page opened fresh at the session's link while its question waits, as after a
 * notification's tap (issue 38): a fresh server, the message and the question through the API, then
 * a new browser context at /s/ID, and the click once the card answers (pending, and the page takes
 * answers: hydrated, or its card answering before hydration, `html[data-answers]`) and the person
 * has read it (the think time, as in the warm runs).
 */
async function coldThroughAskBridge(browser, mock, lastQuestion, answerPath, run) {
  const home = tempDir(`claude-cold-${answerPath}`);
  const server = await AskBridge.start({
    name: `questions-cold-${answerPath}`,
    args: ["--agent", "claude", "--claude-bin", CLAUDE_BIN, "--workdir", path.join(home, "project"), "--answer-path", answerPath],
    env: claudeEnv(home, mock.url),
  });
  try {
    const { id: session } = await server.api("create_session", {});
    await server.api("send_message", { session, text: `Set up the database for my app (fresh page, run ${run + 1}). Ask me which one.` });
    await waitFor("the question to open", 60_000, async () => {
      const { thread } = await server.api("load_session", { id: session });
      return thread.messages.flatMap((m) => m.blocks).some((b) => b.tool_call?.interaction);
    }, 5);
    const asked = await lastQuestion();
    const { context, page } = await signedInPage(browser, server, { cards: true });
    try {
      await page.goto(`${server.url}/s/${session}`);
      await page.waitForFunction(
        () =>
          document.querySelector('.question-card[data-state="pending"]') &&
          (document.documentElement.dataset.answers || document.querySelector("button.new-session:not([disabled])")),
        null,
        { timeout: 60_000, polling: "raf" },
      );
      // What the card waited for (the page and its stylesheet: what blocks its first paint; the
      // rest may still be coming), and what had come by then.
      const answerable = await page.evaluate(() => {
        const size = (e) => e.transferSize || e.encodedBodySize || 0;
        const entries = [...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")];
        const blocking = entries.filter((e) => e.entryType === "navigation" || e.initiatorType === "link" && e.name.endsWith(".css"));
        return {
          at: performance.timeOrigin + performance.now(),
          needed: blocking.reduce((sum, e) => sum + size(e), 0),
          arrived: entries.filter((e) => e.responseEnd > 0).reduce((sum, e) => sum + size(e), 0),
        };
      });
      const clock = await clockOffset(page);
      const navigation = await page.evaluate(() => performance.timeOrigin);
      // The person reads the question first, as in the warm runs (and CloudCLI's cold ones).
      await sleep(Math.max(0, THINK_MS - (now() - (answerable.at - clock.offset))));
      const { result, took } = await clickTheAnswer(browser, page, server, mock, asked.id, `fresh-${answerPath}-${run + 1}`);
      const post = await postLeft(page);
      const m = await marks(page);
      const ours = (pageTime) => pageTime - clock.offset;
      const click = ours(m.clicks.at(-1));
      await page.locator('.question-card[data-state="answered"]').waitFor({ timeout: 30_000 });
      await page.getByRole("article", { name: "Agent" }).last().filter({ hasText: "Postgres it is." }).waitFor({ timeout: 60_000 });
      return {
        openToAnswerable: answerable.at - navigation,
        bytesToAnswerable: answerable.needed,
        bytesArrived: answerable.arrived,
        ...answerTimes({ result, click, post, ours, clock, took }),
      };
    } finally {
      await context.close();
    }
  } finally {
    await server.dispose();
  }
}

/**
 * One run through AskBridge with no page open: the message and the answer go through the API.
 * The same server and CLI as with a page, without a browser drawing the answer on the same cores.
 */
async function withNoPage(server, mock, run) {
  const { id: session } = await server.api("create_session", {});
  await server.api("send_message", { session, text: `Set up the database for my app (run ${run + 1}, no page). Ask me which one.` });
  const asked = await waitFor("the question to open", 60_000, async () => {
    const { thread } = await server.api("load_session", { id: session });
    return thread.messages.flatMap((m) => m.blocks).find((b) => b.tool_call?.interaction)?.tool_call;
  }, 5);
  await sleep(THINK_MS);
  const cores = coresWindow(benchGroups({ serverPid: server.pid }));
  const postedAt = now();
  await server.api("submit_answers", { session, tool_use_id: asked.id, answers: [{ question: QUESTION, labels: ["Postgres"] }] });
  const result = await answerReached(mock, asked.id);
  const took = cores();
  await waitFor("the turn to end", 60_000, async () => {
    const { thread } = await server.api("load_session", { id: session });
    return !thread.turn.working;
  });
  await server.api("delete_session", { id: session });
  return { postToResult: result.receivedAt - postedAt, cores: took };
}

/** One run of the CLI alone over stdio, answered after the same think time. */
async function alone(home, mock, answerPath, lastQuestion) {
  const cli = await ClaudeCli.start({ home, apiUrl: mock.url, answerPath });
  try {
    const from = cli.say("Set up the database for my app. Ask me which one.");
    const ask = await cli.asked(from);
    const asked = await lastQuestion();
    await sleep(THINK_MS);
    const cores = coresWindow(benchGroups({ cliPid: cli.child.pid }));
    const answeredAt = cli.answer(ask, { [QUESTION]: "Postgres" });
    const result = await answerReached(mock, asked.id);
    const took = cores();
    await cli.turnEnded(from);
    return { toolUseToAsk: ask.at - asked.sentAt, answerToRequest: result.receivedAt - answeredAt, cores: took };
  } finally {
    await cli.close();
  }
}
