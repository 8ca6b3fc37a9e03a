// Section 2, the page: cold loads in headless Chromium (a new browser context each: empty cache,
// signed in by its cookie), alternating between the new-session page `/` and a session page with a
// short conversation. For each load, from the start of the navigation (the page's timeOrigin):
// - first paint: the first contentful paint, which is the server-rendered HTML;
// - hydrated: the "New session" button loses `disabled` (the app enables it when hydrated);
// - composer usable: the app reacts to typing in the message box (the "Send" button turns
//   enabled). The page types into the box itself (an input event every 5 ms from the moment the box
//   exists, see browser.mjs), as a person typing at once would.

import { clockOffset, launchChromium, marks, signedInPage } from "./browser.mjs";
import { figure, spread, stats } from "./figures.mjs";
import { AskBridge, SCENARIO, waitFor } from "./processes.mjs";

const RUNS = Number(process.env.BENCH_PAGE_RUNS ?? 7);
const BUDGET_MS = 300;

export async function page() {
  const server = await AskBridge.start({ name: "page", args: ["--agent", "scripted", "--scenario", SCENARIO] });
  const browser = await launchChromium();
  try {
    const { id } = await server.api("create_session", {});
    await server.api("send_message", { session: id, text: "hello from the bench" });
    await waitFor("the echo reply to end", 30_000, async () => {
      const { thread } = await server.api("load_session", { id });
      return !thread.turn.working && thread.turn.last_outcome === "completed";
    });
    const pages = { "/": [], [`/s/${id}`]: [] };
    for (let run = 0; run < RUNS; run++) {
      for (const url of Object.keys(pages)) pages[url].push(await coldLoad(browser, server, url));
    }

    const figures = [];
    for (const [url, loads] of Object.entries(pages)) {
      const where = url === "/" ? "/" : "/s/ID";
      const of = (key) => stats(loads.map((l) => l[key]));
      const row = (name, key, budget) =>
        figure("page", `${where}: navigation → ${name}`, of(key).median, "ms", { shown: spread(of(key), "ms"), budget });
      figures.push(row("first paint (SSR)", "firstPaint"));
      figures.push(row("WASM downloaded", "wasmLoaded"));
      figures.push(row("hydrated", "hydrated"));
      figures.push(
        row("composer usable", "composerUsable", url === "/" ? { max: BUDGET_MS, text: `≤ ${BUDGET_MS} ms (median)` } : undefined),
      );
      figures.push(figure("page", `${where}: bytes a cold load transferred`, of("transferred").median / 1024, "KiB"));
    }
    return { figures, details: { runs: RUNS, loads: pages } };
  } finally {
    await browser.close();
    await server.dispose();
  }
}

/** One cold load of `url`; the marks in ms from the navigation's start. */
export async function coldLoad(browser, server, url) {
  const { context, page } = await signedInPage(browser, server, { startup: true });
  try {
    await page.goto(`${server.url}${url}`, { waitUntil: "commit" });
    await page.waitForFunction(() => window.__bench.sendEnabledAt, null, { timeout: 15_000 }).catch((error) => {
      const why = page.failures.join("; ") || "no failed request, no script error";
      throw new Error(`${url}: the app never reacted to typing (${why})`, { cause: error });
    });
    // Clock check, for the record: the page's and ours should agree within a few ms.
    const { offset } = await clockOffset(page);
    const timing = await page.evaluate(() => {
      const paint = performance.getEntriesByName("first-contentful-paint")[0];
      const resources = performance.getEntriesByType("resource");
      // The main WASM, not the session pane's chunk (src/ui/lazy.rs), which `/` fetches when idle.
      const wasm = resources.find((r) => r.name.endsWith(".wasm") && !r.name.includes("/split_"));
      const navigation = performance.getEntriesByType("navigation")[0];
      return {
        origin: performance.timeOrigin,
        firstPaint: paint?.startTime,
        wasmLoaded: wasm?.responseEnd,
        transferred: navigation.transferSize + resources.reduce((sum, r) => sum + r.transferSize, 0),
      };
    });
    const m = await marks(page);
    return {
      firstPaint: timing.firstPaint,
      wasmLoaded: timing.wasmLoaded,
      hydrated: m.hydratedAt - timing.origin,
      composerUsable: m.sendEnabledAt - timing.origin,
      typed: m.typed,
      transferred: timing.transferred,
      clockOffset: offset,
    };
  } finally {
    await context.close();
  }
}
