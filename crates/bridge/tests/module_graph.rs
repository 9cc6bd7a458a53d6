//! The structure the docs promise (the bridge's lib.rs, docs/architecture.md), checked on the
//! sources: in the bridge and in the SDK (`src/`) each layer imports only the layers below it
//! (the bridge: routes → bridge → cluster → agent → sessions → calls → page, with `config`,
//! `limits` and `ids` as settings every layer may use), and neither they nor the core have
//! modules importing each other in a circle.
//!
//! A module here is a file or a folder directly under its layer (`agent::rounds`,
//! `sessions::page_session` with everything inside it): inside one module, a folder's `mod.rs`
//! and its files share their types freely (a split `impl` needs that). Test code (`*tests.rs`,
//! a trailing `#[cfg(test)] mod`) and comments are not read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The bridge's layers, from the top.
const BRIDGE_LAYERS: [&str; 7] = [
    "routes", "bridge", "cluster", "agent", "sessions", "calls", "page",
];

/// The SDK's layers, from the top (docs/architecture.md, *Imports read top-down*): the classes
/// JavaScript constructs; the driver of the page's outputs; what it drives (the person, the
/// socket, WebMCP); the session kept in `sessionStorage`; the page engine's loop; what the page
/// keeps and emits; the dialog and declarations; the JavaScript glue.
const SDK_LAYERS: [&[&str]; 8] = [
    &["api", "validator"],
    &["driver"],
    &["ask", "transport", "webmcp"],
    &["session"],
    &["page"],
    &["events", "options", "webmcp_state", "typescript"],
    &["ui", "declaration", "errors"],
    &["js", "oneshot"],
];

/// Every `.rs` file under `dir`, with its module path (`agent/rounds.rs` → `["agent", "rounds"]`).
fn modules(dir: &Path) -> Vec<(Vec<String>, PathBuf)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).expect("the source folder is readable") {
            let path = entry.expect("a readable entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            let relative = path.strip_prefix(dir).expect("under the folder");
            let mut names: Vec<String> = relative
                .iter()
                .map(|part| part.to_string_lossy().trim_end_matches(".rs").to_owned())
                .collect();
            if names.last().is_some_and(|last| last == "mod") {
                names.pop();
            }
            found.push((names, path));
        }
    }
    found
}

/// The file's code without its tests and comments.
fn code_of(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy();
    if name.ends_with("tests.rs") || name == "fake_page.rs" {
        return None;
    }
    let text = std::fs::read_to_string(path).expect("a readable source file");
    let tests = ["#[cfg(test)]\nmod ", "#[cfg(test)]\n#[path"]
        .iter()
        .filter_map(|marker| text.find(marker))
        .min()
        .unwrap_or(text.len());
    let code = text[..tests]
        .lines()
        .map(|line| match line.find("//") {
            Some(comment) => &line[..comment],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n");
    // `super::super::…` would reach across modules without naming them, out of this reading:
    // every import across modules names its path from `crate::`.
    assert!(
        !code.contains("super::super"),
        "{}: name imports from another module by crate::, not super::super::",
        path.display()
    );
    Some(code)
}

/// The modules (at `depth` names) each module's code names as `crate::…`, by module.
fn imports(dir: &Path, depth: usize) -> BTreeMap<String, BTreeSet<String>> {
    let unit = |names: &[String]| {
        names
            .iter()
            .take(depth)
            .cloned()
            .collect::<Vec<_>>()
            .join("::")
    };
    let files = modules(dir);
    let known: BTreeSet<String> = files.iter().map(|(names, _)| unit(names)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (names, path) in &files {
        let Some(code) = code_of(path) else { continue };
        let from = unit(names);
        let entry = graph.entry(from.clone()).or_default();
        for (at, _) in code.match_indices("crate::") {
            let path: Vec<String> = code[at + "crate::".len()..]
                .split("::")
                .map(|part| {
                    part.chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect()
                })
                .take(depth)
                .collect();
            let target = path.join("::");
            if known.contains(&target) && target != from {
                entry.insert(target);
            }
        }
    }
    graph
}

/// Every circle of `graph`, each as the modules it passes through.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        if let Some(start) = path.iter().position(|n| n == node) {
            found.push(path[start..].to_vec());
            return;
        }
        if !done.insert(node.to_owned()) {
            return;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            visit(next, graph, path, done, found);
        }
        path.pop();
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, graph, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Each import from a module of one layer to a module of a layer above it.
fn upward_imports(
    graph: &BTreeMap<String, BTreeSet<String>>,
    rank: impl Fn(&str) -> Option<usize>,
) -> Vec<String> {
    let mut upward = Vec::new();
    for (from, targets) in graph {
        let Some(from_rank) = rank(from) else {
            continue;
        };
        for target in targets {
            if rank(target).is_some_and(|target_rank| target_rank < from_rank) {
                upward.push(format!("{from} imports {target}, a layer above it"));
            }
        }
    }
    upward
}

#[test]
fn each_sdk_layer_imports_only_the_layers_below_it() {
    let graph = imports(&repo().join("src"), 1);
    let rank = |module: &str| SDK_LAYERS.iter().position(|layer| layer.contains(&module));
    let unplaced: Vec<&String> = graph
        .keys()
        .filter(|module| *module != "lib" && rank(module).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules of src/ in no layer of SDK_LAYERS: {unplaced:?}"
    );
    let upward = upward_imports(&graph, rank);
    assert!(upward.is_empty(), "{upward:#?}");
}

#[test]
fn each_bridge_layer_imports_only_the_layers_below_it() {
    let graph = imports(&repo().join("crates/bridge/src"), 1);
    let rank = |module: &str| BRIDGE_LAYERS.iter().position(|layer| *layer == module);
    let settings = ["lib", "main", "config", "limits", "ids", "tokens"];
    let unplaced: Vec<&String> = graph
        .keys()
        .filter(|module| !settings.contains(&module.as_str()) && rank(module).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules of the bridge in no layer: {unplaced:?}"
    );
    let upward = upward_imports(&graph, rank);
    assert!(upward.is_empty(), "{upward:#?}");
    // The check sees the imports it judges: every layer below the routes is imported by one above.
    for layer in &BRIDGE_LAYERS[1..] {
        assert!(
            graph.values().any(|targets| targets.contains(*layer)),
            "nothing imports {layer}: the reading of imports is broken"
        );
    }
}

#[test]
fn no_modules_import_each_other_in_a_circle() {
    for (dir, depth) in [("crates/bridge/src", 2), ("crates/core/src", 1), ("src", 1)] {
        let graph = imports(&repo().join(dir), depth);
        assert!(
            graph.values().map(BTreeSet::len).sum::<usize>() > 10,
            "{dir}: the reading of imports found almost none"
        );
        let found = circles(&graph);
        assert!(found.is_empty(), "{dir}: import circles {found:#?}");
    }
}

#[test]
fn the_circle_finder_finds_a_circle() {
    let mut graph = BTreeMap::new();
    graph.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
    graph.insert("b".to_owned(), BTreeSet::from(["c".to_owned()]));
    graph.insert("c".to_owned(), BTreeSet::from(["a".to_owned()]));
    assert_eq!(circles(&graph), [["a", "b", "c"]]);
}
