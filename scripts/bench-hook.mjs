// How long `askbridge hook` holds up a `claude` in a terminal when AskBridge cannot take the
// request (issue 22: "no visible delay, under 200 ms"): with no `askbridge connect`, and with a
// connection to a server that is not running. Runs the release binary 20 times each on Claude
// Code's real PermissionRequest (tests/fixtures), and prints the median and the slowest run.
// Part of `make bench`; the tests only check that the hook gets out of the way, never how fast.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const BIN = process.env.ASKBRIDGE_BIN ?? "target/release/askbridge";
const RUNS = 20;
const request = readFileSync("tests/fixtures/claude-cli/terminal/perm_prompt.PermissionRequest.json");

// A port nobody listens on: bound, then let go.
const port = await new Promise((resolve) => {
  const server = createServer().listen(0, "127.0.0.1", () => {
    const { port } = server.address();
    server.close(() => resolve(port));
  });
});

const home = mkdtempSync(join(tmpdir(), "askbridge-bench-hook-"));
const config = join(home, ".claude");
mkdirSync(config);
const run = () => {
  const start = process.hrtime.bigint();
  const done = spawnSync(BIN, ["hook"], {
    input: request,
    env: { HOME: home, CLAUDE_CONFIG_DIR: config, PATH: process.env.PATH },
  });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (done.status !== 0 || done.stdout.length || done.stderr.length) {
    throw new Error(`the hook did not get out of the way: ${done.status} ${done.stdout} ${done.stderr}`);
  }
  return ms;
};
const measure = (name) => {
  const times = Array.from({ length: RUNS }, run).sort((a, b) => a - b);
  const median = times[Math.floor(RUNS / 2)];
  console.log(`${name.padEnd(44)} median ${median.toFixed(1)} ms, slowest ${times.at(-1).toFixed(1)} ms (budget 200 ms)`);
  return { median, slowest: times.at(-1) };
};

console.log(`bench-hook: askbridge hook on a real PermissionRequest, ${RUNS} runs each`);
const none = measure("no askbridge connect");
writeFileSync(join(config, "askbridge.json"), JSON.stringify({ url: `http://127.0.0.1:${port}`, token: "x".repeat(32) }));
const stopped = measure("connected, the server not running");
rmSync(home, { recursive: true, force: true });
console.log(JSON.stringify({ hook_no_connect_ms: none, hook_server_stopped_ms: stopped }));
