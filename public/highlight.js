// Colours for the Files panel's viewer (issue 36): highlight.js (npm's @highlightjs/cdn-assets, its
// common languages), imported only when a file is first shown, so that no page pays for it before.
// scripts/build-site.mjs copies it to a folder of /pkg/ named for its version, and writes that
// folder here in place of /highlight/. The viewer (src/ui/files_view.rs) draws the file's lines as
// text first; this then colours each line's cell in place.

import hljs from "/highlight/highlight.js";

// Past these, a file stays plain: highlighting it would hold the page.
const MOST_BYTES = 512 * 1024;
const MOST_LINES = 20000;

function stylesheets() {
  if (document.getElementById("highlight-css")) return;
  for (const [id, file, media] of [["highlight-css", "light.css", "(prefers-color-scheme: light)"], ["highlight-css-dark", "dark.css", "(prefers-color-scheme: dark)"]]) {
    const link = document.createElement("link");
    link.id = id;
    link.rel = "stylesheet";
    link.media = media;
    link.href = "/highlight/" + file;
    document.head.append(link);
  }
}

// The language of `path`, by its name's ending (highlight.js knows the usual aliases: rs, py, yml),
// or by its whole name (Makefile, Dockerfile); none for what it does not know.
function languageOf(path) {
  const name = path.split("/").pop() ?? "";
  const ending = name.includes(".") ? name.split(".").pop() : name;
  for (const candidate of [ending, ending.toLowerCase(), name.toLowerCase()]) {
    if (candidate && hljs.getLanguage(candidate)) return candidate;
  }
  return null;
}

// highlight.js's HTML, cut into lines, each closing the spans still open at its end and opening
// them again on the next, so that a comment or string over several lines keeps its colour.
function lines(html) {
  const out = [];
  const open = [];
  let line = "";
  for (const part of html.split(/(<span[^>]*>|<\/span>|\n)/)) {
    if (part === "\n") {
      out.push(line + "</span>".repeat(open.length));
      line = open.join("");
    } else if (part.startsWith("<span")) {
      open.push(part);
      line += part;
    } else if (part === "</span>") {
      open.pop();
      line += part;
    } else {
      line += part;
    }
  }
  out.push(line + "</span>".repeat(open.length));
  return out;
}

/** Colours the lines of `table` (the viewer's, one `td.line-text` per line) as the file `path`. */
export function paint(table, path) {
  const cells = [...table.querySelectorAll("td.line-text")];
  const text = cells.map((cell) => cell.textContent).join("\n");
  const language = languageOf(path);
  if (!language || text.length > MOST_BYTES || cells.length > MOST_LINES) return;
  stylesheets();
  // highlight.js escapes the file's text: what it returns is its own markup around that text.
  const painted = lines(hljs.highlight(text, { language, ignoreIllegals: true }).value);
  if (!table.isConnected || painted.length !== cells.length) return;
  cells.forEach((cell, i) => {
    cell.innerHTML = painted[i];
  });
  table.dataset.language = language;
}
