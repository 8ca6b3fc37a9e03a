// Builds the site the server serves: the browser's WASM, split so that the open session's pane is
// a chunk of its own (src/ui/lazy.rs, docs/size.md), its bindings, the stylesheet and the public
// files, with content hashes in the bundle's names and .br/.gz beside each. Writes target/site
// (and its hash.txt, which the server reads) in one step at the end, so that a failed build leaves
// the last good site in place.
//
//   node scripts/build-site.mjs
//
// The same steps cargo-leptos ran for `--release --split`, done here so that a first run does not
// compile cargo-leptos (9 to 12 minutes of 2 cores, BENCHMARKS.md §7). What needs Rust libraries
// (the split and wasm-bindgen) is tools/wasm-bundle; the rest are npm binaries: wasm-opt
// (binaryen), lightningcss, terser.
import { execFile, execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import browserslist from "browserslist";
import { browserslistToTargets, transform } from "lightningcss";
import { minify } from "terser";

const root = resolve(import.meta.dirname, "..");
const target = process.env.CARGO_TARGET_DIR ?? join(root, "target");
const NAME = "askbridge";
// wasm-opt at -O1 rather than -Oz: the file is 10% bigger, but it compresses so much better that
// the page loads ~20 KB less over the wire (brotli), measured on this bundle.
const WASM_OPT = ["-O1", "--converge", "--enable-bulk-memory", "--enable-nontrapping-float-to-int"];
// The loader's name as tools/wasm-bundle writes it, and where the content hash goes.
const PLACEHOLDER = "______________________";
const LOADER = `__wasm_split.${PLACEHOLDER}.js`;

const started = Date.now();
const say = (what) => console.error(`\x1b[1;34m[site]\x1b[0m ${what} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
const run = (command, args, env = {}) =>
  execFileSync(command, args, { cwd: root, stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, ...env } });
// The same, started at once: resolves when it has exited successfully.
const begun = (command, args, env = {}) => new Promise((done, fail) => {
  const child = spawn(command, args, { cwd: root, stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, ...env } });
  child.once("error", fail);
  child.once("exit", (code, signal) => (code === 0 ? done() : fail(new Error(`${command} ${args.join(" ")}: ${code ?? signal}`))));
});

const site = join(target, "site");
const staging = join(target, "site.building");
const pkg = join(staging, "pkg");
rmSync(staging, { recursive: true, force: true });
mkdirSync(pkg, { recursive: true });

// The tool of step 2 compiles meanwhile (on a first run, about a minute): the WASM's last
// minute is its link, on one core.
const tool = begun("cargo", ["build", "--quiet", "--profile", "tool", "-p", "wasm-bundle"]);
tool.catch(() => {}); // awaited, and reported, at step 2

// 1. The browser crate. The split reads the linker's relocations, hence --emit-relocs; RUSTFLAGS
// replaces .cargo/config.toml's flags, so they are repeated here. A target folder of its own, as
// cargo-leptos had: these flags would otherwise rebuild the checks' WASM dependencies. Leptos reads
// LEPTOS_OUTPUT_NAME as it compiles (leptos_config's defaults); without it the module differs.
// The dependencies' panic locations name their source files under cargo's home (76 of them in the
// first load): remapped to `cargo/…`, the module is the same size wherever that home is. A fresh
// home in a longer folder made the first load 219 bytes larger, and `make size`'s budget depended
// on where the machine keeps its crates.
const front = join(target, "front");
const cargoHome = process.env.CARGO_HOME ?? join(homedir(), ".cargo");
await begun("cargo", [
  "build", "--lib", "--target", "wasm32-unknown-unknown", "--no-default-features", "--features", "hydrate",
  "--profile", "wasm-release", "--target-dir", front,
], {
  // Encoded (separated by 0x1f), so that a home with a space in its path stays one flag.
  CARGO_ENCODED_RUSTFLAGS: ["--cfg", "erase_components", "-Clink-args=--emit-relocs", `--remap-path-prefix=${cargoHome}=cargo`].join("\x1f"),
  LEPTOS_OUTPUT_NAME: NAME,
});
say("the browser's WASM is compiled");

// 2. Split and bind (tools/wasm-bundle), then optimize each module, both at once.
await tool;
run(join(target, "tool", "wasm-bundle"), [join(front, "wasm32-unknown-unknown/wasm-release", `${NAME}.wasm`), pkg, NAME]);
say("split and bound");
const modules = readdirSync(pkg).filter((name) => name.endsWith(".wasm"));
const wasmOpt = join(root, "node_modules/.bin/wasm-opt");
await Promise.all(modules.map((name) =>
  promisify(execFile)(wasmOpt, [...WASM_OPT, join(pkg, name), "-o", join(pkg, name)]).catch((error) => {
    throw new Error(`wasm-opt ${name}: ${error.stderr || error.message}`);
  })));
say(`optimized ${modules.join(", ")}`);

// 3. The main module's bindings, minified; the stylesheet, for the browsers of "defaults".
const mainJs = join(pkg, `${NAME}.js`);
const minified = await minify(readFileSync(mainJs, "utf8"), { module: true, compress: true, mangle: true });
writeFileSync(mainJs, minified.code);
const css = transform({
  filename: "main.css",
  code: readFileSync(join(root, "style/main.css")),
  minify: true,
  targets: browserslistToTargets(browserslist("defaults")),
});
writeFileSync(join(pkg, `${NAME}.css`), css.code);
say("scripts and styles minified");

// 4. Names with content hashes. The main module, its WASM, the loader, the chunks and the
// manifest name one another (the loader imports the main module, which imports the loader), so
// they take one hash, of all of them: a change to any one renames all, and no name can point at
// an old file that a browser keeps for a year. The stylesheet has its own. The snippets keep
// their names: the WASM imports them by those.
const md5 = (...parts) => {
  const hash = createHash("md5");
  for (const part of parts) hash.update(part);
  return hash.digest("base64url");
};
const grouped = readdirSync(pkg).filter((name) => /\.(js|wasm|json)$/.test(name)).sort();
const group = md5(...grouped.flatMap((name) => [name, readFileSync(join(pkg, name))]));
const cssHash = md5(readFileSync(join(pkg, `${NAME}.css`)));
if (group.length !== PLACEHOLDER.length) throw new Error(`a hash of ${group.length} characters: the loader's name needs ${PLACEHOLDER.length}`);
const hashed = (name) => (name === LOADER ? name.replace(PLACEHOLDER, group) : name.replace(/\.(js|wasm|json)$/, `.${group}.$1`));
const chunks = modules.filter((name) => name !== `${NAME}.wasm`);
for (const name of grouped) {
  const file = join(pkg, name);
  if (name.endsWith(".wasm")) {
    // The WASM imports the loader by name; the hash is as long as the placeholder it replaces.
    const bytes = readFileSync(file);
    const from = Buffer.from(LOADER), to = Buffer.from(hashed(LOADER));
    for (let at = bytes.indexOf(from); at !== -1; at = bytes.indexOf(from, at + to.length)) to.copy(bytes, at);
    writeFileSync(file, bytes);
  } else {
    let text = readFileSync(file, "utf8").replaceAll(LOADER, hashed(LOADER)).replaceAll(`./${NAME}.js`, `./${hashed(`${NAME}.js`)}`);
    for (const chunk of chunks) {
      const stem = chunk.replace(/\.wasm$/, "");
      // The loader fetches "./split_x.wasm"; the manifest names "split_x", without its extension.
      text = name.endsWith(".json") ? text.replaceAll(`"${stem}"`, `"${stem}.${group}"`) : text.replaceAll(`./${chunk}`, `./${hashed(chunk)}`);
    }
    writeFileSync(file, text);
  }
  renameSync(file, join(pkg, hashed(name)));
}
renameSync(join(pkg, `${NAME}.css`), join(pkg, `${NAME}.${cssHash}.css`));
writeFileSync(join(staging, "hash.txt"), `js: ${group}\nwasm: ${group}\ncss: ${cssHash}\nmanifest: ${group}\nsplit: ${group}\n`);

// 4b. What panels import when first opened, from npm: the terminal's xterm.js (public/terminal.js)
// and the file viewer's highlight.js (public/highlight.js). Each in a folder of /pkg/ named for its
// versions, so that it may be kept a year like the rest; without source maps, which are not shipped.
const versionOf = (name) => JSON.parse(readFileSync(join(root, "node_modules", name, "package.json"), "utf8")).version;
const vendored = [
  {
    glue: "terminal.js", placeholder: "/xterm/",
    folder: `xterm-${versionOf("@xterm/xterm")}-fit-${versionOf("@xterm/addon-fit")}`,
    files: [
      ["@xterm/xterm/lib/xterm.mjs", "xterm.js"],
      ["@xterm/xterm/css/xterm.css", "xterm.css"],
      ["@xterm/addon-fit/lib/addon-fit.mjs", "addon-fit.js"],
    ],
  },
  {
    glue: "highlight.js", placeholder: "/highlight/",
    folder: `highlight-${versionOf("@highlightjs/cdn-assets")}`,
    files: [
      ["@highlightjs/cdn-assets/es/highlight.min.js", "highlight.js"],
      ["@highlightjs/cdn-assets/styles/github.min.css", "light.css"],
      ["@highlightjs/cdn-assets/styles/github-dark.min.css", "dark.css"],
    ],
  },
];
for (const { folder, files } of vendored) {
  mkdirSync(join(pkg, folder));
  for (const [from, to] of files) {
    const text = readFileSync(join(root, "node_modules", from), "utf8");
    writeFileSync(join(pkg, folder, to), text.replace(/\n\/[/*]# sourceMappingURL=\S+(\s*\*\/)?\s*$/, "\n"));
  }
}

// 5. Pre-compressed beside each, at the best levels, so that the server sends them as they are.
for (const name of readdirSync(pkg, { recursive: true })) {
  if (!/\.(wasm|js|css)$/.test(name)) continue;
  const file = join(pkg, name);
  const data = readFileSync(file);
  writeFileSync(`${file}.br`, brotliCompressSync(data, {
    params: { [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY, [constants.BROTLI_PARAM_SIZE_HINT]: data.length },
  }));
  writeFileSync(`${file}.gz`, gzipSync(data, { level: 9 }));
}
cpSync(join(root, "public"), staging, { recursive: true });
// Each glue names its library's folder by a placeholder ("/xterm/"): here, the one of these versions.
for (const { glue, placeholder, folder } of vendored) {
  const file = join(staging, glue);
  writeFileSync(file, readFileSync(file, "utf8").replaceAll(`"${placeholder}`, `"/pkg/${folder}/`));
}
say("hashed and compressed");

// 6. In place of the last site, at once.
const old = join(target, "site.old");
rmSync(old, { recursive: true, force: true });
if (existsSync(site)) renameSync(site, old);
renameSync(staging, site);
rmSync(old, { recursive: true, force: true });
say(`${site} is ready`);
