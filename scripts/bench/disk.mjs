// Section 6, disk: what the store sends to the disk while a reply streams at a reading pace. The
// scripted agent plays one reply of BENCH_DISK_WORDS (2,400) words of plain prose, about 14 KB,
// at BENCH_DISK_PACE (24) words a second, as the demo does: a group of pieces every 50 ms of a
// word or two each, the slowest stream, where each group's fixed costs weigh most. The figure is
// the kernel's count (`write_bytes` in /proc/PID/io: each 4 KiB page the server dirtied, again
// each time it dirtied it after the kernel wrote it back), from the message sent to the turn's
// end, per byte of the reply's text. The streaming section counts the same at full speed.
//
// The data folder must be on a real disk: on a tmpfs the kernel counts nothing, and the figure
// says so instead of a ratio.

import * as fs from "node:fs";
import * as path from "node:path";

import { figure, format } from "./figures.mjs";
import { AskBridge, sleep, tempDir, waitFor } from "./processes.mjs";

const WORDS = Number(process.env.BENCH_DISK_WORDS ?? 2400);
const PACE = Number(process.env.BENCH_DISK_PACE ?? 24);
const BUDGET = 3;

/** Plain prose: sentences of ordinary words, `words` of them in all. */
function prose(words) {
  const vocabulary = ["the", "server", "keeps", "what", "an", "agent", "writes", "while", "a", "person", "reads", "it", "slowly", "and", "nothing", "is", "lost", "when", "power", "fails"];
  const out = [];
  for (let i = 0; i < words; i++) {
    const word = vocabulary[(i * 7 + Math.floor(i / 20)) % vocabulary.length];
    out.push(i % 12 === 11 ? `${word}.` : word);
  }
  return out.join(" ");
}

export async function disk() {
  const text = prose(WORDS);
  const scenario = path.join(tempDir("disk-scenario"), "reading.toml");
  fs.writeFileSync(scenario, `name = "reading pace"\npace = ${PACE}\n\n[[turn]]\n\n[[turn.step]]\nsay = """${text}"""\n`);
  const server = await AskBridge.start({ name: "disk", args: ["--agent", "scripted", "--scenario", scenario] });
  try {
    const { id } = await server.api("create_session", {});
    await sleep(1000);
    const before = { disk: server.diskBytes(), files: folderBytes(server.dataDir) };
    const started = Date.now();
    await server.api("send_message", { session: id, text: "Tell me the long story." });
    const limit = (WORDS / PACE + 120) * 1000;
    await waitFor("the reply to end", limit, async () => {
      const { thread } = await server.api("load_session", { id });
      return !thread.turn.working && thread.messages.length >= 2;
    }, 250);
    const seconds = (Date.now() - started) / 1000;
    const written = server.diskBytes() - before.disk;
    const streamed = Buffer.byteLength(text);
    const grown = folderBytes(server.dataDir) - before.files;
    const perByte = written / streamed;
    const counted = written > 0;
    return {
      figures: [
        figure("disk", "store bytes to the disk per byte, reading pace", counted ? perByte : NaN, "ratio", {
          budget: counted ? { max: BUDGET, text: `≤ ${BUDGET}× (issue 38)` } : undefined,
          shown: counted
            ? `${format(perByte, "ratio")} (${format(written / 1024, "KiB")} for ${format(streamed / 1024, "KiB")} in ${format(seconds, "s")})`
            : "— (the kernel counted nothing: is the data folder on a tmpfs?)",
          note: `kernel write_bytes, ${WORDS} words at ${PACE} a second; the data folder grew ${format(grown / 1024, "KiB")}`,
        }),
      ],
      details: { words: WORDS, pace: PACE, streamed, written, perByte, seconds, folderGrowth: grown },
    };
  } finally {
    await server.dispose();
    fs.rmSync(path.dirname(scenario), { recursive: true, force: true });
  }
}

/** Every file's size under `dir`, summed. */
function folderBytes(dir) {
  return fs
    .readdirSync(dir, { recursive: true })
    .map((name) => path.join(dir, name))
    .filter((file) => fs.statSync(file, { throwIfNoEntry: false })?.isFile())
    .reduce((sum, file) => sum + fs.statSync(file).size, 0);
}
