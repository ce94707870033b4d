//! The Python package (`host/python`), run from `cargo test`: a virtual
//! environment of its own (under this build's target folder) gets the
//! pinned test requirements (`host/python/requirements-test.txt`, installed
//! again only when that file changed) and the package itself, installed by
//! pip from its folder with the components this build made (`engram-js`'s
//! build script); then the package's pytest suite runs against the
//! installed package: the shared scenarios over SQLite and in memory, the
//! store format shared with the `engram` command line (this crate's
//! binary), two processes writing one file, plug-in algorithms. Nothing may
//! be skipped. The package's code is also held to its linter and formatter
//! (ruff, configured in `pyproject.toml`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

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

// Every shared scenario on the Python host with both backends: each line names its rule in
// its `note`.
#[test]
fn the_python_package_installs_and_passes_its_tests() {
    let python = environment();
    let wasm_dir = Path::new(engram_js::HOST).parent().unwrap();
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
    let mut pytest = Command::new(&python);
    pytest
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"])
        .current_dir(package())
        .env("ENGRAM_BIN", env!("CARGO_BIN_EXE_engram"))
        // The installed package's own components, not a checkout's.
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
    let (passed, failed, skipped, errors) = (
        count("passed"),
        count("failed"),
        count("skipped"),
        count("error"),
    );
    assert!(
        output.status.success() && passed > 0 && failed == 0 && skipped == 0 && errors == 0,
        "the Python tests: passed {passed}, failed {failed}, skipped {skipped}, errors {errors}\n{report}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!("Python tests: {passed} passed");
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
