//! The Python package (`host/python`), run from `cargo test`: a virtual
//! environment of its own (under this build's target folder) gets the
//! pinned test requirements (`host/python/requirements-test.txt`, installed
//! again only when that file changed) and the package itself, installed by
//! pip from its folder with the components this build made (`engram-host-components`'s
//! build script); then the package's pytest suite runs against the
//! installed package: the shared scenarios over SQLite, in memory and on
//! PostgreSQL, the store format shared with the `engram` command line (this
//! crate's binary), two processes writing one file or one PostgreSQL
//! domain, plug-in algorithms. Nothing may be skipped but the PostgreSQL
//! cases when `ENGRAM_TEST_POSTGRES_URL` names no database, and those are
//! counted. The package's code is also held to its linter and formatter
//! (ruff, configured in `pyproject.toml`) and its type checker (mypy).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

mod support;

/// The package's folder.
fn package() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../python")
}

/// Runs `command`; its output, or a failure that says what it was.
fn run(mut command: Command, what: &str) -> Output {
    let output = command.output().unwrap_or_else(|e| {
        panic!("{what}: {e}: the Python tests need Python 3 (python3) on the PATH")
    });
    if !output.status.success() {
        panic!(
            "{what}: {}\n--- stdout\n{}\n--- stderr\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    output
}

/// The virtual environment's Python, with the test requirements installed
/// unless the requirements file is the one installed last (a copy is kept
/// in the environment).
fn environment() -> PathBuf {
    static ENVIRONMENT: OnceLock<PathBuf> = OnceLock::new();
    ENVIRONMENT.get_or_init(make_environment).clone()
}

fn make_environment() -> PathBuf {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-venv");
    let python = root.join("bin/python");
    let requirements = package().join("requirements-test.txt");
    let wanted = std::fs::read(&requirements).expect("host/python/requirements-test.txt");
    let stamp = root.join("engram-installed-requirements.txt");
    if python.is_file() && std::fs::read(&stamp).ok().as_deref() == Some(&wanted[..]) {
        return python;
    }
    if root.exists() {
        std::fs::remove_dir_all(&root).expect("removing the old virtual environment");
    }
    let mut venv = Command::new("python3");
    venv.args(["-m", "venv"]).arg(&root);
    run(
        venv,
        "python3 -m venv (Debian and Ubuntu package it as python3-venv)",
    );
    let mut pip = Command::new(&python);
    pip.args([
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-input",
        "--quiet",
        "-r",
    ])
    .arg(&requirements);
    run(pip, "installing the Python test requirements");
    std::fs::write(&stamp, &wanted).expect("writing the install stamp");
    python
}

/// The variable that names the PostgreSQL database of the PostgreSQL cases.
const POSTGRES_URL_VAR: &str = "ENGRAM_TEST_POSTGRES_URL";

/// Why a PostgreSQL case is skipped (`host/python/tests/conftest.py`).
const NEEDS_POSTGRES: &str = "needs PostgreSQL: set ENGRAM_TEST_POSTGRES_URL";

/// How many cases pytest's short summary (`-ra`) lists as skipped for a
/// reason other than `reason`, and how many for it: lines `SKIPPED [N]
/// file:line: reason`.
fn skips(report: &str, reason: &str) -> (u64, u64) {
    let (mut other, mut counted) = (0, 0);
    for line in report.lines() {
        let Some(rest) = line.strip_prefix("SKIPPED [") else {
            continue;
        };
        let (n, rest) = rest.split_once(']').unwrap_or(("0", rest));
        let n: u64 = n.parse().unwrap_or(0);
        if rest.ends_with(reason) {
            counted += n;
        } else {
            other += n;
        }
    }
    (other, counted)
}

/// What pytest's run of the package's suite said.
struct Report {
    /// Whether pytest exited with success.
    success: bool,
    /// Its standard output, then its standard error.
    text: String,
    passed: u64,
    failed: u64,
    skipped: u64,
    errors: u64,
    /// The skips for want of PostgreSQL.
    postgres_skips: u64,
    /// The skips for any other reason.
    other_skips: u64,
}

/// The package installed and its suite run, once for every test below.
fn pytest() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(run_pytest)
}

/// The virtual environment's Python with the package installed as a user
/// installs it, once per test binary.
fn installed() -> PathBuf {
    static INSTALLED: OnceLock<PathBuf> = OnceLock::new();
    INSTALLED.get_or_init(install).clone()
}

fn install() -> PathBuf {
    let python = environment();
    let wasm_dir = Path::new(engram_host_components::HOST).parent().unwrap();
    // The package as a user installs it (pip builds it from its folder),
    // with the components of this build.
    // setuptools builds in the package's `build/`: a fresh one each time, so
    // nothing of an earlier build is packaged.
    let _ = std::fs::remove_dir_all(package().join("build"));
    let mut install = Command::new(&python);
    install
        .args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
            "--quiet",
        ])
        .args(["--no-deps", "--no-build-isolation", "--force-reinstall"])
        .arg(package())
        .env("ENGRAM_WASM_DIR", wasm_dir);
    run(install, "pip install host/python");
    python
}

/// The peers the tests compare with (`tests/peers`: the reference MCP
/// memory server), installed by `npm ci` from their lock file under this
/// build's target folder, again only when the lock file changed: the
/// reference server's `dist/index.js`.
fn peers() -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers");
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("peers");
    let lock =
        std::fs::read(source.join("package-lock.json")).expect("tests/peers/package-lock.json");
    let stamp = root.join("node_modules/.engram-installed-lock.json");
    if std::fs::read(&stamp).ok().as_deref() != Some(&lock[..]) {
        std::fs::create_dir_all(&root).expect("making the peers' folder");
        for file in ["package.json", "package-lock.json"] {
            std::fs::copy(source.join(file), root.join(file)).expect("copying tests/peers");
        }
        let mut npm = Command::new("npm");
        npm.args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&root);
        run(
            npm,
            "npm ci in tests/peers (the reference MCP memory server; Node.js 20 or later with npm)",
        );
        std::fs::write(&stamp, &lock).expect("writing the install stamp");
    }
    root.join("node_modules/@modelcontextprotocol/server-memory/dist/index.js")
}

fn run_pytest() -> Report {
    let python = installed();
    let figures = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-figures.txt");
    let _ = std::fs::remove_file(&figures);
    let mut pytest = Command::new(&python);
    pytest
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"])
        .current_dir(package())
        .env("ENGRAM_BIN", env!("CARGO_BIN_EXE_engram"))
        .env("ENGRAM_REFERENCE_MEMORY", peers())
        .env("ENGRAM_TEST_FIGURES", &figures)
        // The installed package's own components, not a checkout's. The
        // PostgreSQL cases run against the database ENGRAM_TEST_POSTGRES_URL
        // names (inherited), each in schemas of its own.
        .env_remove("ENGRAM_WASM_DIR");
    let output = pytest.output().expect("running pytest");
    let report = String::from_utf8_lossy(&output.stdout);
    let summary = report.lines().last().unwrap_or_default();
    let count = |name: &str| -> u64 {
        summary
            .split(',')
            .filter_map(|part| part.trim().trim_start_matches('=').trim().split_once(' '))
            .find_map(|(n, rest)| rest.starts_with(name).then(|| n.parse().ok()).flatten())
            .unwrap_or(0)
    };
    let (other_skips, postgres_skips) = skips(&report, NEEDS_POSTGRES);
    // What the tests measured (the reference server's losses under two
    // clients among them): shown, never asserted.
    for line in std::fs::read_to_string(&figures)
        .unwrap_or_default()
        .lines()
    {
        eprintln!("measured: {line}");
    }
    Report {
        success: output.status.success(),
        text: format!("{report}\n{}", String::from_utf8_lossy(&output.stderr)),
        passed: count("passed"),
        failed: count("failed"),
        skipped: count("skipped"),
        errors: count("error"),
        postgres_skips,
        other_skips,
    }
}

// Every shared scenario on the Python host with every backend: each line names its rule in
// its `note`.
#[test]
fn the_python_package_installs_and_passes_its_tests() {
    let r = pytest();
    let postgres = std::env::var(POSTGRES_URL_VAR).is_ok_and(|url| !url.trim().is_empty());
    // With a database nothing may be skipped; without one, only the
    // PostgreSQL cases, each listed with why (and counted below).
    let skips_allowed = if postgres {
        r.skipped == 0
    } else {
        r.other_skips == 0 && r.postgres_skips == r.skipped
    };
    assert!(
        r.success && r.passed > 0 && r.failed == 0 && skips_allowed && r.errors == 0,
        "the Python tests: passed {}, failed {}, skipped {} ({} of them PostgreSQL cases), errors {}\n{}",
        r.passed,
        r.failed,
        r.skipped,
        r.postgres_skips,
        r.errors,
        r.text
    );
    if r.skipped == 0 {
        eprintln!("Python tests: {} passed", r.passed);
    } else {
        eprintln!(
            "Python tests: {} passed; {} PostgreSQL cases skipped ({NEEDS_POSTGRES})",
            r.passed, r.skipped
        );
    }
}

// The Python package's PostgreSQL cases (the shared scenarios and the store's tests on a
// third backend, the command line and Python writing one domain): run with the suite
// above, and counted here, so that without ENGRAM_TEST_POSTGRES_URL this summary line
// says `1 ignored` as every test binary's does for its PostgreSQL cases.
#[test]
#[cfg_attr(
    engram_no_postgres,
    ignore = "needs PostgreSQL: set ENGRAM_TEST_POSTGRES_URL"
)]
fn the_python_package_passes_its_postgresql_cases() {
    let postgres = std::env::var(POSTGRES_URL_VAR).is_ok_and(|url| !url.trim().is_empty());
    assert!(
        postgres,
        "this case needs PostgreSQL: set {POSTGRES_URL_VAR}=postgres://postgres@127.0.0.1:5432/test"
    );
    let r = pytest();
    assert!(
        r.success && r.failed == 0 && r.errors == 0 && r.postgres_skips == 0 && r.skipped == 0,
        "the Python tests on PostgreSQL: passed {}, failed {}, skipped {}, errors {}\n{}",
        r.passed,
        r.failed,
        r.skipped,
        r.errors,
        r.text
    );
}

#[test]
fn the_python_package_is_lint_clean_formatted_and_type_checked() {
    let python = environment();
    for args in [
        &["ruff", "check", "."][..],
        &["ruff", "format", "--check", "."][..],
        &["mypy"][..],
    ] {
        let mut check = Command::new(&python);
        check.arg("-m").args(args).current_dir(package());
        run(check, &args.join(" "));
    }
}

// proves IO-W2
#[test]
fn io_w2_a_write_from_node_retried_from_python_and_the_cli_with_keys_reordered_answers_the_first_id()
 {
    // One SQLite file. Node writes a STATE whose properties hold an
    // integer-like key (a JavaScript object puts it first); Python retries
    // it with the keys in the order they were given, and the command line
    // with them in a third order and a number written another way: every
    // answer is the first id, and the file holds one STATE, with the text
    // Node wrote.
    support::javascript::ready();
    let python = installed();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("shared.db");
    let request = |properties: &str| {
        format!(
            r#"{{"request_id":"trip-1","source":{{"agent_id":"alice","component":"COGNITION","actor":"USER"}},"record":{{"record_type":"STATE","timestamp":1767229200000,"payload":{{"subject":"trip.plan","properties":{properties}}}}}}}"#
        )
    };
    let answer = |out: Output| -> serde_json::Value {
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let index = support::javascript::package().join("src/index.js");
    let node_script = format!(
        "import {{ open }} from {index:?};
         const domain = await open('alice', {{ store: {store:?} }});
         console.log(JSON.stringify(domain.write(JSON.parse(process.argv[1]))));
         domain.close();",
        index = index.to_str().unwrap(),
        store = store.to_str().unwrap(),
    );
    let mut node = Command::new(support::javascript::node());
    node.args(["--input-type=module", "-e", &node_script, "--"])
        .arg(request(r#"{"b":2,"a":{"y":1,"x":[1,2]},"10":"ten"}"#));
    let first = answer(run(node, "node: the write"));
    let id = first["ACCEPTED"]["stored_id"].clone();
    assert!(id.is_string(), "{first}");

    let mut py = Command::new(&python);
    py.args([
        "-c",
        "import json, sys\n\
         from engram import Engram\n\
         with Engram(sys.argv[1]) as engram:\n    \
             domain = engram.open('alice')\n    \
             print(json.dumps(domain.write(json.loads(sys.argv[2]))))\n    \
             domain.close()",
    ])
    .arg(&store)
    .arg(request(r#"{"a":{"x":[1,2],"y":1},"b":2,"10":"ten"}"#));
    let python_answer = answer(run(py, "python: the retry"));
    assert_eq!(
        python_answer["ACCEPTED"]["stored_id"], id,
        "{python_answer}"
    );

    let cli_request = dir.path().join("retry.json");
    std::fs::write(
        &cli_request,
        request(r#"{"10":"ten","b":2e0,"a":{"y":1,"x":[1,2]}}"#),
    )
    .unwrap();
    let mut cli = Command::new(env!("CARGO_BIN_EXE_engram"));
    cli.arg("--store")
        .arg(&store)
        .args(["write", "--agent", "alice"])
        .arg(&cli_request);
    let cli_answer = answer(run(cli, "engram write: the retry"));
    assert_eq!(cli_answer["ACCEPTED"]["stored_id"], id, "{cli_answer}");

    let read = dir.path().join("read.json");
    std::fs::write(
        &read,
        r#"{"record_type":"STATE","selector":{"Latest":{"limit":5}},"request_id":"q"}"#,
    )
    .unwrap();
    let mut cli = Command::new(env!("CARGO_BIN_EXE_engram"));
    cli.arg("--store")
        .arg(&store)
        .args(["read", "--agent", "alice"])
        .arg(&read);
    let records = answer(run(cli, "engram read"));
    let records = records["records"].as_array().unwrap();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["id"], id);
    // The text Node wrote, its integer-like key first.
    let first_key = records[0]["payload"]["properties"]
        .as_object()
        .and_then(|o| o.keys().next().cloned());
    assert_eq!(first_key.as_deref(), Some("10"), "{records:?}");
}
