// A session's terminal in the page (issue 36): xterm.js (npm's @xterm/xterm), imported only when a
// terminal is first opened, so that no page pays for it before. scripts/build-site.mjs copies it to
// a folder of /pkg/ named for its version, and writes that folder here in place of /xterm/. The shell runs on the server (src/shell/); this speaks to it over the WebSocket of
// src/server/shell_socket.rs: the screen so far first, then the output as it comes; what is typed
// and the terminal's size go back. The panel around it is the WASM's (src/ui/terminal_view.rs).

import { Terminal } from "/xterm/xterm.js";
import { FitAddon } from "/xterm/addon-fit.js";

const open = new Map(); // each session's terminal in this page

function stylesheet() {
  if (document.getElementById("xterm-css")) return;
  const link = document.createElement("link");
  link.id = "xterm-css";
  link.rel = "stylesheet";
  link.href = "/xterm/xterm.css";
  document.head.append(link);
}

// The page's own colours (light or dark, style/main.css), read where the terminal sits.
function theme(element) {
  const style = getComputedStyle(element);
  const of = (name) => style.getPropertyValue(name).trim() || undefined;
  return {
    background: of("--code-bg"),
    foreground: of("--text"),
    cursor: of("--accent"),
    selectionBackground: of("--accent-soft"),
  };
}

/**
 * Opens the session's terminal in `element`; `said(text)` tells the panel what is the matter
 * (or "" once all is well).
 */
export function start(element, session, said) {
  stop(session);
  stylesheet();
  const term = new Terminal({
    cursorBlink: true,
    scrollback: 5000,
    fontFamily: getComputedStyle(element).getPropertyValue("--mono").trim() || "monospace",
    fontSize: 13,
    theme: theme(element),
  });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(element);
  fit.fit();

  // Copy and paste as in a desktop terminal: Ctrl+Shift+C and V, and Ctrl+C while text is
  // selected copies it (without a selection it is the shell's interrupt, as ever).
  term.attachCustomKeyEventHandler((event) => {
    if (event.type !== "keydown" || !event.ctrlKey) return true;
    const key = event.key.toLowerCase();
    if (key === "c" && (event.shiftKey || term.hasSelection())) {
      navigator.clipboard?.writeText(term.getSelection()).catch(() => {});
      term.clearSelection();
      event.preventDefault();
      return false;
    }
    // The browser's own paste, which xterm.js takes from the paste event.
    if (key === "v" && event.shiftKey) return false;
    return true;
  });

  const state = { term, socket: null, replaying: false, ended: false, closed: false, retry: 500, early: [] };
  // What is typed before the socket opens is sent once it does, in order.
  const send = (message) => {
    const socket = state.socket;
    if (socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
    else if (socket?.readyState === WebSocket.CONNECTING && "input" in message) state.early.push(message);
  };
  term.onData((data) => {
    // While the screen so far is written again, the terminal's answers to what it replays (a
    // cursor report, an ESC sequence) are not the person's typing.
    if (state.replaying && data.startsWith("\x1b")) return;
    if (state.ended) {
      // The shell ended: a key starts a new one.
      state.ended = false;
      connect();
      return;
    }
    send({ input: data });
  });
  term.onResize(({ cols, rows }) => send({ resize: [cols, rows] }));
  const observer = new ResizeObserver(() => {
    try {
      fit.fit();
    } catch {
      // Not laid out (the panel is closing).
    }
  });
  observer.observe(element);

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const query = new URLSearchParams({ cols: term.cols, rows: term.rows });
    const socket = new WebSocket(`${scheme}://${location.host}/api/shell/${encodeURIComponent(session)}?${query}`);
    socket.binaryType = "arraybuffer";
    state.socket = socket;
    let first = true;
    socket.onopen = () => {
      state.retry = 500;
      said("");
      for (const message of state.early.splice(0)) socket.send(JSON.stringify(message));
    };
    socket.onmessage = (event) => {
      if (typeof event.data === "string") {
        const message = JSON.parse(event.data);
        if (message.ended !== undefined) {
          state.ended = true;
          term.write(`\r\n\x1b[2m[${message.ended}: press a key for a new shell]\x1b[0m\r\n`);
        }
        return;
      }
      const bytes = new Uint8Array(event.data);
      if (first) {
        // The screen so far: in place of what this terminal showed.
        first = false;
        state.replaying = true;
        term.reset();
        term.write(bytes, () => {
          state.replaying = false;
        });
        return;
      }
      term.write(bytes);
    };
    socket.onclose = async () => {
      if (state.closed || state.socket !== socket || state.ended) return;
      if (first) {
        // Refused, or no server: the same address without the socket says which.
        const why = await refusal(session, query);
        if (why) {
          said(why);
          return;
        }
      }
      // The server restarted, or the network went: open again, less often each time.
      said(first ? "The terminal could not reach the server: trying again…" : "The terminal lost its server: reconnecting…");
      setTimeout(() => {
        if (!state.closed && state.socket === socket) connect();
      }, state.retry);
      state.retry = Math.min(state.retry * 2, 8000);
    };
  }
  connect();
  term.focus();
  open.set(session, { state, observer });
}

// Why the server refuses this session's terminal (a typed error's message), or null when it does
// not (it answers that the terminal needs a WebSocket) or cannot be reached.
async function refusal(session, query) {
  try {
    const response = await fetch(`/api/shell/${encodeURIComponent(session)}?${query}`, { credentials: "same-origin" });
    if (response.status === 400 || response.status === 404 || response.status === 403) {
      const error = await response.json();
      if (error.message && !/WebSocket/.test(error.message)) return error.message;
    }
  } catch {
    // No server: try again.
  }
  return null;
}

/** Closes the session's terminal in this page (its shell goes on running on the server). */
export function stop(session) {
  const held = open.get(session);
  if (!held) return;
  open.delete(session);
  held.state.closed = true;
  held.state.socket?.close();
  held.observer.disconnect();
  held.state.term.dispose();
}
