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

mod support;

use support::javascript::{npm, ready};

// Every shared scenario on every JavaScript host: each line names its rule in its `note`.
#[test]
fn the_javascript_package_passes_its_tests_on_node_and_in_workerd() {
    ready();
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
