//! The module structure of `src/`, checked: which top-level module may import which, that the
//! modules import each other in no circle, and that within a module the files do not either. The
//! table below is the architecture of `docs/architecture.md` (`ui → model ← server`,
//! `backends → bridge → store` in spirit, ids and errors at the bottom); an import that is not in
//! it fails this test, so a new arrow is a decision, not an accident.
//!
//! Imports are read as text: every `crate::<module>` path in a file's code (tests left out: a
//! `#[cfg(test)] mod tests` block, or a `tests.rs` file), in `use` lines, grouped
//! `use crate::{a::X, b::Y}` and inline paths alike. Between files, `super::`, `self::` and a
//! child module's name count as well (`mod_graph` below says how a path finds its file).

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
    ("approval", &[]),
    ("interaction", &["approval", "question"]),
    ("thread", &["approval", "interaction", "question"]),
    // The server's core.
    ("store", &["error", "interaction", "thread"]),
    ("bridge", &["approval", "error", "ids", "interaction", "question"]),
    ("agent", &["approval", "error", "ids", "interaction", "question", "thread"]),
    ("session", &["agent", "approval", "bridge", "error", "ids", "interaction", "question", "store", "thread"]),
    // Reaching the person (Web Push, webhooks): fed the sessions' events from above, it reads
    // the model and the store, never a session.
    ("notify", &["approval", "error", "ids", "interaction", "question", "store", "thread"]),
    // Live events: the server's hub reads sessions; the browser's client only the model.
    ("live", &["error", "session", "store", "thread"]),
    // The edge: server functions, callable from the browser; reading Claude Code's own transcripts
    // (`agent::claude::transcripts`) is a lookup, not a turn, and needs no session.
    ("api", &["agent", "approval", "error", "interaction", "notify", "question", "session", "thread"]),
    // The browser's face: the model, the server functions and the live client, nothing server-only.
    ("ui", &["api", "approval", "error", "interaction", "live", "question", "thread"]),
    ("app", &["ui"]),
    // Sessions AskBridge does not run: a terminal's Claude Code, through its hooks. Server-side,
    // beside the router: it makes sessions and hands their questions to the person like the
    // agent's own, and holds the hook program and `connect` (which the command line runs).
    ("terminal", &["agent", "approval", "error", "ids", "interaction", "question", "session", "thread"]),
    // The top: the command line and the router put everything together.
    ("server", &["agent", "api", "app", "approval", "error", "live", "notify", "session", "store", "terminal", "ui"]),
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

/// Top-level module → the top-level modules its files import.
fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let files = source_files();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files.0 {
        let module = file.module[0].clone();
        let paths = file.imports.iter().chain(file.reexports.values());
        let imported: BTreeSet<String> =
            paths.filter_map(|path| file.absolute(path)?.first().cloned()).filter(|m| *m != module).collect();
        graph.entry(module).or_default().extend(imported);
    }
    graph
}

// ---- How a file's imports are read ----
//
// From the text, with Rust's rules for where a path leads:
// - `crate::a::b::X`, `super::X`, `self::x::Y`, and a child module's name (`turn::Turn` in the file
//   that declares `mod turn;`) are paths of ours, in `use` trees and inline alike; comments and
//   strings are not read;
// - a path leads to the file of its longest prefix that is a file (`agent::claude::turn`);
// - a `pub use` re-export is the module's face, not an import: a path through it leads on to the
//   file that defines the item, and the file that re-exports it imports that file only where its
//   own code names the item;
// - declaring a module (`mod x;`) is not an import.

/// A source file, as these checks read it.
struct SourceFile {
    /// `src/agent/claude/turn.rs`, for messages.
    name: String,
    /// Its module path: `agent::claude::turn`; a `mod.rs` is its folder's module.
    module: Vec<String>,
    /// The modules it declares (`mod x;`).
    children: BTreeSet<String>,
    /// Paths of ours in its non-`pub` `use` trees and its code, with what the item is called here.
    imports: Vec<Vec<String>>,
    /// `pub use` items: the name it is known by here → the path it stands for.
    reexports: BTreeMap<String, Vec<String>>,
    /// Identifiers its code names outside `use` trees (to see where it uses what it re-exports).
    names: BTreeSet<String>,
}

/// `src/agent/claude/turn.rs` → `agent::claude::turn`; `src/agent/mod.rs` → `agent`.
fn module_path(relative: &str) -> Vec<String> {
    let relative = relative.trim_start_matches("src/").trim_end_matches(".rs");
    let mut path: Vec<String> = relative.split('/').map(str::to_string).collect();
    if path.last().is_some_and(|last| last == "mod" || last == "lib" || last == "main") {
        path.pop();
    }
    path
}

/// The tokens of Rust source: identifiers, `::` and single punctuation; comments, strings and
/// character literals left out.
fn tokens(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if (c == 'r' || (c == 'b' && at(i + 1) == 'r')) && {
            let start = if c == 'b' { i + 2 } else { i + 1 };
            let mut j = start;
            while at(j) == '#' {
                j += 1;
            }
            at(j) == '"' && (j > start || at(start) == '"')
        } {
            // A raw string: r"…", r#"…"#, br"…".
            let start = if c == 'b' { i + 2 } else { i + 1 };
            let mut j = start;
            while at(j) == '#' {
                j += 1;
            }
            let hashes = j - start;
            j += 1;
            while j < chars.len() && !(chars[j] == '"' && (0..hashes).all(|k| at(j + 1 + k) == '#')) {
                j += 1;
            }
            i = j + 1 + hashes;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{1F600}'), or a lifetime ('a), which is skipped.
            if at(i + 1) == '\\' {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
                while at(i).is_alphanumeric() || at(i) == '_' {
                    i += 1;
                }
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while at(i).is_alphanumeric() || at(i) == '_' {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else if c == ':' && at(i + 1) == ':' {
            out.push("::".to_string());
            i += 2;
        } else if c.is_whitespace() {
            i += 1;
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    out
}

fn is_ident(token: &str) -> bool {
    token.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Reads the use tree at `tokens[*i]` (after `use`) up to its `;`: each item as its full path and
/// the name it is known by (`a::{b, c as d, e::*}` → `a::b` as b, `a::c` as d, `a::e::*`).
fn use_tree(tokens: &[String], i: &mut usize, prefix: Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    let mut path = prefix;
    while let Some(token) = tokens.get(*i) {
        match token.as_str() {
            "::" => *i += 1,
            "{" => {
                *i += 1;
                while tokens.get(*i).is_some_and(|t| t != "}") {
                    use_tree(tokens, i, path.clone(), out);
                    if tokens.get(*i).is_some_and(|t| t == ",") {
                        *i += 1;
                    }
                }
                *i += 1;
                return;
            }
            "*" => {
                *i += 1;
                path.push("*".into());
                out.push((path, "*".into()));
                return;
            }
            ident if is_ident(ident) => {
                path.push(ident.to_string());
                *i += 1;
                if tokens.get(*i).is_some_and(|t| t == "::") {
                    continue;
                }
                // `a::{self, b}`: `self` is `a`.
                if path.len() > 1 && path.last().is_some_and(|last| last == "self") {
                    path.pop();
                }
                let mut name = path.last().cloned().unwrap_or_default();
                if tokens.get(*i).is_some_and(|t| t == "as") {
                    name = tokens.get(*i + 1).cloned().unwrap_or_default();
                    *i += 2;
                }
                out.push((path, name));
                return;
            }
            // `,`, `}` or `;`: the item ends (the caller reads on).
            _ => return,
        }
    }
}

impl SourceFile {
    fn read(relative: &str, text: &str) -> Self {
        let text = match text.find("#[cfg(test)]\nmod tests") {
            Some(at) => &text[..at],
            None => text,
        };
        let tokens = tokens(text);
        let mut file = SourceFile {
            name: relative.to_string(),
            module: module_path(relative),
            children: BTreeSet::new(),
            imports: Vec::new(),
            reexports: BTreeMap::new(),
            names: BTreeSet::new(),
        };
        for window in tokens.windows(3) {
            if window[0] == "mod" && is_ident(&window[1]) && window[2] == ";" {
                file.children.insert(window[1].clone());
            }
        }
        let ours = |file: &SourceFile, first: &str| {
            matches!(first, "crate" | "super" | "self") || file.children.contains(first)
        };
        let mut i = 0;
        while i < tokens.len() {
            let token = tokens[i].as_str();
            let after_path = i > 0 && tokens[i - 1] == "::";
            if token == "use" && !after_path {
                // `pub use`, `pub(crate) use`: a re-export.
                let before = &tokens[..i];
                let public = match before.last().map(String::as_str) {
                    Some("pub") => true,
                    Some(")") => {
                        before.iter().rposition(|t| t == "(").is_some_and(|open| open > 0 && before[open - 1] == "pub")
                    }
                    _ => false,
                };
                let mut items = Vec::new();
                i += 1;
                use_tree(&tokens, &mut i, Vec::new(), &mut items);
                for (path, name) in items {
                    if !path.first().is_some_and(|first| ours(&file, first)) {
                        continue;
                    }
                    if public && name != "*" {
                        file.reexports.insert(name, path);
                    } else {
                        file.imports.push(path);
                    }
                }
                continue;
            }
            if is_ident(token) && !after_path {
                if tokens.get(i + 1).is_some_and(|t| t == "::") && ours(&file, token) {
                    let mut path = vec![token.to_string()];
                    let mut j = i + 1;
                    while tokens.get(j).is_some_and(|t| t == "::") && tokens.get(j + 1).is_some_and(|t| is_ident(t)) {
                        path.push(tokens[j + 1].clone());
                        j += 2;
                    }
                    file.imports.push(path);
                    i = j;
                    continue;
                }
                file.names.insert(token.to_string());
            }
            i += 1;
        }
        file
    }

    /// The path `path`, written in this file, from the crate's root; `None` when it is not ours.
    fn absolute(&self, path: &[String]) -> Option<Vec<String>> {
        let (first, rest) = path.split_first()?;
        let mut base = self.module.clone();
        let mut rest = rest;
        match first.as_str() {
            "crate" => base.clear(),
            "self" => {}
            "super" => {
                base.pop();
                while rest.first().is_some_and(|segment| segment == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
            }
            child if self.children.contains(child) => base.push(child.to_string()),
            _ => return None,
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }
}

/// The files of a crate, and where each path of theirs leads.
struct Files(Vec<SourceFile>);

impl Files {
    /// The file `path` (from the crate's root) leads to: the file of its longest prefix that is
    /// one, and on through that file's re-exports.
    fn locate(&self, path: &[String], depth: usize) -> Option<usize> {
        let (at, file) = (1..=path.len())
            .rev()
            .find_map(|len| self.0.iter().position(|f| f.module == path[..len]).map(|at| (at, len)))?;
        let rest = &path[file..];
        if let Some(name) = rest.first()
            && let Some(reexported) = self.0[at].reexports.get(name)
            && depth < 8
        {
            let mut onward = self.0[at].absolute(reexported)?;
            onward.extend(rest[1..].iter().cloned());
            return self.locate(&onward, depth + 1).or(Some(at));
        }
        Some(at)
    }

    /// File → the files of its own top-level module that it imports, each with the path that
    /// shows it.
    fn graph(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (from, file) in self.0.iter().enumerate() {
            let edges = graph.entry(file.name.clone()).or_default();
            let mut add = |to: usize, why: String| {
                let target = &self.0[to];
                if to != from && target.module.first() == file.module.first() {
                    edges.entry(target.name.clone()).or_insert(why);
                }
            };
            for path in &file.imports {
                if let Some(to) = file.absolute(path).and_then(|absolute| self.locate(&absolute, 0)) {
                    add(to, path.join("::"));
                }
            }
            for (name, path) in &file.reexports {
                if file.names.contains(name)
                    && let Some(to) = file.absolute(path).and_then(|absolute| self.locate(&absolute, 0))
                {
                    add(to, format!("{name} (re-exported from {})", path.join("::")));
                }
            }
        }
        graph
    }
}

/// Every circle in `graph`, one per group of files that reach each other: the shortest one
/// through the group's first file, as `[a, b, …, a]`.
fn circles(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<Vec<String>> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::from([from.to_string()]);
        let mut todo = vec![from.to_string()];
        while let Some(next) = todo.pop() {
            for to in graph.get(&next).into_iter().flat_map(|edges| edges.keys()) {
                if seen.insert(to.clone()) {
                    todo.push(to.clone());
                }
            }
        }
        seen
    };
    let mut grouped = BTreeSet::new();
    let mut found = Vec::new();
    for start in graph.keys() {
        if grouped.contains(start) {
            continue;
        }
        // Breadth-first from `start`: the first way back to it is the shortest circle.
        let mut came_from: BTreeMap<String, String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start.clone()]);
        let mut closing = None;
        'search: while let Some(next) = queue.pop_front() {
            for to in graph.get(&next).into_iter().flat_map(|edges| edges.keys()) {
                if to == start {
                    closing = Some(next.clone());
                    break 'search;
                }
                if !came_from.contains_key(to) {
                    came_from.insert(to.clone(), next.clone());
                    queue.push_back(to.clone());
                }
            }
        }
        let Some(last) = closing else { continue };
        // Back from the last step to `start`, which every path of the search begins at.
        let mut circle = vec![last.clone()];
        let mut at = last;
        while let Some(before) = came_from.get(&at) {
            circle.push(before.clone());
            at = before.clone();
        }
        circle.reverse();
        circle.push(start.clone());
        // The rest of its group (the files that reach `start` and that it reaches) is not
        // reported again.
        let from_start = reach(start);
        grouped.extend(from_start.into_iter().filter(|file| reach(file).contains(start)));
        found.push(circle);
    }
    found
}

/// A circle, with the import that makes each step.
fn describe(circle: &[String], graph: &BTreeMap<String, BTreeMap<String, String>>) -> String {
    let mut text = circle[0].clone();
    for step in circle.windows(2) {
        text.push_str(&format!("\n    → {} (by `{}`)", step[1], graph[&step[0]][&step[1]]));
    }
    text
}

fn source_files() -> Files {
    let mut paths = Vec::new();
    rust_files(&src(), &mut paths);
    let root = src().parent().unwrap().to_path_buf();
    let mut files = Vec::new();
    for path in paths {
        let relative = path.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
        // The crate's roots, and test modules kept in files of their own.
        if relative == "src/lib.rs" || relative == "src/main.rs" || relative.ends_with("tests.rs") {
            continue;
        }
        files.push(SourceFile::read(&relative, &std::fs::read_to_string(&path).unwrap()));
    }
    Files(files)
}

#[test]
fn the_import_parser_reads_every_form_of_path() {
    let code = "use crate::thread::{A, B};\nuse crate::{error::AppError, question::{Q, R}};\n\
                fn f() { crate::ids::new_id(); my_crate::x(); let s = \"crate::api\"; }\n\
                // crate::app\nmacro_rules! m { () => { $crate::live::X } }\n";
    let file = SourceFile::read("src/session/x.rs", code);
    let found: BTreeSet<_> = file.imports.iter().filter_map(|path| Some(file.absolute(path)?[0].clone())).collect();
    assert_eq!(found.into_iter().collect::<Vec<_>>(), ["error", "ids", "live", "question", "thread"]);
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

/// An arrow the table allows and nothing uses is a door left open for the next import to walk
/// through unseen: the table says what the code does, no more.
#[test]
fn every_arrow_the_table_allows_is_one_the_code_uses() {
    let graph = import_graph();
    let unused: Vec<String> = ALLOWED
        .iter()
        .flat_map(|(module, may)| {
            let used = graph.get(*module).cloned().unwrap_or_default();
            may.iter()
                .filter(move |import| !used.contains(**import))
                .map(move |import| format!("`{module}` → `{import}`"))
        })
        .collect();
    assert!(unused.is_empty(), "arrows the table allows and no import uses (take them out):\n{}", unused.join("\n"));
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

// ---- Files within a module ----
//
// A module's files may use each other, one way: a file that needs another's code imports it, and
// that one does not import it back, directly or through a third. A circle between two files is a
// boundary nobody can see (the lazily loaded pane of `ui/` was one, issue 24).

#[test]
fn the_files_of_a_module_import_each_other_in_no_circle() {
    let graph = source_files().graph();
    let found: Vec<String> = circles(&graph).iter().map(|circle| describe(circle, &graph)).collect();
    assert!(
        found.is_empty(),
        "files that import each other in a circle (move what both need into a file of its own, which \
         imports neither):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_file_check_finds_a_circle_between_two_files_and_through_a_third() {
    let files = Files(vec![
        SourceFile::read("src/ui/mod.rs", "pub mod lazy;\npub mod workspace;\npub mod state;\n"),
        SourceFile::read("src/ui/lazy.rs", "use super::state::ThreadState;\nuse super::workspace::SessionPane;\n"),
        SourceFile::read(
            "src/ui/workspace.rs",
            "use super::{lazy::session_pane, state};\nuse crate::thread::X;\n// use super::nothing;\n",
        ),
        SourceFile::read("src/ui/state.rs", "pub struct ThreadState;\nconst S: &str = \"super::lazy::x\";\n"),
        SourceFile::read("src/agent/mod.rs", "mod a;\nmod b;\nmod c;\npub use c::Face;\nfn f(x: Face) {}\n"),
        SourceFile::read("src/agent/a.rs", "fn f() { super::b::go(); }\n"),
        SourceFile::read("src/agent/b.rs", "use crate::agent::Face;\n"),
        SourceFile::read("src/agent/c.rs", "pub struct Face;\nfn g() { crate::agent::a::run() }\n"),
    ]);
    let graph = files.graph();
    assert!(graph["src/ui/mod.rs"].is_empty(), "declaring a module is not importing it");
    assert!(!graph["src/ui/state.rs"].contains_key("src/ui/lazy.rs"), "a string is not a path");
    assert_eq!(graph["src/agent/b.rs"].keys().collect::<Vec<_>>(), ["src/agent/c.rs"], "on through the face");
    assert!(graph["src/agent/mod.rs"].contains_key("src/agent/c.rs"), "the face's own code uses what it re-exports");
    let found = circles(&graph);
    assert_eq!(
        found,
        [
            vec!["src/agent/a.rs", "src/agent/b.rs", "src/agent/c.rs", "src/agent/a.rs"],
            vec!["src/ui/lazy.rs", "src/ui/workspace.rs", "src/ui/lazy.rs"],
        ]
    );
    let message = describe(&found[1], &graph);
    assert!(message.contains("→ src/ui/workspace.rs (by `super::workspace::SessionPane`)"), "{message}");
}
