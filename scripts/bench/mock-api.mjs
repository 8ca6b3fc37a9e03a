// A mock of the Anthropic Messages API for the benchmarks. It streams the event sequence of
// tests/support/mock_anthropic.rs (message_start, ping, content_block_start, deltas,
// content_block_stop, message_delta, message_stop), and adds what the benchmarks need and that mock
// has not: the reply is chosen per request by the bench (`respond`), each block's deltas are paced as
// the bench asks, and every request received and every event sent is timestamped on this process's
// clock (`now()`), the clock the page's marks are brought to.
//
// The end of a reply (content_block_stop, message_delta, message_stop) goes out in one write, as the
// real API sends it: its timestamp is "the model's tool_use sent".

import { EventEmitter } from "node:events";
import * as http from "node:http";

import { now, sleep } from "./processes.mjs";

/** About four bytes per token, as tests/support/mock_anthropic.rs counts them. */
export const BYTES_PER_TOKEN = 4;

/** A text block streamed as `deltas` (which concatenate to the text), one every `gapMs`. */
export function textBlock(text, { perDelta = 16, gapMs = 5 } = {}) {
  return { type: "text", deltas: pieces(text, perDelta), gapMs };
}

/** A tool_use block whose input JSON streams in `deltas`, one every `gapMs`. */
export function toolUseBlock(id, name, input, { perDelta = 16, gapMs = 5 } = {}) {
  return { type: "tool_use", id, name, input, deltas: pieces(JSON.stringify(input), perDelta), gapMs };
}

/** Cuts text into pieces of `size` characters (code points), as the API cuts JSON anywhere. */
export function pieces(text, size) {
  const chars = [...text];
  const out = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(""));
  return out;
}

/** The tool_result blocks of a request body's last message (what the model is answering now). */
export function newToolResults(body) {
  const last = body.messages?.at(-1);
  if (last?.role !== "user" || !Array.isArray(last.content)) return [];
  return last.content.filter((block) => block.type === "tool_result");
}

/** The tool_result block for the tool call `toolUseId` in any message of a request body, if any. */
export function resultFor(body, toolUseId) {
  return (body.messages ?? [])
    .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
    .find((b) => b.type === "tool_result" && b.tool_use_id === toolUseId);
}

export class MockApi extends EventEmitter {
  /** `respond(body, index)` returns `{ blocks }` for each POST /v1/messages. */
  constructor(respond) {
    super();
    this.respond = respond;
    /** `{ index, headersAt, receivedAt, body, bytes, sent }` per request; `sent` fills in as it streams. */
    this.requests = [];
    this.sockets = new Set();
  }

  async start() {
    this.server = http.createServer((request, response) => this.#serve(request, response));
    this.server.keepAliveTimeout = 60_000;
    this.server.on("connection", (socket) => this.sockets.add(socket));
    await new Promise((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${this.server.address().port}`;
    return this;
  }

  close() {
    for (const socket of this.sockets) socket.destroy();
    return new Promise((resolve) => this.server.close(resolve));
  }

  /** Bytes received on every connection so far: what the clients sent us. */
  bytesReceived() {
    return [...this.sockets].reduce((sum, socket) => sum + socket.bytesRead, 0);
  }

  /** Resolves with the first request (recorded, or still to come) that `matches`. */
  request(matches, limitMs = 60_000) {
    const found = this.requests.find(matches);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.off("request", listener);
        reject(new Error(`the mock API waited ${limitMs / 1000} s for a request that did not come`));
      }, limitMs);
      const listener = (record) => {
        if (!matches(record)) return;
        clearTimeout(timer);
        this.off("request", listener);
        resolve(record);
      };
      this.on("request", listener);
    });
  }

  async #serve(request, response) {
    const headersAt = now();
    const chunks = [];
    for await (const chunk of request) chunks.push(chunk);
    const receivedAt = now();
    const raw = Buffer.concat(chunks);
    const route = request.url.split("?")[0];
    if (request.method === "POST" && route === "/v1/messages/count_tokens") {
      return json(response, 200, { input_tokens: Math.max(1, Math.round(raw.length / BYTES_PER_TOKEN)) });
    }
    if (request.method !== "POST" || route !== "/v1/messages") {
      return json(response, 404, apiError("not_found_error", `the bench's mock API has no ${request.method} ${route}`));
    }
    let body;
    try {
      body = JSON.parse(raw);
    } catch {
      return json(response, 400, apiError("invalid_request_error", "the body is not JSON"));
    }
    const index = this.requests.length;
    let finished;
    const sent = { done: new Promise((resolve) => (finished = resolve)), blocks: [] };
    const record = { index, headersAt, receivedAt, body, bytes: raw.length, sent };
    this.requests.push(record);
    this.emit("request", record);

    const reply = this.respond(body, index);
    const id = `msg_bench_${String(index + 1).padStart(4, "0")}`;
    const model = body.model ?? "claude-mock";
    const inputTokens = Math.max(1, Math.round(raw.length / BYTES_PER_TOKEN));
    if (!body.stream) {
      json(response, 200, completeMessage(reply, id, model, inputTokens));
      finished();
      return;
    }
    response.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      "request-id": `req_bench_${index + 1}`,
    });
    await this.#stream(response, reply, { id, model, inputTokens, sent });
    finished();
  }

  async #stream(response, reply, { id, model, inputTokens, sent }) {
    const write = (text) => response.write(text);
    sent.startAt = now();
    write(
      sse("message_start", {
        type: "message_start",
        message: {
          id, type: "message", role: "assistant", model, content: [],
          stop_reason: null, stop_sequence: null,
          usage: { input_tokens: inputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 },
        },
      }) + sse("ping", { type: "ping" }),
    );
    let pendingStop = "";
    for (const [index, block] of reply.blocks.entries()) {
      const start =
        block.type === "text"
          ? { type: "text", text: "" }
          : { type: "tool_use", id: block.id, name: block.name, input: {} };
      // The real API opens a tool's input with an empty chunk.
      const deltas = block.type === "text" ? block.deltas : ["", ...block.deltas];
      const delta = (piece) =>
        block.type === "text" ? { type: "text_delta", text: piece } : { type: "input_json_delta", partial_json: piece };
      write(pendingStop + sse("content_block_start", { type: "content_block_start", index, content_block: start }));
      // An absolute schedule, so that timer lateness does not slow the stream down: every delta
      // that is due goes out at each wake-up.
      const t0 = now();
      // `at[i]`: when delta i went out.
      const times = { firstDeltaAt: null, lastDeltaAt: null, deltas: deltas.length, at: [] };
      let next = 0;
      while (next < deltas.length) {
        const due = t0 + next * block.gapMs;
        if (due > now()) await sleep(due - now());
        let batch = "";
        const until = now();
        do {
          batch += sse("content_block_delta", { type: "content_block_delta", index, delta: delta(deltas[next]) });
          next++;
        } while (next < deltas.length && t0 + next * block.gapMs <= until);
        times.firstDeltaAt ??= now();
        write(batch);
        times.lastDeltaAt = now();
        while (times.at.length < next) times.at.push(times.lastDeltaAt);
      }
      sent.blocks.push(times);
      pendingStop = sse("content_block_stop", { type: "content_block_stop", index });
    }
    const stopReason = reply.blocks.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn";
    sent.completeAt = now();
    write(
      pendingStop +
        sse("message_delta", {
          type: "message_delta",
          delta: { stop_reason: stopReason, stop_sequence: null },
          usage: { output_tokens: outputTokens(reply) },
        }) +
        sse("message_stop", { type: "message_stop" }),
    );
    response.end();
  }
}

function sse(name, data) {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

function json(response, status, value) {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify(value));
}

function apiError(kind, message) {
  return { type: "error", error: { type: kind, message } };
}

function outputTokens(reply) {
  const bytes = reply.blocks.reduce((sum, block) => sum + block.deltas.join("").length, 0);
  return Math.max(1, Math.round(bytes / BYTES_PER_TOKEN));
}

function completeMessage(reply, id, model, inputTokens) {
  const content = reply.blocks.map((block) =>
    block.type === "text"
      ? { type: "text", text: block.deltas.join("") }
      : { type: "tool_use", id: block.id, name: block.name, input: block.input },
  );
  return {
    id, type: "message", role: "assistant", model, content,
    stop_reason: reply.blocks.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn",
    stop_sequence: null,
    usage: { input_tokens: inputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: outputTokens(reply) },
  };
}
