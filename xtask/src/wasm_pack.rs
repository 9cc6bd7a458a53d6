//! The package built with wasm-pack, the tool the design our users start from uses: `wasm-pack
//! build --target web` compiles and runs wasm-bindgen (the pinned one, found on PATH: wasm-pack
//! downloads nothing when the versions match), then [`build::finish`] does what `cargo xtask build`
//! does after wasm-bindgen. `cargo xtask test` checks that the result is the same package, byte for
//! byte, as `cargo xtask build`'s (docs/building.md).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::build::{self, collect_files};
use crate::install::{ensure_wasm_bindgen, ensure_wasm_pack};
use crate::run::run;
use crate::wasm::{self, WasmCargo};
use crate::{step, Result};

/// Builds the package with wasm-pack into `out` (`cargo xtask build --wasm-pack`: `pkg/`).
pub fn build(cargo: &WasmCargo, out: &Path) -> Result {
    let wasm_pack = ensure_wasm_pack()?;
    let wasm_bindgen = ensure_wasm_bindgen()?;
    let _ = std::fs::remove_dir_all(out);

    step("Building the package with wasm-pack (--target web; its wasm-opt off: ours runs after)");
    let mut command = Command::new(wasm_pack);
    cargo.configure(&mut command);
    // wasm-pack finds the pinned wasm-bindgen on PATH (after the toolchain's own PATH: its cargo
    // must stay first); `--mode force` skips wasm-pack's rustup target check (the wasm32 std may come
    // from build-std); `--no-pack`: package.json is ours.
    let toolchain_path = command
        .get_envs()
        .find(|(key, _)| *key == "PATH")
        .and_then(|(_, value)| value.map(ToOwned::to_owned))
        .unwrap_or_else(|| std::env::var_os("PATH").unwrap_or_default());
    let path = std::env::join_paths(
        std::env::split_paths(&toolchain_path).chain(wasm_bindgen.parent().map(Path::to_path_buf)),
    )
    .map_err(|e| e.to_string())?;
    command
        .env("PATH", path)
        .args([
            "build",
            "--target",
            "web",
            "--mode",
            "force",
            "--no-opt",
            "--no-pack",
        ])
        .args([
            "--profile",
            wasm::PROFILE,
            "--out-name",
            "client_tools",
            "--out-dir",
        ])
        .arg(out);
    run(&mut command)?;
    build::finish(out)
}

/// Fails unless `built` holds exactly the files of `pkg`, with the same bytes.
pub fn check_same_package(pkg: &Path, built: &Path) -> Result {
    let (ours, theirs) = (contents(pkg)?, contents(built)?);
    let differing: Vec<&String> = ours
        .keys()
        .chain(theirs.keys())
        .filter(|file| ours.get(*file) != theirs.get(*file))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if differing.is_empty() {
        eprintln!(
            "    the same {} files, byte for byte, as `cargo xtask build`",
            ours.len()
        );
        return Ok(());
    }
    Err(format!(
        "wasm-pack's package differs from `cargo xtask build`'s in {differing:?} \
         ({} and {})",
        pkg.display(),
        built.display()
    ))
}

/// Every file under `dir` by its path in it, with its bytes.
fn contents(dir: &Path) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut files = Vec::new();
    collect_files(dir, &mut files);
    files
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let name = path
                .strip_prefix(dir)
                .unwrap_or(&path)
                .display()
                .to_string();
            Ok((name, bytes))
        })
        .collect()
}
