// The Claude Code CLI driven directly over its stream-json control protocol, with no AskBridge in
// between (../shared/protocol/claude-cli.md): started with the flags AskBridge starts it with
// (src/agent/claude/process.rs), every line it writes timestamped on our clock as it is read.

import * as path from "node:path";
import * as readline from "node:readline";

import { CLAUDE_BIN, claudeEnv, now, spawnTracked } from "./processes.mjs";

/** How the question reaches the host: AskBridge's two answer paths (`--answer-path`). */
export const ANSWER_PATHS = {
  // A PreToolUse hook registered in `initialize` (§8); answered with `updatedInput`.
  hook: { hooks: { PreToolUse: [{ matcher: "AskUserQuestion", hookCallbackIds: ["hook_bench"] }] }, asks: "hook_callback" },
  // The permission prompt (§6).
  "can-use-tool": { hooks: null, asks: "can_use_tool" },
};

export class ClaudeCli {
  /** Starts the CLI in `home`/project, offline against `apiUrl`, and initializes it. */
  static async start({ home, apiUrl, answerPath }) {
    const env = { ...process.env, ...claudeEnv(home, apiUrl) };
    for (const name of Object.keys(env)) if (name.startsWith("ASKBRIDGE_")) delete env[name];
    const args = [
      "--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
      "--permission-prompt-tool", "stdio", "--include-partial-messages", "--permission-mode", "default",
    ];
    const child = spawnTracked(CLAUDE_BIN, args, { cwd: path.join(home, "project"), env, stdio: ["pipe", "pipe", "pipe"] });
    const cli = new ClaudeCli(child, answerPath);
    await cli.request({ subtype: "initialize", hooks: ANSWER_PATHS[answerPath].hooks });
    return cli;
  }

  constructor(child, answerPath) {
    this.child = child;
    this.answerPath = answerPath;
    this.lines = [];
    this.waiters = [];
    this.stderr = "";
    this.requests = 0;
    this.exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
    child.stderr.on("data", (chunk) => (this.stderr = (this.stderr + chunk).slice(-4000)));
    readline.createInterface({ input: child.stdout }).on("line", (text) => {
      const line = { at: now(), message: JSON.parse(text) };
      this.lines.push(line);
      this.waiters = this.waiters.filter((waiter) => !waiter(line));
    });
  }

  /** Writes one NDJSON line to the CLI; returns when it was handed to the pipe. */
  send(message) {
    const at = now();
    this.child.stdin.write(`${JSON.stringify(message)}\n`);
    return at;
  }

  /** Resolves with the first line written after line number `from` that `matches`. */
  next(matches, { from = 0, limitMs = 60_000 } = {}) {
    const found = this.lines.slice(from).find(matches);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`Claude Code wrote no expected line within ${limitMs / 1000} s; stderr:\n${this.stderr}`)),
        limitMs,
      );
      this.waiters.push((line) => {
        if (!matches(line)) return false;
        clearTimeout(timer);
        resolve(line);
        return true;
      });
    });
  }

  async request(request) {
    const request_id = `req_bench_${++this.requests}`;
    this.send({ type: "control_request", request_id, request });
    const line = await this.next((l) => l.message.type === "control_response" && l.message.response.request_id === request_id);
    if (line.message.response.subtype !== "success") throw new Error(`Claude Code refused ${request.subtype}: ${line.message.response.error}`);
    return line.message.response.response;
  }

  /** Sends a user message; resolves with the line number from which its turn's output starts. */
  say(text) {
    const from = this.lines.length;
    this.send({ type: "user", message: { role: "user", content: text }, parent_tool_use_id: null, session_id: "" });
    return from;
  }

  /** The CLI asking the host about a question (hook_callback or can_use_tool, by the answer path). */
  asked(from) {
    const asks = ANSWER_PATHS[this.answerPath].asks;
    return this.next(
      (l) => l.message.type === "control_request" && l.message.request.subtype === asks,
      { from },
    );
  }

  /** Answers the question `ask` asked with `answers` (question → label); returns when it was sent. */
  answer(ask, answers) {
    const { request_id, request } = ask.message;
    const input = this.answerPath === "hook" ? request.input.tool_input : request.input;
    const updatedInput = { ...input, answers };
    const response =
      this.answerPath === "hook"
        ? { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "allow", updatedInput } }
        : { behavior: "allow", updatedInput };
    return this.send({ type: "control_response", response: { subtype: "success", request_id, response } });
  }

  /** Resolves with the `result` line that ends the turn started at `from`. */
  turnEnded(from) {
    return this.next((l) => l.message.type === "result", { from });
  }

  /** Closes stdin (the CLI finishes and exits); kills it if it has not exited within `graceMs`. */
  async close(graceMs = 10_000) {
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}
