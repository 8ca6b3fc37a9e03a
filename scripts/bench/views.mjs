// Section "views" (issue 38): the agents and views added since the last pass, weighed as the rest.
//
// - An ACP agent waiting on a question: Claude's adapter (@agentclientprotocol/claude-agent-acp,
//   pinned), against the bench's mock API, asks with AskUserQuestion and waits. The RSS of the
//   server (and what the wait added to it), of the agent's host (`askbridge acp-host`, which keeps
//   the agent through a restart of the server) and of the agent itself (the adapter's node and the
//   Claude binary its SDK runs), found through the host's process group (`<data>/acp/*.group`).
// - The Changes view on a repository of BENCH_VIEWS_FILES (10,000) files, 50 of them changed since
//   the session's first turn: `session_changes` and `folder_tree` timed from here over loopback, the
//   answer's bytes, and in cold pages the click on "Changes" → every changed file listed, with the
//   bytes the click fetched (the panels' chunk and the answer).
// - The Terminal: in cold pages, the click on "Terminal" → xterm.js's input focused (its shell
//   started on the server), the bytes the click fetched (the chunk, terminal.js and xterm.js),
//   and a command typed → its output on screen.
//
// None has a budget of its own yet: the figures are what a next pass would hold them to.

import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

import { hydrated, launchChromium, signedInPage } from "./browser.mjs";
import { figure, format, spread, stats } from "./figures.mjs";
import { MockApi, resultFor, textBlock, toolUseBlock } from "./mock-api.mjs";
import { AskBridge, SCENARIO, STAT_GROUP, claudeEnv, now, pidsWhere, root, rssKiB, sleep, tempDir, waitFor } from "./processes.mjs";

const FILES = Number(process.env.BENCH_VIEWS_FILES ?? 10_000);
const RUNS = Number(process.env.BENCH_VIEWS_RUNS ?? 5);
const CHANGED = 40;
const ADDED = 10;
const ADAPTER = path.join(root, "node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js");
const PROMPT = "Ask me about auth";
const QUESTION = {
  question: "Which auth method should we use?",
  header: "Auth",
  multiSelect: false,
  options: [
    { label: "JWT", description: "Stateless tokens" },
    { label: "Sessions", description: "Server-side sessions" },
  ],
};

export async function views() {
  const acp = await acpWaiting();
  const folder = repository();
  try {
    const work = await changesAndTerminal(folder);
    return { figures: [...acp.figures, ...work.figures], details: { acp: acp.details, ...work.details } };
  } finally {
    fs.rmSync(folder.dir, { recursive: true, force: true });
  }
}

// ---- An ACP agent waiting ----

async function acpWaiting() {
  if (!fs.existsSync(ADAPTER)) throw new Error(`${ADAPTER} is missing: run \`make setup\` (npm ci) first`);
  const mock = await new MockApi((body) => {
    const text = JSON.stringify(body.messages ?? []);
    if (resultFor(body, "toolu_views")) return { blocks: [textBlock("Thanks for answering.")] };
    if (text.includes(PROMPT)) return { blocks: [toolUseBlock("toolu_views", "AskUserQuestion", { questions: [QUESTION] })] };
    return { blocks: [textBlock("Mock title")] }; // the SDK's side requests (a title, …)
  }).start();
  const home = tempDir("views-acp");
  const server = await AskBridge.start({
    name: "views-acp",
    args: ["--acp", `claude-acp=node ${ADAPTER}`, "--agent", "claude-acp", "--workdir", path.join(home, "project")],
    // The adapter's SDK starts Claude in a mode that root may use only in a sandbox.
    env: { ...claudeEnv(home, mock.url), IS_SANDBOX: "1" },
  });
  let hosts = [];
  try {
    const idleKiB = await server.rss();
    const { id } = await server.api("create_session", {});
    const asked = now();
    await server.api("send_message", { session: id, text: PROMPT });
    await waitFor("the ACP agent's question", 120_000, async () => (await pendingCall(server, id)) !== null, 200);
    const askedInMs = now() - asked;
    hosts = hostGroups(server.dataDir);
    const host = hosts[0];
    if (!host) throw new Error(`no host's group file under ${server.dataDir}/acp`);
    const serverKiB = await server.rss();
    const members = pidsWhere(STAT_GROUP, host.pid).map((pid) => ({ pid, name: processName(pid), rssKiB: rssOrNone(pid) }));
    const hostKiB = members.find((m) => m.pid === host.pid)?.rssKiB ?? 0;
    const agentKiB = members.filter((m) => m.pid !== host.pid).reduce((sum, m) => sum + m.rssKiB, 0);

    // The answer still reaches the agent, through the host.
    const toolUseId = await pendingCall(server, id);
    const answered = now();
    await server.api("submit_answers", { session: id, tool_use_id: toolUseId, answers: [{ question: QUESTION.question, labels: ["JWT"], other: null, notes: null }] });
    await mock.request((r) => resultFor(r.body, "toolu_views") !== undefined, 60_000);
    const answerMs = now() - answered;

    // A second session waiting: what one more costs the server, past what the first set up.
    const second = (await server.api("create_session", {})).id;
    await server.api("send_message", { session: second, text: PROMPT });
    await waitFor("the second session's question", 120_000, async () => (await pendingCall(server, second)) !== null, 200);
    hosts = hostGroups(server.dataDir);
    const twoKiB = await server.rss();

    const agents = members.filter((m) => m.pid !== host.pid).map((m) => `${m.name} ${format(m.rssKiB / 1024, "MiB")}`).join(", ");
    const figures = [
      figure("views", "ACP agent waiting: server RSS", serverKiB / 1024, "MiB", {
        shown: `${format(serverKiB / 1024, "MiB")} (idle ${format(idleKiB / 1024, "MiB")}: the session and its wait ${format(serverKiB - idleKiB, "KiB")})`,
      }),
      figure("views", "  a second ACP session waiting: the server's RSS grew by", twoKiB - serverKiB, "KiB"),
      figure("views", "  its host (askbridge acp-host)", hostKiB / 1024, "MiB"),
      figure("views", "  the agent (adapter and Claude)", agentKiB / 1024, "MiB", { note: agents }),
      figure("views", "  message sent → question pending", askedInMs, "ms", { note: "a cold start of the adapter and of Claude" }),
      figure("views", "  answer → tool_result at the API", answerMs, "ms", { note: "through the host, one run" }),
    ];
    return { figures, details: { idleKiB, serverKiB, twoKiB, hostKiB, agentKiB, members, askedInMs, answerMs } };
  } finally {
    await server.stop();
    for (const host of hosts) killGroup(host.pid);
    await server.dispose();
    await mock.close();
    fs.rmSync(home, { recursive: true, force: true });
  }
}

/** The tool_use id of the session's pending interaction, or null. */
async function pendingCall(server, session) {
  const { thread } = await server.api("load_session", { id: session });
  for (const message of thread.messages) {
    for (const block of message.blocks) {
      const call = block.tool_call;
      if (call?.interaction && call.interaction.outcome == null) return call.id;
    }
  }
  return null;
}

/** The hosts of the server's ACP sessions, oldest first: `<data>/acp/<session>.group` holds "boot pid start host". */
function hostGroups(dataDir) {
  const dir = path.join(dataDir, "acp");
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((name) => name.endsWith(".group"))
    .map((name) => path.join(dir, name))
    .sort((a, b) => fs.statSync(a).mtimeMs - fs.statSync(b).mtimeMs)
    .map((file) => fs.readFileSync(file, "utf8").trim().split(" "))
    .filter(([, , , kind]) => kind === "host")
    .map(([, pid]) => ({ pid: Number(pid) }));
}

/** A process's VmRSS in KiB; 0 once it is gone. */
function rssOrNone(pid) {
  try {
    return rssKiB(pid);
  } catch {
    return 0;
  }
}

function processName(pid) {
  try {
    const args = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
    return args.map((a) => path.basename(a)).slice(0, 2).join(" ");
  } catch {
    return "?";
  }
}

function killGroup(pgid) {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // ended already
  }
}

// ---- A repository of 10,000 files: Changes and Terminal ----

function git(dir, ...args) {
  return execFileSync("git", args, {
    cwd: dir,
    env: { ...process.env, GIT_AUTHOR_NAME: "bench", GIT_AUTHOR_EMAIL: "bench@localhost", GIT_COMMITTER_NAME: "bench", GIT_COMMITTER_EMAIL: "bench@localhost" },
    maxBuffer: 64 << 20,
  });
}

/** FILES files of a few lines in 100 folders, committed. */
function repository() {
  const dir = tempDir("views-repo");
  const started = now();
  const perFolder = Math.ceil(FILES / 100);
  const files = [];
  for (let n = 0; n < FILES; n++) {
    const folder = path.join(dir, "src", `m${String(Math.floor(n / perFolder)).padStart(2, "0")}`);
    if (n % perFolder === 0) fs.mkdirSync(folder, { recursive: true });
    const file = path.join(folder, `f${String(n).padStart(5, "0")}.rs`);
    fs.writeFileSync(file, `// file ${n}\npub fn f${n}() -> u32 {\n    ${n}\n}\n`);
    files.push(file);
  }
  git(dir, "init", "--quiet", "--initial-branch", "main");
  git(dir, "add", "-A");
  git(dir, "commit", "--quiet", "-m", "10,000 files");
  return { dir, files, seconds: (now() - started) / 1000 };
}

/** The edits "since the session's first turn": CHANGED files changed, ADDED files added. */
function change(folder) {
  const step = Math.floor(folder.files.length / CHANGED);
  for (let i = 0; i < CHANGED; i++) fs.appendFileSync(folder.files[i * step], `// changed in the bench\n`);
  for (let i = 0; i < ADDED; i++) fs.writeFileSync(path.join(folder.dir, "src", `new${i}.rs`), `pub fn new${i}() {}\n`);
}

async function changesAndTerminal(folder) {
  const server = await AskBridge.start({ name: "views-work", args: ["--agent", "scripted", "--scenario", SCENARIO] });
  const browser = await launchChromium();
  try {
    const { id } = await server.api("create_session", { workdir: folder.dir });
    // The first turn takes the session's first checkpoint; the edits come after it.
    await server.api("send_message", { session: id, text: "hello" });
    await waitFor("the first turn to end", 60_000, async () => {
      const { summary } = await server.api("load_session", { id });
      return !summary.working;
    }, 200);
    change(folder);

    const changesMs = [];
    const treeMs = [];
    let changes;
    let tree;
    for (let run = 0; run < RUNS; run++) {
      let t0 = now();
      changes = await server.api("session_changes", { session: id, scope: { scope: "session" } });
      changesMs.push(now() - t0);
      t0 = now();
      tree = await server.api("folder_tree", { session: id });
      treeMs.push(now() - t0);
    }
    const listed = changes.files?.length ?? 0;
    if (listed !== CHANGED + ADDED) throw new Error(`session_changes listed ${listed} files, not ${CHANGED + ADDED}`);

    const panels = [];
    for (let run = 0; run < RUNS; run++) panels.push(await openChanges(browser, server, id));
    const terminals = [];
    for (let run = 0; run < RUNS; run++) terminals.push(await openTerminal(browser, server, id));

    const n = FILES.toLocaleString("en-US");
    const of = (runs, key) => stats(runs.map((r) => r[key]));
    const figures = [
      figure("views", `Changes, ${n} files (${CHANGED + ADDED} changed): click → every file listed`, of(panels, "listedMs").median, "ms", {
        shown: spread(of(panels, "listedMs"), "ms"),
        note: `the repository written and committed in ${format(folder.seconds, "s")}`,
      }),
      figure("views", "  bytes the click fetched", of(panels, "bytes").median / 1024, "KiB", {
        note: panels[0].fetched.join(", "),
      }),
      figure("views", "  session_changes (server, loopback)", stats(changesMs).median, "ms", {
        shown: `${spread(stats(changesMs), "ms")}; ${format(Buffer.byteLength(JSON.stringify(changes)) / 1024, "KiB")} of JSON`,
      }),
      figure("views", `  folder_tree (${tree.length.toLocaleString("en-US")} paths)`, stats(treeMs).median, "ms", {
        shown: `${spread(stats(treeMs), "ms")}; ${format(Buffer.byteLength(JSON.stringify(tree)) / 1024, "KiB")} of JSON`,
      }),
      figure("views", "Terminal: click → its input ready", of(terminals, "readyMs").median, "ms", {
        shown: spread(of(terminals, "readyMs"), "ms"),
      }),
      figure("views", "  bytes the click fetched (the terminal's chunk)", of(terminals, "bytes").median / 1024, "KiB", {
        note: terminals[0].fetched.join(", "),
      }),
      figure("views", "  a command typed → its output on screen", of(terminals, "echoMs").median, "ms", {
        shown: spread(of(terminals, "echoMs"), "ms"),
      }),
    ];
    return { figures, details: { changes: { changesMs, treeMs, panels }, terminal: terminals } };
  } finally {
    await browser.close();
    await server.dispose();
  }
}

/** What the page fetched from `since` (its clock) on: the sum of their sizes on the wire, and their names. */
async function fetchedSince(page, since) {
  return page.evaluate((since) => {
    const entries = performance.getEntriesByType("resource").filter((r) => r.startTime >= since);
    return {
      bytes: entries.reduce((sum, r) => sum + (r.transferSize || r.encodedBodySize || 0), 0),
      fetched: entries.map((r) => `${new URL(r.name).pathname.replace(/^.*\//, "")} ${((r.transferSize || r.encodedBodySize || 0) / 1024).toFixed(1)} KiB`),
    };
  }, since);
}

/** A cold page of the session, hydrated; Changes clicked; the ms until every changed file is listed. */
async function openChanges(browser, server, id) {
  const { context, page } = await signedInPage(browser, server);
  try {
    await page.goto(`${server.url}/s/${id}`);
    await hydrated(page);
    await sleep(500); // the page settled: the click is timed alone
    const clicked = await page.evaluate(() => performance.now());
    await page.getByRole("button", { name: "Changes" }).click();
    const items = page.getByRole("list", { name: "Changed files" }).getByRole("listitem");
    await items.nth(CHANGED + ADDED - 1).waitFor({ timeout: 60_000 });
    const listedMs = (await page.evaluate(() => performance.now())) - clicked;
    return { listedMs, ...(await fetchedSince(page, clicked)) };
  } finally {
    await context.close();
  }
}

/** A cold page of the session, hydrated; Terminal clicked; until its input is focused, then a command's echo. */
async function openTerminal(browser, server, id) {
  const { context, page } = await signedInPage(browser, server);
  try {
    await page.goto(`${server.url}/s/${id}`);
    await hydrated(page);
    await sleep(500);
    const clicked = await page.evaluate(() => performance.now());
    await page.getByRole("button", { name: "Terminal", exact: true }).click();
    const panel = page.getByRole("complementary", { name: "Terminal" });
    await page.waitForFunction(() => document.activeElement?.getAttribute("aria-label") === "Terminal input", null, { timeout: 60_000 });
    const readyMs = (await page.evaluate(() => performance.now())) - clicked;
    const fetched = await fetchedSince(page, clicked);
    const marker = `bench-${Math.floor(Math.random() * 1e6)}`;
    const typed = await page.evaluate(() => performance.now());
    await page.keyboard.type(`echo ${marker}-$((6*7))`);
    await page.keyboard.press("Enter");
    await panel.getByText(`${marker}-42`, { exact: true }).waitFor({ timeout: 30_000 });
    const echoMs = (await page.evaluate(() => performance.now())) - typed;
    return { readyMs, echoMs, ...fetched };
  } finally {
    await context.close();
  }
}
