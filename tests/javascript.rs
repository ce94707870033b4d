//! The JavaScript package (`host/js`), run from `cargo test`: the components
//! this build made (`engram-host-components`'s build script) are transpiled by the
//! package's pinned jco, then the package's own tests run under the Node it
//! pins (the `node` package of the npm registry), not the machine's: the
//! shared scenarios on the Node host over node:sqlite and in memory and in
//! workerd through miniflare, the store format shared with the `engram`
//! command line (this crate's binary), BigInt timestamps and the jco
//! import names. The package's npm dependencies are installed (`npm
//! install` from `package-lock.json`) when the lock file changed since the
//! last install. Nothing may be skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The package's folder.
fn package() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../js")
}

/// Runs npm in the package's folder with `args`; its output, or a failure
/// that says what is missing.
fn npm(args: &[&str], env: &[(&str, &str)]) -> Output {
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
/// installed last (a copy is kept in `node_modules`).
fn install() {
    let dir = package();
    let lock = std::fs::read(dir.join("package-lock.json")).expect("host/js/package-lock.json");
    let stamp = dir.join("node_modules/.engram-installed-lock.json");
    if std::fs::read(&stamp).ok().as_deref() == Some(&lock[..]) {
        return;
    }
    // `npm install` from the lock file, not `npm ci`: jco 1.35.0 names
    // optional packages for other platforms in versions never published,
    // which `npm install` passes over and `npm ci` refuses.
    npm(&["install", "--no-save", "--no-audit", "--no-fund"], &[]);
    std::fs::write(&stamp, &lock).expect("writing the install stamp");
}

// Every shared scenario on every JavaScript host: each line names its rule in its `note`.
#[test]
fn the_javascript_package_passes_its_tests_on_node_and_in_workerd() {
    install();
    let wasm_dir = Path::new(engram_host_components::HOST).parent().unwrap();
    npm(
        &["run", "build"],
        &[("ENGRAM_JS_WASM_DIR", wasm_dir.to_str().unwrap())],
    );
    let output = npm(&["test"], &[("ENGRAM_BIN", env!("CARGO_BIN_EXE_engram"))]);
    let report = String::from_utf8_lossy(&output.stdout);
    let count = |name: &str| -> Option<u64> {
        report
            .lines()
            .find_map(|line| line.strip_prefix(&format!("ℹ {name} ")))
            .and_then(|n| n.trim().parse().ok())
    };
    let (pass, fail, skipped) = (count("pass"), count("fail"), count("skipped"));
    assert!(
        pass.is_some_and(|n| n > 0) && fail == Some(0) && skipped == Some(0),
        "the JavaScript tests: pass {pass:?}, fail {fail:?}, skipped {skipped:?}\n{report}"
    );
    eprintln!("JavaScript tests: {} passed", pass.unwrap());
}
