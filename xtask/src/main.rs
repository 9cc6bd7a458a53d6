//! `cargo xtask build | test | demo | bench | pack | pictures | size`: everything the project needs, from a fresh machine.
//!
//! Each command installs what is missing (idempotently, saying what it does) and then runs. See
//! `docs/building.md` for the toolchain story this implements.

mod bench;
mod build;
mod demo;
mod install;
mod package_check;
mod pictures;
mod run;
mod size;
mod steps;
mod test;
mod wasm;
mod wasm_pack;

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask <command>

commands:
  build   build the npm package into pkg/ (wasm-bindgen --target web, wasm-opt -Os, terser) and print its size
          (`--wasm-pack`: the same package, compiled and bound by wasm-pack)
  test    fmt, clippy (host + wasm32), core and bridge tests, browser tests (Chromium + Firefox), the package:
          size budget, npm pack + publish --dry-run, the same package from wasm-pack, the bundler apps and
          tsc --strict from its tarball; end-to-end (Chromium + Firefox), the pictures, a short benchmark run
  pack    build, then npm pack into target/npm/ (file list checked) and npm publish --dry-run
  pictures  build, then render the built-in dialog and result form (light and dark) to PNG in
          docs/images/ (headless Chromium under WebDriver)
  demo    build the package for the demo (profile wasm-demo: compiled fast, not for size, into target/demo/pkg),
          then run the bridge with the demo site on http://127.0.0.1:8787/
  bench   build, then measure the SDK in headless Chromium and Firefox against the JavaScript it
          replaces, the bridge's round trips and scale, and the size; writes BENCHMARKS.md and
          bench/results.json (`--quick`: a short smoke run; `--render`: BENCHMARKS.md again from
          bench/results.json and bench/notes.md, measuring nothing)
  size    the un-optimized module's code and data by crate and its 30 largest functions (from the name
          section, before wasm-opt strips it; builds first if the module is missing; `--markdown`:
          as BENCHMARKS.md shows it)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("build") if args.get(1).is_some_and(|a| a == "--wasm-pack") => {
            wasm::WasmCargo::detect().and_then(|cargo| {
                let pkg = root().join("pkg");
                wasm_pack::build(&cargo, &pkg).and_then(|()| build::print_sizes(&pkg))
            })
        }
        Some("build") => build::build().map(|_| ()),
        Some("test") => test::test(),
        Some("demo") => demo::demo(&args[1..]),
        Some("pack") => build::build()
            .and_then(|pkg| package_check::pack_and_check(&pkg))
            .map(|_| ()),
        Some("pictures") => pictures::pictures(),
        Some("bench") => bench::bench(&args[1..]),
        Some("size") => size::size(&args[1..]),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    // The demo printed its list before serving (it serves until stopped).
    if args.first().map(String::as_str) != Some("demo") {
        steps::print_summary();
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("\nxtask: error: {error}");
            ExitCode::FAILURE
        }
    }
}

pub type Result<T = ()> = std::result::Result<T, String>;

/// The repository root (the parent of `xtask/`).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the repository")
        .to_path_buf()
}

pub use steps::step;
