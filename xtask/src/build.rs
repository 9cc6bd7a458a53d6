//! `cargo xtask build`: the npm package in `pkg/` (SPEC §1, §4).
//!
//! cargo (profile `wasm-release`, wasm32) → wasm-bindgen `--target web` → [`finish`]: wasm-opt -Os
//! → package.json, README, the script-tag loader and its types from `pkg-template/`, the licenses →
//! terser (the generated JavaScript: bindings and snippets, and the loader) → sizes (raw / gzip /
//! brotli). `crate::wasm_pack` builds the same package with wasm-pack in place of the first two.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::install::{
    ensure_terser, ensure_wasm_bindgen_alongside, ensure_wasm_opt, BINARYEN_VERSION,
};
use crate::run::{run, spawn, Background};
use crate::wasm::{self, WasmCargo};
use crate::{root, step, Result};

/// Files copied from `pkg-template/` into the package.
const TEMPLATE_FILES: &[&str] = &[
    "package.json",
    "README.md",
    "client-tools.js",
    "client-tools.d.ts",
];
/// The adapters for other agent runtimes (SPEC §12): JavaScript modules of the package, each with
/// its types, copied from `pkg-template/adapters/` into `adapters/` (subpath exports such as
/// `client-tools/ag-ui`; `shared.js` is what they share).
pub const ADAPTERS: &[&str] = &[
    "shared",
    "ag-ui",
    "elevenlabs",
    "openai-realtime",
    "ai-sdk",
    "react",
    "uipath",
];
/// The dialog and the schema forms (SPEC §7): a JavaScript module the SDK imports when a call first
/// needs a person (`src/js.js` `loadUi`), not with the module every page loads at `init`. Copied to
/// the same path in the package: the snippet imports it from its own place in the package
/// (`snippets/<crate>-<hash>/src/js.js`) back up to the root, and the test runner serves the crate's
/// own file at that address.
pub const UI_MODULE: &str = "src/ui/ui.js";
/// The crate's dual license, shipped in the package too.
pub const LICENSE_FILES: &[&str] = &["LICENSE-MIT", "LICENSE-APACHE"];

/// Builds `pkg/` and returns its path.
pub fn build() -> Result<PathBuf> {
    build_with(&WasmCargo::detect()?)
}

/// Builds `pkg/` with an already detected wasm toolchain.
pub fn build_with(cargo: &WasmCargo) -> Result<PathBuf> {
    let pkg = root().join("pkg");
    // The module compiles while the wasm-bindgen CLI installs, when it is missing (a first run):
    // both are minutes long, and each ends on one core (LTO at one codegen unit; linking).
    step("Compiling the SDK for wasm32 (profile wasm-release: built for size; the wasm-bindgen CLI installed alongside if missing)");
    compile_and_bind(cargo, wasm::PROFILE, &pkg)?;
    finish(&pkg)?;
    print_sizes(&pkg)?;
    Ok(pkg)
}

/// Where `cargo xtask demo` puts its package: not `pkg/`, which holds only the size-optimized build.
pub fn demo_pkg_dir() -> PathBuf {
    root().join("target").join("demo").join("pkg")
}

/// The module cargo writes for `profile`.
fn module_path(profile: &str) -> PathBuf {
    wasm::target_dir()
        .join(wasm::TARGET)
        .join(profile)
        .join("client_tools.wasm")
}

/// The package `cargo xtask demo` serves, in [`demo_pkg_dir`]: compiled for a short build, not for
/// size (profile wasm-demo: opt-level 0, no LTO, 16 codegen units), and neither wasm-opt nor terser
/// run (they only make it smaller). Where `cargo xtask build`/`test` compiled the module in
/// wasm-release more recently than the demo compiled its own, that build is reused instead: cargo
/// then rebuilds only what changed since, where the demo's profile would compile everything again.
pub fn build_demo(cargo: &WasmCargo) -> Result<PathBuf> {
    let modified = |profile| {
        std::fs::metadata(module_path(profile))
            .and_then(|m| m.modified())
            .ok()
    };
    let profile = match (modified(wasm::PROFILE), modified(wasm::DEMO_PROFILE)) {
        (Some(release), demo) if demo.is_none_or(|demo| release > demo) => wasm::PROFILE,
        _ => wasm::DEMO_PROFILE,
    };
    build_demo_in(cargo, profile)
}

/// [`build_demo`] in `profile`: `cargo xtask test` builds it in wasm-demo, whatever is newer, so
/// the module a first demo serves (unoptimized) is the one its end-to-end test loads.
pub fn build_demo_in(cargo: &WasmCargo, profile: &str) -> Result<PathBuf> {
    let pkg = demo_pkg_dir();
    if profile == wasm::PROFILE {
        step("Compiling the SDK for wasm32 (profile wasm-release: reusing the build `cargo xtask build`/`test` made; the wasm-bindgen CLI installed alongside if missing)");
    } else {
        step("Compiling the SDK for wasm32 (profile wasm-demo: built to compile fast, not for size: the demo does not need the smallest module; the wasm-bindgen CLI installed alongside if missing)");
    }
    compile_and_bind(cargo, profile, &pkg)?;
    step("Writing package files from pkg-template/ and the licenses (the demo's package: no wasm-opt, no terser)");
    write_package_files(&pkg)?;
    let size = measure_raw(&pkg.join("client_tools_bg.wasm"))?;
    eprintln!(
        "    {}: module {:.1} KB raw (profile {profile}; `cargo xtask build` makes the small one in pkg/)",
        pkg.strip_prefix(root()).unwrap_or(&pkg).display(),
        size as f64 / 1024.0
    );
    Ok(pkg)
}

/// Starts compiling the demo's module (profile wasm-demo) in the background, its output in
/// `target/demo-compile.log`: `cargo xtask test` runs it beside the end-to-end tests, which mostly
/// wait on browsers and child processes, so [`build_demo_in`] later finds it compiled. Its errors,
/// if any, show when that step compiles it again.
pub fn compile_demo_alongside(cargo: &WasmCargo) -> Result<Background> {
    let log_path = root().join("target").join("demo-compile.log");
    let log =
        std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let err = log.try_clone().map_err(|e| e.to_string())?;
    eprintln!(
        "\n==> (alongside) Compiling the demo's module (profile {}; output in target/demo-compile.log)",
        wasm::DEMO_PROFILE
    );
    spawn(
        compile_command(cargo, wasm::DEMO_PROFILE)
            .stdout(log)
            .stderr(err),
    )
}

/// Compiles the module in `profile` (while the wasm-bindgen CLI installs, when it is missing) and
/// runs wasm-bindgen `--target web` into `pkg` (emptied first). The caller announced the step.
fn compile_and_bind(cargo: &WasmCargo, profile: &str, pkg: &Path) -> Result<PathBuf> {
    let compiling = spawn(&mut compile_command(cargo, profile))?;
    let wasm_bindgen = ensure_wasm_bindgen_alongside();
    compiling.wait()?;
    let wasm_bindgen = wasm_bindgen?;
    let module = module_path(profile);

    step("Generating JavaScript bindings (wasm-bindgen --target web)");
    let _ = std::fs::remove_dir_all(pkg);
    run(Command::new(&wasm_bindgen)
        .arg(&module)
        .args(["--target", "web", "--out-dir"])
        .arg(pkg)
        .args(["--out-name", "client_tools"]))?;
    Ok(module)
}

/// `cargo build` of the module (profile wasm-release), nothing else: what `cargo xtask size` reads.
pub fn compile_module(cargo: &WasmCargo) -> Result {
    step("Compiling the SDK for wasm32 (profile wasm-release)");
    run(&mut compile_command(cargo, wasm::PROFILE))
}

fn compile_command(cargo: &WasmCargo, profile: &str) -> Command {
    let mut command = cargo.command();
    command.args([
        "build",
        "--profile",
        profile,
        "--target",
        wasm::TARGET,
        "-p",
        "client-tools",
    ]);
    command
}

/// wasm-opt's arguments after the module: `-Os` compresses better than `-Oz` here (gzip −1.7 KB,
/// raw +9 KB: the budget is what is downloaded); `--low-memory-unused` is sound for Rust's wasm32
/// layout (the stack fills the first MiB, data starts above it) and lets loads and stores fold
/// their offsets (−3.2 KB gzip). Not `--ignore-implicit-traps` (−0.4 KB): the module it makes fails
/// at once in the browser ("memory access out of bounds").
const WASM_OPT_ARGS: &[&str] = &[
    "-Os",
    "--low-memory-unused",
    "--converge",
    "--strip-debug",
    "--strip-producers",
    "--strip-target-features",
];

/// Where the last module wasm-opt was given (`input.wasm`) and what it made of it (`output.wasm`).
fn wasm_opt_cache() -> PathBuf {
    root().join("target").join("wasm-opt-cache")
}

/// Runs wasm-opt on `module` in place, unless it was given exactly these bytes last time: wasm-opt
/// is deterministic (same input, same flags, same version → same output), and `cargo xtask test`
/// optimizes the same module twice (its own package and wasm-pack's, which must be byte for byte
/// the same: `crate::wasm_pack`), 40 s each on two cores. The cache holds one module.
fn optimize(wasm_opt: &Path, module: &Path) -> Result {
    let cache = wasm_opt_cache();
    let (cached_input, cached_output) = (cache.join("input.wasm"), cache.join("output.wasm"));
    let stamp = cache.join("flags");
    let flags = format!(
        "binaryen {BINARYEN_VERSION}: {} {}",
        WASM_OPT_ARGS.join(" "),
        WASM_FEATURES.join(" ")
    );
    let input = std::fs::read(module).map_err(|e| format!("{}: {e}", module.display()))?;
    let hit = std::fs::read(&cached_input).is_ok_and(|bytes| bytes == input)
        && std::fs::read_to_string(&stamp).is_ok_and(|text| text == flags)
        && cached_output.is_file();
    if hit {
        eprintln!(
            "    the same module as last time: wasm-opt's output reused ({})",
            cache.display()
        );
        std::fs::copy(&cached_output, module).map_err(|e| format!("{}: {e}", module.display()))?;
        return Ok(());
    }
    run(Command::new(wasm_opt)
        .arg(module)
        .args(WASM_OPT_ARGS)
        .args(WASM_FEATURES)
        .arg("-o")
        .arg(module))?;
    // A cache that cannot be written only costs the next build its wasm-opt run.
    let stored = std::fs::create_dir_all(&cache)
        .and_then(|()| std::fs::write(&cached_input, &input))
        .and_then(|()| std::fs::copy(module, &cached_output).map(drop))
        .and_then(|()| std::fs::write(&stamp, &flags));
    if let Err(error) = stored {
        eprintln!("    (wasm-opt's output not kept for next time: {error})");
    }
    Ok(())
}

/// What turns wasm-bindgen's output in `pkg` (ours, or wasm-pack's: `crate::wasm_pack`) into the
/// package: wasm-opt, the files from `pkg-template/`, the licenses, terser.
pub fn finish(pkg: &Path) -> Result {
    let wasm_opt = ensure_wasm_opt()?;
    let terser = ensure_terser()?;

    step("Optimizing for size (wasm-opt -Os: WASM_OPT_ARGS)");
    let bg = pkg.join("client_tools_bg.wasm");
    optimize(&wasm_opt, &bg)?;

    step("Writing package files from pkg-template/ and the licenses");
    write_package_files(pkg)?;

    step("Minifying the JavaScript (terser)");
    let mut scripts = vec![pkg.join("client_tools.js")];
    collect_files(&pkg.join("snippets"), &mut scripts);
    collect_files(&pkg.join("adapters"), &mut scripts);
    scripts.push(pkg.join(UI_MODULE));
    for file in scripts
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "js"))
    {
        // ES modules: their top-level names are theirs to shorten.
        run(Command::new(&terser)
            .arg(file)
            .args(["--module", "--compress", "--mangle", "--output"])
            .arg(file))?;
    }
    // The script-tag loader is a classic script: its globals keep their names.
    let loader = pkg.join("client-tools.js");
    run(Command::new(&terser)
        .arg(&loader)
        .args(["--compress", "--mangle", "--output"])
        .arg(&loader))?;
    Ok(())
}

/// The package's files besides wasm-bindgen's output: `pkg-template/`, the adapters, the licenses,
/// and the types' reference to the library they need.
fn write_package_files(pkg: &Path) -> Result {
    for file in TEMPLATE_FILES {
        let text = std::fs::read_to_string(root().join("pkg-template").join(file))
            .map_err(|e| format!("pkg-template/{file}: {e}"))?;
        let text = text
            .replace("{{version}}", env!("CARGO_PKG_VERSION"))
            .replace("{{repository}}", env!("CARGO_PKG_REPOSITORY"));
        std::fs::write(pkg.join(file), text).map_err(|e| format!("pkg/{file}: {e}"))?;
    }
    let ui = pkg.join(UI_MODULE);
    let ui_dir = ui.parent().unwrap_or(pkg);
    std::fs::create_dir_all(ui_dir).map_err(|e| format!("{}: {e}", ui_dir.display()))?;
    std::fs::copy(root().join(UI_MODULE), &ui).map_err(|e| format!("{UI_MODULE}: {e}"))?;
    let adapters = pkg.join("adapters");
    std::fs::create_dir_all(&adapters).map_err(|e| format!("{}: {e}", adapters.display()))?;
    for adapter in ADAPTERS {
        for file in [format!("{adapter}.js"), format!("{adapter}.d.ts")] {
            let from = root().join("pkg-template/adapters").join(&file);
            std::fs::copy(&from, adapters.join(&file))
                .map_err(|e| format!("{}: {e}", from.display()))?;
        }
    }
    for file in LICENSE_FILES {
        std::fs::copy(root().join(file), pkg.join(file)).map_err(|e| format!("{file}: {e}"))?;
    }
    let _ = std::fs::remove_file(pkg.join(".gitignore"));
    // The generated classes have `[Symbol.dispose]()`: the declaration names the library it needs,
    // so a project compiling with an older `lib` (and `skipLibCheck: false`) still type-checks.
    let types = pkg.join("client_tools.d.ts");
    let generated =
        std::fs::read_to_string(&types).map_err(|e| format!("{}: {e}", types.display()))?;
    std::fs::write(
        &types,
        format!("/// <reference lib=\"esnext.disposable\" />\n{generated}"),
    )
    .map_err(|e| format!("{}: {e}", types.display()))?;
    Ok(())
}

/// Features rustc emits for wasm32 by default, which wasm-opt must be told about.
const WASM_FEATURES: &[&str] = &[
    "--enable-bulk-memory",
    "--enable-nontrapping-float-to-int",
    "--enable-sign-ext",
    "--enable-reference-types",
    "--enable-multivalue",
    "--enable-mutable-globals",
];

/// Raw, gzip and brotli sizes of one file.
pub struct Size {
    pub raw: usize,
    pub gzip: usize,
    pub brotli: usize,
}

/// A file's size in bytes.
fn measure_raw(path: &Path) -> Result<u64> {
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|e| format!("{}: {e}", path.display()))
}

pub fn measure(path: &Path) -> Result<Size> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&bytes).map_err(|e| e.to_string())?;
    let gzip = gz.finish().map_err(|e| e.to_string())?.len();
    let mut br = Vec::new();
    let params = brotli::enc::BrotliEncoderParams {
        quality: 11,
        ..Default::default()
    };
    brotli::BrotliCompress(&mut bytes.as_slice(), &mut br, &params).map_err(|e| e.to_string())?;
    Ok(Size {
        raw: bytes.len(),
        gzip,
        brotli: br.len(),
    })
}

/// The package's shipped code and its sizes: the module, its glue, the embed loader, the inline
/// JavaScript snippets the glue imports (`snippets/`), the dialog ([`UI_MODULE`], loaded when a
/// call first needs a person) and the runtime adapters (`adapters/`, loaded only by a page that
/// imports one). Every file counts in the package's total; the first load is what [`is_lazy`] is
/// not.
pub fn package_sizes(pkg: &Path) -> Result<Vec<(String, Size)>> {
    let mut rows = Vec::new();
    for name in ["client_tools_bg.wasm", "client_tools.js", "client-tools.js"] {
        rows.push((name.to_owned(), measure(&pkg.join(name))?));
    }
    let mut snippets = Vec::new();
    collect_files(&pkg.join("snippets"), &mut snippets);
    snippets.sort();
    let mut adapters: Vec<PathBuf> = ADAPTERS
        .iter()
        .map(|adapter| pkg.join("adapters").join(format!("{adapter}.js")))
        .collect();
    adapters.sort();
    let ui = [pkg.join(UI_MODULE)];
    for path in snippets.into_iter().chain(ui).chain(adapters) {
        let name = path
            .strip_prefix(pkg)
            .unwrap_or(&path)
            .display()
            .to_string();
        rows.push((name, measure(&path)?));
    }
    Ok(rows)
}

pub fn collect_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, found);
        } else {
            found.push(path);
        }
    }
}

/// What a page fetches to start (gzip): the module, its glue, the embed loader and the snippets the
/// glue imports — everything but the dialog (loaded on first use) and the opt-in runtime adapters.
/// Not raised for a feature: what one adds, the same issue pays back (BENCHMARKS.md, "Size
/// history"). Now 375,577 lowered by the 11,840 bytes that left it when issue 36 point 6 took the
/// dialog and the forms out (bench/notes.md, "Issue 36 point 6").
pub const FIRST_LOAD_BUDGET_GZIP: usize = 363_737;

/// The dialog and the schema forms ([`UI_MODULE`], gzip), loaded when a call first needs a person:
/// 5,595 bytes when it left the first load.
pub const UI_BUDGET_GZIP: usize = 6 * 1024;

/// The runtime adapters together (gzip, `adapters/`): each is loaded only by a page that imports
/// it (`client-tools/ag-ui`, …), so they are budgeted apart from the first load.
pub const ADAPTERS_BUDGET_GZIP: usize = 8 * 1024;

/// The whole package may not grow past this (gzip, wasm + JS), or `cargo xtask test` fails: the
/// first load's budget plus the dialog's and the adapters'. The goal is 300 KB.
pub const SIZE_BUDGET_GZIP: usize = FIRST_LOAD_BUDGET_GZIP + UI_BUDGET_GZIP + ADAPTERS_BUDGET_GZIP;

/// Whether a row of [`package_sizes`] is a runtime adapter.
pub fn is_adapter(name: &str) -> bool {
    name.starts_with("adapters/")
}

/// Whether a row of [`package_sizes`] is loaded later, not at `init` (the dialog, an adapter).
pub fn is_lazy(name: &str) -> bool {
    is_adapter(name) || name == UI_MODULE
}

/// Every shipped file's size, then the total (named `total`).
pub fn sizes_with_total(pkg: &Path) -> Result<Vec<(String, Size)>> {
    let mut rows = package_sizes(pkg)?;
    let total = rows.iter().fold(
        Size {
            raw: 0,
            gzip: 0,
            brotli: 0,
        },
        |sum, (_, size)| Size {
            raw: sum.raw + size.raw,
            gzip: sum.gzip + size.gzip,
            brotli: sum.brotli + size.brotli,
        },
    );
    rows.push(("total".to_owned(), total));
    Ok(rows)
}

pub fn print_sizes(pkg: &Path) -> Result {
    step("Package size");
    let kb = |n: usize| format!("{:.1} KB", n as f64 / 1024.0);
    eprintln!(
        "    {:<24} {:>12} {:>12} {:>12}",
        "file", "raw", "gzip", "brotli"
    );
    // Measured once: brotli at its best level takes seconds on the module.
    let sizes = sizes_with_total(pkg)?;
    for (name, size) in &sizes {
        eprintln!(
            "    {:<24} {:>12} {:>12} {:>12}",
            name,
            kb(size.raw),
            kb(size.gzip),
            kb(size.brotli)
        );
    }
    let first_load: usize = sizes
        .iter()
        .filter(|(name, _)| name != "total" && !is_lazy(name))
        .map(|(_, size)| size.gzip)
        .sum();
    eprintln!(
        "    first load (gzip): {} ({first_load} of {FIRST_LOAD_BUDGET_GZIP} bytes); budget of the \
         whole package: {}",
        kb(first_load),
        kb(SIZE_BUDGET_GZIP)
    );
    Ok(())
}

/// Fails when the first load is over [`FIRST_LOAD_BUDGET_GZIP`] or the adapters over
/// [`ADAPTERS_BUDGET_GZIP`].
pub fn check_size_budget(pkg: &Path) -> Result {
    let rows = package_sizes(pkg)?;
    let sum = |which: &dyn Fn(&str) -> bool| -> usize {
        rows.iter()
            .filter(|(name, _)| which(name))
            .map(|(_, size)| size.gzip)
            .sum()
    };
    let first_load = sum(&|name| !is_lazy(name));
    let (ui, adapters) = (sum(&|name| name == UI_MODULE), sum(&is_adapter));
    if first_load > FIRST_LOAD_BUDGET_GZIP {
        return Err(format!(
            "the first load (module, glue, loader, snippets) is {first_load} bytes gzip, over its \
             budget of {FIRST_LOAD_BUDGET_GZIP} bytes (xtask/src/build.rs FIRST_LOAD_BUDGET_GZIP): \
             find what grew with `cargo xtask size` (the un-optimized module by crate and \
             function) and pay it back in the same change"
        ));
    }
    if ui > UI_BUDGET_GZIP {
        return Err(format!(
            "the dialog ({UI_MODULE}) is {ui} bytes gzip, over its budget of {UI_BUDGET_GZIP} \
             bytes (xtask/src/build.rs UI_BUDGET_GZIP)"
        ));
    }
    if adapters > ADAPTERS_BUDGET_GZIP {
        return Err(format!(
            "the runtime adapters are {adapters} bytes gzip, over their budget of \
             {ADAPTERS_BUDGET_GZIP} bytes (xtask/src/build.rs ADAPTERS_BUDGET_GZIP)"
        ));
    }
    let kb = |n: usize| n as f64 / 1024.0;
    eprintln!(
        "    size budget: first load {:.1} KB gzip of {:.1} KB; dialog {:.1} KB of {:.1} KB; \
         adapters {:.1} KB of {:.1} KB",
        kb(first_load),
        kb(FIRST_LOAD_BUDGET_GZIP),
        kb(ui),
        kb(UI_BUDGET_GZIP),
        kb(adapters),
        kb(ADAPTERS_BUDGET_GZIP)
    );
    Ok(())
}
