// Section 6, daily use (issue 21, "Weight and speed"): what someone who works in AskBridge every
// day meets once the data has grown.
//
// - A 20 MB Claude Code transcript (scripts/bench/transcript.mjs, shaped as the pinned CLI writes
//   them) in a temporary CLAUDE_CONFIG_DIR, opened at /c/<id> in cold pages: from the navigation's
//   start to the newest message's text on screen (its first painted frame in the viewport, see
//   browser.mjs `watch.shown`); and the server reading the newest page, `load_transcript`, timed
//   from here over loopback (the same call the page makes; the file is in the page cache, as
//   a transcript just written is).
// - `/` with BENCH_DAILY_SESSIONS (10,000) sessions, each created and sent one message that the
//   scripted agent answers (the API, as every section seeds): the HTML of / (raw, and brotli as
//   sent), the server's time to answer it, and cold loads to a usable composer (page.mjs's).

import * as fs from "node:fs";
import * as path from "node:path";

import { launchChromium, signedInPage } from "./browser.mjs";
import { figure, format, spread, stats } from "./figures.mjs";
import { coldLoad } from "./page.mjs";
import { AskBridge, SCENARIO, inParallel, now, tempDir, waitFor } from "./processes.mjs";
import { writeTranscript } from "./transcript.mjs";

const TRANSCRIPT_MB = Number(process.env.BENCH_DAILY_TRANSCRIPT_MB ?? 20);
const SESSIONS = Number(process.env.BENCH_DAILY_SESSIONS ?? 10_000);
const RUNS = Number(process.env.BENCH_DAILY_RUNS ?? 5);
const CONCURRENCY = 16;
const ID = "5e55f00d-0000-4000-8000-000000000021";
const NEWEST_BUDGET_MS = 1000;
const HTML_BUDGET_KIB = 100;
const COMPOSER_BUDGET_MS = 300; // the page section's

export async function daily() {
  const transcript = await bigTranscript();
  const sessions = await manySessions();
  return { figures: [...transcript.figures, ...sessions.figures], details: { transcript: transcript.details, sessions: sessions.details } };
}

async function bigTranscript() {
  const config = tempDir("daily-claude");
  const project = path.join(config, "project");
  const folder = path.join(config, "projects", project.replace(/[^A-Za-z0-9]/g, "-"));
  fs.mkdirSync(project);
  fs.mkdirSync(folder, { recursive: true });
  const started = now();
  const written = writeTranscript(path.join(folder, `${ID}.jsonl`), { id: ID, cwd: project, bytes: TRANSCRIPT_MB * 1024 * 1024 });
  const writeMs = now() - started;

  const server = await AskBridge.start({
    name: "daily-transcript",
    args: ["--agent", "scripted", "--scenario", SCENARIO],
    env: { CLAUDE_CONFIG_DIR: config },
  });
  const browser = await launchChromium();
  try {
    // The server's side: the newest page, as the page asks for it, then the one before it.
    const newestPage = [];
    const previousPage = [];
    let view;
    for (let run = 0; run < RUNS; run++) {
      let t0 = now();
      view = await server.api("load_transcript", { id: ID });
      newestPage.push(now() - t0);
      if (!view.older) throw new Error("the newest page of the transcript says there is nothing before it");
      t0 = now();
      await server.api("load_transcript", { id: ID, before: view.older });
      previousPage.push(now() - t0);
    }
    const pageBytes = Buffer.byteLength(JSON.stringify(view));
    const last = view.messages.at(-1);
    const lastText = JSON.stringify(last);
    if (!lastText.includes(written.newest)) throw new Error(`the newest page does not end with the newest message: ${lastText.slice(0, 300)}`);

    const loads = [];
    for (let run = 0; run < RUNS; run++) loads.push(await openTranscript(browser, server, written.newest));

    const of = (key) => stats(loads.map((l) => l[key]));
    const mb = (written.bytes / 1e6).toFixed(1);
    const figures = [
      figure("daily", `/c/ID (${mb} MB transcript): navigation → newest message on screen`, of("visible").median, "ms", {
        shown: spread(of("visible"), "ms"),
        budget: { max: NEWEST_BUDGET_MS, text: `< ${NEWEST_BUDGET_MS.toLocaleString("en-US")} ms (median)` },
        note: `${written.turns} turns, ${written.lines.toLocaleString("en-US")} lines, written in ${format(writeMs, "ms")}; ` +
          `the newest page: ${view.messages.length} messages, ${format(pageBytes / 1024, "KiB")} of JSON`,
      }),
      figure("daily", "  navigation → first paint (SSR)", of("firstPaint").median, "ms", { shown: spread(of("firstPaint"), "ms") }),
      figure("daily", "  navigation → load_transcript sent", of("asked").median, "ms", { shown: spread(of("asked"), "ms") }),
      figure("daily", "  load_transcript sent → answered", of("answeredIn").median, "ms", { shown: spread(of("answeredIn"), "ms") }),
      figure("daily", "  answered → newest message in the DOM", of("drawnIn").median, "ms", { shown: spread(of("drawnIn"), "ms") }),
      figure("daily", "  in the DOM → on screen (painted)", of("paintedIn").median, "ms", { shown: spread(of("paintedIn"), "ms") }),
      figure("daily", "load_transcript, newest page (server, loopback)", stats(newestPage).median, "ms", {
        shown: spread(stats(newestPage), "ms"),
      }),
      figure("daily", "load_transcript, the page before it", stats(previousPage).median, "ms", {
        shown: spread(stats(previousPage), "ms"),
      }),
    ];
    return {
      figures,
      details: { transcript: { ...written, writeMs }, newestPageMs: newestPage, previousPageMs: previousPage, pageBytes, messages: view.messages.length, loads },
    };
  } finally {
    await browser.close();
    await server.dispose();
  }
}

/** One cold load of /c/ID; the marks in ms from the navigation's start. */
async function openTranscript(browser, server, newest) {
  const { context, page } = await signedInPage(browser, server, { shown: [newest] });
  try {
    await page.goto(`${server.url}/c/${ID}`, { waitUntil: "commit" });
    await page.waitForFunction((wanted) => window.__bench.shown?.[wanted]?.visible, newest, { timeout: 30_000 }).catch((error) => {
      const why = page.failures.join("; ") || "no failed request, no script error";
      throw new Error(`/c/${ID}: the newest message never showed (${why})`, { cause: error });
    });
    const timing = await page.evaluate((wanted) => {
      const request = performance.getEntriesByType("resource").find((r) => r.name.includes("/api/load_transcript"));
      return {
        origin: performance.timeOrigin,
        firstPaint: performance.getEntriesByName("first-contentful-paint")[0]?.startTime,
        asked: request?.startTime,
        answered: request?.responseEnd,
        shown: window.__bench.shown[wanted],
      };
    }, newest);
    const inDom = timing.shown.inDom - timing.origin;
    const visible = timing.shown.visible - timing.origin;
    return {
      firstPaint: timing.firstPaint,
      asked: timing.asked,
      answeredIn: timing.answered - timing.asked,
      drawnIn: inDom - timing.answered,
      paintedIn: visible - inDom,
      inDom,
      visible,
    };
  } finally {
    await context.close();
  }
}

const PROMPTS = [
  "Fix the flaky list test",
  "Why does the build take four minutes now? Look at the release profile and the features.",
  "Add a dark theme toggle to the settings",
  "Review this PR: https://example.com/pr/1234",
  "Write a migration that adds an index on sessions(active_at_ms, created_at_ms, id) for Postgres and SQLite alike",
  "rename the crate",
  "The terminal bridge drops the last line of output when the CLI exits quickly; reproduce it in a test first.",
  "Summarize what changed in the store module this week",
];

async function manySessions() {
  const server = await AskBridge.start({ name: "daily-sessions", args: ["--agent", "scripted", "--scenario", SCENARIO] });
  const browser = await launchChromium();
  try {
    const started = now();
    let next = 0;
    await inParallel(Array.from({ length: SESSIONS }), CONCURRENCY, async () => {
      const n = next++;
      const { id } = await server.api("create_session", {});
      await server.api("send_message", { session: id, text: `${PROMPTS[n % PROMPTS.length]} (${n + 1})` });
    });
    // Every reply ended: the page's list holds the first page only (it adds what works or waits).
    await waitFor("every reply to end", 300_000, async () => {
      const { sessions } = await server.api("load_workspace", {});
      return sessions.length <= 50 && !sessions.some((s) => s.working);
    }, 500);
    const seedSeconds = (now() - started) / 1000;

    const answer = [];
    let html;
    let sent;
    for (let run = 0; run < RUNS; run++) {
      const t0 = now();
      html = await server.get("/", "identity");
      answer.push(now() - t0);
      sent = await server.get("/", "br, gzip");
    }
    const listed = (html.body.toString().match(/class="session-link"/g) ?? []).length;

    const loads = [];
    for (let run = 0; run < RUNS; run++) loads.push(await coldLoad(browser, server, "/"));
    const of = (key) => stats(loads.map((l) => l[key]));
    const n = SESSIONS.toLocaleString("en-US");
    const figures = [
      figure("daily", `/ with ${n} sessions: HTML`, html.body.length / 1024, "KiB", {
        shown: `${format(html.body.length / 1024, "KiB")} (${format(sent.body.length / 1024, "KiB")} as sent, ${sent.encoding ?? "uncompressed"})`,
        budget: { max: HTML_BUDGET_KIB, text: `≤ ${HTML_BUDGET_KIB} KiB (uncompressed)` },
        note: `${listed} sessions listed in it; ${n} created and each sent a message (answered) in ${format(seedSeconds, "s")}`,
      }),
      figure("daily", "  GET / answered (loopback)", stats(answer).median, "ms", { shown: spread(stats(answer), "ms") }),
      figure("daily", "  navigation → first paint (SSR)", of("firstPaint").median, "ms", { shown: spread(of("firstPaint"), "ms") }),
      figure("daily", "  navigation → hydrated", of("hydrated").median, "ms", { shown: spread(of("hydrated"), "ms") }),
      figure("daily", `/ with ${n} sessions: navigation → composer usable`, of("composerUsable").median, "ms", {
        shown: spread(of("composerUsable"), "ms"),
        budget: { max: COMPOSER_BUDGET_MS, text: `≤ ${COMPOSER_BUDGET_MS} ms (median)` },
      }),
    ];
    return {
      figures,
      details: { sessions: SESSIONS, seedSeconds, htmlBytes: html.body.length, sentBytes: sent.body.length, encoding: sent.encoding, listed, getMs: answer, loads },
    };
  } finally {
    await browser.close();
    await server.dispose();
  }
}
