//! The JavaScript package (`host/js`) made ready to run: its pinned npm
//! dependencies installed, the components of this build transpiled into it
//! (what `engram-dist` does before it packs the package, shared with it).

use std::path::PathBuf;
use std::process::Output;
use std::sync::OnceLock;

/// The package's folder.
pub fn package() -> PathBuf {
    engram_dist::javascript::package()
}

/// The Node the package pins (the `node` package of the npm registry).
pub fn node() -> PathBuf {
    engram_dist::javascript::node()
}

/// Runs npm in the package's folder with `args`; its output, or a failure
/// that says what failed or what is missing.
pub fn npm(args: &[&str], env: &[(&str, &str)]) -> Output {
    engram_dist::javascript::npm(args, env).unwrap_or_else(|e| panic!("{e:#}"))
}

/// Installs the package's dependencies unless the lock file is the one
/// installed last, then transpiles this build's components into it (`npm
/// run build`); once per test binary.
pub fn ready() {
    static READY: OnceLock<()> = OnceLock::new();
    READY.get_or_init(|| engram_dist::javascript::ready().unwrap_or_else(|e| panic!("{e:#}")));
}

/// Asserts that a `node --test` run (spec reporter) passed something and
/// that every test it ran passed: none failed, was skipped, cancelled or
/// left to do (a `todo` test that fails does not fail the run); the number
/// passed.
pub fn all_passed(what: &str, output: &Output) -> u64 {
    let report = String::from_utf8_lossy(&output.stdout);
    let count = |name: &str| -> Option<u64> {
        report
            .lines()
            .find_map(|line| line.strip_prefix(&format!("ℹ {name} ")))
            .and_then(|n| n.trim().parse().ok())
    };
    let [tests, pass, fail, skipped, cancelled, todo] =
        ["tests", "pass", "fail", "skipped", "cancelled", "todo"].map(count);
    assert!(
        pass.is_some_and(|n| n > 0)
            && tests == pass
            && [fail, skipped, cancelled, todo] == [Some(0); 4],
        "{what}: tests {tests:?}, pass {pass:?}, fail {fail:?}, skipped {skipped:?}, cancelled {cancelled:?}, todo {todo:?}\n{report}"
    );
    pass.unwrap()
}
