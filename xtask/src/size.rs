//! `cargo xtask size`: where the wasm module's bytes are, by crate and by function (issue 25).
//!
//! The package's size (build.rs) says how much; this says *who*: so every KB has an owner and a cut
//! can be aimed. It reads the module cargo compiles before wasm-bindgen and wasm-opt
//! ([`module_path`]), because only that one still has the `name` section (wasm-opt strips it).
//! The numbers are therefore un-optimized bytes: wasm-opt shrinks every crate, not evenly, but the
//! ranking holds. A twiggy-style report without twiggy: `wasmparser` reads the code, data, export
//! and name sections, `rustc-demangle` turns each symbol into a Rust path.

use std::collections::HashMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use wasmparser::{ExternalKind, KnownCustom, Name, Parser, Payload, TypeRef};

use crate::{build, wasm, Result};

/// How many functions the top list shows.
const TOP_FUNCTIONS: usize = 30;
/// Longer function names are cut (generic arguments make some of them kilobytes long).
const NAME_CHARS: usize = 100;
/// The bucket of functions with no Rust path and no rule below.
const OTHER: &str = "(other)";
/// The bucket of what `#[wasm_bindgen]` generates and ships: the exported shims and
/// `__wbindgen_*`/`__wbg_*`/`__externref_*` helpers.
const GLUE: &str = "wasm-bindgen glue";
/// `__wbindgen_describe_*`: the type descriptors `#[wasm_bindgen]` generates for the wasm-bindgen
/// CLI, which runs them and removes them: counted, being in this module, but never shipped.
const DESCRIPTORS: &str = "wasm-bindgen descriptors";

/// `cargo xtask size [--markdown | --grep TEXT]`: compiles the module (what changed since the last
/// build), then prints the report, as text or as the Markdown BENCHMARKS.md embeds, or every
/// function whose name contains TEXT, largest first (who owns a crate's bytes).
pub fn size(args: &[String]) -> Result {
    let (markdown_wanted, grep) = match args {
        [] => (false, None),
        [flag] if flag == "--markdown" => (true, None),
        [flag, text] if flag == "--grep" => (false, Some(text.as_str())),
        _ => {
            return Err(format!(
                "unknown arguments {args:?}; usage: cargo xtask size [--markdown | --grep TEXT]"
            ))
        }
    };
    // The module of the sources as they are: cargo recompiles only what changed (seconds when
    // nothing did), so the report never describes an older build.
    build::compile_module(&crate::wasm::WasmCargo::detect()?)?;
    let module = module_path();
    let report = analyze(&module)?;
    if let Some(text) = grep {
        let mut found: Vec<&Function> = report
            .functions
            .iter()
            .filter(|function| function.name.contains(text))
            .collect();
        found.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.name.cmp(&b.name)));
        let total: usize = found.iter().map(|function| function.bytes).sum();
        for function in &found {
            println!(
                "{:>7}  {:<20} {}",
                function.bytes, function.krate, function.name
            );
        }
        println!(
            "{total} bytes in {} functions whose name contains {text:?}",
            found.len()
        );
        return Ok(());
    }
    print!(
        "{}",
        if markdown_wanted {
            markdown(&report)
        } else {
            text(&report)
        }
    );
    Ok(())
}

/// The module `cargo xtask build` compiles (profile wasm-release) before wasm-bindgen and wasm-opt.
pub fn module_path() -> PathBuf {
    wasm::target_dir()
        .join(wasm::TARGET)
        .join(wasm::PROFILE)
        .join("client_tools.wasm")
}

/// The report as Markdown, for BENCHMARKS.md ("Where the module's bytes are").
pub fn markdown_report(path: &Path) -> Result<String> {
    Ok(markdown(&analyze(path)?))
}

/// One function body: its size in the code section, its demangled name and the crate it is put on.
struct Function {
    bytes: usize,
    name: String,
    krate: String,
}

/// What the module holds.
struct Report {
    module: PathBuf,
    file_bytes: usize,
    functions: Vec<Function>,
    /// Data segments (name from the name section, else `#index`), largest first.
    segments: Vec<(String, usize)>,
}

impl Report {
    fn code_bytes(&self) -> usize {
        self.functions.iter().map(|f| f.bytes).sum()
    }

    fn data_bytes(&self) -> usize {
        self.segments.iter().map(|(_, bytes)| bytes).sum()
    }

    /// (crate, code bytes, functions), most bytes first.
    fn crates(&self) -> Vec<(&str, usize, usize)> {
        let mut by_crate: HashMap<&str, (usize, usize)> = HashMap::new();
        for function in &self.functions {
            let entry = by_crate.entry(&function.krate).or_default();
            entry.0 += function.bytes;
            entry.1 += 1;
        }
        let mut rows: Vec<_> = by_crate
            .into_iter()
            .map(|(krate, (bytes, count))| (krate, bytes, count))
            .collect();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        rows
    }

    /// The largest functions, largest first.
    fn top(&self) -> Vec<&Function> {
        let mut functions: Vec<&Function> = self.functions.iter().collect();
        functions.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.name.cmp(&b.name)));
        functions.truncate(TOP_FUNCTIONS);
        functions
    }
}

/// Reads the module: each code-section body with the name of its function index (imports come
/// first in the index space), the exports (to recognize wasm-bindgen's shims) and the data segments.
fn analyze(path: &Path) -> Result<Report> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let err = |e: wasmparser::BinaryReaderError| format!("{}: {e}", path.display());
    let mut imported_functions = 0u32;
    let mut bodies = Vec::new();
    let mut segments = Vec::new();
    let mut function_names = HashMap::new();
    let mut data_names = HashMap::new();
    let mut exported = HashMap::new();
    for payload in Parser::new(0).parse_all(&bytes) {
        match payload.map_err(err)? {
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    if matches!(
                        import.map_err(err)?.ty,
                        TypeRef::Func(_) | TypeRef::FuncExact(_)
                    ) {
                        imported_functions += 1;
                    }
                }
            }
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export.map_err(err)?;
                    if export.kind == ExternalKind::Func {
                        exported.insert(export.index, export.name);
                    }
                }
            }
            Payload::CodeSectionEntry(body) => bodies.push(body.range().len()),
            Payload::DataSection(reader) => {
                for data in reader {
                    segments.push(data.map_err(err)?.data.len());
                }
            }
            Payload::CustomSection(reader) => {
                if let KnownCustom::Name(names) = reader.as_known() {
                    for name in names {
                        let (map, target) = match name.map_err(err)? {
                            Name::Function(map) => (map, &mut function_names),
                            Name::Data(map) => (map, &mut data_names),
                            _ => continue,
                        };
                        for naming in map {
                            let naming = naming.map_err(err)?;
                            target.insert(naming.index, naming.name);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    if function_names.is_empty() {
        return Err(format!(
            "{}: no function names (name section): was it stripped?",
            path.display()
        ));
    }
    let functions = bodies
        .into_iter()
        .enumerate()
        .map(|(i, bytes)| {
            let index = imported_functions + i as u32;
            let symbol = function_names.get(&index).copied();
            let (name, krate) = match symbol {
                Some(symbol) => name_and_crate(symbol, exported.get(&index) == Some(&symbol)),
                None => (format!("(function #{index})"), OTHER.to_owned()),
            };
            Function { bytes, name, krate }
        })
        .collect();
    let mut segments: Vec<(String, usize)> = segments
        .into_iter()
        .enumerate()
        .map(|(i, bytes)| {
            let name = data_names
                .get(&(i as u32))
                .map_or(format!("#{i}"), |n| (*n).to_owned());
            (name, bytes)
        })
        .collect();
    segments.sort_by_key(|(_, bytes)| std::cmp::Reverse(*bytes));
    Ok(Report {
        module: path.to_path_buf(),
        file_bytes: bytes.len(),
        functions,
        segments,
    })
}

/// A symbol's readable name and its crate. A Rust symbol is demangled (`{:#}`: without the hash)
/// and put on the crate [`crate_of`] finds. A symbol that is not mangled Rust goes by its name:
/// wasm-bindgen's (`__wbindgen_*`, `__wbg_*`, `__externref_*`, and the exported shims `#[wasm_bindgen]`
/// generates, which keep their JavaScript-facing name) to [`GLUE`]; the C-named helpers of
/// `compiler_builtins` (`memcpy` & co.) to it; the allocator and panic entry points (`__rust_*`,
/// `__rdl_*`, `__rg_*`, `rust_begin_unwind`, `rust_panic`) to `std`; the rest to [`OTHER`].
/// `__wbindgen_describe_*` go to [`DESCRIPTORS`], apart, as they are not shipped.
fn name_and_crate(symbol: &str, exported: bool) -> (String, String) {
    if symbol.starts_with("__wbindgen_describe") {
        return (symbol.to_owned(), DESCRIPTORS.to_owned());
    }
    if let Ok(demangled) = rustc_demangle::try_demangle(symbol) {
        let name = format!("{demangled:#}");
        let krate = crate_of(&name).unwrap_or(OTHER).to_owned();
        return (name, krate);
    }
    let krate = if ["__wbindgen", "__wbg", "__externref"]
        .iter()
        .any(|p| symbol.starts_with(p))
        || exported
    {
        GLUE
    } else if [
        "__rust_",
        "__rdl_",
        "__rg_",
        "rust_begin_unwind",
        "rust_panic",
    ]
    .iter()
    .any(|p| symbol.starts_with(p))
    {
        "std"
    } else if symbol.starts_with("__wasm_") {
        OTHER // made by the linker (`__wasm_call_ctors`)
    } else if [
        "memcpy", "memmove", "memset", "memcmp", "bcmp", "fmod", "__",
    ]
    .iter()
    .any(|p| symbol.starts_with(p))
    {
        "compiler_builtins"
    } else if symbol.contains("::") {
        // Already a path (a symbol rustc did not mangle, or the name section holds it demangled).
        return (
            symbol.to_owned(),
            crate_of(symbol).unwrap_or(OTHER).to_owned(),
        );
    } else {
        OTHER
    };
    (symbol.to_owned(), krate.to_owned())
}

/// The crate a demangled path belongs to, twiggy-style: the first path segment, so generic code
/// counts for the crate that defines it (`alloc::vec::Vec<jsonschema::Node>::push` is `alloc`,
/// `core::ptr::drop_in_place<serde_json::Value>` is `core`). A trait method belongs to the crate of
/// the type it is implemented for — `<serde_json::Error as core::fmt::Display>::fmt` and
/// `<impl core::fmt::Display for serde_json::Error>::fmt` are `serde_json`, what the crate
/// brought in — unless that type is not a path of its own (`<&T as …>`, `<[u8] as …>`, `<str as …>`):
/// then the crate of the trait. References, pointers, slices and `dyn` are looked through. An
/// inherent method of a primitive (`<str>::parse`, `<u64>::_fmt_inner`) is the standard library's:
/// `core` (a few, like `<str>::to_lowercase`, are `alloc`'s; the name does not tell). `__rustc::`
/// (the allocator shims rustc generates) is `std`.
fn crate_of(path: &str) -> Option<&str> {
    let path = path.trim();
    if let Some(rest) = path.strip_prefix('<') {
        let inner = &rest[..closing(rest)?];
        let (self_ty, trait_) = if let Some(imp) = inner.strip_prefix("impl ") {
            match split_top(imp, " for ") {
                Some((trait_, ty)) => (ty, Some(trait_)),
                None => (imp, None),
            }
        } else {
            match split_top(inner, " as ") {
                Some((ty, trait_)) => (ty, Some(trait_)),
                None => (inner, None),
            }
        };
        return match trait_ {
            Some(trait_) => type_crate(self_ty).or_else(|| type_crate(trait_)),
            None => type_crate(self_ty).or(Some("core")),
        };
    }
    match type_crate(path) {
        Some("__rustc") => Some("std"),
        krate => krate,
    }
}

/// The crate of a type or path: its first segment, if the type is a path (`T`, `u8` are not).
fn type_crate(ty: &str) -> Option<&str> {
    let mut ty = ty.trim();
    loop {
        let before = ty;
        for prefix in [
            "&", "mut ", "*const ", "*mut ", "dyn ", "[", "(", "'static ",
        ] {
            ty = ty.strip_prefix(prefix).unwrap_or(ty).trim_start();
        }
        if ty == before {
            break;
        }
    }
    if ty.starts_with('<') {
        return crate_of(ty);
    }
    let end = ty
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(ty.len());
    (end > 0 && ty[end..].starts_with("::")).then(|| &ty[..end])
}

/// The index of the `>` that closes the `<` just before `s` (`->` is not one).
fn closing(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let bytes = s.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'<' | b'(' | b'[' => depth += 1,
            b'>' if i > 0 && bytes[i - 1] == b'-' => {}
            b'>' | b')' | b']' if depth == 0 => return (b == b'>').then_some(i),
            b'>' | b')' | b']' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// `s` split at the first `sep` outside any brackets.
fn split_top<'a>(s: &'a str, sep: &str) -> Option<(&'a str, &'a str)> {
    let mut depth = 0usize;
    let bytes = s.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'<' | b'(' | b'[' => depth += 1,
            b'>' if i > 0 && bytes[i - 1] == b'-' => {}
            b'>' | b')' | b']' => depth = depth.saturating_sub(1),
            _ if depth == 0 && s[i..].starts_with(sep) => {
                return Some((&s[..i], &s[i + sep.len()..]));
            }
            _ => {}
        }
    }
    None
}

/// What a known crate is, for the reader of the table.
fn what(krate: &str) -> &'static str {
    match krate {
        "core" | "alloc" | "std" => "Rust standard library",
        "compiler_builtins" => "memcpy & co., integer helpers",
        "hashbrown" => "hash tables (std's HashMap, indexmap)",
        "serde_json" => "JSON values and text",
        "serde" => "serialization framework",
        "jsonschema" => "JSON Schema validation (vendor/jsonschema)",
        "referencing" => "jsonschema's $ref resolution",
        "fluent_uri" => "URIs (referencing)",
        "js_sys" | "web_sys" => "JavaScript and DOM bindings",
        "wasm_bindgen" | "wasm_bindgen_futures" => "wasm-bindgen runtime",
        GLUE => "exported shims, __wbindgen_* helpers (generated)",
        DESCRIPTORS => "run and removed by wasm-bindgen: not shipped",
        "jsonschema_value" | "jsonschema_regex" => "parts of jsonschema (vendored)",
        "ahash" => "hasher (jsonschema, referencing)",
        "foldhash" => "hasher (hashbrown)",
        "indexmap" => "ordered maps (serde_json objects)",
        "client_tools" => "the SDK (src/)",
        "client_tools_core" => "the engine (crates/core)",
        "dlmalloc" => "the allocator",
        _ => "",
    }
}

fn kb(bytes: usize) -> String {
    format!("{:.1} KB", bytes as f64 / 1024.0)
}

fn percent(part: usize, whole: usize) -> String {
    format!("{:.1} %", 100.0 * part as f64 / whole.max(1) as f64)
}

/// At most [`NAME_CHARS`] characters: a longer name loses its middle (`…`), which is mostly generic
/// arguments, so both the type and the method stay readable.
fn short(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    if chars.len() <= NAME_CHARS {
        return name.to_owned();
    }
    let head: String = chars[..NAME_CHARS * 3 / 5].iter().collect();
    let tail: String = chars[chars.len() - (NAME_CHARS * 2 / 5 - 1)..]
        .iter()
        .collect();
    format!("{head}…{tail}")
}

/// The report for the terminal.
fn text(report: &Report) -> String {
    let (code, data) = (report.code_bytes(), report.data_bytes());
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} ({}, un-optimized: before wasm-bindgen and wasm-opt)\n",
        report.module.display(),
        kb(report.file_bytes)
    );
    let _ = writeln!(
        out,
        "code: {} in {} functions    data: {} in {} segments\n",
        kb(code),
        report.functions.len(),
        kb(data),
        report.segments.len()
    );
    let _ = writeln!(
        out,
        "{:<24} {:>10} {:>7} {:>9}  what",
        "crate", "code", "share", "functions"
    );
    for (krate, bytes, count) in report.crates() {
        let _ = writeln!(
            out,
            "{krate:<24} {:>10} {:>7} {count:>9}  {}",
            kb(bytes),
            percent(bytes, code),
            what(krate)
        );
    }
    let _ = writeln!(out, "\ndata segments (largest first):");
    for (name, bytes) in report.segments.iter().take(5) {
        let _ = writeln!(out, "  {name:<20} {:>10}", kb(*bytes));
    }
    let _ = writeln!(out, "\ntop {TOP_FUNCTIONS} functions:");
    let _ = writeln!(out, "{:>9} {:<24} name", "bytes", "crate");
    for function in report.top() {
        let _ = writeln!(
            out,
            "{:>9} {:<24} {}",
            function.bytes,
            function.krate,
            short(&function.name)
        );
    }
    out
}

/// The report as Markdown tables.
fn markdown(report: &Report) -> String {
    let (code, data) = (report.code_bytes(), report.data_bytes());
    let cell = |s: &str| s.replace('|', "\\|").replace('`', "'");
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Code {} in {} functions, data {} in {} segments, in the un-optimized module ({} with its \
         name section, before wasm-bindgen and wasm-opt, which shrink every crate but not evenly).\n",
        kb(code),
        report.functions.len(),
        kb(data),
        report.segments.len(),
        kb(report.file_bytes)
    );
    let _ = writeln!(
        out,
        "| Crate | Code | Share | Functions | What |\n|---|---:|---:|---:|---|"
    );
    for (krate, bytes, count) in report.crates() {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {count} | {} |",
            cell(krate),
            kb(bytes),
            percent(bytes, code),
            what(krate)
        );
    }
    let segments: Vec<String> = report
        .segments
        .iter()
        .take(5)
        .map(|(name, bytes)| format!("`{}` {}", cell(name), kb(*bytes)))
        .collect();
    let _ = writeln!(
        out,
        "\nData segments, largest first: {}.\n",
        segments.join(", ")
    );
    let _ = writeln!(
        out,
        "The {TOP_FUNCTIONS} largest functions:\n\n| Bytes | Crate | Function |\n|---:|---|---|"
    );
    for function in report.top() {
        let _ = writeln!(
            out,
            "| {} | {} | `{}` |",
            function.bytes,
            cell(&function.krate),
            cell(&short(&function.name))
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::crate_of;

    #[test]
    fn a_function_belongs_to_the_crate_of_its_path_or_of_the_type_it_is_implemented_for() {
        let cases = [
            ("core::fmt::write", Some("core")),
            ("alloc::vec::Vec<jsonschema::Node>::push", Some("alloc")),
            (
                "<serde_json::error::Error as core::fmt::Display>::fmt",
                Some("serde_json"),
            ),
            (
                "<impl core::fmt::Display for serde_json::Error>::fmt",
                Some("serde_json"),
            ),
            ("<&T as core::fmt::Debug>::fmt", Some("core")),
            ("<[u8] as core::fmt::Debug>::fmt", Some("core")),
            (
                "<&mut client_tools::Page as core::ops::Drop>::drop",
                Some("client_tools"),
            ),
            (
                "<<hashbrown::raw::RawTable<T> as core::ops::Drop>::drop>::x",
                Some("hashbrown"),
            ),
            (
                "<fn(u8) -> u8 as client_tools_core::F>::call",
                Some("client_tools_core"),
            ),
            ("<client_tools::Page>::new", Some("client_tools")),
            ("<str>::to_lowercase", Some("core")),
            ("__rustc::__rdl_alloc", Some("std")),
            ("memcpy", None),
        ];
        for (path, krate) in cases {
            assert_eq!(crate_of(path), krate, "{path}");
        }
    }
}
