//! The module structure of `src/`, checked: which top-level module may import which, that the
//! modules import each other in no circle, and that within a module the files do not either. The
//! table below is the architecture of `docs/architecture.md` (`ui → model ← server`,
//! `backends → bridge → store` in spirit, ids and errors at the bottom); an import that is not in
//! it fails this test, so a new arrow is a decision, not an accident.
//!
//! Imports are read with `syn`: every path of ours in a file's code (test-only items left out: a
//! `#[cfg(test)]` item, or a `tests.rs` file), in use trees and inline paths alike, and in the
//! tokens of macro bodies. Between files, `super::`, `self::` and a child module's name count as
//! well (the notes at `SourceFile` say how a path finds its file).
//!
//! Two more kinds of structure are checked here: the session's facade has no back door (a public
//! accessor of the store or the bridge that code outside `session/` calls), and no file or function
//! holds more than one reader can keep in mind.

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
    // What an agent changed in a session's folder, as both faces show it.
    ("changes", &[]),
    // The server's core.
    ("store", &["error", "interaction", "thread"]),
    ("bridge", &["approval", "error", "ids", "interaction", "question"]),
    ("agent", &["approval", "error", "ids", "interaction", "question", "thread"]),
    // The folders sessions work in: checkpoints in a git repository of AskBridge's own, diffs.
    ("folder", &["changes", "store"]),
    // A terminal per session: a shell in a PTY, in the environment an agent gets.
    ("shell", &["agent"]),
    (
        "session",
        &[
            "agent",
            "approval",
            "bridge",
            "changes",
            "error",
            "folder",
            "ids",
            "interaction",
            "question",
            "shell",
            "store",
            "thread",
        ],
    ),
    // Reaching the person (Web Push, webhooks): fed the sessions' events from above, it reads
    // the model and the store, never a session.
    ("notify", &["approval", "error", "ids", "interaction", "question", "store", "thread"]),
    // Live events: the server's hub reads sessions; the browser's client only the model.
    ("live", &["error", "session", "store", "thread"]),
    // The edge: server functions, callable from the browser; reading Claude Code's own transcripts
    // (`agent::claude::transcripts`) is a lookup, not a turn, and needs no session.
    ("api", &["agent", "approval", "changes", "error", "interaction", "notify", "question", "session", "thread"]),
    // The browser's face: the model, the server functions and the live client, nothing server-only.
    ("ui", &["api", "approval", "changes", "error", "interaction", "live", "question", "thread"]),
    ("app", &["ui"]),
    // Sessions AskBridge does not run: a terminal's Claude Code, through its hooks. Server-side,
    // beside the router: it makes sessions and hands their questions to the person like the
    // agent's own, and holds the hook program and `connect` (which the command line runs).
    ("terminal", &["agent", "approval", "error", "ids", "interaction", "question", "session", "thread"]),
    // The top: the command line and the router put everything together.
    (
        "server",
        &["agent", "api", "app", "approval", "error", "live", "notify", "session", "shell", "store", "terminal", "ui"],
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
// From the syntax, with Rust's rules for where a path leads:
// - `crate::a::b::X`, `super::X`, `self::x::Y`, and a child module's name (`turn::Turn` in the file
//   that declares `mod turn;`) are paths of ours, in `use` trees and inline alike;
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

/// Each item of a use tree as its full path and the name it is known by (`a::{b, c as d, e::*}` →
/// `a::b` as b, `a::c` as d, `a::e::*`).
fn use_tree(tree: &syn::UseTree, prefix: Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    let with = |segment: String| {
        let mut path = prefix.clone();
        path.push(segment);
        path
    };
    match tree {
        syn::UseTree::Path(path) => use_tree(&path.tree, with(path.ident.to_string()), out),
        // `a::{self, b}`: `self` is `a`.
        syn::UseTree::Name(name) if name.ident == "self" && !prefix.is_empty() => {
            out.push((prefix.clone(), prefix.last().cloned().unwrap_or_default()))
        }
        syn::UseTree::Name(name) => out.push((with(name.ident.to_string()), name.ident.to_string())),
        syn::UseTree::Rename(rename) if rename.ident == "self" && !prefix.is_empty() => {
            out.push((prefix.clone(), rename.rename.to_string()))
        }
        syn::UseTree::Rename(rename) => out.push((with(rename.ident.to_string()), rename.rename.to_string())),
        syn::UseTree::Glob(_) => out.push((with("*".into()), "*".into())),
        syn::UseTree::Group(group) => group.items.iter().for_each(|tree| use_tree(tree, prefix.clone(), out)),
    }
}

/// `#[cfg(test)]`: code these checks leave out.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg") && attr.meta.require_list().is_ok_and(|list| list.tokens.to_string() == "test")
    })
}

/// The attributes of an item, to leave test-only ones out.
fn attrs_of(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(item) => &item.attrs,
        syn::Item::Enum(item) => &item.attrs,
        syn::Item::Fn(item) => &item.attrs,
        syn::Item::Impl(item) => &item.attrs,
        syn::Item::Macro(item) => &item.attrs,
        syn::Item::Mod(item) => &item.attrs,
        syn::Item::Static(item) => &item.attrs,
        syn::Item::Struct(item) => &item.attrs,
        syn::Item::Trait(item) => &item.attrs,
        syn::Item::Type(item) => &item.attrs,
        syn::Item::Use(item) => &item.attrs,
        _ => &[],
    }
}

/// Walks a file's syntax, test-only items left out: its use trees, the paths its code names and
/// every identifier. Macro bodies (`view!`, `json!`, `macro_rules!`) are tokens to syn, so the
/// paths in them are read from the tokens: `a :: b` sequences, `$crate::x` as `crate::x`.
#[derive(Default)]
struct Reader {
    /// Each use tree, and whether it is `pub` (or `pub(…)`): a re-export.
    uses: Vec<(bool, syn::UseTree)>,
    /// Every path the code names, as written.
    paths: Vec<Vec<String>>,
    names: BTreeSet<String>,
}

impl Reader {
    fn tokens(&mut self, tokens: proc_macro2::TokenStream) {
        use proc_macro2::{Spacing, TokenTree};
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let colons_at = |at: usize| {
            matches!((trees.get(at), trees.get(at + 1)), (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':')
        };
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(group) => self.tokens(group.stream()),
                TokenTree::Ident(ident) if !(i >= 2 && colons_at(i - 2)) => {
                    self.names.insert(ident.to_string());
                    let mut path = vec![ident.to_string()];
                    while colons_at(i + 1)
                        && let Some(TokenTree::Ident(next)) = trees.get(i + 3)
                    {
                        path.push(next.to_string());
                        i += 3;
                    }
                    self.paths.push(path);
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'ast> syn::visit::Visit<'ast> for Reader {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !is_test_only(attrs_of(item)) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if !is_test_only(&item.attrs) {
            syn::visit::visit_impl_item_fn(self, item);
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.uses.push((!matches!(item.vis, syn::Visibility::Inherited), item.tree.clone()));
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.paths.push(path.segments.iter().map(|segment| segment.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }

    fn visit_ident(&mut self, ident: &'ast proc_macro2::Ident) {
        self.names.insert(ident.to_string());
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        syn::visit::visit_path(self, &mac.path);
        self.tokens(mac.tokens.clone());
    }

    fn visit_meta_list(&mut self, list: &'ast syn::MetaList) {
        self.tokens(list.tokens.clone());
    }
}

impl SourceFile {
    fn read(relative: &str, text: &str) -> Self {
        let parsed = syn::parse_file(text).unwrap_or_else(|error| panic!("{relative} does not parse: {error}"));
        let children = parsed
            .items
            .iter()
            .filter_map(|item| match item {
                syn::Item::Mod(module) if module.content.is_none() && !is_test_only(&module.attrs) => {
                    Some(module.ident.to_string())
                }
                _ => None,
            })
            .collect();
        let mut reader = Reader::default();
        syn::visit::Visit::visit_file(&mut reader, &parsed);
        let mut file = SourceFile {
            name: relative.to_string(),
            module: module_path(relative),
            children,
            imports: Vec::new(),
            reexports: BTreeMap::new(),
            names: reader.names,
        };
        for (public, tree) in &reader.uses {
            let mut items = Vec::new();
            use_tree(tree, Vec::new(), &mut items);
            for (path, name) in items {
                if !path.first().is_some_and(|first| file.ours(first)) {
                    continue;
                }
                if *public && name != "*" {
                    file.reexports.insert(name, path);
                } else {
                    file.imports.push(path);
                }
            }
        }
        let inline = reader.paths.into_iter().filter(|path| path.len() > 1 && file.ours(&path[0]));
        file.imports.extend(inline.collect::<Vec<_>>());
        file
    }

    /// Whether a path that starts with `first` is one of ours.
    fn ours(&self, first: &str) -> bool {
        matches!(first, "crate" | "super" | "self") || self.children.contains(first)
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

// ---- The session's facade ----
//
// `session::SessionManager` is the one way to the sessions: the store and the interaction bridge
// sit behind it, and every change to a session goes through its ledger. A public method of
// `session/` that hands out the store or the bridge is a back door: code above calls the store's
// or the bridge's own methods through it, past the ledger and past this file's layer table (which
// sees only imports, and a call through an accessor imports nothing). What the modules above
// need is a named method of the session's.

/// The handles the facade keeps to itself: (the module that defines it, the type).
const BEHIND_THE_FACADE: &[(&str, &str)] = &[("store", "Store"), ("bridge", "InteractionBridge")];

/// Whether `ty` is one of `handles`, as itself, a reference, or in an `Arc`.
fn hands_out(ty: &syn::Type, handles: &BTreeSet<String>) -> bool {
    match ty {
        syn::Type::Reference(reference) => hands_out(&reference.elem, handles),
        syn::Type::Paren(inner) => hands_out(&inner.elem, handles),
        syn::Type::Path(path) => path.path.segments.last().is_some_and(|last| {
            handles.contains(&last.ident.to_string())
                || (last.ident == "Arc"
                    && matches!(&last.arguments, syn::PathArguments::AngleBracketed(args)
                        if args.args.iter().any(|arg| matches!(arg, syn::GenericArgument::Type(inner) if hands_out(inner, handles)))))
        }),
        _ => false,
    }
}

/// The public methods of `files` (`pub` or `pub(crate)`) that take only `self` and hand out one of
/// `handles`.
fn accessors(files: &[(String, syn::File)], handles: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    for (name, file) in files {
        for item in &file.items {
            let syn::Item::Impl(block) = item else { continue };
            for item in &block.items {
                if let syn::ImplItem::Fn(method) = item
                    && matches!(&method.vis, syn::Visibility::Public(_))
                        | matches!(&method.vis, syn::Visibility::Restricted(r) if r.path.is_ident("crate"))
                    && method.sig.inputs.len() == 1
                    && let syn::ReturnType::Type(_, ty) = &method.sig.output
                    && hands_out(ty, handles)
                {
                    found.insert(method.sig.ident.to_string(), name.clone());
                }
            }
        }
    }
    found
}

/// Calls without arguments, in a file's code (tests left out), of a method named one of `names`,
/// with the line (an accessor takes nothing: `pid.store(0, Relaxed)` is an atomic's).
#[derive(Default)]
struct Calls {
    names: BTreeSet<String>,
    found: Vec<(String, usize)>,
}

impl<'ast> syn::visit::Visit<'ast> for Calls {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !is_test_only(attrs_of(item)) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        if call.args.is_empty() && self.names.contains(&call.method.to_string()) {
            self.found.push((call.method.to_string(), call.method.span().start().line));
        }
        syn::visit::visit_expr_method_call(self, call);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        // `.store()` inside `view!` or `format!`: `.`, the name, `(`.
        fn scan(tokens: proc_macro2::TokenStream, calls: &mut Calls) {
            use proc_macro2::{Delimiter, TokenTree};
            let trees: Vec<TokenTree> = tokens.into_iter().collect();
            for (i, tree) in trees.iter().enumerate() {
                match tree {
                    TokenTree::Group(group) => scan(group.stream(), calls),
                    TokenTree::Ident(ident)
                        if calls.names.contains(&ident.to_string())
                            && matches!(i.checked_sub(1).and_then(|at| trees.get(at)), Some(TokenTree::Punct(p)) if p.as_char() == '.')
                            && matches!(trees.get(i + 1), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis && g.stream().is_empty()) =>
                    {
                        calls.found.push((ident.to_string(), ident.span().start().line));
                    }
                    _ => {}
                }
            }
        }
        scan(mac.tokens.clone(), self);
    }
}

/// Each back door: `file:line` calls `accessor` (defined in `session file`) from outside `inside`.
fn back_doors(files: &[(String, syn::File)], inside: &str, handles: &BTreeSet<String>) -> Vec<String> {
    let (facade, outside): (Vec<_>, Vec<_>) = files.iter().cloned().partition(|(name, _)| name.starts_with(inside));
    let accessors = accessors(&facade, handles);
    let mut found = Vec::new();
    for (name, file) in &outside {
        let mut calls = Calls { names: accessors.keys().cloned().collect(), found: Vec::new() };
        syn::visit::Visit::visit_file(&mut calls, file);
        for (method, line) in calls.found {
            found.push(format!("{name}:{line} calls `{method}()`, which {} makes public", accessors[&method]));
        }
    }
    found
}

fn parsed_sources() -> Vec<(String, syn::File)> {
    let mut paths = Vec::new();
    rust_files(&src(), &mut paths);
    let root = src().parent().unwrap().to_path_buf();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let relative = path.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(&path).unwrap();
            let file = syn::parse_file(&text).unwrap_or_else(|error| panic!("{relative} does not parse: {error}"));
            (relative, file)
        })
        .filter(|(relative, _)| !relative.ends_with("tests.rs"))
        .collect()
}

#[test]
fn nothing_outside_the_session_reaches_its_store_or_bridge_through_an_accessor() {
    let handles = BEHIND_THE_FACADE.iter().map(|(_, ty)| ty.to_string()).collect();
    let found = back_doors(&parsed_sources(), "src/session/", &handles);
    assert!(
        found.is_empty(),
        "back doors into the session's facade (give the caller a named method of the session's, and \
         make the accessor private to session/):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_back_door_check_finds_an_accessor_called_from_outside_the_session() {
    let parse = |name: &str, code: &str| (name.to_string(), syn::parse_file(code).unwrap());
    let files = [
        parse(
            "src/session/manager.rs",
            "impl SessionManager {\n pub fn store(&self) -> &Store { &self.store }\n \
             pub(crate) fn bridge(&self) -> Arc<InteractionBridge> { self.bridge.clone() }\n \
             pub(super) fn ledger(&self) -> &Store { &self.store }\n \
             fn own(&self) -> &Store { &self.store }\n pub fn title(&self) -> Result<String, StoreError> { todo!() }\n}\n",
        ),
        parse("src/session/turns.rs", "fn f(m: &SessionManager) { m.ledger().x(); m.store().y(); }\n"),
        parse("src/api/mod.rs", "fn f(m: &SessionManager) { m.store().list(); m.title(); }\n"),
        parse("src/terminal/relay.rs", "fn f(m: &M) {\n view! { <p>{m.bridge().cancel()}</p> }\n}\n"),
        parse("src/live/hub.rs", "#[cfg(test)]\nmod tests { fn t(m: &M) { m.store(); } }\n"),
    ];
    let handles = BEHIND_THE_FACADE.iter().map(|(_, ty)| ty.to_string()).collect();
    assert_eq!(
        back_doors(&files, "src/session/", &handles),
        [
            "src/api/mod.rs:1 calls `store()`, which src/session/manager.rs makes public",
            "src/terminal/relay.rs:2 calls `bridge()`, which src/session/manager.rs makes public",
        ]
    );
}

#[test]
fn the_facade_table_names_types_its_modules_define() {
    let sources = parsed_sources();
    for (module, ty) in BEHIND_THE_FACADE {
        let defined = sources
            .iter()
            .filter(|(name, _)| name.starts_with(&format!("src/{module}/")))
            .any(|(_, file)| file.items.iter().any(|item| matches!(item, syn::Item::Struct(s) if s.ident == ty)));
        assert!(defined, "`{ty}` is not a struct of `{module}` (the table above is out of date)");
    }
}

// ---- Sizes ----
//
// A file is one thing, and a function one step, that a reader can hold in mind: no file over 500
// lines of logic, no function over 80. Lines of logic are the lines that are neither blank nor a
// comment (doc comments included), test-only code left out. The exception is the Markdown
// renderer (`ui/markdown/render.rs`), one state machine over CommonMark's rules, kept whole on
// purpose (its header says why).

const MAX_FILE_LINES: usize = 500;
const MAX_FUNCTION_LINES: usize = 80;
const WHOLE_ON_PURPOSE: &[&str] = &["src/ui/markdown/render.rs"];

/// For each line of `text` (numbered from 1, index 0 unused): whether it is logic.
fn logic_lines(text: &str) -> Vec<bool> {
    let mut in_block_comment = false;
    let mut lines = vec![false];
    for line in text.lines() {
        let trimmed = line.trim();
        let logic = if in_block_comment {
            if let Some(end) = trimmed.find("*/") {
                in_block_comment = false;
                !trimmed[end + 2..].trim().is_empty()
            } else {
                false
            }
        } else if trimmed.starts_with("/*") {
            in_block_comment = !trimmed.contains("*/");
            false
        } else {
            !trimmed.is_empty() && !trimmed.starts_with("//")
        };
        lines.push(logic);
    }
    lines
}

fn span_lines(spanned: &impl syn::spanned::Spanned) -> std::ops::RangeInclusive<usize> {
    let span = spanned.span();
    span.start().line..=span.end().line
}

/// A function's name and lines, from `fn` to its closing brace.
fn function(sig: &syn::Signature, block: &syn::Block) -> (String, std::ops::RangeInclusive<usize>) {
    (sig.ident.to_string(), sig.fn_token.span.start().line..=*span_lines(block).end())
}

/// Each function of a file (methods and nested ones too), with its lines of logic; and the lines
/// of test-only items.
#[derive(Default)]
struct Sizes {
    functions: Vec<(String, std::ops::RangeInclusive<usize>)>,
    test_only: Vec<std::ops::RangeInclusive<usize>>,
    allows_many_arguments: Vec<usize>,
}

impl<'ast> syn::visit::Visit<'ast> for Sizes {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if is_test_only(attrs_of(item)) {
            self.test_only.push(span_lines(item));
        } else {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        self.functions.push(function(&item.sig, &item.block));
        syn::visit::visit_item_fn(self, item);
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if is_test_only(&item.attrs) {
            self.test_only.push(span_lines(item));
            return;
        }
        self.functions.push(function(&item.sig, &item.block));
        syn::visit::visit_impl_item_fn(self, item);
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if let Some(block) = &item.default {
            self.functions.push(function(&item.sig, block));
        }
        syn::visit::visit_trait_item_fn(self, item);
    }

    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        if attr.path().is_ident("allow")
            && attr.meta.require_list().is_ok_and(|list| list.tokens.to_string().contains("too_many_arguments"))
        {
            self.allows_many_arguments.push(attr.pound_token.span.start().line);
        }
    }
}

struct FileSize {
    logic: usize,
    /// Functions over the limit: name, first line, lines of logic.
    long_functions: Vec<(String, usize, usize)>,
    allows_many_arguments: Vec<usize>,
}

fn measure(text: &str, file: &syn::File) -> FileSize {
    let mut sizes = Sizes::default();
    syn::visit::Visit::visit_file(&mut sizes, file);
    let mut logic = logic_lines(text);
    for range in &sizes.test_only {
        for line in range.clone() {
            if let Some(l) = logic.get_mut(line) {
                *l = false;
            }
        }
    }
    let count =
        |range: &std::ops::RangeInclusive<usize>| range.clone().filter(|&line| logic.get(line) == Some(&true)).count();
    FileSize {
        logic: logic.iter().filter(|&&l| l).count(),
        long_functions: sizes
            .functions
            .iter()
            .map(|(name, range)| (name.clone(), *range.start(), count(range)))
            .filter(|(_, _, lines)| *lines > MAX_FUNCTION_LINES)
            .collect(),
        allows_many_arguments: sizes.allows_many_arguments,
    }
}

#[test]
fn no_file_or_function_is_longer_than_a_reader_can_hold() {
    let mut paths = Vec::new();
    rust_files(&src(), &mut paths);
    paths.sort();
    let root = src().parent().unwrap().to_path_buf();
    let mut wrong = Vec::new();
    for path in paths {
        let relative = path.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
        if relative.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let size = measure(&text, &syn::parse_file(&text).unwrap());
        if size.logic > MAX_FILE_LINES && !WHOLE_ON_PURPOSE.contains(&relative.as_str()) {
            wrong.push(format!("{relative}: {} lines of logic (at most {MAX_FILE_LINES})", size.logic));
        }
        for (name, line, lines) in &size.long_functions {
            wrong
                .push(format!("{relative}:{line}: `{name}` has {lines} lines of logic (at most {MAX_FUNCTION_LINES})"));
        }
        for line in size.allows_many_arguments {
            wrong.push(format!("{relative}:{line}: allows too_many_arguments (give the arguments a struct)"));
        }
    }
    assert!(wrong.is_empty(), "too long to hold in mind:\n{}", wrong.join("\n"));
}

#[test]
fn the_size_check_counts_logic_not_comments_blanks_or_tests() {
    let code = "//! A file.\n\n/// A function.\nfn f() {\n    // a comment\n    let x = 1;\n\n    /* a\n       block */\n    x;\n}\n\
                #[allow(clippy::too_many_arguments)]\nfn g() {}\n#[cfg(test)]\nmod tests {\n    fn t() {}\n}\n";
    let size = measure(code, &syn::parse_file(code).unwrap());
    // `fn f() {`, `let x = 1;`, `x;`, `}`, the attribute and `fn g() {}`.
    assert_eq!(size.logic, 6);
    assert_eq!(size.allows_many_arguments, [12]);
    let long: String = (0..=MAX_FUNCTION_LINES).map(|i| format!("    let x{i} = {i};\n")).collect();
    let code = format!("fn long() {{\n{long}}}\n");
    let size = measure(&code, &syn::parse_file(&code).unwrap());
    assert_eq!(size.long_functions, [("long".to_string(), 1, MAX_FUNCTION_LINES + 3)]);
}
