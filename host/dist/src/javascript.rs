//! The JavaScript package (`host/js`) made ready to run or pack: its
//! pinned npm dependencies installed (the Node it pins among them), the
//! components of this build transpiled into it.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// What npm is needed for, said when it is missing.
const NEEDS_NPM: &str = "the JavaScript package needs Node.js with npm (any Node from 20 up)";

/// The package's folder.
pub fn package() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../js")
}

/// The Node the package pins (the `node` package of the npm registry),
/// there once [`install`] ran.
pub fn node() -> PathBuf {
    package().join("node_modules/.bin/node")
}

/// Runs npm in the package's folder with `args` and the variables `env`:
/// its output, or an error that says what failed or what is missing.
pub fn npm(args: &[&str], env: &[(&str, &str)]) -> Result<Output> {
    let mut command = Command::new("npm");
    command.args(args).current_dir(package());
    for (name, value) in env {
        command.env(name, value);
    }
    crate::run(&mut command, &format!("npm {}", args.join(" ")), NEEDS_NPM)
}

/// Installs the package's dependencies unless the lock file is the one
/// installed last (a copy is kept in `node_modules`).
pub fn install() -> Result<()> {
    let dir = package();
    let lock = std::fs::read(dir.join("package-lock.json"))
        .context("reading host/js/package-lock.json")?;
    let stamp = dir.join("node_modules/.engram-installed-lock.json");
    if std::fs::read(&stamp).ok().as_deref() != Some(&lock[..]) {
        // `npm install` from the lock file, not `npm ci`: jco 1.35.0 names
        // optional packages for other platforms in versions never
        // published, which `npm install` passes over and `npm ci` refuses.
        npm(&["install", "--no-save", "--no-audit", "--no-fund"], &[])?;
        std::fs::write(&stamp, &lock)
            .context("writing the install stamp in host/js/node_modules")?;
    }
    Ok(())
}

/// Transpiles the components in `components` into the package's `gen/`
/// (`npm run build`, under the pinned Node: npm puts `node_modules/.bin`
/// first on the script's `PATH`).
pub fn build(components: &Path) -> Result<()> {
    let folder = components
        .to_str()
        .context("the components' folder is not valid UTF-8")?;
    npm(&["run", "build"], &[("ENGRAM_JS_WASM_DIR", folder)])?;
    Ok(())
}

/// [`install`], then [`build`] with this build's components.
pub fn ready() -> Result<()> {
    install()?;
    build(crate::components())
}
