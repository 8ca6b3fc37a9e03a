// The processes a benchmark starts: AskBridge servers (release build) on free loopback ports with
// their own data folders and access tokens, and what reads their cost from /proc. Everything
// started here is killed by its pid when the bench exits, fails or is interrupted, and every
// folder made here is removed.

import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
/** The server the bench runs: the release build, or ASKBRIDGE_BIN (as scripts/size.sh takes it). */
export const BIN = process.env.ASKBRIDGE_BIN ? path.resolve(process.env.ASKBRIDGE_BIN) : path.join(root, "target/release/askbridge");
export const CLAUDE_BIN = path.join(root, "node_modules/.bin/claude");
/** What `--scenario` plays for the scripted agent: a question at once, a short reply, an echo. */
export const SCENARIO = path.join(root, "scripts/bench/scenario.toml");

const children = new Set();
const folders = new Set();
const running = (child) => child.exitCode === null && child.signalCode === null;
let stopping = false;

/** Kills what is still running of what we started (by pid), and removes our folders. */
function cleanUp() {
  for (const child of children) if (running(child)) child.kill("SIGKILL");
  for (const dir of folders) fs.rmSync(dir, { recursive: true, force: true });
}
process.on("exit", cleanUp);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => shutDown(130));

/**
 * Ends the bench with `code`. What we started gets SIGTERM first, so that an AskBridge server
 * stops the Claude Code CLIs it runs (each in a process group of its own, out of our reach), and
 * `graceMs` to exit; the exit handler then kills what is left and removes our folders.
 */
export async function shutDown(code, graceMs = 5000) {
  stopping = true;
  const left = [...children].filter(running);
  for (const child of left) child.kill("SIGTERM");
  const exited = Promise.all(left.map((child) => new Promise((resolve) => (running(child) ? child.once("exit", resolve) : resolve()))));
  await Promise.race([exited, sleep(graceMs)]);
  process.exit(code);
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Milliseconds on the clock every figure of a run is taken on (epoch-based, sub-millisecond). */
export const now = () => performance.timeOrigin + performance.now();

/** Spawns `bin`, remembering the child so that it never outlives the bench. */
export function spawnTracked(bin, args, options) {
  if (stopping) throw new Error("the bench is stopping");
  const child = spawn(bin, args, options);
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

/** A folder of our own under the system's temporary folder, removed at exit. */
export function tempDir(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `askbridge-bench-${prefix}-`));
  folders.add(dir);
  return dir;
}

export function removeDir(dir) {
  fs.rmSync(dir, { recursive: true, force: true });
  folders.delete(dir);
}

export async function freePort() {
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

/** Polls `check` every `everyMs` until it returns something truthy; fails after `limitMs`. */
export async function waitFor(what, limitMs, check, everyMs = 100) {
  for (const deadline = Date.now() + limitMs; ; await sleep(everyMs)) {
    const result = await check();
    if (result) return result;
    if (Date.now() > deadline) throw new Error(`timed out after ${limitMs / 1000} s waiting for ${what}`);
  }
}

/** The environment that runs the Claude Code CLI offline against `apiUrl` (claude-cli.md §1). */
export function claudeEnv(home, apiUrl) {
  for (const dir of [".claude", "tmp", "project"]) fs.mkdirSync(path.join(home, dir), { recursive: true });
  return {
    HOME: home,
    CLAUDE_CONFIG_DIR: path.join(home, ".claude"),
    TMPDIR: path.join(home, "tmp"),
    XDG_RUNTIME_DIR: path.join(home, "tmp"),
    CLAUDE_CODE_TMPDIR: path.join(home, "tmp"),
    ANTHROPIC_BASE_URL: apiUrl,
    ANTHROPIC_API_KEY: "dummy",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_ERROR_REPORTING: "1",
  };
}

/** An AskBridge server of the bench's own: loopback, a fresh data folder, a random access token. */
export class AskBridge {
  /**
   * `args` go after `serve --addr … --data-dir …`; `env` is added to ours. `bin` is the binary
   * (BIN unless given); `wrapper` a command line that runs it (valgrind's, say), the binary and
   * its arguments after it, in the same process.
   */
  static async start({ args = [], env = {}, name = "server", bin = BIN, wrapper = [] } = {}) {
    const server = new AskBridge(await freePort(), tempDir(name), args, env);
    server.bin = bin;
    server.wrapper = wrapper;
    await server.start();
    return server;
  }

  constructor(port, dataDir, args, env) {
    this.port = port;
    this.dataDir = dataDir;
    this.args = args;
    this.token = randomBytes(24).toString("hex");
    this.env = { ...process.env, RUST_LOG: "askbridge=warn", ...env, ASKBRIDGE_TOKEN: this.token };
    this.url = `http://127.0.0.1:${port}`;
    this.log = "";
    this.logBytes = 0;
  }

  async start() {
    const bin = this.bin ?? BIN;
    if (!fs.existsSync(bin)) throw new Error(`${bin} is missing: run \`make release\` first`);
    const [command, ...before] = [...(this.wrapper ?? []), bin];
    const child = spawnTracked(
      command,
      [...before, "serve", "--addr", `127.0.0.1:${this.port}`, "--data-dir", this.dataDir, ...this.args],
      { cwd: root, stdio: ["ignore", "ignore", "pipe"], env: this.env },
    );
    child.stderr.on("data", (chunk) => {
      this.logBytes += chunk.length;
      this.log = (this.log + chunk).slice(-8000);
    });
    this.child = child;
    this.exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal)));
    // A bare connection: readiness without a request that would allocate (and skew the RSS).
    await waitFor("askbridge to listen", 30_000, async () => {
      if (child.exitCode !== null) throw new Error(`askbridge exited at start:\n${this.log}`);
      return listening(this.port);
    });
  }

  get pid() {
    return this.child.pid;
  }

  /** SIGTERM, as systemd would; SIGKILL if it has not exited after `graceMs`. */
  async stop(graceMs = 10_000) {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** Stops the server and removes its data folder. */
  async dispose() {
    await this.stop();
    removeDir(this.dataDir);
  }

  /** Every session, a page of `list_sessions` at a time (it answers 50 unless asked for up to 200). */
  async sessions() {
    const all = [];
    for (;;) {
      const last = all.at(-1);
      const after = last && { active_at_ms: last.active_at_ms, created_at_ms: last.created_at_ms, id: last.id };
      const page = await this.api("list_sessions", { after, limit: 200 });
      all.push(...page);
      if (page.length < 200) return all;
    }
  }

  /** A server function, with the token as a bearer; `raw` gives the status and the text. */
  async api(name, body = {}, { raw = false, base = this.url } = {}) {
    const response = await fetch(`${base}/api/${name}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${this.token}` },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (raw) return { status: response.status, text };
    if (!response.ok) throw new Error(`${name}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : null;
  }

  /** GET with the token and `acceptEncoding`; the body exactly as it came over the wire. */
  get(pathname, acceptEncoding) {
    return new Promise((resolve, reject) => {
      const request = http.get(
        `${this.url}${pathname}`,
        { headers: { authorization: `Bearer ${this.token}`, "accept-encoding": acceptEncoding } },
        (response) => {
          const chunks = [];
          response.on("data", (chunk) => chunks.push(chunk));
          response.on("end", () => {
            if (response.statusCode !== 200) return reject(new Error(`GET ${pathname}: ${response.statusCode}`));
            resolve({ body: Buffer.concat(chunks), encoding: response.headers["content-encoding"] });
          });
        },
      );
      request.on("error", reject);
    });
  }

  /** VmRSS in KiB, once. */
  rssNow() {
    return rssKiB(this.pid);
  }

  /** VmRSS in KiB: the median of three readings half a second apart, after a two-second settle. */
  async rss() {
    await sleep(2000);
    const readings = [];
    for (let i = 0; i < 3; i++) {
      readings.push(this.rssNow());
      await sleep(500);
    }
    return readings.sort((a, b) => a - b)[1];
  }

  /** The processes this server started (an agent's CLI would be one), by pid. */
  children() {
    return pidsWhere(STAT_PARENT, this.pid);
  }

  /** CPU time the server has used so far (user + system), in ms (10 ms resolution). */
  cpuMs() {
    return processCpuMs(this.pid);
  }

  /** Bytes the server has passed to write(2) and its kin so far (files, sockets and pipes alike). */
  writtenBytes() {
    const io = fs.readFileSync(`/proc/${this.pid}/io`, "utf8");
    return Number(/^wchar:\s+(\d+)/m.exec(io)[1]);
  }

  /**
   * Bytes the server sent to the disk so far, as the kernel counts them (`write_bytes` in
   * /proc/PID/io): a page is counted each time this process dirties it, so a page written again
   * after the kernel wrote it back (or after an fsync) counts again. Sockets and pipes never count.
   */
  diskBytes() {
    const io = fs.readFileSync(`/proc/${this.pid}/io`, "utf8");
    return Number(/^write_bytes:\s+(\d+)/m.exec(io)[1]);
  }

  /** The database and its WAL, in bytes. */
  storeBytes() {
    return fs
      .readdirSync(this.dataDir)
      .filter((name) => name.startsWith("askbridge.db"))
      .reduce((sum, name) => sum + fs.statSync(path.join(this.dataDir, name)).size, 0);
  }

  get database() {
    return path.join(this.dataDir, "askbridge.db");
  }
}

/** The fields of /proc/PID/stat after the command's name: [0] is the state (the 3rd field). */
export function statFields(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** Where the parent's pid and the process group are in `statFields`. */
export const STAT_PARENT = 1;
export const STAT_GROUP = 2;

/** Every process on the machine whose `statFields(pid)[field]` is `value`. */
export function pidsWhere(field, value) {
  return fs
    .readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => {
      try {
        return Number(statFields(pid)[field]) === value;
      } catch {
        return false; // gone meanwhile
      }
    });
}

/** A process's VmRSS in KiB. */
export function rssKiB(pid) {
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))[1]);
}

/** A process's CPU time (user + system) in ms, from /proc/PID/stat. */
export function processCpuMs(pid) {
  const fields = statFields(pid);
  // utime and stime are the 14th and 15th fields; fields[0] is the 3rd.
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / CLOCK_TICKS;
}

const CLOCK_TICKS = 100; // sysconf(_SC_CLK_TCK) on Linux

/** Runs `work` over `items`, `concurrency` at a time. */
export async function inParallel(items, concurrency, work) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++];
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}
