#!/usr/bin/env node
// `make bench-parked`: what a session waiting on a question costs the server, measured.
//
// It starts the release server (scripted agent, end2end/fixtures/scenario.toml, --park-after 1s) on
// a free loopback port and a fresh data folder, creates SESSIONS sessions (default 1000) through
// the JSON API, sends each a message that makes the scenario ask a question, and waits until every
// session waits with its turn ended (parked). It then restarts the server gracefully on the same
// data folder and reads its resident memory (VmRSS in /proc/<pid>/status) against the same build
// started on an empty data folder, so that what is compared is what waiting costs, not what
// creating cost: both just started, then after the same requests (list_sessions; GET /, whose page
// lists every session). It also reports the memory of the process that created them, the memory
// once every session was opened again (load_session), the server's child processes, the database
// size, and checks that one parked question, answered after the restart, resumes its turn.
//
// Bounded: everything is killed and it fails after BENCH_TIMEOUT_S (default 600) seconds.
// Loopback only; its servers, what kills them and removes their data folders are `make bench`'s
// (scripts/bench/processes.mjs).

import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

import { AskBridge, BIN, inParallel, root, shutDown, waitFor } from "./bench/processes.mjs";

const SESSIONS = Number(process.env.SESSIONS ?? 1000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16); // requests in flight at once
const TIMEOUT_S = Number(process.env.BENCH_TIMEOUT_S ?? 600);
const MESSAGE = "park this question"; // the scenario's "park" turn: one line, then a question
const SCENARIO = ["--scenario", "end2end/fixtures/scenario.toml"];

setTimeout(() => {
  console.error(`bench-parked: gave up after ${TIMEOUT_S} s`);
  shutDown(1);
}, TIMEOUT_S * 1000).unref();

const kib = (n) => `${Math.round(n).toLocaleString("en-US")} KiB`;
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

/** SIGTERM, as systemd or Ctrl-C would (waiting questions are parked); how long it took. */
async function stop(server) {
  const t0 = Date.now();
  await server.stop(TIMEOUT_S * 1000);
  const code = await server.exited;
  if (code !== 0) throw new Error(`askbridge exited with ${code} on SIGTERM:\n${server.log}`);
  return Date.now() - t0;
}

/** The first page (it lists every session); its size in bytes. */
async function page(server) {
  const response = await fetch(`${server.url}/`, { headers: { authorization: `Bearer ${server.token}` } });
  if (!response.ok) throw new Error(`GET /: ${response.status}`);
  return (await response.arrayBuffer()).byteLength;
}

function dirKiB(dir) {
  return fs.readdirSync(dir).reduce((sum, name) => sum + fs.statSync(path.join(dir, name)).size, 0) / 1024;
}

async function main() {
  if (!fs.existsSync(BIN)) throw new Error(`${BIN} is missing: run \`make release\` first`);
  const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root }).toString().trim();
  const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { cwd: root }).toString().trim();
  console.log(
    `bench-parked: ${SESSIONS} sessions waiting on a question, scripted agent, release build of ${commit}` +
      `${dirty ? " (with uncommitted changes)" : ""}; ${new Date().toISOString()}; ${os.cpus().length} cores`,
  );
  const perSession = (kibs) => `${(kibs / SESSIONS).toFixed(1)} KiB per session`;
  const signed = (kibs) => `${kibs < 0 ? "−" : "+"}${perSession(Math.abs(kibs))}`;

  // The baseline: the same build on an empty data folder, asked the same requests.
  const empty = await AskBridge.start({ args: SCENARIO, name: "parked-empty" });
  const emptyStarted = await empty.rss();
  await empty.api("list_sessions");
  const emptyListed = await empty.rss();
  const emptyPage = await page(empty);
  const emptyRendered = await empty.rss();
  await stop(empty);

  // Sessions that wait: created, asked, and parked after 1 s with no answer.
  const server = await AskBridge.start({ args: [...SCENARIO, "--park-after", "1s"], name: "parked" });
  const t0 = Date.now();
  const ids = [];
  await inParallel(Array.from({ length: SESSIONS }), CONCURRENCY, async () => {
    const { id } = await server.api("create_session", {});
    await server.api("send_message", { session: id, text: MESSAGE });
    ids.push(id);
  });
  const created = Date.now() - t0;
  await waitFor("every session to wait, parked", 120_000, async () => {
    const list = await server.sessions();
    return list.filter((s) => s.waiting && !s.working).length === SESSIONS;
  });
  console.log(
    `created ${SESSIONS} sessions and sent each "${MESSAGE}" in ${seconds(created)}; ` +
      `all waiting with their turns ended (parked) ${seconds(Date.now() - t0 - created)} later`,
  );
  const live = await server.rss();
  const stopTook = await stop(server);

  // What waiting costs: the same data folder after a graceful restart, against the baseline.
  await server.start();
  const started = await server.rss();
  const list = await server.sessions();
  const waiting = list.filter((s) => s.waiting && !s.working).length;
  if (waiting !== SESSIONS) throw new Error(`after the restart ${waiting} of ${SESSIONS} sessions wait`);
  const listed = await server.rss();
  const processes = server.children().length;
  const pageBytes = await page(server);
  const rendered = await server.rss();
  // Every session opened once more (as a person looking through them would).
  await inParallel([...ids], CONCURRENCY, async (id) => {
    const view = await server.api("load_session", { id });
    const call = view.thread.messages.flatMap((m) => m.blocks).map((b) => b.tool_call).find((c) => c?.interaction);
    if (!call.interaction.parked || call.interaction.outcome != null) {
      throw new Error(`session ${id}: its question is not parked and pending: ${JSON.stringify(call.interaction)}`);
    }
  });
  const opened = await server.rss();
  const disk = dirKiB(server.dataDir);

  // One of them answered: its turn resumes.
  const first = ids[0];
  const view = await server.api("load_session", { id: first });
  const call = view.thread.messages.flatMap((m) => m.blocks).map((b) => b.tool_call).find((c) => c?.interaction);
  const t1 = Date.now();
  await server.api("submit_answers", {
    session: first,
    tool_use_id: call.id,
    answers: [{ question: "Where should the logs go?", labels: ["Files"] }],
  });
  const reply = await waitFor("the answered session's turn to complete", 30_000, async () => {
    const { thread } = await server.api("load_session", { id: first });
    if (thread.turn.last_outcome !== "completed") return null;
    return thread.messages.filter((m) => m.role === "assistant").at(-1);
  });
  const resumedIn = Date.now() - t1;
  const said = reply.blocks.map((b) => b.text?.text ?? "").join("").trim();
  await stop(server);

  const row = (what, kibs, base) =>
    console.log(`  ${what.padEnd(58)} ${kib(kibs).padStart(11)}  ${base === undefined ? "" : signed(kibs - base)}`);
  console.log("server memory (VmRSS, median of 3 readings after a 2 s settle; each row after the requests of the rows above it):");
  row("no sessions, just started", emptyStarted);
  row("no sessions, after list_sessions", emptyListed);
  row(`no sessions, after GET / (${kib(emptyPage / 1024)} of HTML)`, emptyRendered);
  row(`${SESSIONS} parked, in the process that created them`, live, emptyListed);
  row(`${SESSIONS} parked, after a graceful restart (SIGTERM: ${seconds(stopTook)})`, started, emptyStarted);
  row(`${SESSIONS} parked, restarted, after list_sessions (all waiting)`, listed, emptyListed);
  row(`${SESSIONS} parked, restarted, after GET / (${kib(pageBytes / 1024)} of HTML)`, rendered, emptyRendered);
  row(`${SESSIONS} parked, restarted, after load_session on each`, opened, emptyListed);
  console.log(`child processes of the restarted server: ${processes} (the scripted agent runs none)`);
  console.log(`database on disk: ${kib(disk)} (${perSession(disk)}, thread and event log included)`);
  console.log(`checked: every question parked and pending after the restart; one answered: its turn resumed and completed in ${seconds(resumedIn)} ("${said}")`);
  console.log(
    `RESULT: a parked session costs ${((listed - emptyListed) / SESSIONS).toFixed(1)} KiB of server memory ` +
      `(restarted, after list_sessions, against the same with no sessions) and ${processes} processes, over ${SESSIONS} sessions`,
  );
}

main().then(
  () => shutDown(0),
  (error) => {
    console.error(`bench-parked: ${error.stack ?? error}`);
    shutDown(1);
  },
);
