// A long Claude Code transcript for the bench, written the way the real CLI writes one: every
// entry is a copy of an entry the pinned CLI wrote (tests/fixtures/claude-cli/transcripts/, the
// same files the reader's unit tests read), with its ids, times, folder and texts changed. Turns
// of a prompt, a few tool calls (Read and Bash, now and then an AskUserQuestion) with results of
// a few KB, and a markdown reply; the CLI's bookkeeping lines around them (queue operations, API
// requests, last-prompt, cost-state); at every start of the CLI (the first turn, then every
// RESTART_EVERY turns, as `claude --resume` would) its start-up attachments and prompt snapshot
// (about 150 KB); a pasted screenshot (a real PNG, 320 KB in base64) every IMAGE_EVERY turns.
//
// Deterministic: the same bytes for the same size, on every machine (a seeded generator, fixed
// times). The newest message, the last turn's reply, ends with `newest`, found nowhere else.

import * as fs from "node:fs";
import * as path from "node:path";
import * as zlib from "node:zlib";

import { root } from "./processes.mjs";

const FIXTURES = path.join(root, "tests/fixtures/claude-cli/transcripts");
const RESTART_EVERY = 40;
const IMAGE_EVERY = 20;
const START_MS = Date.parse("2026-11-02T09:00:00.000Z");

/** The fixture's entries, each parsed. */
function entries(name) {
  return fs
    .readFileSync(path.join(FIXTURES, `${name}.jsonl`), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

/** The entries the transcript is made of, picked out of the fixtures by what they are. */
function templates() {
  const tools = entries("tools");
  const question = entries("question");
  const image = entries("image");
  const first = (list, test) => {
    const found = list.find(test);
    if (!found) throw new Error("a fixture transcript no longer holds an entry the bench copies");
    return found;
  };
  const kind = (type) => (e) => e.type === type;
  const attachment = (type) => (e) => e.type === "attachment" && e.attachment?.type === type;
  const assistantWith = (block) => (e) => e.type === "assistant" && e.message.content.some((b) => b.type === block.type && (!block.name || b.name === block.name));
  const resultWith = (field) => (e) => e.type === "user" && Array.isArray(e.message.content) && e.toolUseResult?.[field] !== undefined;
  const prompt = tools.findIndex((e) => e.type === "user");
  const firstRequest = tools.findIndex(kind("api-request"));
  return {
    enqueue: first(tools, (e) => e.type === "queue-operation" && e.operation === "enqueue"),
    dequeue: first(tools, (e) => e.type === "queue-operation" && e.operation === "dequeue"),
    prompt: tools[prompt],
    // What the CLI writes when it starts, between the first prompt and the first API request.
    startUp: tools.slice(prompt + 1, firstRequest),
    snapshot: first(tools, (e) => attachment("prompt_snapshot")(e) && e.attachment.tools),
    request: tools[firstRequest],
    text: first(tools, assistantWith({ type: "text" })),
    read: first(tools, assistantWith({ type: "tool_use", name: "Read" })),
    readResult: first(tools, resultWith("file")),
    bash: first(tools, assistantWith({ type: "tool_use", name: "Bash" })),
    bashResult: first(tools, resultWith("stdout")),
    ask: first(question, assistantWith({ type: "tool_use", name: "AskUserQuestion" })),
    askResult: first(question, resultWith("answers")),
    imagePrompt: first(image, (e) => e.type === "user" && e.imagePasteIds),
    imageMeta: first(image, (e) => e.type === "user" && e.isMeta),
    toolsUsed: first(tools, kind("tools-used")),
    lastPrompt: first(tools, kind("last-prompt")),
    latch: first(tools, kind("atis-latch")),
    cost: first(tools, kind("cost-state")),
  };
}

/** mulberry32: small, seeded, the same everywhere. */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FILES = ["src/store/list.rs", "src/session/log.rs", "src/api/mod.rs", "src/ui/thread_view.rs", "src/agent/claude/process.rs", "tests/load.rs", "src/thread/mod.rs", "Makefile"];
const ASKS = [
  "The list test fails since the last merge: find out why and fix it.",
  "Add a column for the last activity to the sessions table, with a migration.",
  "Why is the first load slower than yesterday? Measure before you change anything.",
  "Rename `SummaryRow` to `SessionRow` everywhere and run the tests.",
  "Review the diff of this branch against main and tell me what you would change.",
  "The streaming test is flaky on CI. Run it twenty times and see what differs.",
  "Write the docs for the new --park-after flag, with an example.",
  "Make the search case-insensitive and add a test for it.",
];

/** A PNG of `width`×`height` that looks like a screenshot to a compressor (lines of "text"). */
function screenshot(rand, width = 1100, height = 700) {
  const rows = [];
  for (let y = 0; y < height; y++) {
    const row = Buffer.alloc(1 + width * 3, 0xff);
    row[0] = 0; // filter: none
    const inText = y % 18 < 11 && y > 40;
    for (let x = 0; inText && x < width; x++) {
      if (rand() < 0.22) row.fill(Math.floor(rand() * 90), 1 + x * 3, 4 + x * 3);
    }
    rows.push(row);
  }
  const chunk = (type, data) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8 bits, RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", zlib.deflateSync(Buffer.concat(rows), { level: 9 })),
    chunk("IEND", Buffer.alloc(0)),
  ]).toString("base64");
}

/**
 * Writes session `id`'s transcript, run in the folder `cwd`, to `file`, until it holds `bytes`.
 * Returns `{ bytes, turns, lines, newest }`.
 */
export function writeTranscript(file, { id, cwd, bytes: target }) {
  const t = templates();
  const rand = random(21);
  const pick = (list) => list[Math.floor(rand() * list.length)];
  const hex = (n) => Array.from({ length: n }, () => Math.floor(rand() * 16).toString(16)).join("");
  const uuid = () => `${hex(8)}-${hex(4)}-4${hex(3)}-8${hex(3)}-${hex(12)}`;
  const image = screenshot(random(7));
  const out = fs.openSync(file, "w");
  let written = 0;
  let lines = 0;
  let parent = null;
  let clock = START_MS;
  let pending = [];
  const flush = () => {
    const text = pending.join("");
    fs.writeSync(out, text);
    written += Buffer.byteLength(text);
    pending = [];
  };
  /** A copy of `template` as an entry of this session, chained after the last one. */
  const write = (template, change = () => {}) => {
    const entry = structuredClone(template);
    if ("sessionId" in entry) entry.sessionId = id;
    if ("cwd" in entry) entry.cwd = cwd;
    if ("timestamp" in entry) entry.timestamp = new Date((clock += 400 + Math.floor(rand() * 2500))).toISOString();
    if ("uuid" in entry) {
      entry.uuid = uuid();
      entry.parentUuid = parent;
    }
    change(entry);
    if ("uuid" in entry) parent = entry.uuid;
    pending.push(`${JSON.stringify(entry)}\n`);
    lines++;
    return entry;
  };

  let turn = 0;
  let newest = null;
  for (;;) {
    // Whether this turn is the last: another of the average size would pass the target.
    const last = turn > 0 && written + written / turn >= target;
    const file = pick(FILES);
    const ask = `${pick(ASKS)} Start with ${file}.`;
    const promptId = uuid();
    const withImage = turn % IMAGE_EVERY === IMAGE_EVERY - 1;
    write(t.enqueue, (e) => (e.content = ask));
    write(t.dequeue);
    write(withImage ? t.imagePrompt : t.prompt, (e) => {
      e.promptId = promptId;
      e.sentAtMs = clock;
      e.turnPosition = { promptIndex: turn, turnIndex: 1 };
      if (withImage) {
        e.message.content = [
          { type: "text", text: `${ask} The screenshot shows what I see.` },
          { type: "image", source: { type: "base64", media_type: "image/png", data: image } },
        ];
      } else {
        e.message.content = ask;
      }
    });
    if (withImage) write(t.imageMeta, (e) => (e.promptId = promptId));
    const startUp = turn % RESTART_EVERY === 0;
    if (startUp) for (const entry of t.startUp) write(entry);
    const request = () => write(t.request, (e) => (e.id = uuid()));
    request();

    let message = `msg_${hex(24)}`;
    const assistant = (template, content, stop = "tool_use") =>
      write(template, (e) => {
        e.message.id = message;
        e.message.content = content;
        e.message.stop_reason = stop;
        if ("requestId" in e) e.requestId = `req_${hex(24)}`;
      });
    assistant(t.text, [{ type: "text", text: `Let me look at ${file} first, then run what fails.` }]);
    const calls = 1 + Math.floor(rand() * 5);
    const used = new Set();
    for (let call = 0; call < calls; call++) {
      if (call > 0) {
        request();
        message = `msg_${hex(24)}`;
      }
      const toolUseId = `toolu_${hex(24)}`;
      const kind = turn % 9 === 4 && call === calls - 1 ? "ask" : rand() < 0.5 ? "read" : "bash";
      let result;
      if (kind === "read") {
        const lineCount = 40 + Math.floor(rand() * 160);
        const content = Array.from({ length: lineCount }, (_, i) => codeLine(rand, i)).join("\n");
        const numbered = content.split("\n").map((line, i) => `${i + 1}\t${line}`).join("\n");
        const use = assistant(t.read, [{ type: "tool_use", id: toolUseId, name: "Read", input: { file_path: `${cwd}/${file}` } }]);
        result = write(t.readResult, (e) => {
          e.message.content = [{ tool_use_id: toolUseId, type: "tool_result", content: numbered }];
          e.toolUseResult = { type: "text", file: { filePath: `${cwd}/${file}`, content, numLines: lineCount, startLine: 1, totalLines: lineCount } };
          e.sourceToolAssistantUUID = use.uuid;
          e.promptId = promptId;
        });
        used.add("Read");
      } else if (kind === "bash") {
        const command = pick(["cargo test --no-default-features --features ssr store", "cargo clippy --all-targets", "git diff --stat main", "make bench-parked", "rg -n 'list_for_tabs' src"]);
        const stdout = buildOutput(rand, 20 + Math.floor(rand() * 70));
        const use = assistant(t.bash, [{ type: "tool_use", id: toolUseId, name: "Bash", input: { command, description: "Run it and read the output" } }]);
        result = write(t.bashResult, (e) => {
          e.message.content = [{ tool_use_id: toolUseId, type: "tool_result", content: stdout, is_error: false }];
          e.toolUseResult = { ...e.toolUseResult, stdout };
          e.sourceToolAssistantUUID = use.uuid;
          e.promptId = promptId;
        });
        used.add("Bash");
      } else {
        const use = assistant(t.ask, t.ask.message.content.map((b) => (b.type === "tool_use" ? { ...b, id: toolUseId } : b)));
        result = write(t.askResult, (e) => {
          e.message.content = e.message.content.map((b) => ({ ...b, tool_use_id: toolUseId }));
          e.sourceToolAssistantUUID = use.uuid;
          e.promptId = promptId;
        });
        used.add("AskUserQuestion");
      }
      if (startUp && call === 0) write(t.snapshot);
      write(t.toolsUsed, (e) => (e.tools = [...used]));
      write(t.lastPrompt, (e) => ((e.lastPrompt = ask), (e.leafUuid = result.uuid)));
      write(t.latch);
    }
    request();
    message = `msg_${hex(24)}`;
    const reply = replyText(rand, file, turn);
    newest = last ? `That was the last of it: the branch is ready to merge (turn ${turn + 1}).` : null;
    const end = assistant(t.text, [{ type: "text", text: newest ? `${reply}\n\n${newest}` : reply }], "end_turn");
    write(t.lastPrompt, (e) => ((e.lastPrompt = ask), (e.leafUuid = end.uuid)));
    write(t.cost);
    flush();
    turn++;
    clock += 60_000 + Math.floor(rand() * 600_000);
    if (last) break;
  }
  fs.closeSync(out);
  return { bytes: written, turns: turn, lines, newest };
}

function codeLine(rand, i) {
  const words = ["store", "session", "page", "cursor", "thread", "event", "limit", "summary", "turn", "list"];
  const w = () => words[Math.floor(rand() * words.length)];
  switch (i % 6) {
    case 0: return `/// The ${w()} of a ${w()}, read a ${w()} at a time.`;
    case 1: return `pub async fn ${w()}_${w()}(&self, ${w()}: &str, ${w()}: u32) -> StoreResult<Vec<${w() === "page" ? "Page" : "Summary"}>> {`;
    case 2: return `    let ${w()} = self.${w()}_${w()}(${w()}, ${Math.floor(rand() * 500)}).await?;`;
    case 3: return `    if ${w()}.is_empty() { return Ok(Vec::new()); }`;
    case 4: return `    Ok(${w()}.into_iter().map(${w()[0].toUpperCase()}${w()}::from).collect())`;
    default: return "}";
  }
}

function buildOutput(rand, lines) {
  const out = [];
  for (let i = 0; i < lines; i++) {
    const r = rand();
    out.push(
      r < 0.6
        ? `test store::tests::${["list", "page", "search", "lease", "append"][i % 5]}_${i} ... ok`
        : r < 0.85
          ? `   Compiling askbridge v0.1.0 (/work/project) [${Math.floor(rand() * 90) + 10}s]`
          : `warning: unused variable: \`row_${i}\` --> src/store/list.rs:${Math.floor(rand() * 300)}:${Math.floor(rand() * 40)}`,
    );
  }
  out.push(`test result: ok. ${lines} passed; 0 failed; 0 ignored; finished in ${(rand() * 9).toFixed(2)}s`);
  return out.join("\n");
}

function replyText(rand, file, turn) {
  const paragraphs = 1 + Math.floor(rand() * 4);
  const parts = [`Done with step ${turn + 1}: \`${file}\` had the problem.`];
  for (let i = 0; i < paragraphs; i++) {
    parts.push(
      "The cause was an ordering that depended on the insertion time, which two sessions created in the " +
        "same millisecond share; the list now breaks ties by id, as the store's other queries do.",
    );
  }
  parts.push("What changed:\n\n- the query orders by `(active_at_ms, created_at_ms, id)`\n- a test creates two sessions at once\n- the docs say why");
  return parts.join("\n\n");
}
