// Screenshots for people to look at (not a test): the welcome page, a waiting question card, an
// answered one, and an approval with a diff, at 1280 px in light and dark and at 375 px (a phone).
// Starts the release server with the end-to-end scenario on a free port and a fresh data folder,
// and writes PNGs to target/screenshots/ (or the folder given as the first argument).
//
//   node scripts/screenshots.mjs [out-dir]
import { chromium } from "@playwright/test";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const out = path.resolve(process.argv[2] ?? path.join(root, "target/screenshots"));
fs.mkdirSync(out, { recursive: true });

const port = await new Promise((resolve) => {
  const probe = net.createServer().listen(0, "127.0.0.1", () => {
    const { port } = probe.address();
    probe.close(() => resolve(port));
  });
});
const token = "screenshots-token-0123456789abcdef";
const data = fs.mkdtempSync(path.join(os.tmpdir(), "askbridge-shots-"));
const server = spawn(
  path.join(root, "target/release/askbridge"),
  ["serve", "--addr", `127.0.0.1:${port}`, "--data-dir", data, "--scenario", "end2end/fixtures/scenario.toml"],
  { cwd: root, stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, ASKBRIDGE_TOKEN: token, RUST_LOG: "warn" } },
);
const base = `http://127.0.0.1:${port}`;
const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
const api = async (name, body) => {
  const response = await fetch(`${base}/api/${name}`, { method: "POST", headers, body: JSON.stringify(body) });
  if (!response.ok) throw new Error(`${name}: ${response.status} ${await response.text()}`);
  return response.json();
};
for (let i = 0; ; i++) {
  try {
    if ((await fetch(`${base}/`, { headers })).ok) break;
  } catch {}
  if (i > 300) throw new Error("the server did not start");
  await new Promise((r) => setTimeout(r, 100));
}

// The sessions to show: one waiting on a two-question card, one answered, one with an edit to approve.
const session = async (text) => {
  const { id } = await api("create_session", {});
  await api("send_message", { session: id, text });
  return id;
};
const waiting = await session("a pair of questions");
const answered = await session("ask me a single question");
const edit = await session("edit the config");
const waitFor = async (id, test) => {
  for (let i = 0; i < 300; i++) {
    const view = await api("load_session", { id });
    const call = view.thread.messages.flatMap((m) => m.blocks).map((b) => b.tool_call).filter((c) => c?.interaction).at(-1);
    if (call && test(call, view)) return call;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`session ${id} did not get there`);
};
const single = await waitFor(answered, (c) => !c.interaction.outcome);
await api("submit_answers", {
  session: answered,
  tool_use_id: single.id,
  answers: [{ question: "Which database should we use?", labels: ["Postgres"], other: null, notes: null }],
});
await waitFor(answered, (c, view) => c.interaction.outcome && !view.thread.turn.working);
await waitFor(waiting, (c) => !c.interaction.outcome);
await waitFor(edit, (c) => !c.interaction.outcome);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
});
try {
  for (const [label, width, height, colorScheme] of [
    ["1280-light", 1280, 800, "light"],
    ["1280-dark", 1280, 800, "dark"],
    ["375-light", 375, 760, "light"],
    ["375-dark", 375, 760, "dark"],
  ]) {
    const context = await browser.newContext({ viewport: { width, height }, colorScheme, extraHTTPHeaders: { Authorization: `Bearer ${token}` } });
    const page = await context.newPage();
    for (const [name, url] of [
      ["welcome", "/"],
      ["waiting-card", `/s/${waiting}`],
      ["answered-card", `/s/${answered}`],
      ["approval-diff", `/s/${edit}`],
    ]) {
      await page.goto(`${base}${url}`);
      await page.getByRole("button", { name: "New session", exact: true }).waitFor({ state: "visible" });
      await page.waitForFunction(() => !document.querySelector("button.new-session")?.disabled);
      await page.waitForTimeout(300);
      const file = path.join(out, `${name}-${label}.png`);
      await page.screenshot({ path: file });
      console.log(file);
    }
    await context.close();
  }
} finally {
  await browser.close();
  server.kill("SIGTERM");
  fs.rmSync(data, { recursive: true, force: true });
}
