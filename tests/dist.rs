//! What `cargo run -p engram-dist` builds, installed the way a user installs
//! it, on a `PATH` that holds no `cargo` and no `rustc` (and with
//! `RUSTUP_TOOLCHAIN` unset): this machine's Python wheel into a fresh
//! virtual environment (it installs nothing but itself), the npm
//! tarball into an empty npm project under the Node the package pins (it
//! adds nothing but itself), and the README's examples run as written on
//! what was installed: each fenced block under a line `<!-- test: python
//! -->`, `<!-- test: javascript -->` or `<!-- test: cli -->`. The command
//! line's block runs twice, its `engram` the native binary of this build,
//! then `engram-cli.wasm` under the pinned wasmtime CLI. The Rust block
//! (`<!-- test: rust -->`) is `host/rust/examples/remember.rs`, run with
//! cargo: a Rust user has it. Each example must print the memory it
//! remembered, dated in ISO 8601, in the prompt it recalled. The wheel
//! cross-built for aarch64 runs the Python example on its machine, under
//! qemu-user with an arm64 Debian's CPython. (The sdist's build from source is
//! `tests/python.rs`'s: see there why.)
//!
//! `ENGRAM_README` names another README to take the examples from (a path
//! from the repository's top, or absolute). The tests need Python 3 with
//! pip and venv, and npm, on the `PATH`; without them they fail, saying so.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Instant;

mod support;

/// The repository's top folder.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository's folder")
}

/// A folder of this test's own under the target folder, emptied.
fn fresh(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("dist-test")
        .join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    }
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// Runs `command`, saying how long it took; its output, or a failure that
/// says what ran and what it printed. `needs` says what a missing program
/// is needed for.
fn run(command: &mut Command, what: &str, needs: &str) -> Output {
    let start = Instant::now();
    let output = command.output().unwrap_or_else(|e| {
        panic!(
            "{what}: {}: {e}: {needs}",
            command.get_program().to_string_lossy()
        )
    });
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(
        output.status.success(),
        "{what}: {}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    eprintln!("{what}: {:.1} s", start.elapsed().as_secs_f64());
    output
}

// ---- the folder engram-dist builds -------------------------------------------

/// The built artifacts.
struct Dist {
    /// The Python wheel of each platform, by platform.
    wheels: Vec<(&'static engram_dist::javascript::Platform, PathBuf)>,
    /// The folder they are all in.
    out: PathBuf,
    /// The npm package, `engram-memory-<version>.tgz`.
    tarball: PathBuf,
    /// Its addon for each platform, `engram-memory-<platform>-<version>.tgz`, by platform.
    platforms: Vec<(&'static engram_dist::javascript::Platform, PathBuf)>,
    cli: PathBuf,
}

/// What `cargo run -p engram-dist -- --out <target tmp>/dist` builds, built
/// by the same library call in this process, once per test binary (so the
/// crates it shares with the tests are not built again for another
/// selection of features).
fn dist() -> &'static Dist {
    static DIST: OnceLock<Dist> = OnceLock::new();
    DIST.get_or_init(|| {
        let started = Instant::now();
        let (out, _) =
            engram_dist::artifacts::build(&Path::new(env!("CARGO_TARGET_TMPDIR")).join("dist"))
                .unwrap_or_else(|e| panic!("engram-dist: {e:#}"));
        eprintln!(
            "engram-dist's build: {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let find = |prefix: &str, suffix: &str| {
            let found: Vec<PathBuf> = std::fs::read_dir(&out)
                .unwrap()
                .map(|entry| entry.unwrap().path())
                .filter(|path| {
                    let name = path.file_name().unwrap().to_string_lossy();
                    name.starts_with(prefix) && name.ends_with(suffix)
                })
                .collect();
            assert_eq!(
                found.len(),
                1,
                "one {prefix}*{suffix} in {}: {found:?}",
                out.display()
            );
            found.into_iter().next().unwrap()
        };
        let platforms = engram_dist::javascript::PLATFORMS
            .iter()
            .map(|platform| (platform, find(&format!("{}-", platform.package()), ".tgz")))
            .collect();
        let prefix = engram_dist::python::FILE_PREFIX;
        let wheels = engram_dist::javascript::PLATFORMS
            .iter()
            .map(|platform| {
                let arch = platform.target.split('-').next().unwrap();
                (platform, find(prefix, &format!("_{arch}.whl")))
            })
            .collect();
        // One sdist beside them (`tests/python.rs` builds one and installs it).
        find(prefix, ".tar.gz");
        let dist = Dist {
            wheels,
            out: out.clone(),
            tarball: find("engram-memory-0", ".tgz"),
            platforms,
            cli: out.join(engram_dist::artifacts::CLI),
        };
        assert!(dist.cli.is_file(), "{} is missing", dist.cli.display());
        let http = out.join(engram_dist::artifacts::HTTP);
        assert!(http.is_file(), "{} is missing", http.display());
        dist
    })
}

// ---- a PATH without Rust ------------------------------------------------------

/// The `PATH` of this process without any folder that holds `cargo` or
/// `rustc`, and without `~/.cargo/bin` (or `$CARGO_HOME/bin`).
fn path_without_rust() -> &'static OsString {
    static PATH: OnceLock<OsString> = OnceLock::new();
    PATH.get_or_init(|| {
        let cargo_home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cargo")));
        let cargo_bin = cargo_home.map(|home| home.join("bin"));
        let kept: Vec<PathBuf> =
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                .filter(|dir| {
                    let holds = |tool: &str| {
                        dir.join(format!("{tool}{}", std::env::consts::EXE_SUFFIX))
                            .exists()
                    };
                    !holds("cargo")
                        && !holds("rustc")
                        && Some(dir) != cargo_bin.as_ref()
                        && !dir.ends_with(".cargo/bin")
                })
                .collect();
        std::env::join_paths(kept).expect("a PATH")
    })
}

/// `path_without_rust` with `first` before it.
fn path_with(first: &Path) -> OsString {
    let mut dirs = vec![first.to_path_buf()];
    dirs.extend(std::env::split_paths(path_without_rust()));
    std::env::join_paths(dirs).expect("a PATH")
}

/// `command` on a `PATH` (`path`) without Rust, `RUSTUP_TOOLCHAIN` and what
/// cargo tells the processes it runs unset, and no `engram` settings.
fn without_rust<'a>(command: &'a mut Command, path: &OsString) -> &'a mut Command {
    command
        .env("PATH", path)
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO")
        .env_remove("ENGRAM_STORE")
        .env_remove("ENGRAM_AGENT")
}

/// Whether `sh -c 'command -v <tool>'` finds `tool` on `path`.
fn found_on(path: &OsString, tool: &str) -> Option<String> {
    let output = without_rust(&mut Command::new("/bin/sh"), path)
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .expect("running /bin/sh");
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

// ---- the Python wheel in a fresh virtual environment --------------------------

const NEEDS_PYTHON: &str =
    "these tests need Python 3 (python3) with pip and venv on a PATH without cargo";

/// The virtual environment the wheel is installed in.
struct Python {
    /// Its Python.
    python: PathBuf,
    /// The packages pip installed (names normalized: `engram-memory-engine`).
    installed: Vec<String>,
    /// Where pip took the engram-memory-engine it installed from.
    engram_from: String,
    /// The wheel it installed: this machine's.
    wheel: PathBuf,
}

/// A fresh virtual environment (`python3 -m venv`) with this machine's
/// wheel installed by pip, which reports what it installed; once per test
/// binary.
fn python() -> &'static Python {
    static PYTHON: OnceLock<Python> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let dist = dist();
        let wheel = dist
            .wheels
            .iter()
            .find(|(platform, _)| platform.is_host())
            .map(|(_, wheel)| wheel.clone())
            .expect("a wheel for this machine");
        let dir = fresh("python");
        let venv = dir.join("venv");
        let path = path_without_rust();
        run(
            without_rust(&mut Command::new("python3"), path)
                .args(["-m", "venv"])
                .arg(&venv),
            "python3 -m venv",
            NEEDS_PYTHON,
        );
        let python = venv.join("bin/python");
        let report = dir.join("pip-report.json");
        run(
            without_rust(&mut Command::new(&python), path)
                .args(["-m", "pip", "install", "--disable-pip-version-check"])
                .args(["--no-input", "--report"])
                .arg(&report)
                .arg(&wheel)
                .current_dir(&dir),
            "pip install the wheel",
            NEEDS_PYTHON,
        );
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&report).expect("pip's report"))
                .expect("pip's report is JSON");
        let items = report["install"]
            .as_array()
            .expect("the report's install list");
        let name = |item: &serde_json::Value| {
            item["metadata"]["name"]
                .as_str()
                .expect("a package's name")
                .to_ascii_lowercase()
                .replace(['_', '.'], "-")
        };
        let mut installed: Vec<String> = items.iter().map(name).collect();
        installed.sort();
        let engram_from = items
            .iter()
            .find(|item| name(item) == "engram-memory-engine")
            .and_then(|item| item["download_info"]["url"].as_str())
            .unwrap_or_default()
            .to_string();
        Python {
            python,
            installed,
            engram_from,
            wheel,
        }
    })
}

// ---- the npm tarball in an empty npm project -----------------------------------

const NEEDS_NPM: &str = "these tests need Node.js with npm on a PATH without cargo";

/// The empty npm project the tarball is installed in.
struct Npm {
    /// Its folder.
    project: PathBuf,
    /// The pinned Node.
    node: PathBuf,
    /// The `PATH` its npm and Node run with: the pinned Node first.
    path: OsString,
    /// The version of the Node npm runs under on that `PATH` (`26.10.0`).
    version: String,
}

/// `npm init -y` in an empty folder, then `npm install --offline` of the
/// package's tarball and of its addon's for this machine, under the Node
/// the package pins (first on the `PATH`): from `dist/` alone, nothing
/// fetched from the registry (npm passes over the optional platform
/// packages it cannot find, those of other machines); once per test binary.
fn npm() -> &'static Npm {
    static NPM: OnceLock<Npm> = OnceLock::new();
    NPM.get_or_init(|| {
        let dist = dist();
        // engram-dist installed the package's npm dependencies, the pinned
        // Node among them.
        let node = engram_dist::javascript::node()
            .canonicalize()
            .expect("the Node the JavaScript package pins, in host/js/node_modules");
        let dir = fresh("npm");
        let bin = dir.join("node-bin");
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(&node, bin.join("node")).unwrap();
        let path = path_with(&bin);
        let project = dir.join("project");
        std::fs::create_dir(&project).unwrap();
        let npm = |args: &[&str], what: &str| {
            run(
                without_rust(&mut Command::new("npm"), &path)
                    .args(args)
                    .current_dir(&project),
                what,
                NEEDS_NPM,
            )
        };
        npm(&["init", "-y"], "npm init -y");
        // The versions npm reports, the Node it runs under among them.
        let versions: serde_json::Value =
            serde_json::from_slice(&npm(&["version", "--json"], "npm version").stdout)
                .expect("npm version's JSON");
        let version = versions["node"]
            .as_str()
            .expect("npm version names its Node")
            .to_string();
        let host = dist
            .platforms
            .iter()
            .find(|(platform, _)| platform.is_host())
            .map(|(_, tarball)| tarball)
            .expect("dist/ holds the addon's package of this machine");
        npm(
            &[
                "install",
                "--offline",
                "--no-audit",
                "--no-fund",
                dist.tarball.to_str().unwrap(),
                host.to_str().unwrap(),
            ],
            "npm install --offline the tarballs",
        );
        Npm {
            project,
            node,
            path,
            version,
        }
    })
}

// ---- the README's examples ---------------------------------------------------

/// The kinds of example a README marks.
const KINDS: [&str; 5] = ["python", "javascript", "rust", "cli", "mcp"];

/// The README the examples come from: `ENGRAM_README`, else the repository's.
fn readme() -> (PathBuf, String) {
    let path = std::env::var_os("ENGRAM_README")
        .filter(|path| !path.is_empty())
        .map_or_else(|| root().join("README.md"), |path| root().join(path));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path, text)
}

/// The fenced code blocks of `text` each under a line `<!-- test: KIND
/// -->`, by kind; a marker of another kind, a marker with no block under it
/// or an empty block fails.
fn examples(text: &str) -> Vec<(&'static str, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let Some(kind) = line
            .trim()
            .strip_prefix("<!-- test:")
            .and_then(|rest| rest.strip_suffix("-->"))
            .map(str::trim)
        else {
            continue;
        };
        let kind = KINDS.into_iter().find(|k| *k == kind).unwrap_or_else(|| {
            panic!(
                "line {}: `<!-- test: {kind} -->` is no kind of example ({KINDS:?})",
                at + 1
            )
        });
        let mut rest = lines[at + 1..]
            .iter()
            .skip_while(|line| line.trim().is_empty());
        let open = rest.next().map(|line| line.trim()).unwrap_or_default();
        let fence: String = open.chars().take_while(|&c| c == '`' || c == '~').collect();
        assert!(
            fence.len() >= 3,
            "line {}: `<!-- test: {kind} -->` is not followed by a fenced code block",
            at + 1
        );
        let mut body = String::new();
        let mut closed = false;
        for line in rest {
            if line.trim() == fence {
                closed = true;
                break;
            }
            body.push_str(line);
            body.push('\n');
        }
        assert!(
            closed,
            "line {}: the {kind} example's block is not closed",
            at + 1
        );
        assert!(
            !body.trim().is_empty(),
            "line {}: the {kind} example's block is empty",
            at + 1
        );
        found.push((kind, body));
    }
    for kind in KINDS {
        assert!(
            found.iter().any(|(k, _)| *k == kind),
            "the README has no `<!-- test: {kind} -->` example"
        );
    }
    found
}

/// An `engram` command for the command line's example: a shell script in a
/// folder of its own that runs `command` with the example's arguments.
fn engram_wrapper(dir: &Path, command: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("engram");
    std::fs::write(&script, format!("#!/bin/sh\nexec {command} \"$@\"\n")).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// A path quoted for the shell.
fn quoted(path: &Path) -> String {
    let text = path.to_str().expect("a UTF-8 path");
    assert!(!text.contains('\''), "{text} holds a quote");
    format!("'{text}'")
}

/// One run of an example: its name, whether it exited 0, what it printed,
/// and, for an example that is not to print the recalled memory, what else
/// is wrong with it (none when nothing is).
struct Ran {
    what: String,
    succeeded: bool,
    stdout: String,
    stderr: String,
    checked: Option<Option<String>>,
}

/// Runs `command` (an example, on a `PATH` without Rust) to its end, and
/// prints what it printed.
fn example(what: String, command: &mut Command) -> Ran {
    let start = Instant::now();
    let output = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    );
    eprintln!(
        "--- {what}: {} in {:.1} s; stdout\n{stdout}--- {what}: stderr\n{stderr}",
        output.status,
        start.elapsed().as_secs_f64()
    );
    Ran {
        what,
        succeeded: output.status.success(),
        stdout,
        stderr,
        checked: None,
    }
}

/// A client of the MCP Python SDK (from the tests' virtual environment)
/// that starts the server `argv[1]` names (`{"command","args"}`) in the
/// folder `argv[2]`, lists its tools, creates an entity with an observation
/// and reads the graph back: it prints the tools' names and the graph.
const MCP_CLIENT: &str = r#"
import asyncio, json, os, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    server, cwd = json.loads(sys.argv[1]), sys.argv[2]
    params = StdioServerParameters(command=server["command"], args=server["args"], cwd=cwd, env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = sorted(tool.name for tool in (await session.list_tools()).tools)
        entity = {"name": "Hotel Avenida", "entityType": "place", "observations": ["booked Hotel Avenida Lisbon."]}
        await session.call_tool("create_entities", {"entities": [entity]})
        graph = await session.call_tool("read_graph", {})
        print(json.dumps({"tools": tools, "graph": graph.structured_content}))

asyncio.run(main())
"#;

/// The README's MCP example: a desktop client's config lines (`+
/// "command": …, "args": […],`), each run: its server started as the
/// client starts it, its store put in a folder of its own, driven by the
/// MCP Python SDK's client. `npx` runs in the npm project (where `npx
/// engram-memory` finds the installed package; npm told to fetch nothing);
/// `uvx` with uv (pinned among the test requirements) told to fetch nothing
/// and to find packages in `dist/` alone, with a cache of its own, so it
/// installs the wheel built there.
fn mcp_examples(what: &dyn Fn(&str) -> String, body: &str, n: usize) -> Vec<Ran> {
    let lines: Vec<&str> = body
        .lines()
        .filter_map(|line| line.strip_prefix('+'))
        .collect();
    assert!(!lines.is_empty(), "the MCP example adds no config line");
    let mut runs = Vec::new();
    for (i, line) in lines.into_iter().enumerate() {
        let mut server: serde_json::Value =
            serde_json::from_str(&format!("{{{}}}", line.trim().trim_end_matches(',')))
                .unwrap_or_else(|e| {
                    panic!("the MCP example's config line is not JSON members: {e}: {line}")
                });
        let dir = fresh(&format!("readme-{n}-mcp-{i}"));
        let store = dir.join("memory.db");
        for arg in server["args"]
            .as_array_mut()
            .expect("the config line has args")
        {
            if arg.as_str().is_some_and(|a| a.ends_with("memory.db")) {
                *arg = serde_json::Value::String(store.to_str().unwrap().to_owned());
            }
        }
        let python = support::python::environment();
        let mut client = Command::new(&python);
        client.args(["-c", MCP_CLIENT]).arg(server.to_string());
        let command = server["command"].as_str().unwrap_or_default().to_owned();
        match command.as_str() {
            "npx" => {
                let npm = npm();
                without_rust(&mut client, &npm.path)
                    .arg(&npm.project)
                    .env("npm_config_offline", "true");
            }
            "uvx" => {
                // uv from the tests' environment, and nothing else of it.
                let uv = dir.join("uv-bin");
                std::fs::create_dir_all(&uv).unwrap();
                std::os::unix::fs::symlink(python.with_file_name("uvx"), uv.join("uvx")).unwrap();
                std::os::unix::fs::symlink(python.with_file_name("uv"), uv.join("uv")).unwrap();
                without_rust(&mut client, &path_with(&uv))
                    .arg(&dir)
                    .env("UV_OFFLINE", "1")
                    .env("UV_NO_INDEX", "1")
                    .env("UV_FIND_LINKS", &dist().out)
                    .env("UV_CACHE_DIR", dir.join("uv-cache"))
                    .env("UV_TOOL_DIR", dir.join("uv-tools"))
                    .env("UV_PYTHON_DOWNLOADS", "never");
            }
            other => {
                panic!("the MCP example runs {other:?}, which this test does not know how to run")
            }
        }
        let ran = example(what(&format!(" ({command})")), &mut client);
        let answer: serde_json::Value = serde_json::from_str(ran.stdout.trim()).unwrap_or_default();
        let tools = answer["tools"].as_array().map(Vec::len).unwrap_or(0);
        let problem = if tools != 9 {
            Some(format!(
                "it served {tools} tools, not the knowledge graph's nine"
            ))
        } else if !answer["graph"]
            .to_string()
            .contains("booked Hotel Avenida Lisbon.")
        {
            Some(format!(
                "read_graph did not answer the entity created: {}",
                answer["graph"]
            ))
        } else if !store.is_file() {
            Some(format!("the store {} was not made", store.display()))
        } else {
            None
        };
        runs.push(Ran {
            checked: Some(problem),
            ..ran
        });
    }
    runs
}

/// Whether `stdout` holds the README's remembered turn as a memory line of
/// a recalled prompt: `- [YYYY-MM-DDTHH:MM:SSZ] User booked Hotel Avenida
/// in Lisbon.` (the command line prints the prompt inside its JSON answer, the
/// line after a `\n`).
fn recalled_the_booking(stdout: &str) -> bool {
    stdout.match_indices("- [").any(|(at, _)| {
        let rest = &stdout[at + 3..];
        let iso = rest.get(..20).unwrap_or_default().as_bytes();
        let shape = b"dddd-dd-ddTdd:dd:ddZ";
        iso.len() == 20
            && iso.iter().zip(shape).all(|(c, s)| {
                if *s == b'd' {
                    c.is_ascii_digit()
                } else {
                    c == s
                }
            })
            && rest[20..].starts_with("] User booked Hotel Avenida in Lisbon.")
    })
}

// ---- the tests -----------------------------------------------------------------

#[test]
fn the_install_steps_run_on_a_path_that_holds_no_cargo_and_no_rustc() {
    let path = path_without_rust();
    for tool in ["cargo", "rustc"] {
        assert_eq!(
            found_on(path, tool),
            None,
            "{tool} is on the PATH the installs run with"
        );
    }
    assert!(
        found_on(&std::env::var_os("PATH").unwrap_or_default(), "sh").is_some(),
        "the check itself finds what is on the PATH"
    );
}

// Each wheel holds the native module of its machine (the Rust host: an ELF
// shared object that CPython loads as `engram_memory._native`), is tagged
// for its platform and CPython's stable ABI from 3.10, and installs nothing
// but itself, the `engram` command with it.
#[test]
fn each_python_wheel_holds_the_module_of_its_machine_and_installs_alone_with_the_engram_command() {
    let dist = dist();
    for (platform, wheel) in &dist.wheels {
        let name = wheel.file_name().unwrap().to_string_lossy();
        let arch = platform.target.split('-').next().unwrap();
        assert!(
            name.starts_with("engram_memory_engine-0.1.0-cp310-abi3-manylinux")
                && name.ends_with(&format!("_{arch}.whl")),
            "{name} is not tagged cp310-abi3 manylinux for {arch}"
        );
        let module =
            engram_dist::python::native_module(wheel).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        let machine =
            engram_dist::python::elf_machine(&module).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        let expected = match arch {
            "x86_64" => 62,   // EM_X86_64
            "aarch64" => 183, // EM_AARCH64
            other => panic!("no ELF machine known for {other}"),
        };
        assert_eq!(
            machine, expected,
            "{name}: the module is for ELF machine {machine}"
        );
        assert_eq!(
            u16::from_le_bytes([module[16], module[17]]),
            3,
            "{name}: a shared object (ET_DYN)"
        );
        assert!(
            module
                .windows(b"PyInit__native".len())
                .any(|w| w == b"PyInit__native"),
            "{name}: the module does not initialize engram_memory._native"
        );
        eprintln!(
            "measured: {name} ({} bytes), its native module {} bytes",
            std::fs::metadata(wheel).map(|m| m.len()).unwrap_or(0),
            module.len()
        );
    }
    let python = python();
    assert_eq!(
        python.installed,
        ["engram-memory-engine"],
        "pip installed more than the wheel"
    );
    let name = python.wheel.file_name().unwrap().to_string_lossy();
    assert!(
        python.engram_from.starts_with("file:") && python.engram_from.ends_with(&*name),
        "pip took engram-memory-engine from {}, not from the wheel",
        python.engram_from
    );
    let engram = python.python.with_file_name("engram");
    let version = run(
        without_rust(&mut Command::new(&engram), path_without_rust()).arg("--version"),
        "the wheel's engram --version",
        NEEDS_PYTHON,
    );
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        "engram 0.1.0"
    );
}

// ---- the aarch64 wheel on its machine, under qemu-user ------------------------

const NEEDS_QEMU: &str = "the aarch64 wheel runs under qemu-user, with the CPython of an arm64 Debian that debootstrap unpacks: Debian's qemu-user-static and debootstrap packages (this test installs them with apt-get when it runs as root), and deb.debian.org for the arm64 packages";

/// An arm64 Debian 12 with its python3, unpacked under the target folder
/// once and kept: debootstrap's first stage (`--foreign`), which fetches
/// and unpacks the base packages without running any of them, then every
/// package it fetched (python3's among them) unpacked with dpkg-deb.
fn arm64_debian() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("arm64-debian");
    let unpacked = dir.join(".unpacked");
    if unpacked.exists() {
        return dir;
    }
    let debootstrap = "/usr/sbin/debootstrap";
    assert!(
        support::debian_package(debootstrap, "debootstrap"),
        "no {debootstrap}: {NEEDS_QEMU}"
    );
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    }
    run(
        Command::new(debootstrap)
            .args(["--foreign", "--arch=arm64", "--variant=minbase"])
            .args(["--include=python3", "bookworm"])
            .arg(&dir)
            .arg("http://deb.debian.org/debian"),
        "debootstrap --foreign of an arm64 Debian 12",
        NEEDS_QEMU,
    );
    // The first stage leaves the packages it did not unpack (python3 and
    // what it needs) in apt's cache; dpkg-deb unpacks every one it fetched.
    let archives = dir.join("var/cache/apt/archives");
    let mut debs: Vec<PathBuf> = std::fs::read_dir(&archives)
        .unwrap_or_else(|e| panic!("{}: {e}", archives.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "deb"))
        .collect();
    debs.sort();
    let started = Instant::now();
    for deb in &debs {
        let output = Command::new("dpkg-deb")
            .arg("-x")
            .arg(deb)
            .arg(&dir)
            .output()
            .unwrap_or_else(|e| panic!("dpkg-deb: {e}: {NEEDS_QEMU}"));
        assert!(
            output.status.success(),
            "dpkg-deb -x {}: {}: {}",
            deb.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    eprintln!(
        "dpkg-deb -x of {} packages: {:.1} s",
        debs.len(),
        started.elapsed().as_secs_f64()
    );
    std::fs::write(&unpacked, "").unwrap();
    dir
}

// The aarch64 wheel, cross-built with zig, runs on its machine: under
// qemu-user, an arm64 CPython 3.11 (Debian's) loads its module, which
// compiles the engine for aarch64 and runs the README's Python example (the
// booking recalled), and its `engram` command answers as the binary does.
#[test]
fn the_aarch64_python_wheel_runs_the_readme_example_under_qemu_user() {
    let dist = dist();
    let (_, wheel) = dist
        .wheels
        .iter()
        .find(|(platform, _)| platform.target.starts_with("aarch64-"))
        .expect("an aarch64 wheel");
    let qemu = "/usr/bin/qemu-aarch64-static";
    assert!(
        support::debian_package(qemu, "qemu-user-static"),
        "no {qemu}: {NEEDS_QEMU}"
    );
    let debian = arm64_debian();
    let dir = fresh("aarch64");
    // A wheel is a zip of what pip puts into site-packages.
    let site = dir.join("site-packages");
    run(
        Command::new("python3")
            .args(["-m", "zipfile", "-e"])
            .arg(wheel)
            .arg(&site),
        "unpacking the aarch64 wheel",
        NEEDS_PYTHON,
    );
    let (_, text) = readme();
    let example = examples(&text)
        .into_iter()
        .find(|(kind, _)| *kind == "python")
        .map(|(_, body)| body)
        .expect("the README's Python example");
    std::fs::write(dir.join("example.py"), example).unwrap();
    // qemu-user runs the arm64 python3.11 with the Debian folder as the
    // root its absolute paths are looked up in first (`-L`).
    let python = |what: &str, args: &[&str]| {
        let mut command = Command::new(qemu);
        command
            .arg("-L")
            .arg(&debian)
            .arg(debian.join("usr/bin/python3.11"))
            .args(args)
            .env("PYTHONPATH", &site)
            .env("ENGRAM_CACHE_DIR", dir.join("cache"))
            .env_remove("ENGRAM_STORE")
            .env_remove("ENGRAM_AGENT")
            .current_dir(&dir);
        run(&mut command, what, NEEDS_QEMU)
    };
    let machine = python(
        "platform.machine() under qemu-aarch64",
        &["-c", "import platform; print(platform.machine())"],
    );
    assert_eq!(String::from_utf8_lossy(&machine.stdout).trim(), "aarch64");
    let ran = python("the README's Python example on aarch64", &["example.py"]);
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert!(
        recalled_the_booking(&stdout),
        "the example did not recall the booking:\n{stdout}"
    );
    let version = python(
        "the aarch64 wheel's engram --version",
        &["-m", "engram_memory._cli", "--version"],
    );
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        "engram 0.1.0"
    );
}

#[test]
fn the_npm_tarballs_install_offline_under_the_pinned_node_and_add_nothing_but_themselves() {
    let npm = npm();
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(engram_dist::javascript::package().join("package.json"))
            .expect("host/js/package.json"),
    )
    .expect("host/js/package.json is JSON");
    let pinned = manifest["devDependencies"]["node"]
        .as_str()
        .expect("host/js/package.json pins a Node");
    assert_eq!(
        npm.version, pinned,
        "npm ran under another Node than the pinned one"
    );
    let host = engram_dist::javascript::host_platform()
        .expect("the package ships an addon for this machine")
        .package();
    let mut added: Vec<String> = std::fs::read_dir(npm.project.join("node_modules"))
        .expect("node_modules")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect();
    added.sort();
    assert_eq!(
        added,
        ["engram-memory", host.as_str()],
        "what npm install added"
    );
    let listed = run(
        without_rust(&mut Command::new("npm"), &npm.path)
            .args(["ls", "--all", "--json"])
            .current_dir(&npm.project),
        "npm ls --all --json",
        NEEDS_NPM,
    );
    let tree: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("npm ls's JSON");
    let dependencies = tree["dependencies"]
        .as_object()
        .expect("npm ls lists dependencies");
    let mut top: Vec<&String> = dependencies.keys().collect();
    top.sort();
    assert_eq!(top, ["engram-memory", &host], "npm ls --all: {tree:#}");
    // The platform packages are optional dependencies of engram-memory: this
    // machine's is the one installed beside it; another's is named, not installed.
    let nested = dependencies["engram-memory"]["dependencies"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for (name, dependency) in &nested {
        assert!(
            name.starts_with("engram-memory-"),
            "engram-memory brought {name}: {tree:#}"
        );
        assert!(
            *name == host || dependency.get("version").is_none(),
            "npm installed {name}, another machine's addon: {tree:#}"
        );
    }
    // What `npm install` brings for this machine, unpacked.
    let size = |dir: &Path| -> u64 {
        fn walk(dir: &Path) -> u64 {
            std::fs::read_dir(dir)
                .map(|entries| {
                    entries
                        .flatten()
                        .map(|e| match e.file_type() {
                            Ok(t) if t.is_dir() => walk(&e.path()),
                            _ => e.metadata().map(|m| m.len()).unwrap_or(0),
                        })
                        .sum()
                })
                .unwrap_or(0)
        }
        walk(dir)
    };
    let modules = npm.project.join("node_modules");
    eprintln!(
        "measured: npm installed engram-memory ({} bytes) and {host} ({} bytes), under Node {}",
        size(&modules.join("engram-memory")),
        size(&modules.join(&host)),
        npm.version
    );
}

/// The bytes of the one file named `name` in a gzipped npm tarball.
fn tarball_file(tarball: &Path, name: &str) -> Vec<u8> {
    let gzipped = std::fs::read(tarball).unwrap_or_else(|e| panic!("{}: {e}", tarball.display()));
    engram_dist::tar_entries(&gzipped)
        .unwrap_or_else(|e| panic!("{}: {e:#}", tarball.display()))
        .into_iter()
        .find(|(path, _)| path == name)
        .unwrap_or_else(|| panic!("{} holds no {name}", tarball.display()))
        .1
}

// Each platform package holds its addon: a shared library of the platform's
// machine that registers the Node-API module, and says where npm installs it.
#[test]
fn each_platform_package_holds_the_addon_of_its_machine() {
    for (platform, tarball) in &dist().platforms {
        let addon = tarball_file(tarball, &format!("package/{}", platform.addon_file()));
        assert_eq!(
            &addon[..4],
            b"\x7fELF",
            "{}: not an ELF file",
            tarball.display()
        );
        assert_eq!(addon[5], 1, "{}: not little-endian", tarball.display());
        let machine = u16::from_le_bytes([addon[18], addon[19]]);
        let expected = match platform.cpu {
            "x64" => 62,    // EM_X86_64
            "arm64" => 183, // EM_AARCH64
            other => panic!("no ELF machine known for {other}"),
        };
        assert_eq!(
            machine,
            expected,
            "{}: the addon is for ELF machine {machine}, not {}",
            tarball.display(),
            platform.cpu
        );
        assert_eq!(
            u16::from_le_bytes([addon[16], addon[17]]),
            3,
            "a shared object (ET_DYN)"
        );
        assert!(
            addon
                .windows(b"napi_register_module_v1".len())
                .any(|w| w == b"napi_register_module_v1"),
            "{}: the addon registers no Node-API module",
            tarball.display()
        );
        let manifest: serde_json::Value =
            serde_json::from_slice(&tarball_file(tarball, "package/package.json"))
                .expect("the platform package's package.json");
        assert_eq!(manifest["name"], platform.package());
        assert_eq!(manifest["os"], serde_json::json!([platform.os]));
        assert_eq!(manifest["cpu"], serde_json::json!([platform.cpu]));
        assert_eq!(manifest["libc"], serde_json::json!([platform.libc]));
        assert_eq!(manifest["main"], platform.addon_file());
        eprintln!(
            "measured: {} ({} bytes), its addon {} bytes",
            tarball.display(),
            std::fs::metadata(tarball).map(|m| m.len()).unwrap_or(0),
            addon.len()
        );
    }
}

#[test]
fn the_readme_examples_run_from_the_installed_artifacts_without_cargo() {
    let (readme, text) = readme();
    let examples = examples(&text);
    eprintln!("{} examples from {}", examples.len(), readme.display());
    let dist = dist();
    let wasmtime = engram_wasi::wasmtime_cli().expect("the wasmtime CLI");
    let mut runs = Vec::new();
    for (n, (kind, body)) in examples.iter().enumerate() {
        let what = |how: &str| format!("the README's {kind} example {}{how}", n + 1);
        match *kind {
            "python" => {
                let python = python();
                let dir = fresh(&format!("readme-{n}-python"));
                std::fs::write(dir.join("example.py"), body).unwrap();
                runs.push(example(
                    what(""),
                    without_rust(&mut Command::new(&python.python), path_without_rust())
                        .arg("example.py")
                        .current_dir(&dir),
                ));
            }
            "javascript" => {
                // In the npm project, where `engram-memory` resolves to the
                // installed tarball.
                let npm = npm();
                let dir = npm.project.join(format!("readme-{n}"));
                if dir.exists() {
                    std::fs::remove_dir_all(&dir).unwrap();
                }
                std::fs::create_dir(&dir).unwrap();
                std::fs::write(dir.join("example.mjs"), body).unwrap();
                runs.push(example(
                    what(""),
                    without_rust(&mut Command::new(&npm.node), &npm.path)
                        .arg("example.mjs")
                        .current_dir(&dir),
                ));
            }
            "rust" => {
                let source = root().join("host/rust/examples/remember.rs");
                let example_source = std::fs::read_to_string(&source).unwrap();
                assert_eq!(
                    body,
                    &example_source,
                    "the README's Rust example is not {}",
                    source.display()
                );
                // Built by cargo with the workspace's features (those the
                // tests were built with, so nothing is built again), then run
                // in a folder of its own, which may be anywhere.
                let dir = fresh(&format!("readme-{n}-rust"));
                runs.push(example(
                    what(" (examples/remember.rs)"),
                    Command::new(remember_example()).current_dir(&dir),
                ));
            }
            "mcp" => runs.extend(mcp_examples(&what, body, n)),
            _ => {
                let engrams = [
                    (
                        " (native engram)",
                        quoted(Path::new(env!("CARGO_BIN_EXE_engram"))),
                    ),
                    (
                        " (engram-cli.wasm under wasmtime)",
                        format!("{} run --dir .::. {}", quoted(&wasmtime), quoted(&dist.cli)),
                    ),
                ];
                for (i, (how, engram)) in engrams.into_iter().enumerate() {
                    let dir = fresh(&format!("readme-{n}-cli-{i}"));
                    let bin = engram_wrapper(&dir, &engram);
                    let work = dir.join("work");
                    std::fs::create_dir(&work).unwrap();
                    std::fs::write(work.join("example.sh"), body).unwrap();
                    runs.push(example(
                        what(how),
                        without_rust(&mut Command::new("/bin/sh"), &path_with(&bin))
                            .args(["-e", "example.sh"])
                            .current_dir(&work),
                    ));
                }
            }
        }
    }
    let mut problems = Vec::new();
    for ran in &runs {
        if !ran.succeeded {
            problems.push(format!("{} failed: {}", ran.what, ran.stderr.trim()));
        } else if let Some(checked) = &ran.checked {
            if let Some(problem) = checked {
                problems.push(format!("{}: {problem}", ran.what));
            }
        } else if !recalled_the_booking(&ran.stdout) {
            problems.push(format!(
                "{} did not print the remembered booking as a dated memory line: {}",
                ran.what,
                ran.stdout.trim()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `examples/remember.rs` built by `cargo build --workspace --example
/// remember`: the executable cargo says it made.
fn remember_example() -> PathBuf {
    let output = run(
        Command::new(env!("CARGO"))
            .args(["build", "-q", "--locked", "--manifest-path"])
            .arg(root().join("Cargo.toml"))
            .args(["--workspace", "--example", "remember"])
            .args(["--message-format", "json"]),
        "cargo build --example remember",
        "the Rust example needs cargo",
    );
    engram_dist::native::artifacts(&output.stdout, "remember")
        .iter()
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .expect("cargo named the example's executable")
}

// proves IO-W2: from the installed wheel and tarball, with no cargo on the
// PATH, `remember` twice with one request id stores one memory, and
// `recall` finds it.
#[test]
fn io_w2_from_the_installed_packages_remember_twice_with_one_request_id_stores_one_memory() {
    let script_py = r#"
from engram_memory import Engram
alice = Engram("engram.db").open("alice")
first = alice.remember("I booked the Hotel Avenida in Lisbon.", "Lovely!", request_id="turn-1")
again = alice.remember("I booked the Hotel Avenida in Lisbon.", "Lovely!", request_id="turn-1")
assert again == first and len(first.committed) == 1, (first, again)
events = alice.read({"record_type": "EVENT", "selector": {"Latest": {"limit": 10}}, "request_id": "r"})
assert [e["id"] for e in events["records"]] == first.committed, events
recalled = alice.recall("Which hotel did I book?")
assert [m.id for m in recalled.memories] == first.committed, recalled
print(recalled.prompt)
"#;
    let script_js = r#"
import { open } from 'engram-memory';
import assert from 'node:assert/strict';
const alice = await open('alice', { store: 'engram.db' });
const first = alice.remember('I booked the Hotel Avenida in Lisbon.', 'Lovely!', { request_id: 'turn-1' });
const again = alice.remember('I booked the Hotel Avenida in Lisbon.', 'Lovely!', { request_id: 'turn-1' });
assert.deepEqual(again, first);
assert.equal(first.committed.length, 1);
const events = alice.read({ record_type: 'EVENT', selector: { Latest: { limit: 10 } }, request_id: 'r' });
assert.deepEqual(events.records.map((e) => e.id), first.committed);
const recalled = alice.recall('Which hotel did I book?');
assert.deepEqual(recalled.memories.map((m) => m.id), first.committed);
console.log(recalled.prompt);
"#;
    let python = python();
    let dir = fresh("io-w2-python");
    std::fs::write(dir.join("retry.py"), script_py).unwrap();
    let from_python = example(
        "remember twice from the installed wheel".into(),
        without_rust(&mut Command::new(&python.python), path_without_rust())
            .arg("retry.py")
            .current_dir(&dir),
    );
    let npm = npm();
    let dir = npm.project.join("io-w2");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("retry.mjs"), script_js).unwrap();
    let from_node = example(
        "remember twice from the installed tarball".into(),
        without_rust(&mut Command::new(&npm.node), &npm.path)
            .arg("retry.mjs")
            .current_dir(&dir),
    );
    for ran in [from_python, from_node] {
        assert!(
            recalled_the_booking(&ran.stdout),
            "{}: {}",
            ran.what,
            ran.stdout
        );
    }
}
