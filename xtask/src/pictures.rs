//! `cargo xtask pictures`: the docs' pictures of the built-in confirmation dialog and result form,
//! light and dark, rendered by the real package in headless Chromium (`tests/e2e/src/bin/pictures.rs`).

use std::path::Path;
use std::process::Command;

use crate::install::{ensure_browsers, Browsers};
use crate::run::run;
use crate::{build, root, step, Result};

pub fn pictures() -> Result {
    let pkg = build::build()?;
    let browsers = ensure_browsers()?;
    render(&browsers, &pkg, &root().join("docs").join("images"))
}

/// Renders the pictures into `out`.
pub fn render(browsers: &Browsers, pkg: &Path, out: &Path) -> Result {
    step(&format!(
        "Rendering the dialog pictures into {}",
        out.display()
    ));
    run(Command::new(env!("CARGO"))
        .current_dir(root())
        .args([
            "run",
            "-q",
            "-p",
            "client-tools-e2e",
            "--bin",
            "pictures",
            "--",
        ])
        .arg(out)
        .env("CLIENT_TOOLS_PKG", pkg)
        .env("CHROMIUM", &browsers.chromium)
        .env("CHROMEDRIVER", &browsers.chromedriver))
}
