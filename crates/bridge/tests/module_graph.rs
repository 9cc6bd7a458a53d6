//! The structure the docs promise (the bridge's lib.rs, docs/architecture.md), checked on the
//! sources: in the bridge and in the SDK (`src/`) each layer imports only the layers below it
//! (the bridge: routes → bridge → cluster → agent → sessions → config → calls → page, then the
//! settings `tokens` → `limits`, `ids` that every layer may read), and neither they nor the core
//! have modules importing each other in a circle.
//!
//! A module here is a file or a folder directly under its layer (`agent::rounds`,
//! `sessions::page_session` with everything inside it): inside one module, a folder's `mod.rs`
//! and its files share their types freely (a split `impl` needs that).
//!
//! The sources are read as Rust (syn), from the crate's root down its `mod` declarations, so a
//! comment or a string is never taken for an import. What a module imports: every path of its
//! `use` trees (groups, `self`, renames and globs), every path of two or more names in its code
//! (`crate::ids::hex(…)` in an expression or a type, `wire::Entry`) and in its macros' tokens,
//! each resolved from the module it is written in (`crate::`, `super::`, `self::`, a child
//! module, a name a `use` brought in) and followed through re-exports (`use crate::Policy` is an
//! import of `calls::policy`). Test code is not read: modules declared under `#[cfg(test)]`
//! (`*tests.rs`, `fake_page.rs`, `trace_capture.rs`) and items marked `#[cfg(test)]`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::buffer::Cursor;
use syn::visit::{self, Visit};
use syn::{ImplItem, Item, UseTree};

mod rust_source;
use rust_source::{impl_item_attrs, is_cfg_test, item_attrs};

/// The bridge's layers, from the top. The settings at the bottom (`tokens`, `limits`, `ids`) are
/// read by every layer; `config` (the command-line flags as a struct) holds the operator's policy
/// and tools, so it sits above `calls`, and only the bridge, the cluster and the routes read it.
const BRIDGE_LAYERS: [&[&str]; 10] = [
    &["routes"],
    &["bridge"],
    &["cluster"],
    &["agent"],
    &["sessions"],
    &["config"],
    &["calls"],
    &["page"],
    &["tokens"],
    &["limits", "ids"],
];

/// The SDK's layers, from the top (docs/architecture.md, *Imports read top-down*): the classes
/// JavaScript constructs; the driver of the page's outputs; what it drives (the person, the
/// socket, WebMCP, the resources and prompts); the session kept in `sessionStorage`; the page engine's loop; what the page
/// keeps and emits; the dialog and declarations; the JavaScript glue.
const SDK_LAYERS: [&[&str]; 8] = [
    &["api", "validator"],
    &["driver"],
    &["ask", "transport", "webmcp", "page_server"],
    &["session"],
    &["page"],
    &["events", "options", "webmcp_state", "typescript"],
    &["ui", "declaration", "errors"],
    &["js", "oneshot"],
];

/// What one module declares and brings into scope.
#[derive(Debug, Default)]
struct Scope {
    /// The module of the file it is written in (itself, but for an inline `mod x { … }`).
    file_module: Vec<String>,
    /// Its child modules (`mod x;`, `mod x { … }`).
    children: BTreeSet<String>,
    /// The names its items define (a `pub use crate::x::*` of it finds them).
    items: BTreeSet<String>,
    /// The names its `use`s bring in, with the path each stands for, as written here.
    uses: BTreeMap<String, Vec<String>>,
    /// The paths of its glob imports, as written here.
    globs: Vec<Vec<String>>,
}

/// A path one module names, as written.
#[derive(Debug)]
struct Mention {
    /// The file it is written in, as the messages name it.
    file: String,
    module: Vec<String>,
    written: Vec<String>,
    /// `use`, or a path in code or in a macro.
    how: &'static str,
}

impl Mention {
    fn describe(&self) -> String {
        let path = self.written.join("::");
        match self.how {
            "use" => format!("{}: use {path}", self.file),
            how => format!("{}: {path} (in {how})", self.file),
        }
    }
}

/// A crate read from its root: every module and what each names.
#[derive(Debug, Default)]
struct Tree {
    modules: BTreeMap<Vec<String>, Scope>,
    mentions: Vec<Mention>,
    /// The files read as code, and those only test code declares.
    code_files: BTreeSet<PathBuf>,
    test_files: BTreeSet<PathBuf>,
}

/// The name an item defines, if it defines one.
fn item_name(item: &Item) -> Option<String> {
    let ident = match item {
        Item::Const(i) => &i.ident,
        Item::Enum(i) => &i.ident,
        Item::Fn(i) => &i.sig.ident,
        Item::Macro(i) => i.ident.as_ref()?,
        Item::Static(i) => &i.ident,
        Item::Struct(i) => &i.ident,
        Item::Trait(i) => &i.ident,
        Item::TraitAlias(i) => &i.ident,
        Item::Type(i) => &i.ident,
        Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

/// Every path of two or more names in a macro's tokens (`crate::ids::hex`), at any depth.
fn macro_paths(mac: &syn::Macro) -> Vec<Vec<String>> {
    fn walk<'a>(mut cursor: Cursor<'a>, found: &mut Vec<Vec<String>>) -> Cursor<'a> {
        while !cursor.eof() {
            if let Some((inside, _, _, next)) = cursor.any_group() {
                walk(inside, found);
                cursor = next;
            } else if let Some((first, mut next)) = cursor.ident() {
                let mut path = vec![first.to_string()];
                // `::` is two `:` tokens, then the next name.
                let colon = |cursor: Cursor<'a>| {
                    let (_, after) = cursor.punct().filter(|(p, _)| p.as_char() == ':')?;
                    Some(after)
                };
                while let Some((segment, after)) =
                    colon(next).and_then(colon).and_then(|after| after.ident())
                {
                    path.push(segment.to_string());
                    next = after;
                }
                if path.len() > 1 {
                    found.push(path);
                }
                cursor = next;
            } else {
                cursor = cursor.token_tree().map_or(cursor, |(_, next)| next);
            }
        }
        cursor
    }
    mac.parse_body_with(|input: syn::parse::ParseStream| {
        input.step(|cursor| {
            let mut found = Vec::new();
            let end = walk(*cursor, &mut found);
            Ok((found, end))
        })
    })
    .unwrap_or_default()
}

/// Reads one file of a crate into a [`Tree`].
struct FileReader<'t> {
    tree: &'t mut Tree,
    file: String,
    /// The module being read (an inline `mod` inside the file pushes its name).
    module: Vec<String>,
    /// The file's module.
    file_module: Vec<String>,
    /// Where the files of modules declared here are (`mod x;` is `dir/x.rs` or `dir/x/mod.rs`).
    dir: PathBuf,
    /// The folder of the file itself (where a `#[path]` is relative to).
    file_dir: PathBuf,
    /// Test code: only its module declarations are read (their files are test files).
    in_test: bool,
    /// Files declared here, with their module path and whether only test code declares them.
    declared: Vec<(PathBuf, Vec<String>, bool)>,
    load: &'t dyn Fn(&Path) -> Option<String>,
}

impl FileReader<'_> {
    fn scope(&mut self) -> &mut Scope {
        let file_module = &self.file_module;
        self.tree
            .modules
            .entry(self.module.clone())
            .or_insert_with(|| Scope {
                file_module: file_module.clone(),
                ..Scope::default()
            })
    }

    fn mention(&mut self, written: Vec<String>, how: &'static str) {
        if self.in_test {
            return;
        }
        self.tree.mentions.push(Mention {
            file: self.file.clone(),
            module: self.module.clone(),
            written,
            how,
        });
    }

    fn module_file(&self, module: &syn::ItemMod) -> PathBuf {
        let path_attr = module.attrs.iter().find_map(|attr| match &attr.meta {
            syn::Meta::NameValue(pair) if pair.path.is_ident("path") => match &pair.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(path),
                    ..
                }) => Some(path.value()),
                _ => None,
            },
            _ => None,
        });
        if let Some(path) = path_attr {
            return self.file_dir.join(path);
        }
        let name = module.ident.to_string();
        let flat = self.dir.join(format!("{name}.rs"));
        match (self.load)(&flat) {
            Some(_) => flat,
            None => self.dir.join(name).join("mod.rs"),
        }
    }

    /// One `use` tree under `prefix`: each path it names, and the names it brings in.
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &UseTree) {
        match tree {
            UseTree::Path(path) => {
                prefix.push(path.ident.to_string());
                self.use_tree(prefix, &path.tree);
                prefix.pop();
            }
            UseTree::Group(group) => {
                for tree in &group.items {
                    self.use_tree(prefix, tree);
                }
            }
            UseTree::Name(name) => {
                let mut path = prefix.clone();
                // `{self, …}` names the prefix itself.
                if name.ident != "self" {
                    path.push(name.ident.to_string());
                }
                if let Some(bound) = path.last().cloned() {
                    if !self.in_test {
                        self.scope().uses.insert(bound, path.clone());
                    }
                }
                self.mention(path, "use");
            }
            UseTree::Rename(rename) => {
                let mut path = prefix.clone();
                if rename.ident != "self" {
                    path.push(rename.ident.to_string());
                }
                if rename.rename != "_" && !self.in_test {
                    let bound = rename.rename.to_string();
                    self.scope().uses.insert(bound, path.clone());
                }
                self.mention(path, "use");
            }
            UseTree::Glob(_) => {
                if !self.in_test {
                    self.scope().globs.push(prefix.clone());
                }
                self.mention(prefix.clone(), "use");
            }
        }
    }
}

impl<'ast> Visit<'ast> for FileReader<'_> {
    fn visit_item(&mut self, item: &'ast Item) {
        let was_test = self.in_test;
        self.in_test |= is_cfg_test(item_attrs(item));
        if !self.in_test {
            if let Some(name) = item_name(item) {
                self.scope().items.insert(name.clone());
                // A `#[macro_export]` macro is named from the crate's root: `crate::name!`.
                let exported = matches!(item, Item::Macro(_))
                    && item_attrs(item)
                        .iter()
                        .any(|attr| attr.path().is_ident("macro_export"));
                if exported {
                    let mut path = vec!["crate".to_owned()];
                    path.extend(self.module.iter().cloned());
                    path.push(name.clone());
                    let root = self.tree.modules.entry(Vec::new()).or_default();
                    root.uses.insert(name, path);
                }
            }
        }
        match item {
            Item::Mod(module) => {
                let name = module.ident.to_string();
                let mut path = self.module.clone();
                path.push(name.clone());
                if !self.in_test {
                    self.scope().children.insert(name.clone());
                }
                match &module.content {
                    None => {
                        let file = self.module_file(module);
                        self.declared.push((file, path, self.in_test));
                    }
                    Some(_) => {
                        let outer = (self.module.clone(), self.dir.clone());
                        self.module = path;
                        self.dir = outer.1.join(&name);
                        if !self.in_test {
                            self.scope();
                        }
                        visit::visit_item(self, item);
                        (self.module, self.dir) = outer;
                    }
                }
            }
            Item::Use(use_item) => {
                let mut prefix = Vec::new();
                if use_item.leading_colon.is_none() {
                    self.use_tree(&mut prefix, &use_item.tree);
                }
            }
            _ => visit::visit_item(self, item),
        }
        self.in_test = was_test;
    }

    fn visit_impl_item(&mut self, item: &'ast ImplItem) {
        let was_test = self.in_test;
        self.in_test |= is_cfg_test(impl_item_attrs(item));
        visit::visit_impl_item(self, item);
        self.in_test = was_test;
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            let written = path.segments.iter().map(|s| s.ident.to_string()).collect();
            self.mention(written, "code");
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        visit::visit_macro(self, mac);
        for path in macro_paths(mac) {
            self.mention(path, "a macro");
        }
    }

    /// `pub(in crate::x)` says who sees an item, it imports nothing.
    fn visit_vis_restricted(&mut self, _: &'ast syn::VisRestricted) {}
}

/// Reads the crate whose root file is `root` (`lib.rs`), with `load` giving a file's text.
fn read_crate(
    root: &Path,
    label: &dyn Fn(&Path) -> String,
    load: &dyn Fn(&Path) -> Option<String>,
) -> Tree {
    let mut tree = Tree::default();
    let mut queue = vec![(root.to_path_buf(), Vec::<String>::new(), false)];
    while let Some((path, module, in_test)) = queue.pop() {
        let seen = match in_test {
            true => &mut tree.test_files,
            false => &mut tree.code_files,
        };
        if !seen.insert(path.clone()) {
            continue;
        }
        let text = load(&path).unwrap_or_else(|| panic!("{}: not readable", path.display()));
        let file =
            syn::parse_file(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let file_dir = path.parent().expect("a file in a folder").to_path_buf();
        let name = path.file_name().expect("a file").to_string_lossy();
        // `mod.rs` and `lib.rs` declare modules beside them; `x.rs` in `x/`.
        let dir = match name.as_ref() {
            "mod.rs" | "lib.rs" | "main.rs" => file_dir.clone(),
            _ => file_dir.join(name.trim_end_matches(".rs")),
        };
        let mut reader = FileReader {
            file: label(&path),
            tree: &mut tree,
            file_module: module.clone(),
            module,
            dir,
            file_dir,
            in_test,
            declared: Vec::new(),
            load,
        };
        if !in_test {
            reader.scope();
        }
        reader.visit_file(&file);
        queue.extend(reader.declared);
    }
    tree
}

impl Tree {
    /// A module's unit at `depth`: the first `depth` names of its file's module (the crate's root
    /// is `lib`; an inline module is its file's).
    fn unit(&self, module: &[String], depth: usize) -> String {
        let file_module = self
            .modules
            .get(module)
            .map_or(module, |scope| scope.file_module.as_slice());
        match file_module.is_empty() {
            true => "lib".to_owned(),
            false => file_module[..file_module.len().min(depth)].join("::"),
        }
    }

    /// The absolute path `written` stands for in `module`, followed through re-exports; `None`
    /// for a path outside the crate (another crate, a type's associated item).
    fn resolve(&self, module: &[String], written: &[String], hops: usize) -> Option<Vec<String>> {
        if hops > 32 {
            return None;
        }
        let (first, mut rest) = written.split_first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => module.to_vec(),
            "super" => {
                let mut base = module.to_vec();
                base.pop()?;
                while rest.first().is_some_and(|name| name == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
                base
            }
            name => {
                let scope = self.modules.get(module)?;
                if scope.children.contains(name) {
                    let mut base = module.to_vec();
                    base.push(name.to_owned());
                    base
                } else {
                    let target = scope.uses.get(name)?;
                    // `use rmcp::{self}` binds `rmcp` to itself: another crate.
                    if target.as_slice() == written {
                        return None;
                    }
                    self.resolve(module, target, hops + 1)?
                }
            }
        };
        base.extend(rest.iter().cloned());
        Some(self.canonical(base, hops + 1))
    }

    /// `path` with what its module re-exports followed to where it is defined.
    fn canonical(&self, path: Vec<String>, hops: usize) -> Vec<String> {
        let known = (0..=path.len())
            .rev()
            .find(|&len| self.modules.contains_key(&path[..len]))
            .unwrap_or(0);
        let (module, rest) = path.split_at(known);
        let Some(name) = rest.first() else {
            return path;
        };
        let Some(scope) = self.modules.get(module) else {
            return path;
        };
        if scope.items.contains(name) || hops > 32 {
            return path;
        }
        let via = match scope.uses.get(name) {
            Some(target) => self.resolve(module, target, hops + 1),
            // A name of a glob-imported module (`pub use agent::*`).
            None => scope.globs.iter().find_map(|glob| {
                let glob = self.resolve(module, glob, hops + 1)?;
                let from = self.modules.get(&glob)?;
                let defines = from.items.contains(name)
                    || from.uses.contains_key(name)
                    || from.children.contains(name);
                defines.then(|| {
                    let mut path = glob;
                    path.push(name.clone());
                    self.canonical(path, hops + 1)
                })
            }),
        };
        match via {
            Some(mut target) => {
                target.extend(rest[1..].iter().cloned());
                target
            }
            None => path,
        }
    }

    /// The module `path` is in (its longest prefix that is a module).
    fn module_of<'p>(&self, path: &'p [String]) -> &'p [String] {
        let known = (0..=path.len())
            .rev()
            .find(|&len| self.modules.contains_key(&path[..len]))
            .unwrap_or(0);
        &path[..known]
    }

    /// The modules at `depth` (every one of them, imports or not), with what each imports and
    /// where it says so.
    fn graph(&self, depth: usize) -> Graph {
        let mut graph = Graph::new();
        for module in self.modules.keys() {
            graph.entry(self.unit(module, depth)).or_default();
        }
        for mention in &self.mentions {
            let Some(target) = self.resolve(&mention.module, &mention.written, 0) else {
                continue;
            };
            let from = self.unit(&mention.module, depth);
            let to = self.unit(self.module_of(&target), depth);
            if from != to {
                graph
                    .entry(from)
                    .or_default()
                    .entry(to)
                    .or_default()
                    .push(mention.describe());
            }
        }
        graph
    }
}

/// Module → the modules it imports → where (file and path) it does.
type Graph = BTreeMap<String, BTreeMap<String, Vec<String>>>;

/// Every circle of `graph`, each as the modules it passes through.
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    fn visit(
        node: &str,
        graph: &Graph,
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
        for next in graph.get(node).into_iter().flat_map(BTreeMap::keys) {
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

/// A circle told by the imports that make it.
fn describe_circle(graph: &Graph, circle: &[String]) -> String {
    let mut told = vec![circle.join(" → ") + " → " + &circle[0]];
    for (at, from) in circle.iter().enumerate() {
        let to = &circle[(at + 1) % circle.len()];
        for place in &graph[from][to] {
            told.push(format!("  {from} → {to}: {place}"));
        }
    }
    told.join("\n")
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Reads the crate of `dir` (under the repository) from its `lib.rs`; every `.rs` file there is
/// read, as code or as test code, but the other crate roots in `others`.
fn read_dir_crate(dir: &str, others: &[&str]) -> Tree {
    let src = repo().join(dir);
    let label = |path: &Path| {
        let relative = path.strip_prefix(repo()).unwrap_or(path);
        relative.to_string_lossy().replace('\\', "/")
    };
    let load = |path: &Path| std::fs::read_to_string(path).ok();
    let tree = read_crate(&src.join("lib.rs"), &label, &load);
    let mut stack = vec![src.clone()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).expect("a readable folder") {
            let path = entry.expect("a readable entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs")
                && !others.iter().any(|other| path == src.join(other))
            {
                assert!(
                    tree.code_files.contains(&path) || tree.test_files.contains(&path),
                    "{} is no module of its crate that this test reached",
                    label(&path)
                );
            }
        }
    }
    tree
}

/// Each import from a module of one layer to a module of a layer above it (or one `rank` does
/// not place, but the crate's root), with the file and the path that make it.
fn upward_imports(graph: &Graph, rank: impl Fn(&str) -> Option<usize>) -> Vec<String> {
    let mut upward = Vec::new();
    for (from, targets) in graph {
        let Some(from_rank) = rank(from) else {
            continue;
        };
        for (target, places) in targets {
            let above = match rank(target) {
                Some(target_rank) => target_rank < from_rank,
                None => true,
            };
            if above {
                for place in places {
                    upward.push(format!(
                        "{place}: {from} imports {target}, a layer above it"
                    ));
                }
            }
        }
    }
    upward
}

#[test]
fn each_sdk_layer_imports_only_the_layers_below_it() {
    let graph = read_dir_crate("src", &[]).graph(1);
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
    assert!(upward.is_empty(), "{}", upward.join("\n"));
}

#[test]
fn each_bridge_layer_imports_only_the_layers_below_it() {
    let graph = read_dir_crate("crates/bridge/src", &["main.rs"]).graph(1);
    let rank = |module: &str| {
        BRIDGE_LAYERS
            .iter()
            .position(|layer| layer.contains(&module))
    };
    let unplaced: Vec<&String> = graph
        .keys()
        .filter(|module| *module != "lib" && rank(module).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules of the bridge in no layer of BRIDGE_LAYERS: {unplaced:?}"
    );
    let upward = upward_imports(&graph, rank);
    assert!(upward.is_empty(), "{}", upward.join("\n"));
    // The check sees the imports it judges: every layer below the routes is imported by one above.
    for layer in BRIDGE_LAYERS[1..].iter().flat_map(|layer| layer.iter()) {
        assert!(
            graph.values().any(|targets| targets.contains_key(*layer)),
            "nothing imports {layer}: the reading of imports is broken"
        );
    }
}

#[test]
fn no_modules_import_each_other_in_a_circle() {
    let mut found = Vec::new();
    for (dir, depth, others) in [
        ("crates/bridge/src", 2, &["main.rs"][..]),
        ("crates/core/src", 1, &[][..]),
        ("src", 1, &[][..]),
    ] {
        let graph = read_dir_crate(dir, others).graph(depth);
        assert!(
            graph.values().map(BTreeMap::len).sum::<usize>() > 10,
            "{dir}: the reading of imports found almost none"
        );
        for circle in circles(&graph) {
            found.push(format!("{dir}: {}", describe_circle(&graph, &circle)));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn the_circle_finder_finds_a_circle() {
    let mut graph = Graph::new();
    for (from, to) in [("a", "b"), ("b", "c"), ("c", "a")] {
        graph
            .entry(from.to_owned())
            .or_default()
            .insert(to.to_owned(), vec![format!("{from}.rs: use crate::{to}")]);
    }
    assert_eq!(circles(&graph), [["a", "b", "c"]]);
    assert!(describe_circle(&graph, &circles(&graph)[0]).contains("c → a: c.rs: use crate::a"));
}

/// The imports a crate of `files` (path under `src/` → text) makes at `depth`, as
/// `from → to` pairs.
fn imports_of(files: &[(&str, &str)], depth: usize) -> BTreeSet<(String, String)> {
    let files: BTreeMap<PathBuf, String> = files
        .iter()
        .map(|(path, text)| (Path::new("src").join(path), (*text).to_owned()))
        .collect();
    let load = |path: &Path| files.get(path).cloned();
    let label = |path: &Path| path.to_string_lossy().into_owned();
    let tree = read_crate(Path::new("src/lib.rs"), &label, &load);
    for path in files.keys() {
        assert!(
            tree.code_files.contains(path) || tree.test_files.contains(path),
            "{} not reached",
            path.display()
        );
    }
    tree.graph(depth)
        .into_iter()
        .flat_map(|(from, targets)| targets.into_keys().map(move |to| (from.clone(), to)))
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    expected
        .iter()
        .map(|(from, to)| ((*from).to_owned(), (*to).to_owned()))
        .collect()
}

/// A crate of the modules `a`, `b`, `c` (files) and `x` (a folder of `y`, `z`), beside `files`.
fn with_modules<'f>(files: &[(&'f str, &'f str)]) -> Vec<(&'f str, &'f str)> {
    let mut all = vec![
        ("lib.rs", "mod a; mod b; mod c; mod x;"),
        ("a.rs", ""),
        ("x/mod.rs", "pub mod y; pub mod z;"),
        ("x/y.rs", "pub fn f() {}"),
        ("x/z.rs", "pub struct Z;"),
        ("b.rs", "pub mod inner { pub fn g() {} }"),
        ("c.rs", "pub fn h() {}"),
    ];
    for (path, text) in files {
        all.retain(|(p, _)| p != path);
        all.push((path, text));
    }
    all
}

#[test]
fn the_reading_finds_a_use_group_at_the_crate_root() {
    // `use crate::{a, b}` (src/api.rs: `use crate::{declaration, driver, …}`).
    let found = imports_of(&with_modules(&[("a.rs", "use crate::{b, c};")]), 1);
    assert_eq!(found, pairs(&[("a", "b"), ("a", "c")]));
}

#[test]
fn the_reading_finds_a_group_below_a_module() {
    // `crate::x::{y, z}`, seen as two modules at depth 2.
    let found = imports_of(&with_modules(&[("a.rs", "use crate::x::{y::f, z::Z};")]), 2);
    assert_eq!(found, pairs(&[("a", "x::y"), ("a", "x::z")]));
}

#[test]
fn the_reading_finds_a_sibling_by_super() {
    // `super::mcp::…` in routes/agent.rs: the sibling, not the parent.
    let found = imports_of(&with_modules(&[("x/y.rs", "use super::z::Z;")]), 2);
    assert_eq!(found, pairs(&[("x::y", "x::z")]));
    // `super::super::` and `self::` too.
    let found = imports_of(
        &with_modules(&[
            ("x/y.rs", "mod deep { use super::super::z::Z; }"),
            ("x/mod.rs", "pub mod y; pub mod z; use self::z::Z;"),
        ]),
        2,
    );
    assert_eq!(found, pairs(&[("x::y", "x::z"), ("x", "x::z")]));
}

#[test]
fn the_reading_finds_nested_groups_self_renames_and_globs() {
    let found = imports_of(
        &with_modules(&[("a.rs", "use crate::x::{self, y::{self as why}, z::*};")]),
        2,
    );
    assert_eq!(found, pairs(&[("a", "x"), ("a", "x::y"), ("a", "x::z")]));
    let found = imports_of(&with_modules(&[("a.rs", "use crate::c as see;")]), 1);
    assert_eq!(found, pairs(&[("a", "c")]));
}

#[test]
fn the_reading_finds_paths_in_code_and_in_macros() {
    let found = imports_of(
        &with_modules(&[(
            "a.rs",
            "fn run(z: crate::x::z::Z) { crate::c::h(); let _ = format!(\"{:?}\", crate::b::inner::g()); }",
        )]),
        2,
    );
    assert_eq!(found, pairs(&[("a", "x::z"), ("a", "c"), ("a", "b")]));
    // A child module named without `self::`, and a module a `use` brought in.
    let found = imports_of(
        &with_modules(&[
            ("x/mod.rs", "pub mod y; pub mod z; fn go() { y::f(); }"),
            ("a.rs", "use crate::x::z; fn go() -> z::Z { z::Z }"),
        ]),
        2,
    );
    assert_eq!(found, pairs(&[("x", "x::y"), ("a", "x::z")]));
    // A `#[macro_export]` macro, named from the crate's root, is its module's.
    let found = imports_of(
        &with_modules(&[
            ("c.rs", "#[macro_export] macro_rules! m { () => {} }"),
            ("a.rs", "crate::m!();"),
        ]),
        1,
    );
    assert_eq!(found, pairs(&[("a", "c")]));
}

#[test]
fn the_reading_follows_re_exports() {
    // `use crate::Thing` is an import of the module that defines it, through a glob as well.
    let found = imports_of(
        &with_modules(&[
            (
                "lib.rs",
                "mod a; mod b; mod c; mod x; pub use x::z::Z; pub use c::*;",
            ),
            ("a.rs", "use crate::{h, Z};"),
        ]),
        2,
    );
    assert_eq!(
        found,
        pairs(&[("a", "x::z"), ("a", "c"), ("lib", "x::z"), ("lib", "c")])
    );
}

#[test]
fn the_reading_skips_test_code_comments_and_strings() {
    let found = imports_of(
        &with_modules(&[
            (
                "a.rs",
                "// use crate::b;\n/// crate::b::inner::g\nfn f() { let _ = \"crate::b::inner\"; }\n\
                 #[cfg(test)] use crate::c::h;\n\
                 struct S; impl S { #[cfg(test)] fn t() { crate::c::h() } }\n\
                 #[cfg(test)] mod tests { use crate::b; }\n\
                 #[cfg(test)] mod helper;",
            ),
            ("a/helper.rs", "use crate::x::z::Z;"),
        ]),
        2,
    );
    assert_eq!(found, pairs(&[]));
}

#[test]
fn an_upward_import_is_told_by_its_file_and_path() {
    let files: BTreeMap<PathBuf, String> = [
        ("src/lib.rs", "mod high; mod low;"),
        ("src/high.rs", "pub struct H;"),
        ("src/low.rs", "use crate::{high::H};"),
    ]
    .into_iter()
    .map(|(path, text)| (PathBuf::from(path), text.to_owned()))
    .collect();
    let load = |path: &Path| files.get(path).cloned();
    let label = |path: &Path| path.to_string_lossy().into_owned();
    let graph = read_crate(Path::new("src/lib.rs"), &label, &load).graph(1);
    let layers = ["high", "low"];
    let upward = upward_imports(&graph, |module| layers.iter().position(|l| *l == module));
    assert_eq!(
        upward,
        ["src/low.rs: use crate::high::H: low imports high, a layer above it"]
    );
}
