//! The Python package (`host/python`), run from `cargo test`: a virtual
//! environment of its own (under this build's target folder) gets the
//! pinned test requirements (`host/python/requirements-test.txt`, installed
//! again only when that file changed) and the package itself, installed by
//! pip from its folder (its build backend, maturin, builds the native module:
//! the Rust host); then the package's pytest suite runs against the
//! installed package: the shared scenarios over SQLite, in memory, on
//! PostgreSQL and on a store written in Python, the store format shared with
//! the `engram` command line (this crate's binary), processes writing one
//! file or one PostgreSQL domain, plug-in algorithms. Nothing may be skipped but the PostgreSQL
//! cases when `ENGRAM_TEST_POSTGRES_URL` names no database, and those are
//! counted. The package's code is also held to its linter and formatter
//! (ruff, configured in `pyproject.toml`) and its type checker (mypy).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::OnceLock;

mod support;

use support::python::{POSTGRES_URL_VAR, Report, environment, installed, package, run};

/// The package installed and its suite run against this build's `engram`,
/// once for every test below.
fn pytest() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(|| {
        support::python::pytest(
            &["tests"],
            Path::new(env!("CARGO_BIN_EXE_engram")),
            "python-figures.txt",
        )
    })
}

// Every shared scenario on the Python host with every backend: each line names its rule in
// its `note`.
#[test]
fn the_python_package_installs_and_passes_its_tests() {
    pytest().assert_passed("the Python tests");
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
         from engram_memory import Engram\n\
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

// ---- one SQLite file, every kind of host at once ----------------------------------

/// The agent whose domain every process of the shared-file test writes and reads.
const SHARED_AGENT: &str = "shared";
/// Writes, and as many reads, of each Node and each Python process.
const LANGUAGE_CALLS: usize = 300;
/// Writes of each command-line process per round; the same request ids every round.
const CLI_WRITES: usize = 100;
/// Reads of each command-line process per round, each under an id of its own.
const CLI_READS: usize = 300;
/// Rounds of each command-line process: the later rounds' writes are retries.
const CLI_ROUNDS: usize = 3;

/// The STATE write a process makes under `request_id`.
fn shared_write(request_id: &str, timestamp: usize) -> String {
    serde_json::json!({
        "request_id": request_id,
        "source": {"agent_id": SHARED_AGENT, "component": "COGNITION", "actor": "USER"},
        "record": {"record_type": "STATE", "timestamp": timestamp,
            "payload": {"subject": "shared.file", "properties": {"by": request_id}}}
    })
    .to_string()
}

/// The read a process makes under `request_id`.
fn shared_read(request_id: &str) -> String {
    serde_json::json!({
        "record_type": "STATE",
        "selector": {"Latest": {"limit": 3}},
        "request_id": request_id,
    })
    .to_string()
}

/// What a Node or Python process of the shared-file test does, once told
/// to go: for each i, the write `<name>-w<i>` then the read `<name>-r<i>`,
/// printing `W <request id> <answer>` and `R <request id> <records>` as
/// each is answered.
const NODE_SHARED: &str = r#"
const { open } = await import(process.env.ENGRAM_INDEX);
const [store, agent, name, n] = process.argv.slice(1);
const domain = await open(agent, { store });
const write = (id, t) => JSON.stringify({request_id: id, source: {agent_id: agent, component: 'COGNITION', actor: 'USER'},
  record: {record_type: 'STATE', timestamp: t, payload: {subject: 'shared.file', properties: {by: id}}}});
console.log('ready');
process.stdin.once('data', () => {
  for (let i = 0; i < Number(n); i++) {
    const answer = domain.write(write(`${name}-w${i}`, i));
    console.log(`W ${name}-w${i} ${JSON.stringify(answer)}`);
    const read = domain.read(JSON.stringify({record_type: 'STATE', selector: {Latest: {limit: 3}}, request_id: `${name}-r${i}`}));
    console.log(`R ${name}-r${i} ${read.records.length}`);
  }
  domain.close();
  process.exit(0);
});
"#;

const PYTHON_SHARED: &str = r#"
import json, sys
from engram_memory import Engram
store, agent, name, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with Engram(store) as engram:
    domain = engram.open(agent)
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(n):
        request = {"request_id": f"{name}-w{i}",
                   "source": {"agent_id": agent, "component": "COGNITION", "actor": "USER"},
                   "record": {"record_type": "STATE", "timestamp": i,
                              "payload": {"subject": "shared.file", "properties": {"by": f"{name}-w{i}"}}}}
        print(f"W {name}-w{i} {json.dumps(domain.write(request))}", flush=True)
        read = domain.read({"record_type": "STATE", "selector": {"Latest": {"limit": 3}},
                            "request_id": f"{name}-r{i}"})
        print(f"R {name}-r{i} {len(read['records'])}", flush=True)
    domain.close()
"#;

/// Starts a Node or Python process of the shared-file test and waits until
/// it has opened the store.
fn start_language_process(mut command: Command, what: &str) -> std::process::Child {
    use std::io::BufRead;
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("starting {what}: {e}"));
    let mut first = String::new();
    let stdout = child.stdout.as_mut().expect("a piped stdout");
    std::io::BufReader::new(stdout)
        .read_line(&mut first)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    if first.trim() != "ready" {
        let output = child.wait_with_output().expect("its output");
        panic!(
            "{what} did not open the store: {first}{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    child
}

/// The request ids of the calls a process's output says were answered:
/// `(operation, request id)` per `W`/`R` line, every write ACCEPTED.
fn answered_calls(what: &str, stdout: &str) -> Vec<(&'static str, String)> {
    stdout
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let mut parts = line.splitn(3, ' ');
            let (kind, id, answer) = (parts.next(), parts.next(), parts.next());
            match (kind, id, answer) {
                (Some("W"), Some(id), Some(answer)) => {
                    assert!(answer.contains("ACCEPTED"), "{what}: {line}");
                    ("WRITE", id.to_owned())
                }
                (Some("R"), Some(id), Some(_)) => ("READ", id.to_owned()),
                _ => panic!("{what} printed {line:?}"),
            }
        })
        .collect()
}

// proves IO-W8 proves S-AUDIT
#[test]
fn io_w8_s_audit_node_python_and_the_cli_sharing_one_sqlite_file_audit_every_answered_call_exactly_once()
 {
    // Two Node processes, two Python processes and four `engram` processes
    // write and read one domain of one SQLite file at once. Every call that
    // was answered (a write, each retry of one, a read) has exactly one
    // entry in the audit trail afterwards, under its request id; nothing
    // else does.
    support::javascript::ready();
    let python = installed();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("shared.db");
    let store_arg = store.to_str().unwrap();
    let index = support::javascript::package().join("src/index.js");

    let mut languages = Vec::new();
    for p in 0..2 {
        let mut node = Command::new(support::javascript::node());
        node.args(["--input-type=module", "-e", NODE_SHARED, "--"])
            .args([store_arg, SHARED_AGENT, &format!("node{p}")])
            .arg(LANGUAGE_CALLS.to_string())
            .env("ENGRAM_INDEX", format!("file://{}", index.display()));
        languages.push((
            format!("node{p}"),
            start_language_process(node, "a Node process"),
        ));
        let mut py = Command::new(&python);
        py.args(["-c", PYTHON_SHARED])
            .args([store_arg, SHARED_AGENT, &format!("python{p}")])
            .arg(LANGUAGE_CALLS.to_string());
        languages.push((
            format!("python{p}"),
            start_language_process(py, "a Python process"),
        ));
    }
    // The command line's batches: the same writes every round, fresh reads.
    let mut made: BTreeMap<(&'static str, String), usize> = BTreeMap::new();
    let mut cli_inputs = Vec::new();
    for p in 0..4 {
        let writes = dir.path().join(format!("cli{p}-writes.jsonl"));
        let lines: Vec<String> = (0..CLI_WRITES)
            .map(|i| shared_write(&format!("cli{p}-w{i}"), 1_000 + i))
            .collect();
        std::fs::write(&writes, lines.join("\n")).unwrap();
        let mut reads = Vec::new();
        for round in 0..CLI_ROUNDS {
            let file = dir.path().join(format!("cli{p}-reads-{round}.jsonl"));
            let lines: Vec<String> = (0..CLI_READS)
                .map(|i| shared_read(&format!("cli{p}-r{round}-{i}")))
                .collect();
            std::fs::write(&file, lines.join("\n")).unwrap();
            reads.push(file);
        }
        cli_inputs.push((writes, reads));
    }

    use std::io::Write;
    for (_, child) in &mut languages {
        child.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    }
    let cli_runs: Vec<_> = cli_inputs
        .into_iter()
        .enumerate()
        .map(|(p, (writes, reads))| {
            let store = store.clone();
            std::thread::spawn(move || {
                let mut answered: Vec<(&'static str, String)> = Vec::new();
                for (round, reads) in reads.iter().enumerate() {
                    for (command, file, operation) in
                        [("write", &writes, "WRITE"), ("read", reads, "READ")]
                    {
                        let output = Command::new(env!("CARGO_BIN_EXE_engram"))
                            .arg("--store")
                            .arg(&store)
                            .args([command, "--agent", SHARED_AGENT, "--batch"])
                            .arg(file)
                            .output()
                            .expect("running engram");
                        let stdout = String::from_utf8_lossy(&output.stdout);
                        assert!(
                            output.status.success(),
                            "engram {command}, process {p}, round {round}: {}\n{stdout}\n{}",
                            output.status,
                            String::from_utf8_lossy(&output.stderr)
                        );
                        let requests = std::fs::read_to_string(file).unwrap();
                        let answers: Vec<&str> = stdout.lines().collect();
                        let requests: Vec<&str> = requests.lines().collect();
                        assert_eq!(answers.len(), requests.len(), "engram {command}: {stdout}");
                        for (request, answer) in requests.iter().zip(answers) {
                            let id = serde_json::from_str::<serde_json::Value>(request).unwrap()
                                ["request_id"]
                                .as_str()
                                .unwrap()
                                .to_owned();
                            if operation == "WRITE" {
                                assert!(answer.contains("ACCEPTED"), "{id}: {answer}");
                            } else {
                                assert!(answer.contains("records"), "{id}: {answer}");
                            }
                            answered.push((operation, id));
                        }
                    }
                }
                answered
            })
        })
        .collect();

    for (name, child) in languages {
        let output = child.wait_with_output().expect("waiting for a process");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{name}: {}\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        let calls = answered_calls(&name, &stdout);
        assert_eq!(calls.len(), 2 * LANGUAGE_CALLS, "{name}: {stdout}");
        for call in calls {
            *made.entry(call).or_default() += 1;
        }
    }
    for run in cli_runs {
        for call in run.join().expect("a command-line process") {
            *made.entry(call).or_default() += 1;
        }
    }
    let calls: usize = made.values().sum();
    assert!(calls >= 5_000, "{calls} calls made");

    // What the trail holds, by request id and operation.
    let file = engram::SqliteBackend::open(&store).unwrap();
    let trail = engram::AuditSink::trail(
        &file,
        &engram::AuditQuery {
            agent: Some(SHARED_AGENT.into()),
            limit: 100_000,
            ..Default::default()
        },
    )
    .unwrap();
    let mut audited: BTreeMap<(&'static str, String), usize> = BTreeMap::new();
    for entry in &trail {
        let operation = match entry.operation {
            engram::audit::Operation::Write => "WRITE",
            engram::audit::Operation::Read => "READ",
            other => panic!("an entry of {other:?}: {entry:?}"),
        };
        *audited
            .entry((operation, entry.request_id.clone()))
            .or_default() += 1;
    }
    let mut lost = BTreeMap::<String, usize>::new();
    let mut twice = Vec::new();
    for (call, times) in &made {
        let found = audited.get(call).copied().unwrap_or(0);
        let host = call.1.split('-').next().unwrap_or_default();
        let kind = format!("{} of {}", call.0, host.trim_end_matches(char::is_numeric));
        if found < *times {
            *lost.entry(kind).or_default() += times - found;
        } else if found > *times {
            twice.push(format!("{call:?}: {found} entries for {times} calls"));
        }
    }
    let unknown: Vec<_> = audited
        .keys()
        .filter(|call| !made.contains_key(*call))
        .collect();
    eprintln!(
        "measured: the shared-file test made {calls} calls from Node, Python and the CLI; the trail holds {} entries of them",
        trail.len()
    );
    assert!(
        lost.is_empty() && twice.is_empty() && unknown.is_empty(),
        "of {calls} answered calls, entries missing: {lost:?}; audited more than made: {twice:?}; entries of no call made: {unknown:?}"
    );
}

// `uvx --from engram-memory-engine engram serve`: the package's `engram` command serves the
// HTTP API as `engram serve` does: the JavaScript package's test/serve.test.js (the shared
// scenarios over HTTP, S-AUTH, hostile requests) against it.
#[test]
fn the_package_command_serves_the_http_api_as_engram_serve_does() {
    let python = installed();
    let engram = python.with_file_name("engram");
    assert!(
        engram.exists(),
        "the package put no `engram` beside {}",
        python.display()
    );
    support::javascript::ready();
    let e5 = support::e5::E5Server::start();
    let output = support::javascript::npm(
        &["run", "test:serve"],
        &[
            ("ENGRAM_BIN", engram.to_str().expect("a UTF-8 path")),
            (support::e5::URL_VAR, &e5.url),
        ],
    );
    let passed = support::javascript::all_passed("engram serve of the Python package", &output);
    eprintln!("engram serve of the Python package: {passed} passed");
}

#[test]
fn the_defaults_and_words_each_package_reads_are_the_rust_hosts_value_for_value() {
    // The PostgreSQL connection's defaults and the words of a domain's
    // state, as Python and Node hand them to their callers, against the
    // Rust host's own: the same numbers (Python in seconds, Node in ms) and
    // the same words, not only the same names.
    support::javascript::ready();
    let rust: serde_json::Value =
        serde_json::from_str(&engram::backend::postgres_defaults::json()).unwrap();
    let mut py = Command::new(installed());
    py.args([
        "-c",
        "import json\n\
         from engram_memory import POSTGRES_DEFAULTS, _native\n\
         print(json.dumps({'postgres': dict(POSTGRES_DEFAULTS), 'messages': json.loads(_native.MESSAGES)}))",
    ]);
    let out = run(py, "python: the defaults");
    let python: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let index = support::javascript::package().join("gen/limits.js");
    let mut node = Command::new(support::javascript::node());
    node.args([
        "--input-type=module",
        "-e",
        &format!(
            "import {{ DEFAULT_POSTGRES_OPTIONS, MESSAGES }} from {:?};
             console.log(JSON.stringify({{ postgres: DEFAULT_POSTGRES_OPTIONS, messages: MESSAGES }}));",
            index.to_str().unwrap()
        ),
    ]);
    let out = run(node, "node: the defaults");
    let javascript: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    let rust = rust.as_object().unwrap();
    assert!(rust.len() > 1);
    for (name, ms) in rust {
        let ms = ms.as_u64().unwrap();
        assert!(ms > 0, "{name}");
        assert_eq!(javascript["postgres"][name].as_u64(), Some(ms), "{name}");
        let snake: String = name
            .chars()
            .flat_map(|c| {
                if c.is_ascii_uppercase() {
                    vec!['_', c.to_ascii_lowercase()]
                } else {
                    vec![c]
                }
            })
            .collect();
        let seconds = python["postgres"][&snake].as_f64().unwrap();
        assert_eq!((seconds * 1000.0).round() as u64, ms, "{snake}");
    }
    assert_eq!(python["postgres"].as_object().unwrap().len(), rust.len());
    assert_eq!(
        javascript["postgres"].as_object().unwrap().len(),
        rust.len()
    );
    let messages = python["messages"].as_object().unwrap();
    assert!(messages.contains_key("closed") && messages.contains_key("not_unicode"));
    assert_eq!(python["messages"], javascript["messages"]);
}

// The sdist (what `engram_dist` packs into `dist/`) builds with cargo alone
// (no wasm target, no guest sources: it carries the engine built) into a
// wheel whose `engram` answers as the binary does. Its crates build into this
// build's target folder, where the crates.io dependencies are built already
// (the same, at the same settings), under the names the checkout's crates
// have there; so it builds after this binary's builds from the checkout (the
// package's install, the Node addon's), the last in `cargo test` (the test
// binaries run by name, this one after `dist` and `javascript`), and nothing
// of the checkout is built again after it.
#[test]
fn the_python_sdist_builds_with_cargo_and_runs() {
    installed();
    support::javascript::ready();
    let dir = tempfile::tempdir().unwrap();
    let sdist = engram_dist::python::sdist(dir.path())
        .unwrap_or_else(|e| panic!("building the sdist: {e:#}"));
    let venv = dir.path().join("venv");
    let mut make = Command::new("python3");
    make.args(["-m", "venv"]).arg(&venv);
    run(make, "python3 -m venv");
    let started = std::time::Instant::now();
    let mut install = support::python::pip_install(&venv.join("bin/python"));
    install.arg(&sdist).env(
        "CARGO_TARGET_DIR",
        Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap(),
    );
    engram_dist::as_shipped(&mut install);
    run(install, "pip install the sdist");
    eprintln!(
        "measured: the sdist built and installed in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    let mut remember = Command::new(venv.join("bin/engram"));
    remember
        .args(["--store", "m.db", "remember", "--agent", "alice"])
        .args(["I booked the Hotel Avenida in Lisbon.", "Lovely!"])
        .current_dir(dir.path());
    let answer = run(remember, "the sdist's engram remember");
    assert!(
        String::from_utf8_lossy(&answer.stdout).contains("\"committed\""),
        "{answer:?}"
    );
}
