//! `wasm-bundle [--whole] INPUT.wasm OUT_DIR NAME`: the two steps of AskBridge's site build that
//! need Rust libraries, run on the browser crate's compiled WASM (`scripts/build-site.mjs` runs the
//! rest). `--whole` binds the module unsplit, with its names demangled: what `scripts/size.sh`
//! reads to say which crate costs what.
//!
//! 1. Split the module at its `#[lazy]` points (`wasm_split_cli_support`): the chunks
//!    (`split_*.wasm`), the loader that fetches them (`__wasm_split.<placeholder>.js`), and the
//!    manifest of which chunks each split needs (`__wasm_split_manifest.json`), all in `OUT_DIR`.
//! 2. Generate the main module's bindings (`wasm-bindgen`, web target): `NAME.js`, `NAME.wasm`
//!    and the `snippets/` it imports.
//!
//! The loader's name carries a placeholder as long as a content hash, so that the site build can
//! put the hash in its place inside the WASM without moving a byte.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::{env, fs};

use wasm_bindgen_cli_support::Bindgen;

/// As long as an MD5 in unpadded base64url: the site build writes the hash over it.
const LOADER: &str = "./__wasm_split.______________________.js";

type Error = Box<dyn std::error::Error>;

fn main() -> ExitCode {
    let mut args: Vec<String> = env::args().skip(1).collect();
    let whole = args.first().is_some_and(|first| first == "--whole");
    if whole {
        args.remove(0);
    }
    let [input, out_dir, name] = args.as_slice() else {
        eprintln!("usage: wasm-bundle [--whole] INPUT.wasm OUT_DIR NAME");
        return ExitCode::from(2);
    };
    let (input, out_dir) = (Path::new(input), Path::new(out_dir));
    let done = if whole { bind(input, out_dir, name, Names::Demangled) } else { bundle(input, out_dir, name) };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("wasm-bundle: {error}");
            ExitCode::FAILURE
        }
    }
}

fn bundle(input: &Path, out_dir: &Path, name: &str) -> Result<(), Error> {
    fs::create_dir_all(out_dir)?;
    let main_module = split(input, out_dir, name)?;
    let bound = bind(&main_module, out_dir, name, Names::AsSplit);
    fs::remove_file(&main_module)?;
    bound
}

/// Splits `input` into `out_dir`; returns the main module, still to be bound.
fn split(input: &Path, out_dir: &Path, name: &str) -> Result<PathBuf, Error> {
    let wasm = fs::read(input).map_err(|error| format!("{}: {error}", input.display()))?;
    let main_out = out_dir.join(format!("{name}_split.wasm"));
    let main_module = format!("./{name}.js");
    let mut options = wasm_split_cli_support::Options::new(&wasm);
    options.output_dir = out_dir;
    options.main_out_path = &main_out;
    options.main_module = &main_module;
    options.link_name = LOADER;
    let split = wasm_split_cli_support::transform(options).map_err(|error| format!("splitting: {error:#}"))?;
    fs::write(out_dir.join("__wasm_split_manifest.json"), serde_json::to_string(&split.prefetch_map)?)?;
    Ok(main_out)
}

/// How the bound module's names are left.
#[derive(Clone, Copy, PartialEq)]
enum Names {
    /// As the split left them: its exports stay (the chunks link against them), mangled.
    AsSplit,
    /// Readable, for a reader of the module such as twiggy.
    Demangled,
}

/// The web target's bindings for `module`: `NAME.js` and `NAME.wasm`.
fn bind(module: &Path, out_dir: &Path, name: &str, names: Names) -> Result<(), Error> {
    Bindgen::new()
        .input_path(module)
        .out_name(name)
        .web(true)?
        .keep_lld_exports(names == Names::AsSplit)
        .demangle(names == Names::Demangled)
        .typescript(false)
        .generate(out_dir)
        .map_err(|error| format!("wasm-bindgen: {error:#}"))?;
    fs::rename(out_dir.join(format!("{name}_bg.wasm")), out_dir.join(format!("{name}.wasm")))?;
    Ok(())
}
