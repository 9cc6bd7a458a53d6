//! The cargo that can build for `wasm32-unknown-unknown` on this machine.
//!
//! A normal rustup install with the wasm32 target is used as it is. Without it (and
//! `rustup target add` cannot download here), Debian's own Rust (`rustc-web`, 1.96) builds the
//! wasm32 standard library from its shipped source with cargo's build-std. Wasm builds use their own
//! target dir (`target/wasm`), so host and wasm artifacts never evict each other.

use std::path::PathBuf;
use std::process::Command;

use crate::install::ensure_apt;
use crate::run::output;
use crate::{root, step, Result};

pub const TARGET: &str = "wasm32-unknown-unknown";
/// The cargo profile of the package build (Cargo.toml: size over speed).
pub const PROFILE: &str = "wasm-release";
/// The cargo profile of `cargo xtask demo`'s package (Cargo.toml: compile time over size).
pub const DEMO_PROFILE: &str = "wasm-demo";

/// Debian packages of the fallback toolchain (clippy included, for the wasm lint pass).
const DEBIAN_RUST: &[&str] = &[
    "rustc-web",
    "cargo-web",
    "rust-web-src",
    "rust-web-llvm",
    "rust-web-clippy",
    "lld-22",
];

/// Flags for the rebuilt-std toolchain that make the module smaller (see BENCHMARKS.md, "Size").
const SIZE_RUSTFLAGS: &str = "-Zlocation-detail=none -Zfmt-debug=shallow";

pub struct WasmCargo {
    cargo: PathBuf,
    envs: Vec<(String, String)>,
}

impl WasmCargo {
    /// Finds (or installs) a toolchain that builds wasm32, and says which one it uses.
    pub fn detect() -> Result<Self> {
        if rustup_has_wasm_std() {
            eprintln!("    wasm32 std: installed with the default toolchain");
            return Ok(Self {
                cargo: PathBuf::from(env!("CARGO")),
                envs: vec![],
            });
        }
        step("No wasm32 std in the default toolchain: using Debian's rustc-web with build-std");
        ensure_apt(DEBIAN_RUST)?;
        let path = format!("/usr/bin:{}", std::env::var("PATH").unwrap_or_default());
        Ok(Self {
            cargo: PathBuf::from("/usr/bin/cargo"),
            envs: vec![
                ("PATH".into(), path),
                ("RUSTC".into(), "/usr/bin/rustc".into()),
                ("RUSTDOC".into(), "/usr/bin/rustdoc".into()),
                ("RUSTC_BOOTSTRAP".into(), "1".into()),
                ("CARGO_UNSTABLE_BUILD_STD".into(), "std,panic_abort".into()),
                // The standard library's own size mode (smaller sorts, formatting and collections
                // code; the same results): the package's module −6.5 KB gzip (BENCHMARKS.md). It
                // replaces the default `panic-unwind` feature, which `panic = "abort"` never uses.
                (
                    "CARGO_UNSTABLE_BUILD_STD_FEATURES".into(),
                    "optimize_for_size".into(),
                ),
                // Size (BENCHMARKS.md): with the standard library rebuilt, a panic can stop at once
                // without formatting its message, and no file/line strings or derived Debug bodies
                // are kept. Set for every wasm command alike, so they share one build cache.
                ("CARGO_UNSTABLE_PANIC_IMMEDIATE_ABORT".into(), "true".into()),
                (
                    "CARGO_PROFILE_WASM_RELEASE_PANIC".into(),
                    "immediate-abort".into(),
                ),
                // The demo's package panics as the shipped one does.
                (
                    "CARGO_PROFILE_WASM_DEMO_PANIC".into(),
                    "immediate-abort".into(),
                ),
                ("RUSTFLAGS".into(), SIZE_RUSTFLAGS.into()),
            ],
        })
    }

    /// `cargo <args>` for the wasm target, in the wasm target dir.
    pub fn command(&self) -> Command {
        let mut command = Command::new(&self.cargo);
        self.configure(&mut command);
        command
    }

    /// Sets up `command` (cargo, or a tool that runs `cargo` from PATH, like wasm-pack) to build
    /// for wasm32 with this toolchain, in the wasm target dir.
    pub fn configure(&self, command: &mut Command) {
        command
            .current_dir(root())
            .env("CARGO_TARGET_DIR", target_dir())
            // Variables of the outer (rustup) cargo must not leak into Debian's.
            .env_remove("RUSTUP_TOOLCHAIN")
            .env_remove("CARGO")
            .env_remove("RUSTC_WRAPPER");
        for (key, value) in &self.envs {
            command.env(key, value);
        }
    }
}

pub fn target_dir() -> PathBuf {
    root().join("target").join("wasm")
}

fn rustup_has_wasm_std() -> bool {
    let Some(libdir) =
        output(Command::new("rustc").args(["--print", "target-libdir", "--target", TARGET]))
    else {
        return false;
    };
    std::fs::read_dir(libdir).is_ok_and(|mut entries| {
        entries.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with("libstd-")))
    })
}
