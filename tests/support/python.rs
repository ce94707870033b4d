//! The Python package (`host/python`) made ready to run: a virtual
//! environment of its own under this build's target folder with the pinned
//! test requirements (`host/python/requirements-test.txt`: maturin, pytest,
//! ruff, mypy, the MCP Python SDK), the package installed into it as a user
//! installs it (its native module built by cargo), and the peers the tests
//! compare with (`tests/peers`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The package's folder.
pub fn package() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../python")
}

/// Runs `command`; its output, or a failure that says what it was.
pub fn run(mut command: Command, what: &str) -> Output {
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
pub fn environment() -> PathBuf {
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
    let mut pip = pip_install(&python);
    pip.args(["--quiet", "-r"]).arg(&requirements);
    run(pip, "installing the Python test requirements");
    std::fs::write(&stamp, &wanted).expect("writing the install stamp");
    python
}

/// The virtual environment's Python with the package installed as a user
/// installs it, once per test binary.
pub fn installed() -> PathBuf {
    static INSTALLED: OnceLock<PathBuf> = OnceLock::new();
    INSTALLED.get_or_init(install).clone()
}

fn install() -> PathBuf {
    let python = environment();
    // The package as a user installs it from a checkout: pip runs its build
    // backend, maturin (pinned among the test requirements), which builds the
    // native module with cargo, release, into the workspace's target folder
    // (where the Node addon's build left the same dependencies built).
    let mut install = pip_install(&python);
    install
        .arg("--quiet")
        .args(["--no-deps", "--no-build-isolation", "--force-reinstall"])
        .arg(package())
        // The backend runs the `maturin` of the PATH: the environment's.
        .env(
            "PATH",
            with_first(python.parent().expect("the environment's bin")),
        );
    // As the addon's build: what ships, without line tables, embedding the
    // engine this build embeds (without it, the engine's build script runs
    // again and every crate above it is built once more).
    engram_dist::as_shipped(&mut install);
    engram_dist::with_built_engine(&mut install)
        .unwrap_or_else(|e| panic!("writing the built engine for the module's build: {e:#}"));
    run(install, "pip install host/python");
    python
}

/// `python -m pip install`, asking nothing and not checking pip's own
/// version: what to install is added to it.
pub fn pip_install(python: &Path) -> Command {
    let mut command = Command::new(python);
    command.args([
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-input",
    ]);
    command
}

/// The `PATH` of this process with `dir` first.
fn with_first(dir: &Path) -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::iter::once(dir.to_path_buf()).chain(std::env::split_paths(&path));
    std::env::join_paths(dirs).expect("a PATH")
}

/// The peers the tests compare with (`tests/peers`: the reference MCP
/// memory server), installed by `npm ci` from their lock file under this
/// build's target folder, again only when the lock file changed: the
/// reference server's `dist/index.js`.
pub fn peers() -> PathBuf {
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

/// The variable that names the PostgreSQL database of the PostgreSQL cases.
pub const POSTGRES_URL_VAR: &str = "ENGRAM_TEST_POSTGRES_URL";

/// Why a PostgreSQL case is skipped (`host/python/tests/conftest.py`).
pub const NEEDS_POSTGRES: &str = "needs PostgreSQL: set ENGRAM_TEST_POSTGRES_URL";

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
pub struct Report {
    /// Whether pytest exited with success.
    pub success: bool,
    /// Its standard output, then its standard error.
    pub text: String,
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    pub errors: u64,
    /// Tests marked to fail that failed, and that passed: a test marked so
    /// proves nothing, and counts as neither.
    pub xfailed: u64,
    pub xpassed: u64,
    /// The skips for want of PostgreSQL.
    pub postgres_skips: u64,
    /// The skips for any other reason.
    pub other_skips: u64,
}

/// The package's pytest suite, the files or folders `tests` (under
/// `host/python`), run on the installed package against the `engram`
/// command `engram` (its MCP tests drive it), what the tests measured
/// written to `figures` in the target folder and shown.
pub fn pytest(tests: &[&str], engram: &Path, figures: &str) -> Report {
    let python = installed();
    let figures = Path::new(env!("CARGO_TARGET_TMPDIR")).join(figures);
    let _ = std::fs::remove_file(&figures);
    let mut pytest = Command::new(&python);
    pytest
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .args(tests)
        .current_dir(package())
        .env("ENGRAM_BIN", engram)
        .env("ENGRAM_REFERENCE_MEMORY", peers())
        // The PostgreSQL cases run against the database
        // ENGRAM_TEST_POSTGRES_URL names (inherited), each in schemas of its
        // own.
        .env("ENGRAM_TEST_FIGURES", &figures);
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
        xfailed: count("xfailed"),
        xpassed: count("xpassed"),
        postgres_skips,
        other_skips,
    }
}

impl Report {
    /// Asserts that the run passed something and failed nothing, and that
    /// it skipped nothing but, without a database, the PostgreSQL cases
    /// (each listed with why, and counted); says what passed.
    pub fn assert_passed(&self, what: &str) {
        let postgres = std::env::var(POSTGRES_URL_VAR).is_ok_and(|url| !url.trim().is_empty());
        let skips_allowed = if postgres {
            self.skipped == 0
        } else {
            self.other_skips == 0 && self.postgres_skips == self.skipped
        };
        assert!(
            self.success
                && self.passed > 0
                && self.failed == 0
                && skips_allowed
                && self.errors == 0
                && self.xfailed == 0
                && self.xpassed == 0,
            "{what}: passed {}, failed {}, skipped {} ({} of them PostgreSQL cases), errors {}, xfailed {}, xpassed {}\n{}",
            self.passed,
            self.failed,
            self.skipped,
            self.postgres_skips,
            self.errors,
            self.xfailed,
            self.xpassed,
            self.text
        );
        if self.skipped == 0 {
            eprintln!("{what}: {} passed", self.passed);
        } else {
            eprintln!(
                "{what}: {} passed; {} PostgreSQL cases skipped ({NEEDS_POSTGRES})",
                self.passed, self.skipped
            );
        }
    }
}
