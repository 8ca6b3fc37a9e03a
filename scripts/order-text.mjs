// The order of the release server's functions in its binary (`make release`): what it runs from its
// start to idle first, then what a turn with a question runs, then the rest as the compiler left it.
//
//   node scripts/order-text.mjs BINARY ORDER_FILE
//
// Why: the kernel maps a binary's code into a process 64 KiB at a time around each page the process
// first touches (fault-around), and those pages count in its RSS. The start-up runs 1.7 MiB of the
// server's 15 MiB of code, scattered over all of it: 13.4 MiB of code was resident in a server
// just started, and idle RSS 21.4 MiB against a budget of 16 (BENCHMARKS.md, "Idle memory: the
// code's order"). With these functions together at the head of `.text`, 3.5 MiB, and 11.8 MiB.
//
// How: BINARY runs under valgrind's callgrind (instruction counts per function, with the linker's
// names) as `make bench`'s servers do: the scripted agent, a fresh data folder on loopback. It is
// asked for its sessions and left to idle; callgrind dumps what ran so far. Then the pages `/` and
// `/s/ID` and a turn whose question is answered; callgrind dumps again, and once more as it stops.
// The names of BINARY's own functions (`nm`) in those dumps, in that order, are ORDER_FILE, for
// lld's `--symbol-ordering-file`. The functions' names carry hashes that change with the crates'
// versions and the compiler's, so the Makefile writes the file again whenever it links the server.
//
// Exits 1, writing nothing, when valgrind is missing or the run fails: the Makefile then links the
// server in the compiler's order, as before.

import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

import { AskBridge, SCENARIO, inParallel, waitFor } from "./bench/processes.mjs";

const [binary, orderFile] = process.argv.slice(2);
if (!binary || !orderFile) {
  console.error("usage: node scripts/order-text.mjs BINARY ORDER_FILE");
  process.exit(2);
}

const QUESTION = "Where should the logs go?"; // scripts/bench/scenario.toml's
const MANY = 100;

/** The functions `binary` defines (text symbols), by their linker names. */
function definedFunctions(binary) {
  const out = execFileSync("nm", ["--defined-only", binary], { maxBuffer: 1 << 28, encoding: "utf8" });
  const names = new Set();
  for (const line of out.split("\n")) {
    const [, type, name] = line.split(" ");
    if (name && "tTwW".includes(type)) names.add(name);
  }
  return names;
}

/**
 * The function names in one callgrind dump, as they first appear. Names are compressed: a
 * function's first mention is `fn=(N) name` (or `cfn=`, for a callee), later ones `fn=(N)`.
 */
function functionsIn(dump) {
  const names = new Map();
  const found = [];
  for (const line of fs.readFileSync(dump, "utf8").split("\n")) {
    const m = /^c?fn=\((\d+)\)(?: (.*))?$/.exec(line);
    if (m?.[2] && !names.has(m[1])) {
      names.set(m[1], m[2]);
      found.push(m[2]);
    }
  }
  return found;
}

/** Start-up to idle; two pages and a turn with its question answered; the stop. */
async function drive(binary, dumps) {
  const wrapper = ["valgrind", "--tool=callgrind", "--demangle=no", "--dump-instr=no", `--callgrind-out-file=${dumps}/out`, "--log-file=/dev/null"];
  const server = await AskBridge.start({ name: "order", bin: binary, wrapper, args: ["--agent", "scripted", "--scenario", SCENARIO] });
  const dump = () => execFileSync("callgrind_control", ["--dump", String(server.pid)], { stdio: "ignore" });
  try {
    await server.api("list_sessions");
    dump();
    await server.get("/", "br");
    const { id } = await server.api("create_session", {});
    await server.api("send_message", { session: id, text: "wait here" });
    let toolUseId;
    await waitFor("the scripted agent's question", 120_000, async () => {
      const { thread } = await server.api("load_session", { id });
      toolUseId = thread.messages.flatMap((m) => m.blocks).find((b) => b.tool_call?.interaction)?.tool_call.id;
      return toolUseId;
    }, 200);
    await server.get(`/s/${id}`, "br");
    await server.api("submit_answers", { session: id, tool_use_id: toolUseId, answers: [{ question: QUESTION, labels: ["Files"] }] });
    await waitFor("the turn's end", 120_000, async () => {
      const session = (await server.sessions()).find((s) => s.id === id);
      return session && !session.waiting && !session.working;
    }, 200);
    await many(server);
    dump();
  } finally {
    await server.dispose();
  }
}

/**
 * MANY sessions waiting at once, the list read a page at a time, then each answered: what a busy
 * server runs and one turn does not (the database's checkpoints of its log, its bigger tables, the
 * runtime's work spread over its threads). Without it, 1,000 waiting sessions faulted in 3.6 MiB of
 * code more than a server in the compiler's order, which had it all resident from its start.
 */
async function many(server) {
  const ids = [];
  await inParallel(Array.from({ length: MANY }), 8, async () => {
    const { id } = await server.api("create_session", {});
    await server.api("send_message", { session: id, text: "wait here" });
    ids.push(id);
  });
  const waiting = async () => {
    const all = [];
    for (let after; ; ) {
      const page = await server.api("list_sessions", { after, limit: 20 });
      all.push(...page);
      if (page.length < 20) return all;
      const last = page.at(-1);
      after = { active_at_ms: last.active_at_ms, created_at_ms: last.created_at_ms, id: last.id };
    }
  };
  await waitFor(`${MANY} sessions to wait`, 300_000, async () => (await waiting()).filter((s) => s.waiting).length >= MANY, 500);
  await inParallel(ids, 8, async (id) => {
    const { thread } = await server.api("load_session", { id });
    const call = thread.messages.flatMap((m) => m.blocks).find((b) => b.tool_call?.interaction)?.tool_call;
    await server.api("submit_answers", { session: id, tool_use_id: call.id, answers: [{ question: QUESTION, labels: ["Journald"] }] });
  });
  await waitFor("their turns' end", 300_000, async () => (await waiting()).every((s) => !s.waiting && !s.working), 500);
}

const dumps = fs.mkdtempSync(path.join(os.tmpdir(), "askbridge-order-"));
try {
  execFileSync("valgrind", ["--version"], { stdio: "ignore" });
  await drive(binary, dumps);
  // callgrind numbers its dumps (out.1, out.2) and writes `out` as the process ends.
  const files = ["out.1", "out.2", "out"].map((f) => path.join(dumps, f));
  const missing = files.filter((f) => !fs.existsSync(f));
  if (missing.length) throw new Error(`callgrind wrote no ${missing.map((f) => path.basename(f)).join(", ")}`);
  const defined = definedFunctions(binary);
  const order = [...new Set(files.flatMap(functionsIn))].filter((name) => defined.has(name));
  fs.writeFileSync(orderFile, `${order.join("\n")}\n`);
  console.log(`[order] ${order.length} of the server's ${defined.size} functions first, in the order start-up and a turn run them`);
} catch (error) {
  console.error(`[order] no order for the server's code (${error.message}): it is linked in the compiler's order`);
  process.exitCode = 1;
} finally {
  fs.rmSync(dumps, { recursive: true, force: true });
}
