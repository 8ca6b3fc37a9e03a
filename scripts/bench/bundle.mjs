// Section 1, the bundle: the WASM, JS and CSS the main page loads, raw, gzip (level 9) and brotli
// (quality 11, as scripts/build-site.mjs writes them); and the first load of `/` as the server
// sends it: the page and each asset it names, fetched with `Accept-Encoding: br, gzip`, counting
// the body bytes on the wire (headers not counted, as scripts/size.sh counts them) and checking
// that each came compressed.

import * as fs from "node:fs";
import * as path from "node:path";
import * as zlib from "node:zlib";

import { figure } from "./figures.mjs";
import { AskBridge, SCENARIO, root } from "./processes.mjs";

const BUDGET_KIB = 200;

export async function bundle() {
  const server = await AskBridge.start({ name: "bundle", args: ["--agent", "scripted", "--scenario", SCENARIO] });
  try {
    const page = await server.get("/", "br, gzip");
    const html = (await server.get("/", "identity")).body.toString();
    const assets = [...new Set([...html.matchAll(/(?:href|src)="(\/pkg\/[^"]+)"/g)].map((m) => m[1]))];
    // A JS module's static imports load with it (the glue imports the lazy chunk's loader, which
    // imports the glue back), as scripts/size.sh counts them.
    for (let i = 0; i < assets.length; i++) {
      if (!assets[i].endsWith(".js")) continue;
      const text = fs.readFileSync(path.join(root, "target/site", assets[i]), "utf8");
      for (const [, name] of text.matchAll(/from ?"\.\/([^"]+\.js)"/g)) {
        if (!assets.includes(`/pkg/${name}`)) assets.push(`/pkg/${name}`);
      }
    }
    assets.sort();
    if (!assets.some((a) => a.endsWith(".wasm"))) throw new Error(`the page names no WASM: ${assets.join(", ")}`);

    const files = assets.map((asset) => {
      const file = path.join(root, "target/site", asset);
      if (!fs.existsSync(file)) throw new Error(`the page names ${asset}, which is not in target/site: was it rebuilt meanwhile?`);
      const data = fs.readFileSync(file);
      return {
        asset,
        kind: asset.includes("__wasm_split") ? "split loader js" : path.extname(asset).slice(1),
        raw: data.length,
        gzip: zlib.gzipSync(data, { level: 9 }).length,
        brotli: zlib.brotliCompressSync(data, {
          params: {
            [zlib.constants.BROTLI_PARAM_QUALITY]: zlib.constants.BROTLI_MAX_QUALITY,
            [zlib.constants.BROTLI_PARAM_SIZE_HINT]: data.length,
          },
        }).length,
      };
    });
    const wire = [{ path: "/", encoding: page.encoding, bytes: page.body.length, raw: html.length }];
    for (const asset of assets) {
      const response = await server.get(asset, "br, gzip");
      wire.push({ path: asset, encoding: response.encoding, bytes: response.body.length });
    }
    const uncompressed = wire.filter((w) => w.encoding !== "br");
    const total = wire.reduce((sum, w) => sum + w.bytes, 0);

    const figures = [];
    for (const f of files) {
      figures.push(
        figure("bundle", `${f.kind.toUpperCase()} raw / gzip / brotli`, f.brotli / 1024, "KiB", {
          shown: `${kib(f.raw)} / ${kib(f.gzip)} / ${kib(f.brotli)}`,
        }),
      );
    }
    figures.push(
      figure("bundle", "HTML of / (raw / as sent)", page.body.length / 1024, "KiB", {
        shown: `${kib(html.length)} / ${kib(page.body.length)} (${page.encoding ?? "uncompressed"})`,
      }),
    );
    figures.push(
      figure("bundle", "first load of /, on the wire", total / 1024, "KiB", {
        budget: { max: BUDGET_KIB, text: `≤ ${BUDGET_KIB} KiB brotli` },
        note: uncompressed.length
          ? `not sent as brotli: ${uncompressed.map((w) => `${w.path} (${w.encoding ?? "none"})`).join(", ")}`
          : "every response came brotli-compressed",
      }),
    );
    if (uncompressed.length) figures.at(-1).met = false;
    return { figures, details: { files, wire, totalBytes: total } };
  } finally {
    await server.dispose();
  }
}

const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
