#!/usr/bin/env node
// `make bench`: what people feel and what the server costs, measured against the budgets of
// issue 12, on the release build. BENCHMARKS.md says what each figure means and how it is taken.
//
//   node scripts/bench.mjs [bundle] [page] [questions] [scale] [streaming] [disk] [daily] [views] [first-run]
//
// With no section named, every section runs, in that order. It prints a table, each figure with
// its budget met or MISSED, and writes target/bench/summary.json (the sections of this run, with
// every run's numbers). It exits 1 when a section fails, not when a budget is missed.
//
// Every server it starts listens on 127.0.0.1 with its own data folder and access token; everything
// it starts is killed by pid when it ends, fails or is interrupted. Bounded: it gives up after
// BENCH_TIMEOUT_S (default 2400) seconds. Knobs (environment): BENCH_PAGE_RUNS, BENCH_QUESTION_RUNS,
// BENCH_ANSWER_PATHS, BENCH_SCALE_SESSIONS, BENCH_STREAM_*, BENCH_DAILY_*, BENCH_VIEWS_* (see each
// section's module).

import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

import { bundle } from "./bench/bundle.mjs";
import { daily } from "./bench/daily.mjs";
import { disk } from "./bench/disk.mjs";
import { firstRun } from "./bench/first-run.mjs";
import { table } from "./bench/figures.mjs";
import { page } from "./bench/page.mjs";
import { BIN, root, shutDown } from "./bench/processes.mjs";
import { questions } from "./bench/questions.mjs";
import { scale } from "./bench/scale.mjs";
import { streaming } from "./bench/streaming.mjs";
import { views } from "./bench/views.mjs";

const SECTIONS = { bundle, page, questions, scale, streaming, disk, daily, views, "first-run": firstRun };
const TIMEOUT_S = Number(process.env.BENCH_TIMEOUT_S ?? 2400);

function git(...args) {
  return execFileSync("git", args, { cwd: root }).toString().trim();
}

async function main() {
  const asked = process.argv.slice(2);
  const unknown = asked.filter((name) => !(name in SECTIONS));
  if (unknown.length) {
    console.error(`bench: no section ${unknown.join(", ")}; the sections are ${Object.keys(SECTIONS).join(", ")}`);
    return 2;
  }
  if (!fs.existsSync(BIN)) throw new Error(`${BIN} is missing: run \`make release\` first`);
  setTimeout(() => {
    console.error(`bench: gave up after ${TIMEOUT_S} s (BENCH_TIMEOUT_S)`);
    shutDown(1);
  }, TIMEOUT_S * 1000).unref();

  const run = {
    date: new Date().toISOString(),
    commit: git("rev-parse", "--short", "HEAD"),
    uncommitted: git("status", "--porcelain", "--untracked-files=no") !== "",
    binary: { path: path.relative(root, BIN), built: fs.statSync(BIN).mtime.toISOString() },
    machine: { cores: os.cpus().length, cpu: os.cpus()[0].model, memoryGiB: Math.round(os.totalmem() / 2 ** 30) },
    loadBefore: os.loadavg(),
  };
  // ASKBRIDGE_BIN may be a copy of another commit's build (an A/B run): then the header names
  // the file, since the checkout's commit says nothing of what it runs.
  const built = process.env.ASKBRIDGE_BIN
    ? `${run.binary.path} (built ${run.binary.built}; checkout at ${run.commit})`
    : `release build of ${run.commit}${run.uncommitted ? " (with uncommitted changes)" : ""}`;
  console.log(
    `bench: ${built}, ` +
      `${run.date}, ${run.machine.cores} cores, load average ${run.loadBefore.map((l) => l.toFixed(2)).join(" ")}`,
  );

  const names = asked.length ? asked : Object.keys(SECTIONS);
  const results = {};
  let failed = false;
  for (const name of names) {
    const started = Date.now();
    const load = os.loadavg()[0];
    process.stdout.write(`bench: ${name} (load average ${load.toFixed(2)})…`);
    try {
      results[name] = { ...(await SECTIONS[name]()), loadAverage: load };
      results[name].seconds = (Date.now() - started) / 1000;
      console.log(` ${results[name].seconds.toFixed(0)} s`);
    } catch (error) {
      failed = true;
      results[name] = { error: String(error.stack ?? error) };
      console.log(` failed`);
      console.error(`bench: ${name}: ${error.stack ?? error}`);
    }
  }
  run.loadAfter = os.loadavg();

  const figures = Object.values(results).flatMap((r) => r.figures ?? []);
  console.log();
  console.log(table(figures));
  const notes = figures.filter((f) => f.note);
  if (notes.length) {
    console.log("\nnotes:");
    for (const f of notes) console.log(`  ${f.section} / ${f.name}: ${f.note}`);
  }
  const budgets = figures.filter((f) => f.budget);
  console.log(
    `\nbudgets: ${budgets.filter((f) => f.met).length} of ${budgets.length} met` +
      (budgets.some((f) => !f.met) ? `; missed: ${budgets.filter((f) => !f.met).map((f) => f.name).join("; ")}` : ""),
  );
  console.log(`load average after: ${run.loadAfter.map((l) => l.toFixed(2)).join(" ")} (the machine is shared)`);

  const out = path.join(root, "target/bench/summary.json");
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, `${JSON.stringify({ ...run, figures, sections: results }, null, 2)}\n`);
  console.log(`wrote ${path.relative(root, out)}`);
  return failed ? 1 : 0;
}

main().then(
  (code) => shutDown(code),
  (error) => {
    console.error(`bench: ${error.stack ?? error}`);
    shutDown(1);
  },
);
