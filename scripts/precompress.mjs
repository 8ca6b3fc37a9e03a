// Writes .br and .gz next to each file of the built bundle, at the best compression levels, so
// that the server sends them as they are instead of compressing on every request.
// Usage: node scripts/precompress.mjs target/site/pkg
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { brotliCompressSync, gzipSync, constants } from "node:zlib";

const dir = process.argv[2] ?? "target/site/pkg";
for (const name of readdirSync(dir)) {
  if (!/\.(wasm|js|css)$/.test(name)) continue;
  const path = join(dir, name);
  const data = readFileSync(path);
  writeFileSync(`${path}.br`, brotliCompressSync(data, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
      [constants.BROTLI_PARAM_SIZE_HINT]: data.length,
    },
  }));
  writeFileSync(`${path}.gz`, gzipSync(data, { level: 9 }));
}
