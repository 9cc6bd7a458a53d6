//! The npm package as a user installs it: `npm pack` makes the tarball (kept under `target/npm/`,
//! and copied to `target/npm/client-tools.tgz`, the version-free name the bundler apps and the type
//! check install), its file list is checked against what the package must ship, and
//! `npm publish --dry-run` runs every check npm makes before a real publish.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::build::{collect_files, ADAPTERS, LICENSE_FILES, UI_MODULE};
use crate::{root, step, Result};

/// Files every package ships besides `snippets/` (whose files are the glue's inline JavaScript).
const SHIPPED: &[&str] = &[
    "package.json",
    "README.md",
    "client_tools_bg.wasm",
    "client_tools_bg.wasm.d.ts",
    "client_tools.js",
    "client_tools.d.ts",
    "client-tools.js",
    "client-tools.d.ts",
];

/// Packs `pkg` into `target/npm/` and returns the path of its version-free copy.
pub fn pack_and_check(pkg: &Path) -> Result<PathBuf> {
    let destination = root().join("target").join("npm");
    let _ = std::fs::remove_dir_all(&destination);
    std::fs::create_dir_all(&destination).map_err(|e| e.to_string())?;

    step("npm pack: the tarball users install, and its file list");
    let out = Command::new("npm")
        .current_dir(pkg)
        .args(["pack", "--json", "--pack-destination"])
        .arg(&destination)
        .output()
        .map_err(|e| format!("could not start npm pack: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "npm pack failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("npm pack --json printed something else: {e}"))?;
    let packed = &report[0];
    let tarball = destination.join(
        packed["filename"]
            .as_str()
            .ok_or("npm pack --json named no file")?,
    );
    let in_tarball: BTreeSet<String> = packed["files"]
        .as_array()
        .ok_or("npm pack --json listed no files")?
        .iter()
        .filter_map(|file| file["path"].as_str().map(str::to_owned))
        .collect();
    check_file_list(pkg, &in_tarball)?;
    eprintln!(
        "    {} files, {} bytes packed: {}",
        in_tarball.len(),
        packed["size"],
        tarball.strip_prefix(root()).unwrap_or(&tarball).display()
    );

    step("npm publish --dry-run: every check npm makes before publishing");
    let out = Command::new("npm")
        .current_dir(pkg)
        .args(["publish", "--dry-run"])
        .output()
        .map_err(|e| format!("could not start npm publish: {e}"))?;
    let said = String::from_utf8_lossy(&out.stderr);
    // npm fixes a malformed package.json on the fly and only warns ("auto-corrected some errors"):
    // a package that needs fixing fails here instead.
    if !out.status.success() || said.contains("auto-corrected") {
        return Err(format!(
            "npm publish --dry-run refused the package:\n{said}"
        ));
    }
    eprintln!("    npm publish --dry-run: accepted");
    let installed = destination.join("client-tools.tgz");
    std::fs::copy(&tarball, &installed).map_err(|e| format!("{}: {e}", tarball.display()))?;
    Ok(installed)
}

/// The tarball holds exactly the shipped files, the licenses, the dialog and the glue's snippets.
fn check_file_list(pkg: &Path, in_tarball: &BTreeSet<String>) -> Result {
    let mut snippets = Vec::new();
    collect_files(&pkg.join("snippets"), &mut snippets);
    let expected: BTreeSet<String> = SHIPPED
        .iter()
        .chain(LICENSE_FILES)
        .chain(&[UI_MODULE])
        .map(|file| (*file).to_owned())
        .chain(snippets.iter().filter_map(|path| {
            path.strip_prefix(pkg)
                .ok()
                .map(|p| p.to_string_lossy().replace('\\', "/"))
        }))
        .chain(ADAPTERS.iter().flat_map(|adapter| {
            [
                format!("adapters/{adapter}.js"),
                format!("adapters/{adapter}.d.ts"),
            ]
        }))
        .collect();
    let missing: Vec<_> = expected.difference(in_tarball).collect();
    let unexpected: Vec<_> = in_tarball.difference(&expected).collect();
    if missing.is_empty() && unexpected.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the npm tarball's files are wrong: missing {missing:?}, unexpected {unexpected:?} \
         (pkg-template/package.json \"files\", xtask/src/package_check.rs SHIPPED)"
    ))
}
