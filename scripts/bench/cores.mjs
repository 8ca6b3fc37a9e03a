// Who had the two cores during a short window (issue 25: the answer path with a page open).
//
// For each group of processes, the time its threads ran on a CPU and the time they were ready to
// run but waited for one, from /proc/PID/task/TID/schedstat (nanoseconds, unlike /proc/PID/stat's
// 10 ms ticks: a window here lasts 50–200 ms). A thread that waited is the scheduler's proof that
// the cores were busy with something else. Threads that ended inside the window are missed; none
// of the processes watched here start or end threads on the answer path.

import * as fs from "node:fs";

import { STAT_PARENT, statFields } from "./processes.mjs";

/** Every pid on the machine with its parent, name and command line (read once per snapshot). */
function processes() {
  const all = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(statFields(entry)[STAT_PARENT]);
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      all.push({ pid: Number(entry), ppid, cmdline });
    } catch {
      // gone meanwhile
    }
  }
  return all;
}

function descendants(all, root) {
  const found = new Set([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of all) {
      if (!found.has(p.pid) && found.has(p.ppid)) {
        found.add(p.pid);
        grew = true;
      }
    }
  }
  return found;
}

/** Run and wait time of all threads of `pids`, in ms. */
function schedstat(pids) {
  let runNs = 0;
  let waitNs = 0;
  for (const pid of pids) {
    let tasks = [];
    try {
      tasks = fs.readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tasks) {
      try {
        const [run, wait] = fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ").map(Number);
        runNs += run;
        waitNs += wait;
      } catch {
        // the thread ended
      }
    }
  }
  return { run: runNs / 1e6, wait: waitNs / 1e6 };
}

/** All CPUs' busy time so far (everything but idle and iowait), in ms. */
function machineBusyMs() {
  const [cpu] = fs.readFileSync("/proc/stat", "utf8").split("\n");
  const ticks = cpu.split(/\s+/).slice(1).map(Number);
  const busy = ticks.reduce((a, b) => a + b, 0) - ticks[3] - ticks[4];
  return (busy * 1000) / 100;
}

/**
 * The groups a bench run is made of: the AskBridge server (`serverPid`, if any), the agent CLI
 * (the server's children, or `cliPid` run alone), Chromium's renderer, GPU and other processes, and
 * the bench itself (the mock API and Playwright).
 */
export function benchGroups({ serverPid = null, cliPid = null }) {
  const all = processes();
  const server = new Set(serverPid ? [serverPid] : []);
  const cli = serverPid ? descendants(all, serverPid) : descendants(all, cliPid);
  if (serverPid) cli.delete(serverPid);
  const ours = descendants(all, process.pid);
  const chromium = all.filter((p) => ours.has(p.pid) && !cli.has(p.pid) && /chrom/.test(p.cmdline[0] ?? ""));
  // Chromium rewrites its children's command lines into one string: look for the flag anywhere.
  const type = (p) => /--type=([a-z-]+)/.exec(p.cmdline.join(" "))?.[1] ?? "browser";
  const of = (wanted) => new Set(chromium.filter((p) => wanted(type(p))).map((p) => p.pid));
  return {
    server,
    cli,
    renderer: of((t) => t === "renderer"),
    gpu: of((t) => t === "gpu-process"),
    // The network service, among others.
    utility: of((t) => t === "utility"),
    browser: of((t) => !["renderer", "gpu-process", "utility"].includes(t)),
    bench: new Set([process.pid]),
  };
}

/** Starts a window over `groups`; the returned function ends it and gives each group's ms. */
export function coresWindow(groups) {
  const before = Object.fromEntries(Object.entries(groups).map(([name, pids]) => [name, schedstat(pids)]));
  const busyBefore = machineBusyMs();
  return () => {
    const busy = machineBusyMs() - busyBefore;
    const took = {};
    let ours = 0;
    for (const [name, pids] of Object.entries(groups)) {
      const after = schedstat(pids);
      took[name] = { run: after.run - before[name].run, wait: after.wait - before[name].wait };
      ours += took[name].run;
    }
    // What the rest of the machine ran meanwhile (10 ms resolution: a hint, not a figure).
    took.elsewhere = { run: Math.max(0, busy - ours), wait: NaN };
    return took;
  };
}

/**
 * Waits until the bench's Chromium has settled: its processes ran less than `idleMs` in each of two
 * `windowMs` windows in a row (or `limitMs` passed, said on stderr). A new browser context opens a
 * window, whose browser UI (the omnibox popup's WebUI, among other things) cost Debian's full
 * Chromium 2.1 CPU-seconds in its first 2.5 s for a page of one paragraph (1.4 with its top-chrome
 * preloading off, 0.2 in the headless shell; 2 Dec, BENCHMARKS.md "A fresh context's own work"). A
 * person's link opens in a browser that is already up: the runs wait for this before they navigate,
 * AskBridge's and CloudCLI's alike, so that the window's work is not timed as either page's
 * (`BENCH_SETTLE=0` turns this off).
 */
export async function chromiumSettled({ windowMs = 100, idleMs = 5, limitMs = 10_000 } = {}) {
  // BENCH_SETTLE=0: navigate at once, as before 2 Dec (to compare).
  if (process.env.BENCH_SETTLE === "0") return;
  const started = Date.now();
  let quiet = 0;
  while (quiet < 2) {
    if (Date.now() - started > limitMs) {
      console.error(`bench: Chromium was still busy ${limitMs} ms after a new context opened`);
      return;
    }
    const { renderer, gpu, utility, browser } = benchGroups({});
    const pids = [...renderer, ...gpu, ...utility, ...browser];
    const before = schedstat(pids).run;
    await new Promise((resolve) => setTimeout(resolve, windowMs));
    quiet = schedstat(pids).run - before < idleMs ? quiet + 1 : 0;
  }
}
