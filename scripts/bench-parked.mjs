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
// Loopback only; it kills what it started, and removes its data folders.

import { spawn, execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const BIN = path.join(root, "target/release/askbridge");
const SESSIONS = Number(process.env.SESSIONS ?? 1000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16); // requests in flight at once
const TIMEOUT_S = Number(process.env.BENCH_TIMEOUT_S ?? 600);
const MESSAGE = "park this question"; // the scenario's "park" turn: one line, then a question

const started = [];
const folders = [];

function cleanUp() {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  for (const dir of folders) fs.rmSync(dir, { recursive: true, force: true });
}
process.on("exit", cleanUp);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(130));
setTimeout(() => {
  console.error(`bench-parked: gave up after ${TIMEOUT_S} s`);
  process.exit(1);
}, TIMEOUT_S * 1000).unref();

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const kib = (n) => `${Math.round(n).toLocaleString("en-US")} KiB`;
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

async function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

function listening(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

class Server {
  constructor(port, dataDir, args) {
    Object.assign(this, { port, dataDir, args, url: `http://127.0.0.1:${port}`, log: "" });
  }

  async start() {
    const child = spawn(
      BIN,
      ["serve", "--addr", `127.0.0.1:${this.port}`, "--data-dir", this.dataDir, ...this.args],
      { cwd: root, stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, RUST_LOG: "askbridge=warn" } },
    );
    started.push(child);
    child.stderr.on("data", (chunk) => (this.log = (this.log + chunk).slice(-8000)));
    this.child = child;
    this.exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(100)) {
      if (child.exitCode !== null) throw new Error(`askbridge exited at start:\n${this.log}`);
      // A bare connection: readiness without a request that would allocate (and skew the RSS).
      if (await listening(this.port)) {
        // Signed in as a script is: the token the server keeps in its data folder.
        this.auth = { authorization: `Bearer ${fs.readFileSync(path.join(this.dataDir, "token"), "utf8").trim()}` };
        return;
      }
    }
    throw new Error(`askbridge did not answer within 30 s:\n${this.log}`);
  }

  /** SIGTERM, as systemd or Ctrl-C would: waiting questions are parked. */
  async stop() {
    const t0 = Date.now();
    this.child.kill("SIGTERM");
    const code = await this.exited;
    if (code !== 0) throw new Error(`askbridge exited with ${code} on SIGTERM:\n${this.log}`);
    return Date.now() - t0;
  }

  async api(name, body = {}) {
    const response = await fetch(`${this.url}/api/${name}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...this.auth },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${name}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : null;
  }

  /** VmRSS in KiB: the median of three readings half a second apart, after a two-second settle. */
  async rss() {
    await sleep(2000);
    const readings = [];
    for (let i = 0; i < 3; i++) {
      const status = fs.readFileSync(`/proc/${this.child.pid}/status`, "utf8");
      readings.push(Number(/^VmRSS:\s+(\d+) kB/m.exec(status)[1]));
      await sleep(500);
    }
    return readings.sort((a, b) => a - b)[1];
  }

  /** The processes this server started (an agent process would be one). */
  children() {
    return fs
      .readdirSync("/proc")
      .filter((entry) => /^\d+$/.test(entry))
      .filter((pid) => {
        try {
          const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
          return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === this.child.pid;
        } catch {
          return false; // gone meanwhile
        }
      }).length;
  }

  /** The first page (it lists every session); resolves with its size in bytes. */
  async page() {
    const response = await fetch(`${this.url}/`, { headers: this.auth });
    if (!response.ok) throw new Error(`GET /: ${response.status}`);
    return (await response.arrayBuffer()).byteLength;
  }
}

async function newServer(args) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "askbridge-bench-"));
  folders.push(dataDir);
  const scenario = ["--scenario", "end2end/fixtures/scenario.toml"];
  const server = new Server(await freePort(), dataDir, [...scenario, ...args]);
  await server.start();
  return server;
}

/** Runs `work` over `items`, CONCURRENCY at a time. */
async function inParallel(items, work) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

async function waitFor(what, limitMs, check) {
  for (const deadline = Date.now() + limitMs; Date.now() < deadline; await sleep(250)) {
    const result = await check();
    if (result) return result;
  }
  throw new Error(`timed out waiting for ${what}`);
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
  const empty = await newServer([]);
  const emptyStarted = await empty.rss();
  await empty.api("list_sessions");
  const emptyListed = await empty.rss();
  const emptyPage = await empty.page();
  const emptyRendered = await empty.rss();
  await empty.stop();

  // Sessions that wait: created, asked, and parked after 1 s with no answer.
  const server = await newServer(["--park-after", "1s"]);
  const t0 = Date.now();
  const ids = [];
  await inParallel(Array.from({ length: SESSIONS }), async () => {
    const { id } = await server.api("create_session", {});
    await server.api("send_message", { session: id, text: MESSAGE });
    ids.push(id);
  });
  const created = Date.now() - t0;
  await waitFor("every session to wait, parked", 120_000, async () => {
    const list = await server.api("list_sessions");
    return list.filter((s) => s.waiting && !s.working).length === SESSIONS;
  });
  console.log(
    `created ${SESSIONS} sessions and sent each "${MESSAGE}" in ${seconds(created)}; ` +
      `all waiting with their turns ended (parked) ${seconds(Date.now() - t0 - created)} later`,
  );
  const live = await server.rss();
  const stopTook = await server.stop();

  // What waiting costs: the same data folder after a graceful restart, against the baseline.
  await server.start();
  const started = await server.rss();
  const list = await server.api("list_sessions");
  const waiting = list.filter((s) => s.waiting && !s.working).length;
  if (waiting !== SESSIONS) throw new Error(`after the restart ${waiting} of ${SESSIONS} sessions wait`);
  const listed = await server.rss();
  const processes = server.children();
  const page = await server.page();
  const rendered = await server.rss();
  // Every session opened once more (as a person looking through them would).
  await inParallel([...ids], async (id) => {
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
  await server.stop();

  const row = (what, kibs, base) =>
    console.log(`  ${what.padEnd(58)} ${kib(kibs).padStart(11)}  ${base === undefined ? "" : signed(kibs - base)}`);
  console.log("server memory (VmRSS, median of 3 readings after a 2 s settle; each row after the requests of the rows above it):");
  row("no sessions, just started", emptyStarted);
  row("no sessions, after list_sessions", emptyListed);
  row(`no sessions, after GET / (${kib(emptyPage / 1024)} of HTML)`, emptyRendered);
  row(`${SESSIONS} parked, in the process that created them`, live, emptyListed);
  row(`${SESSIONS} parked, after a graceful restart (SIGTERM: ${seconds(stopTook)})`, started, emptyStarted);
  row(`${SESSIONS} parked, restarted, after list_sessions (all waiting)`, listed, emptyListed);
  row(`${SESSIONS} parked, restarted, after GET / (${kib(page / 1024)} of HTML)`, rendered, emptyRendered);
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
  () => process.exit(0),
  (error) => {
    console.error(`bench-parked: ${error.stack ?? error}`);
    process.exit(1);
  },
);
