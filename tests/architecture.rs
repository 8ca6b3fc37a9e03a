//! The module structure of `src/`, checked: which top-level module may import which, and that
//! the imports form no cycle. The table below is the architecture of `docs/architecture.md`
//! (`ui → model ← server`, `backends → bridge → store` in spirit, ids and errors at the bottom);
//! an import that is not in it fails this test, so a new arrow is a decision, not an accident.
//!
//! Imports are read as text: every `crate::<module>` path in a file's code (tests left out: a
//! `#[cfg(test)] mod tests` block, or a `tests.rs` file), in
//! `use` lines, grouped `use crate::{a::X, b::Y}` and inline paths alike.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each module, and the modules it may import. Lower layers first.
const ALLOWED: &[(&str, &[&str])] = &[
    // The bottom: no imports of ours.
    ("error", &[]),
    ("ids", &[]),
    ("testing", &[]),
    // The model, shared by the server and the browser.
    ("question", &["error"]),
    ("approval", &["error"]),
    ("interaction", &["approval", "question"]),
    ("thread", &["approval", "interaction", "question"]),
    // The server's core.
    ("store", &["error", "interaction", "thread"]),
    ("bridge", &["approval", "error", "interaction", "question", "thread"]),
    ("agent", &["approval", "error", "ids", "interaction", "question", "thread"]),
    ("session", &["agent", "approval", "bridge", "error", "ids", "interaction", "question", "store", "thread"]),
    // Reaching the person (Web Push, webhooks): fed the sessions' events from above, it reads
    // the model and the store, never a session.
    ("notify", &["approval", "error", "ids", "interaction", "question", "store", "thread"]),
    // Live events: the server's hub reads sessions; the browser's client only the model.
    ("live", &["error", "session", "store", "thread"]),
    // The edge: server functions, callable from the browser.
    ("api", &["approval", "error", "interaction", "notify", "question", "session", "thread"]),
    // The browser's face: the model, the server functions and the live client, nothing server-only.
    ("ui", &["api", "approval", "error", "interaction", "live", "question", "thread"]),
    ("app", &["ui"]),
    // The top: the command line and the router put everything together.
    (
        "server",
        &[
            "agent",
            "api",
            "app",
            "approval",
            "bridge",
            "error",
            "ids",
            "interaction",
            "live",
            "notify",
            "question",
            "session",
            "store",
            "thread",
            "ui",
        ],
    ),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to (`src/session/log.rs` → `session`); `lib` and `main`
/// are the crate's roots.
fn module_of(file: &Path) -> String {
    let relative = file.strip_prefix(src()).unwrap();
    let first = relative.components().next().unwrap().as_os_str().to_string_lossy().to_string();
    first.trim_end_matches(".rs").to_string()
}

/// The code of a file without comments, string contents and its `#[cfg(test)] mod tests`.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    let mut code = String::with_capacity(text.len());
    for line in text.lines() {
        let line = match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        };
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// The modules named by `crate::` paths in `code`, grouped imports included.
fn imports_of(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let bytes = code.as_bytes();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = code.len() - rest.len() + at;
        let is_path_start = before == 0 || !(bytes[before - 1].is_ascii_alphanumeric() || bytes[before - 1] == b'_');
        rest = &rest[at + "crate::".len()..];
        if !is_path_start {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a::X, b::{Y, Z}}`: the first segment of each item at the group's top level.
            let mut depth = 0;
            let mut item_start = true;
            let mut name = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && (c.is_alphanumeric() || c == '_') => name.push(c),
                    _ if item_start && !name.is_empty() => {
                        found.insert(std::mem::take(&mut name));
                        item_start = false;
                    }
                    _ => {}
                }
            }
            if !name.is_empty() {
                found.insert(name);
            }
        } else {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                found.insert(name);
            }
        }
    }
    found
}

/// Module → the modules its files import.
fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // Test modules kept in files of their own (`#[cfg(test)] mod tests;`) are tests too.
    for file in files.into_iter().filter(|file| !file.ends_with("tests.rs")) {
        let module = module_of(&file);
        let imports = imports_of(&code_of(&std::fs::read_to_string(&file).unwrap()));
        let entry = graph.entry(module.clone()).or_default();
        entry.extend(imports.into_iter().filter(|import| *import != module));
    }
    graph
}

#[test]
fn the_import_parser_reads_every_form_of_path() {
    let code = "use crate::thread::{A, B};\nuse crate::{error::AppError, question::{Q, R}};\n\
                fn f() { crate::ids::new_id(); my_crate::x(); }\n";
    let found: Vec<_> = imports_of(&code_of(code)).into_iter().collect();
    assert_eq!(found, ["error", "ids", "question", "thread"]);
}

#[test]
fn every_import_between_modules_is_one_the_architecture_allows() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut wrong = Vec::new();
    for (module, imports) in import_graph() {
        if module == "lib" || module == "main" {
            continue;
        }
        let Some(may) = allowed.get(module.as_str()) else {
            wrong.push(format!("`{module}` is not in the architecture's table (tests/architecture.rs)"));
            continue;
        };
        for import in imports {
            if !may.contains(&import.as_str()) {
                wrong.push(format!("`{module}` imports `{import}`"));
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the layers:\n{}", wrong.join("\n"));
}

#[test]
fn modules_import_each_other_in_no_cycle() {
    let graph = import_graph();
    // Depth-first, remembering the path: a module met again on its own path closes a cycle.
    fn visit(
        module: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|m| m == module) {
            let mut cycle = path[at..].to_vec();
            cycle.push(module.to_string());
            return Some(cycle);
        }
        if !done.insert(module.to_string()) {
            return None;
        }
        path.push(module.to_string());
        for next in graph.get(module).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for module in graph.keys() {
        if let Some(cycle) = visit(module, &graph, &mut Vec::new(), &mut done) {
            panic!("an import cycle: {}", cycle.join(" → "));
        }
    }
}

#[test]
fn the_table_itself_has_no_cycle() {
    let graph: BTreeMap<String, BTreeSet<String>> =
        ALLOWED.iter().map(|(module, may)| (module.to_string(), may.iter().map(|m| m.to_string()).collect())).collect();
    // Kahn's algorithm: every module can be placed once all it may import is placed.
    let mut placed = BTreeSet::new();
    while placed.len() < graph.len() {
        let next: Vec<_> = graph
            .iter()
            .filter(|(module, may)| !placed.contains(*module) && may.iter().all(|m| placed.contains(m)))
            .map(|(module, _)| module.clone())
            .collect();
        assert!(!next.is_empty(), "the table allows a cycle among {:?}", graph.keys().filter(|m| !placed.contains(*m)));
        placed.extend(next);
    }
}
