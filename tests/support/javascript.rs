//! The JavaScript package (`host/js`) made ready to run: its pinned npm
//! dependencies installed, the components of this build transpiled into it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The package's folder.
pub fn package() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../js")
}

/// The Node the package pins (the `node` package of the npm registry).
pub fn node() -> PathBuf {
    package().join("node_modules/.bin/node")
}

/// Runs npm in the package's folder with `args`; its output, or a failure
/// that says what is missing.
pub fn npm(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new("npm");
    command.args(args).current_dir(package());
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().unwrap_or_else(|e| {
        panic!("npm {args:?}: {e}: the JavaScript tests need Node.js and npm on the PATH")
    });
    if !output.status.success() {
        panic!(
            "npm {args:?}: {}\n--- stdout\n{}\n--- stderr\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    output
}

/// Installs the package's dependencies unless the lock file is the one
/// installed last (a copy is kept in `node_modules`), then transpiles this
/// build's components into it (`npm run build`); once per test binary.
pub fn ready() {
    static READY: OnceLock<()> = OnceLock::new();
    READY.get_or_init(|| {
        let dir = package();
        let lock = std::fs::read(dir.join("package-lock.json")).expect("host/js/package-lock.json");
        let stamp = dir.join("node_modules/.engram-installed-lock.json");
        if std::fs::read(&stamp).ok().as_deref() != Some(&lock[..]) {
            // `npm install` from the lock file, not `npm ci`: jco 1.35.0
            // names optional packages for other platforms in versions never
            // published, which `npm install` passes over and `npm ci` refuses.
            npm(&["install", "--no-save", "--no-audit", "--no-fund"], &[]);
            std::fs::write(&stamp, &lock).expect("writing the install stamp");
        }
        let wasm_dir = Path::new(engram_host_components::HOST).parent().unwrap();
        npm(
            &["run", "build"],
            &[("ENGRAM_JS_WASM_DIR", wasm_dir.to_str().unwrap())],
        );
    });
}
