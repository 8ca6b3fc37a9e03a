// Headless Chromium for the benchmarks, launched as end2end/playwright.config.ts launches it
// (Debian's chromium; Playwright's own download cannot work offline), and what the page records
// about itself: the bench's marks, taken in the page by a script that runs before the app's.
//
// Marks are in milliseconds on the page's clock, performance.timeOrigin + performance.now()
// (epoch-based). `clockOffset` measures how far that clock is from the bench's `now()`, so that a
// mark in the page and an event at the mock API can be subtracted.

import { chromium } from "playwright";

import { chromiumSettled } from "./cores.mjs";
import { now } from "./processes.mjs";

export async function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-dev-shm-usage",
    ],
  });
}

/**
 * A new browser context (its own cache and cookies: a cold load) signed in to `server` the way a
 * person signs in, by opening `/?token=…`: the server moves the token into its cookie. The request
 * goes through the context's own request API, which shares the context's cookies, so that signing
 * in loads no page and warms no cache. The page records `watch`'s marks (see `installMarks`). It is
 * returned once Chromium has settled after opening the context's window (`chromiumSettled`).
 */
export async function signedInPage(browser, server, watch = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const response = await context.request.get(`${server.url}/?token=${server.token}`, { maxRedirects: 0 });
  if (response.status() !== 303) throw new Error(`signing in answered ${response.status()}, not a redirect`);
  const cookies = await context.cookies(server.url);
  if (!cookies.some((c) => c.name.startsWith("askbridge_token_"))) throw new Error("signing in set no askbridge_token_… cookie");
  const page = await context.newPage();
  // The new window's own browser UI first: a person's link opens in a browser already up. The
  // marks' script after it, for the documents the page opens next (some of its marks poll each
  // frame, and Chromium would never settle).
  await chromiumSettled();
  await context.addInitScript(installMarks, watch);
  page.failures = [];
  page.on("response", (r) => r.status() >= 400 && page.failures.push(`${r.status()} ${new URL(r.url()).pathname}`));
  page.on("pageerror", (error) => page.failures.push(String(error)));
  return { context, page };
}

/** Waits until the app is hydrated (its "New session" button enabled); says why not if it is not. */
export async function hydrated(page, timeout = 30_000) {
  try {
    await page.locator("button.new-session:not([disabled])").waitFor({ timeout });
  } catch (error) {
    const why = page.failures.length ? page.failures.join("; ") : "no failed request, no script error";
    throw new Error(
      `${page.url()} did not hydrate within ${timeout / 1000} s (${why}); if target/site was rebuilt ` +
        `during the bench, the server's page names files that are gone: run it again`,
      { cause: error },
    );
  }
}

/**
 * How far the page's clock is from ours: `page = ours + offset`. The page is asked its time
 * between two readings of ours, a few times; the tightest round trip wins, and half of it is how
 * far off the offset can be.
 */
export async function clockOffset(page) {
  let best = null;
  for (let i = 0; i < 15; i++) {
    const before = now();
    const inPage = await page.evaluate(() => performance.timeOrigin + performance.now());
    const after = now();
    if (!best || after - before < best.roundTrip) best = { roundTrip: after - before, offset: inPage - (before + after) / 2 };
  }
  return { offset: best.offset, uncertainty: best.roundTrip / 2 };
}

/** The page's marks so far. */
export function marks(page) {
  return page.evaluate(() => window.__bench);
}

/**
 * Runs in the page before its own scripts (page.addInitScript) and records, on the page's clock:
 * - `watch.startup`: when the app is hydrated (the "New session" button is enabled) and when it
 *   first reacts to typing (the "Send" button is enabled);
 * - `watch.cards`: when a question card appears (data-state "streaming", then "pending"), each
 *   click, and when each live event that opens an interaction arrives from /api/live;
 * - `watch.texts`: when each of these strings first reaches the DOM (the last text node of what
 *   changed, its tail);
 * - `watch.inOrder`: strings that reach the DOM one after another (markers along a streamed
 *   text): when each first shows in the element whose text changed (`marks.inOrder[i]`).
 * - `watch.shown`: when each of these strings is first in the DOM anywhere in what was added
 *   (`marks.shown[s].inDom`), and then the first frame in which it lies in the viewport, taken
 *   once that frame has been painted (`marks.shown[s].visible`: a task queued from the frame's
 *   requestAnimationFrame runs after its paint).
 * The observers do as little as they can: they are running while the page is measured.
 */
function installMarks(watch) {
  const at = () => performance.timeOrigin + performance.now();
  const fromEvent = (event) => performance.timeOrigin + event.timeStamp;
  const marks = (window.__bench = { clicks: [], cards: {}, liveOpened: [], texts: {}, inOrder: [] });
  const checks = [];

  if (watch.startup) {
    // Typing, from the page itself: every 5 ms an "x" goes into the message box, as an input event,
    // until the app reacts. (Keys sent by Playwright would wait on its own process, on a busy
    // machine, and arrive late.)
    const type = () => {
      if (marks.sendEnabledAt) return;
      const box = document.querySelector("textarea.composer-input");
      if (box) {
        box.value = "x";
        box.dispatchEvent(new InputEvent("input", { bubbles: true, data: "x", inputType: "insertText" }));
        marks.typed = (marks.typed ?? 0) + 1;
      }
      setTimeout(type, 5);
    };
    setTimeout(type, 0);
    checks.push((records) => {
      for (const r of records) {
        if (r.type !== "attributes" || r.attributeName !== "disabled" || r.target.hasAttribute("disabled")) continue;
        if (!marks.hydratedAt && r.target.matches("button.new-session")) marks.hydratedAt = at();
        if (!marks.sendEnabledAt && r.target.matches("button.send")) marks.sendEnabledAt = at();
      }
    });
  }

  if (watch.cards) {
    document.addEventListener("click", (e) => marks.clicks.push(fromEvent(e)), true);
    checks.push(() => {
      for (const state of ["streaming", "pending"]) {
        if (!marks.cards[state] && document.querySelector(`.question-card[data-state="${state}"]`)) {
          marks.cards[state] = at();
        }
      }
    });
    // The live stream's events, as they arrive (the app's EventSource, with one listener more).
    const Native = window.EventSource;
    window.EventSource = class extends Native {
      constructor(...args) {
        super(...args);
        this.addEventListener("session", (e) => {
          if (e.data.includes('"interaction_opened"')) marks.liveOpened.push(at());
        });
      }
    };
  }

  if (watch.texts?.length) {
    const lastText = (node) => {
      while (node.lastChild) node = node.lastChild;
      return node.nodeType === Node.TEXT_NODE ? node : null;
    };
    const tailHas = (text, wanted) => {
      if (!text) return false;
      const from = Math.max(0, text.length - 400);
      return text.substringData(from, text.length - from).includes(wanted);
    };
    checks.push((records) => {
      for (const wanted of watch.texts) {
        if (marks.texts[wanted]) continue;
        for (const r of records) {
          const nodes = r.type === "characterData" ? [r.target] : [...r.addedNodes].map(lastText);
          if (nodes.some((node) => tailHas(node, wanted))) {
            marks.texts[wanted] = at();
            break;
          }
        }
      }
    });
  }

  if (watch.inOrder?.length) {
    // Only the next marker is looked for, in the element whose text changed (a marker may span
    // two text nodes, one per streamed piece).
    checks.push((records) => {
      for (const r of records) {
        const element = r.type === "characterData" ? r.target.parentElement : r.target;
        const text = element?.textContent ?? "";
        while (marks.inOrder.length < watch.inOrder.length && text.includes(watch.inOrder[marks.inOrder.length])) {
          marks.inOrder.push(at());
        }
      }
    });
  }

  if (watch.shown?.length) {
    marks.shown = {};
    const textNodeWith = (root, wanted) => {
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
      for (let node = walker.currentNode; node; node = walker.nextNode()) {
        if (node.nodeType === Node.TEXT_NODE && node.data.includes(wanted)) return node;
      }
      return null;
    };
    const untilVisible = (wanted, found) => {
      let node = found;
      const frame = () => {
        if (!node?.isConnected) node = textNodeWith(document.body, wanted);
        const range = node && document.createRange();
        if (range) range.selectNodeContents(node);
        const rect = range?.getBoundingClientRect();
        if (rect && rect.height > 0 && rect.bottom > 0 && rect.top < innerHeight) {
          const channel = new MessageChannel();
          channel.port1.onmessage = () => (marks.shown[wanted].visible = at());
          channel.port2.postMessage(null);
        } else {
          requestAnimationFrame(frame);
        }
      };
      requestAnimationFrame(frame);
    };
    checks.push((records) => {
      for (const wanted of watch.shown) {
        if (marks.shown[wanted]) continue;
        for (const r of records) {
          const nodes = r.type === "characterData" ? [r.target] : [...r.addedNodes];
          const node = nodes.find((n) => n.textContent?.includes(wanted));
          if (node) {
            marks.shown[wanted] = { inDom: at() };
            untilVisible(wanted, textNodeWith(node, wanted) ?? node);
            break;
          }
        }
      }
    });
  }

  if (checks.length) {
    const attributes = [...(watch.startup ? ["disabled"] : []), ...(watch.cards ? ["data-state"] : [])];
    new MutationObserver((records) => checks.forEach((check) => check(records))).observe(document, {
      subtree: true,
      childList: true,
      ...(attributes.length ? { attributes: true, attributeFilter: attributes } : {}),
      characterData: Boolean(watch.texts?.length || watch.inOrder?.length || watch.shown?.length),
    });
  }
}
