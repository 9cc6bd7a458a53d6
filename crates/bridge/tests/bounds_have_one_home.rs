//! Every bound of the bridge has one home, `src/limits/` (docs/security.md lists them): a `const`
//! or `static` of a duration, a size or a count defined anywhere else in `src/` fails this test,
//! which names it. What counts as a bound:
//!
//! - by its type: `Duration`, any integer or float type, `NonZero…`, or an array, tuple,
//!   reference or generic (`Option<u64>`) of one;
//! - or by its name, whatever its type: `MAX_…`, `MIN_…`, or ending in `_MS`, `_BYTES`,
//!   `_TIMEOUT`, `_TTL`, `_INTERVAL` and the other marks of [`BOUND_NAME_ENDINGS`].
//!
//! Consts at any depth count: in an `impl` or a trait, inside a function, in an inline module.
//! Test code is not read: files that only `#[cfg(test)]` modules reach, and items marked
//! `#[cfg(test)]`. The sources are read as Rust (syn), so a comment or a string is never taken for
//! a const, and no const escapes by its layout. The numeric consts that are no bounds (codes a
//! protocol fixes) are allowed in [`NOT_BOUNDS`], each with why.
//!
//! And the home keeps its promises: every bound there has its doc comment, and docs/security.md
//! (*Bounds*) names each of them, and no bound that is neither the bridge's nor the core's.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use syn::visit::{self, Visit};
use syn::{ImplItem, Item, Type};

mod rust_source;
use rust_source::{impl_item_attrs, is_cfg_test, item_attrs};

/// Numeric consts outside `limits/` that are no bounds: (file under `src/`, name, why).
const NOT_BOUNDS: [(&str, &str, &str); 3] = [
    (
        "routes/page.rs",
        "CLOSE_POLICY",
        "the WebSocket close code for a policy violation (RFC 6455 §7.4.1: 1008)",
    ),
    (
        "routes/page.rs",
        "CLOSE_IDLE",
        "the WebSocket close code for going away (RFC 6455 §7.4.1: 1001)",
    ),
    (
        "sessions/page_session/mod.rs",
        "CLOSE_REPLACED",
        "the bridge's own WebSocket close code (4000, in the private range of RFC 6455 §7.4.2) for \
         a connection another one with the session's secret replaced",
    ),
];

/// A name ending in one of these names a bound, whatever its type.
const BOUND_NAME_ENDINGS: [&str; 26] = [
    "_MS",
    "_SECS",
    "_SECONDS",
    "_BYTES",
    "_CHARS",
    "_HEX",
    "_TIMEOUT",
    "_TTL",
    "_INTERVAL",
    "_EVERY",
    "_AFTER",
    "_WITHIN",
    "_WAIT",
    "_GRACE",
    "_SLACK",
    "_BACKOFF",
    "_LEASE",
    "_RETENTION",
    "_BUDGET",
    "_BUFFER",
    "_QUEUE",
    "_LIMIT",
    "_CAPACITY",
    "_DEPTH",
    "_NESTING",
    "_BEATS",
];

/// Types of durations, sizes and counts (the last segment of a type's path).
const BOUND_TYPES: [&str; 15] = [
    "Duration", "usize", "isize", "u8", "u16", "u32", "u64", "u128", "i8", "i16", "i32", "i64",
    "i128", "f32", "f64",
];

/// A bound defined outside its home.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Found {
    /// The file, under `src/`.
    file: String,
    name: String,
    /// Why it is a bound: its type, or its name.
    why: String,
}

/// Why a const of `name` and `ty` is a bound; `None` when it is none.
fn bound(name: &str, ty: &Type) -> Option<String> {
    if let Some(ty) = bound_type(ty) {
        return Some(format!("its type is {ty}"));
    }
    let by_name = name.starts_with("MAX_")
        || name.starts_with("MIN_")
        || BOUND_NAME_ENDINGS.iter().any(|end| name.ends_with(end));
    by_name.then(|| "its name says it is a bound".to_owned())
}

/// The duration, size or count type in `ty`, if any.
fn bound_type(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(path) => {
            let last = path.path.segments.last()?;
            let ident = last.ident.to_string();
            if BOUND_TYPES.contains(&ident.as_str()) || ident.starts_with("NonZero") {
                return Some(ident);
            }
            match &last.arguments {
                syn::PathArguments::AngleBracketed(args) => {
                    args.args.iter().find_map(|arg| match arg {
                        syn::GenericArgument::Type(ty) => bound_type(ty),
                        _ => None,
                    })
                }
                _ => None,
            }
        }
        Type::Array(array) => bound_type(&array.elem),
        Type::Slice(slice) => bound_type(&slice.elem),
        Type::Reference(reference) => bound_type(&reference.elem),
        Type::Paren(paren) => bound_type(&paren.elem),
        Type::Group(group) => bound_type(&group.elem),
        Type::Tuple(tuple) => tuple.elems.iter().find_map(bound_type),
        _ => None,
    }
}

/// Reads one file: the bounds it defines, and the files of the modules it declares.
struct Reader {
    /// Where the files of modules declared at the current level are (`mod x;` is `dir/x.rs` or
    /// `dir/x/mod.rs`).
    dir: PathBuf,
    /// The folder of the file itself (where a `#[path]` is relative to).
    file_dir: PathBuf,
    /// Consts and statics that are bounds: name, why.
    bounds: Vec<(String, String)>,
    /// Module files declared outside test code, and those only test code declares.
    modules: Vec<PathBuf>,
    test_modules: Vec<PathBuf>,
}

impl Reader {
    fn note(&mut self, name: &syn::Ident, ty: &Type) {
        let name = name.to_string();
        if let Some(why) = bound(&name, ty) {
            self.bounds.push((name, why));
        }
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
        match flat.exists() {
            true => flat,
            false => self.dir.join(name).join("mod.rs"),
        }
    }
}

impl<'ast> Visit<'ast> for Reader {
    fn visit_item(&mut self, item: &'ast Item) {
        if let Item::Mod(module) = item {
            if module.content.is_none() {
                let file = self.module_file(module);
                match is_cfg_test(&module.attrs) {
                    true => self.test_modules.push(file),
                    false => self.modules.push(file),
                }
                return;
            }
        }
        if is_cfg_test(item_attrs(item)) {
            return;
        }
        match item {
            Item::Mod(module) => {
                let outer = self.dir.clone();
                self.dir = outer.join(module.ident.to_string());
                visit::visit_item(self, item);
                self.dir = outer;
            }
            Item::Const(constant) => {
                self.note(&constant.ident, &constant.ty);
                visit::visit_item(self, item);
            }
            Item::Static(stat) => {
                self.note(&stat.ident, &stat.ty);
                visit::visit_item(self, item);
            }
            _ => visit::visit_item(self, item),
        }
    }

    fn visit_impl_item(&mut self, item: &'ast ImplItem) {
        if is_cfg_test(impl_item_attrs(item)) {
            return;
        }
        if let ImplItem::Const(constant) = item {
            self.note(&constant.ident, &constant.ty);
        }
        visit::visit_impl_item(self, item);
    }

    fn visit_trait_item_const(&mut self, constant: &'ast syn::TraitItemConst) {
        if !is_cfg_test(&constant.attrs) {
            self.note(&constant.ident, &constant.ty);
        }
        visit::visit_trait_item_const(self, constant);
    }
}

/// Reads `text`, the file `path`: its bounds and its modules' files.
fn read(path: &Path, text: &str) -> Reader {
    let file_dir = path.parent().expect("a file in a folder").to_path_buf();
    let name = path.file_name().expect("a file").to_string_lossy();
    // `mod.rs`, `lib.rs` and `main.rs` declare modules beside them; `x.rs` in `x/`.
    let dir = match name.as_ref() {
        "mod.rs" | "lib.rs" | "main.rs" => file_dir.clone(),
        _ => file_dir.join(name.trim_end_matches(".rs")),
    };
    let mut reader = Reader {
        dir,
        file_dir,
        bounds: Vec::new(),
        modules: Vec::new(),
        test_modules: Vec::new(),
    };
    let file = syn::parse_file(text).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    reader.visit_file(&file);
    reader
}

/// Every bound defined in `src` outside `src/limits/`, but those [`NOT_BOUNDS`] allows; and the
/// files read.
fn bounds_outside_limits(src: &Path) -> (Vec<Found>, BTreeSet<PathBuf>) {
    let mut queue = vec![src.join("lib.rs"), src.join("main.rs")];
    let mut read_files = BTreeSet::new();
    let mut test_files = BTreeSet::new();
    let mut found = Vec::new();
    while let Some(path) = queue.pop() {
        if !read_files.insert(path.clone()) {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let reader = read(&path, &text);
        queue.extend(reader.modules);
        test_files.extend(reader.test_modules);
        let file = path
            .strip_prefix(src)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/");
        if file.starts_with("limits/") {
            continue;
        }
        for (name, why) in reader.bounds {
            let allowed = NOT_BOUNDS.iter().any(|(f, n, _)| *f == file && *n == name);
            if !allowed {
                found.push(Found {
                    file: file.clone(),
                    name,
                    why,
                });
            }
        }
    }
    // Every file is reached, from the crate's roots or from test code: none is left unread.
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("a readable folder") {
            let path = entry.expect("a readable entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                assert!(
                    read_files.contains(&path) || test_files.contains(&path),
                    "{} is no module of the crate that this test knows of",
                    path.display()
                );
            }
        }
    }
    found.sort();
    (found, read_files)
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn every_bound_of_the_bridge_is_in_limits() {
    let (found, read_files) = bounds_outside_limits(&src());
    // The reading reaches the crate: its layers and its limits.
    for file in [
        "routes/page.rs",
        "cluster/mod.rs",
        "calls/policy/condition.rs",
        "limits/page.rs",
    ] {
        assert!(
            read_files.contains(&src().join(file)),
            "{file} was not read"
        );
    }
    let listed: Vec<String> = found
        .iter()
        .map(|f| {
            format!(
                "src/{}: {} ({}): move it to src/limits/ (or, if it is no bound, allow it in \
                 NOT_BOUNDS, saying why)",
                f.file, f.name, f.why
            )
        })
        .collect();
    assert!(
        listed.is_empty(),
        "bounds outside src/limits/:\n{}",
        listed.join("\n")
    );
}

#[test]
fn the_allowed_consts_exist() {
    // An allowed const that is gone (or moved) is no longer allowed silently elsewhere.
    for (file, name, _) in NOT_BOUNDS {
        let text = std::fs::read_to_string(src().join(file)).expect("an allowed const's file");
        let reader = read(&src().join(file), &text);
        assert!(
            reader.bounds.iter().any(|(n, _)| n == name),
            "{file} defines no {name}: take it out of NOT_BOUNDS"
        );
    }
}

#[test]
fn every_bound_in_limits_is_documented_at_its_home() {
    let mut undocumented = Vec::new();
    for entry in std::fs::read_dir(src().join("limits")).expect("src/limits/") {
        let path = entry.expect("a readable entry").path();
        let text = std::fs::read_to_string(&path).expect("a readable file");
        let file = syn::parse_file(&text).expect("Rust");
        for item in &file.items {
            let (name, attrs) = match item {
                Item::Const(constant) => (constant.ident.to_string(), &constant.attrs),
                Item::Static(stat) => (stat.ident.to_string(), &stat.attrs),
                _ => continue,
            };
            if !attrs.iter().any(|attr| attr.path().is_ident("doc")) {
                undocumented.push(format!("{}: {name}", path.display()));
            }
        }
    }
    assert!(
        undocumented.is_empty(),
        "bounds without a doc comment: {undocumented:#?}"
    );
}

#[test]
fn a_bound_anywhere_outside_limits_is_found() {
    let dir = std::env::temp_dir().join(format!("bounds-lint-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("limits")).unwrap();
    std::fs::create_dir_all(src.join("calls")).unwrap();
    std::fs::write(src.join("main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(
        src.join("limits/mod.rs"),
        "/// Fine here.\npub const MAX_FINE: usize = 1;\n",
    )
    .unwrap();
    std::fs::write(src.join("calls/mod.rs"), "mod inner;\n").unwrap();
    std::fs::write(
        src.join("calls/inner.rs"),
        "pub(crate) const GRACE: Duration = Duration::from_secs(1);\n",
    )
    .unwrap();
    std::fs::write(src.join("calls/tests_only.rs"), "const IGNORED: u64 = 1;\n").unwrap();
    std::fs::write(
        src.join("lib.rs"),
        r#"
        mod calls;
        mod limits;
        #[cfg(test)]
        #[path = "calls/tests_only.rs"]
        mod tests_only;
        // const IN_A_COMMENT: usize = 1;
        const NAME: &str = "const IN_A_STRING: usize = 1;";
        const SUBJECTS: [&str; 2] = ["a", "b"];
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        pub const WINDOW: u32 = 10;
        static DELAYS: [std::time::Duration; 2] = [std::time::Duration::ZERO; 2];
        const ANSWER_TIMEOUT: Option<Wait> = None;
        struct Queue;
        impl Queue {
            pub(crate) const FRAMES: usize = 8;
            fn size() -> usize {
                const INSIDE: u64 = 3;
                INSIDE as usize
            }
        }
        trait Sized { const MAX_ITEMS: Count; }
        mod inline { const DEEP: (u8, bool) = (1, true); }
        #[cfg(test)]
        const TEST_ONLY: u64 = 1;
        #[cfg(test)]
        mod tests { const TIMEOUT: std::time::Duration = std::time::Duration::ZERO; }
        #[cfg(feature = "testing")]
        const FAULT_DELAY_MS: u64 = 5;
        "#,
    )
    .unwrap();
    let (found, _) = bounds_outside_limits(&src);
    let names: Vec<(&str, &str)> = found
        .iter()
        .map(|f| (f.file.as_str(), f.name.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("calls/inner.rs", "GRACE"),
            ("lib.rs", "ANSWER_TIMEOUT"),
            ("lib.rs", "DEEP"),
            ("lib.rs", "DELAYS"),
            ("lib.rs", "FAULT_DELAY_MS"),
            ("lib.rs", "FRAMES"),
            ("lib.rs", "INSIDE"),
            ("lib.rs", "MAX_ITEMS"),
            ("lib.rs", "WINDOW"),
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The names of the bounds in `file` (a Rust source): its consts and statics, and the fields of a
/// struct named `Limits`.
fn bound_names(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).expect("a readable file");
    let file = syn::parse_file(&text).expect("Rust");
    let mut names = Vec::new();
    for item in &file.items {
        match item {
            Item::Const(constant) => names.push(constant.ident.to_string()),
            Item::Static(stat) => names.push(stat.ident.to_string()),
            Item::Struct(limits) if limits.ident == "Limits" => names.extend(
                limits
                    .fields
                    .iter()
                    .filter_map(|field| field.ident.as_ref().map(ToString::to_string)),
            ),
            _ => {}
        }
    }
    names
}

#[test]
fn docs_security_md_lists_the_bounds_of_limits_and_no_other() {
    let doc = std::fs::read_to_string(src().join("../../../docs/security.md")).expect("the doc");
    let start = doc.find("\n## Bounds\n").expect("a Bounds section");
    let end = doc[start + 1..]
        .find("\n## ")
        .map_or(doc.len(), |at| start + 1 + at);
    let section = &doc[start..end];
    let mut ours = BTreeSet::new();
    for entry in std::fs::read_dir(src().join("limits")).expect("src/limits/") {
        ours.extend(bound_names(&entry.expect("a readable entry").path()));
    }
    let missing: Vec<&String> = ours
        .iter()
        .filter(|name| !section.contains(&format!("`{name}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/security.md, Bounds, does not name {missing:?}"
    );
    // Every bound the section names in capitals is the bridge's or the core's.
    let core: BTreeSet<String> = bound_names(&src().join("../../core/src/limits.rs"))
        .into_iter()
        .collect();
    let unknown: Vec<&str> = section
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|quoted| {
            quoted.starts_with(|c: char| c.is_ascii_uppercase())
                && quoted
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        })
        .filter(|name| !ours.contains(*name) && !core.contains(*name))
        .collect();
    assert!(
        unknown.is_empty(),
        "docs/security.md, Bounds, names bounds that are neither the bridge's nor the core's: \
         {unknown:?}"
    );
}
