// Who had the two cores during a short window (issue 25: the answer path with a page open).
//
// For each group of processes, the time its threads ran on a CPU and the time they were ready to
// run but waited for one, from /proc/PID/task/TID/schedstat (nanoseconds, unlike /proc/PID/stat's
// 10 ms ticks: a window here lasts 50–200 ms). A thread that waited is the scheduler's proof that
// the cores were busy with something else. Threads that ended inside the window are missed; none
// of the processes watched here start or end threads on the answer path.

import * as fs from "node:fs";

/** Every pid on the machine with its parent, name and command line (read once per snapshot). */
function processes() {
  const all = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      all.push({ pid: Number(entry), ppid: Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]), cmdline });
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
