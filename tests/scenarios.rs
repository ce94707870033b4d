//! The shared scenarios of `tests/scenarios/` (see its README) on the hosts
//! that run the `engram` command line: the native binary, and
//! `engram-cli.wasm` under the wasmtime CLI; each call a new process on the
//! same SQLite file. Every file starts from an empty store.

mod support;

use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The compiled engine, kept for every run of the tests in the build's own
/// temporary folder.
const CACHE_DIR: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/engram-cache");

/// A host that runs the `engram` command line.
struct Host {
    name: &'static str,
    /// A command that runs `engram` in `dir`, the store `engram.db` there.
    command: Box<dyn Fn(&Path) -> Command>,
    /// The base URL of the embedding model's server a line with `embedder`
    /// is run with; none for a host that cannot run an embedder, which
    /// skips those files.
    embedder: Option<String>,
}

/// The native binary; lines with `embedder` run with `embedder_url`.
fn native_with(embedder_url: Option<String>) -> Host {
    Host {
        embedder: embedder_url,
        name: "native",
        command: Box::new(|dir| {
            let mut command = Command::new(env!("CARGO_BIN_EXE_engram"));
            command
                .current_dir(dir)
                .env("ENGRAM_CACHE_DIR", CACHE_DIR)
                .env_remove("ENGRAM_STORE")
                .env_remove("ENGRAM_AGENT")
                .env_remove("ENGRAM_TIER_CEILING");
            command
        }),
    }
}

/// `engram-cli.wasm` under the pinned wasmtime CLI, compiled ahead once
/// (`engram_wasi::precompiled`), its store folder preopened as `/` and its
/// tokenizer's table readable.
fn wasmtime() -> Host {
    let wasmtime = engram_wasi::wasmtime_cli().expect("the wasmtime CLI");
    let compiled =
        engram_wasi::precompiled(engram_wasi::CLI, Path::new(env!("CARGO_TARGET_TMPDIR")))
            .expect("engram-cli.wasm compiled ahead");
    Host {
        // A WASI build refuses an endpoint (`a_wasi_build_refuses_an_embedder_endpoint`).
        embedder: None,
        name: "wasmtime",
        command: Box::new(move |dir| {
            let mut command = Command::new(&wasmtime);
            command
                .arg("run")
                .arg("--allow-precompiled")
                .args(engram_wasi::tokenizer_options())
                .arg("--dir")
                .arg(format!("{}::/", dir.display()))
                .arg(&compiled);
            command
        }),
    }
}

/// Every scenario file, in name order.
fn scenarios() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no scenarios in {}", dir.display());
    files
}

/// What the values named in a scenario (`"$name"`) were bound to.
#[derive(Default)]
struct Bindings(HashMap<String, Value>);

impl Bindings {
    /// Whether `actual` is what `template` expects, binding names met for
    /// the first time.
    fn matches(&mut self, template: &Value, actual: &Value) -> bool {
        match (template, actual) {
            (Value::String(t), _) if t == "$_" => true,
            (Value::String(t), _) if t.starts_with('$') => match self.0.get(t) {
                Some(bound) => bound == actual,
                None => {
                    self.0.insert(t.clone(), actual.clone());
                    true
                }
            },
            // `{"$contains": [...]}`: a text that holds each of them.
            (Value::Object(t), _) if t.len() == 1 && t.contains_key("$contains") => {
                let parts = t["$contains"].as_array().expect("$contains takes a list");
                actual.as_str().is_some_and(|text| {
                    parts
                        .iter()
                        .all(|p| text.contains(p.as_str().expect("$contains takes strings")))
                })
            }
            (Value::Object(t), Value::Object(a)) => {
                t.len() == a.len()
                    && t.iter()
                        .all(|(k, v)| a.get(k).is_some_and(|av| self.matches(v, av)))
            }
            (Value::Array(t), Value::Array(a)) => {
                t.len() == a.len() && t.iter().zip(a).all(|(tv, av)| self.matches(tv, av))
            }
            (Value::Number(t), Value::Number(a)) => t.as_f64() == a.as_f64(),
            _ => template == actual,
        }
    }

    /// `value` with every bound name replaced by its value.
    fn substitute(&self, value: &Value) -> Value {
        match value {
            Value::String(s) if s.starts_with('$') => match self.0.get(s) {
                Some(bound) => bound.clone(),
                None => panic!("{s} is used before an answer named it"),
            },
            Value::Array(items) => Value::Array(items.iter().map(|v| self.substitute(v)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), self.substitute(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

/// One line of a scenario, as the command line runs it.
struct Call {
    args: Vec<String>,
    stdin: String,
}

fn text(step: &Value, field: &str) -> String {
    match &step[field] {
        Value::String(s) => s.clone(),
        Value::Null => panic!("the step has no {field:?}: {step}"),
        other => other.to_string(),
    }
}

/// The arguments and input of the CLI call that makes `step`, a line with
/// `embedder` run with the model's server at `embedder`.
fn call(step: &Value, dir: &Path, embedder: Option<&str>) -> Call {
    let op = step["op"].as_str().expect("a step names its op");
    let agent = || vec!["--agent".to_string(), text(step, "agent")];
    let mut args: Vec<String> = vec!["--store".into(), "engram.db".into()];
    if let Some(model) = step["embedder"].as_str() {
        let url = embedder.expect("a host without an embedder skips the file");
        args.extend([
            "--embedder-url".into(),
            url.into(),
            "--embedder-model".into(),
            model.into(),
        ]);
    }
    if let Some(tier) = step["tier_ceiling"].as_str() {
        args.extend(["--tier-ceiling".into(), tier.into()]);
    }
    if !step["expire_after"].is_null() {
        args.extend([
            "--expire-after".into(),
            format!("{}ms", text(step, "expire_after")),
        ]);
    }
    if !step["now"].is_null() {
        args.extend(["--now".into(), text(step, "now")]);
    }
    let optional = |args: &mut Vec<String>, field: &str, flag: &str| {
        if !step[field].is_null() {
            args.extend([flag.to_string(), text(step, field)]);
        }
    };
    let lines = |value: &Value| -> (bool, String) {
        match value {
            Value::Array(items) => (
                true,
                items.iter().map(|v| format!("{v}\n")).collect::<String>(),
            ),
            one => (false, one.to_string()),
        }
    };
    let mut stdin = String::new();
    match op {
        "write" | "read" | "maintenance_write" => {
            if op == "maintenance_write" {
                args.extend(["maintenance".into(), "write".into()]);
            } else {
                args.push(op.into());
            }
            args.extend(agent());
            let (batch, input) = lines(&step["request"]);
            if batch {
                args.push("--batch".into());
            }
            stdin = input;
        }
        "bad_input" => {
            args.push(text(step, "command"));
            args.extend(agent());
            if step["batch"].as_bool() == Some(true) {
                args.push("--batch".into());
            }
            stdin = text(step, "text");
        }
        "usage" => {
            args = step["args"]
                .as_array()
                .expect("usage names its args")
                .iter()
                .map(|a| a.as_str().unwrap().to_owned())
                .collect();
        }
        "history" => {
            args.extend(["history".into(), text(step, "key")]);
            args.extend(agent());
            optional(&mut args, "limit", "--limit");
        }
        "as_of" => {
            args.extend(["as-of".into(), text(step, "key")]);
            args.extend(agent());
            optional(&mut args, "valid", "--valid");
            optional(&mut args, "known", "--known");
            optional(&mut args, "limit", "--limit");
        }
        "list" => {
            args.push("list".into());
            for segment in step["namespace"].as_array().unwrap() {
                args.push(segment.as_str().unwrap().into());
            }
            args.extend(agent());
            optional(&mut args, "limit", "--limit");
            optional(&mut args, "after", "--after");
        }
        "entities" => {
            args.extend(["entities".into(), text(step, "entity_type")]);
            args.extend(agent());
            optional(&mut args, "limit", "--limit");
        }
        "relationships" | "traverse" => {
            let first = if op == "traverse" { "start" } else { "entity" };
            args.extend([op.to_string(), text(step, first)]);
            args.extend(agent());
            for flag in ["incoming", "depth_first"] {
                if step[flag].as_bool() == Some(true) {
                    args.push(format!("--{}", flag.replace('_', "-")));
                }
            }
            for kind in step["types"].as_array().into_iter().flatten() {
                args.extend(["--type".into(), kind.as_str().unwrap().into()]);
            }
            for field in ["valid_at", "limit", "max_depth", "max_nodes", "max_edges"] {
                optional(&mut args, field, &format!("--{}", field.replace('_', "-")));
            }
        }
        "cycle" => {
            let plan = dir.join("plan.json");
            std::fs::write(&plan, step["plan"].to_string()).unwrap();
            args.extend(["cycle".into(), "plan.json".into()]);
            args.extend(agent());
            for field in ["message", "response", "session", "request_id"] {
                optional(&mut args, field, &format!("--{}", field.replace('_', "-")));
            }
        }
        "remember" => {
            args.extend([
                "remember".into(),
                text(step, "message"),
                text(step, "response"),
            ]);
            args.extend(agent());
            for field in ["session", "request_id", "time"] {
                optional(&mut args, field, &format!("--{}", field.replace('_', "-")));
            }
        }
        "recall" => {
            args.extend(["recall".into(), text(step, "question")]);
            args.extend(agent());
            for field in ["top_k", "token_budget", "request_id"] {
                optional(&mut args, field, &format!("--{}", field.replace('_', "-")));
            }
        }
        "audit" => {
            args.push("audit".into());
            optional(&mut args, "audit_agent", "--agent");
            optional(&mut args, "operation", "--operation");
            optional(&mut args, "outcome", "--outcome");
            optional(&mut args, "limit", "--limit");
        }
        "export" => {
            args.extend(["maintenance".into(), "export".into()]);
            for agent in step["agents"].as_array().into_iter().flatten() {
                args.extend(["--agent".into(), agent.as_str().unwrap().into()]);
            }
        }
        "import" => {
            args.extend(["maintenance".into(), "import".into(), "-".into()]);
            stdin = lines(&step["lines"]).1;
        }
        "forget" => {
            args.extend(["maintenance".into(), "forget".into()]);
            args.extend(agent());
        }
        "expire" => {
            args.extend(["maintenance".into(), "expire".into()]);
            args.extend(agent());
        }
        "reembed" => {
            args.extend(["maintenance".into(), "reembed".into()]);
            args.extend(agent());
        }
        other => panic!("unknown op {other:?}"),
    }
    Call { args, stdin }
}

/// The exit code an answer implies (see the exit codes in docs/reference.md).
fn implied_exit(step: &Value, answers: &[Value]) -> i32 {
    let refused = answers.iter().any(|a| {
        a == "REJECTED"
            || a.get("error").is_some()
            || a.get("plan_error").is_some()
            || a.get("cycle_error").is_some()
    });
    match step["op"].as_str() {
        Some("bad_input") => 3,
        Some("usage") => 2,
        _ => i32::from(refused),
    }
}

fn run(host: &Host, dir: &Path, call: &Call) -> Output {
    let mut child = (host.command)(dir)
        .args(&call.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: cannot start: {e}", host.name));
    // A command that stops before reading its input (a usage error) closes
    // the pipe: what it answers is what the scenario checks.
    let written = child.stdin.take().unwrap().write_all(call.stdin.as_bytes());
    if let Err(error) = written {
        assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe, "{error}");
    }
    child.wait_with_output().unwrap()
}

/// Runs one scenario file on `host` from an empty store; the number of
/// calls it made.
fn run_scenario(host: &Host, path: &Path) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let mut bindings = Bindings::default();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let text = std::fs::read_to_string(path).unwrap();
    let mut calls = 0;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{}: {name} line {}", host.name, i + 1);
        let step: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{at}: {e}"));
        let step = bindings.substitute(&step_without_expect(&step));
        let full: Value = serde_json::from_str(line).unwrap();
        let expect = &full["expect"];
        let call = call(&step, dir.path(), host.embedder.as_deref());
        let output = run(host, dir.path(), &call);
        calls += 1;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let shown = format!(
            "{at}\n  args: {:?}\n  stdout: {stdout}\n  stderr: {stderr}",
            call.args
        );
        let code = output.status.code().unwrap_or(-1);
        match step["op"].as_str() {
            Some("bad_input") => {
                let message = expect["message"]
                    .as_str()
                    .expect("bad_input names a message");
                assert_eq!(code, 3, "{shown}");
                assert!(stdout.is_empty(), "{shown}");
                assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {shown}");
                assert!(stderr.contains(message), "{message:?}: {shown}");
                continue;
            }
            Some("usage") => {
                let message = expect["message"].as_str().expect("usage names a message");
                assert_eq!(code, 2, "{shown}");
                assert!(stdout.is_empty(), "{shown}");
                assert!(stderr.contains(message), "{message:?}: {shown}");
                continue;
            }
            _ => {}
        }
        let answers: Vec<Value> = stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{shown}\n{e}")))
            .collect();
        let expected: Vec<Value> = match expect {
            Value::Array(items) => items.clone(),
            one => vec![one.clone()],
        };
        assert!(
            bindings.matches(
                &Value::Array(expected.clone()),
                &Value::Array(answers.clone())
            ),
            "{shown}\n  expected: {}",
            json!(expected)
        );
        if let Some(name) = full["as"].as_str() {
            bindings
                .0
                .insert(name.to_owned(), Value::Array(answers.clone()));
        }
        let exit = full["exit"]
            .as_i64()
            .map_or_else(|| implied_exit(&step, &answers), |e| e as i32);
        assert_eq!(code, exit, "exit code: {shown}");
    }
    calls
}

fn step_without_expect(step: &Value) -> Value {
    let mut step = step.clone();
    if let Some(map) = step.as_object_mut() {
        for field in ["expect", "as", "note"] {
            map.remove(field);
        }
    }
    step
}

/// Whether a scenario file has a line run with an embedder.
fn uses_an_embedder(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .any(|line| !serde_json::from_str::<Value>(line).unwrap()["embedder"].is_null())
}

/// Runs every scenario on `host`; a host without an embedder skips the
/// files that need one, and says which.
fn every_scenario_passes_on(host: Host) {
    let (mut total, mut run, mut skipped) = (0, 0, Vec::new());
    for path in scenarios() {
        if host.embedder.is_none() && uses_an_embedder(&path) {
            skipped.push(path.file_name().unwrap().to_string_lossy().into_owned());
            continue;
        }
        total += run_scenario(&host, &path);
        run += 1;
    }
    eprintln!(
        "{}: {total} calls in {run} scenarios; skipped (no embedder on this host): {skipped:?}",
        host.name,
    );
}

fn native() -> Host {
    native_with(None)
}

// Every scenario on the native command line, those of recall by meaning with the real model
// (e5-small through its OpenAI-compatible server): each line names its rule in its `note`.
#[test]
fn every_scenario_passes_on_the_native_cli() {
    let server = support::e5::E5Server::start();
    every_scenario_passes_on(native_with(Some(server.url.clone())));
}

#[test]
fn every_scenario_passes_on_the_command_component_under_wasmtime() {
    every_scenario_passes_on(wasmtime());
}

/// Runs `args` on `host` in `dir` with `input`: its standard output, after
/// checking that it exited 0.
fn output_of(host: &Host, dir: &Path, args: &[&str], input: &str) -> String {
    let call = Call {
        args: ["--store", "engram.db"]
            .iter()
            .chain(args)
            .map(|a| a.to_string())
            .collect(),
        stdin: input.to_owned(),
    };
    let output = run(host, dir, &call);
    assert!(
        output.status.success(),
        "{}: {args:?}: {}",
        host.name,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn a_store_written_by_either_command_line_is_read_by_the_other() {
    let (native, component) = (native(), wasmtime());
    let dir = tempfile::tempdir().unwrap();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples");
    let memories = std::fs::read_to_string(samples.join("memories.jsonl")).unwrap();
    let reads = std::fs::read_to_string(samples.join("reads.jsonl")).unwrap();
    // Written natively, read under wasmtime: the same answers, line by line.
    let written = output_of(
        &native,
        dir.path(),
        &["write", "--agent", "alice", "--batch"],
        &memories,
    );
    assert_eq!(written.lines().count(), memories.lines().count());
    let read = |host: &Host| {
        output_of(
            host,
            dir.path(),
            &["read", "--agent", "alice", "--batch"],
            &reads,
        )
    };
    let (by_native, by_component) = (read(&native), read(&component));
    assert_eq!(by_native, by_component);
    assert!(by_native.contains("Alice is vegetarian"), "{by_native}");
    // Written under wasmtime, read natively by the id it was answered.
    let state = r#"{"request_id":"wasi-1","source":{"agent_id":"alice","component":"COGNITION","actor":"USER"},"record":{"record_type":"STATE","timestamp":1767300000000,"payload":{"subject":"mission.current","properties":{"step":"written under wasmtime"}}}}"#;
    let answer: Value = serde_json::from_str(&output_of(
        &component,
        dir.path(),
        &["write", "--agent", "alice"],
        state,
    ))
    .unwrap();
    let id = answer["ACCEPTED"]["stored_id"]
        .as_str()
        .expect("ACCEPTED")
        .to_owned();
    let by_id = format!(
        r#"{{"record_type":"STATE","selector":{{"ById":{{"id":"{id}"}}}},"request_id":"q"}}"#
    );
    let found = output_of(&native, dir.path(), &["read", "--agent", "alice"], &by_id);
    assert!(found.contains("written under wasmtime"), "{found}");
    // One audit trail, whoever wrote its entries.
    let trail = output_of(
        &native,
        dir.path(),
        &["audit", "--agent", "alice", "--limit", "1000"],
        "",
    );
    assert!(trail.contains(r#""request_id":"wasi-1""#), "{trail}");
    assert!(trail.contains(r#""request_id":"alice-0001""#), "{trail}");
}

// proves IO-W7 IO-W2: the reference MCP memory server's file imports as MAINTENANCE on
// either command line with the same answer, once; a bad line is named alike, nothing imported
#[test]
fn io_w7_a_reference_graph_imports_alike_on_either_command_line() {
    let graph = [
        r#"{"type":"entity","name":"Alice","entityType":"person","observations":["likes tea","lives in Lisbon"]}"#,
        r#"{"type":"entity","name":"Lisbon","entityType":"city","observations":[]}"#,
        r#"{"type":"relation","from":"Alice","to":"Lisbon","relationType":"lives in"}"#,
    ]
    .join("\n");
    let import = ["maintenance", "import-graph", "--agent", "alice", "-"];
    let mut answers = Vec::new();
    for host in [native(), wasmtime()] {
        let dir = tempfile::tempdir().unwrap();
        let first = output_of(&host, dir.path(), &import, &graph);
        let again = output_of(&host, dir.path(), &import, &graph);
        let bad = run(
            &host,
            dir.path(),
            &Call {
                args: ["--store", "engram.db"]
                    .iter()
                    .chain(&import)
                    .map(|a| a.to_string())
                    .collect(),
                stdin: format!("{graph}\n{{\"type\":\"entity\",\"name\":\"Bob\"}}\n"),
            },
        );
        let exported = output_of(&host, dir.path(), &["maintenance", "export"], "");
        let records = exported
            .lines()
            .filter(|l| l.contains(r#""record":"#))
            .count();
        answers.push((
            host.name,
            first,
            again,
            bad.status.code(),
            String::from_utf8_lossy(&bad.stderr).into_owned(),
            records,
        ));
    }
    let (_, first, again, code, stderr, records) = &answers[0];
    assert_eq!(
        first.trim(),
        r#"{"agent_id":"alice","graph":{"entities":2,"new_entities":2,"new_observations":2,"relations":1,"new_relations":1}}"#
    );
    assert!(
        again.contains(r#""new_entities":0,"new_observations":0"#)
            && again.contains(r#""new_relations":0"#),
        "{again}"
    );
    assert_eq!(*code, Some(3));
    assert!(
        stderr.starts_with("engram: standard input, line 4: missing field `entityType`"),
        "{stderr}"
    );
    // Two entities and a relation, each once: nothing of the bad file.
    assert_eq!(*records, 3);
    for (name, other_first, other_again, other_code, other_stderr, other_records) in &answers[1..] {
        assert_eq!(
            (
                other_first,
                other_again,
                other_code,
                other_stderr,
                other_records
            ),
            (first, again, code, stderr, records),
            "{name}"
        );
    }
}

// S-VECTOR: the command component under wasmtime has no network, so it runs no embedder: given
// an endpoint it refuses the call with a line naming it, and stores nothing (the reason the
// scenarios of recall by meaning are skipped on it).
#[test]
fn s_vector_the_command_component_refuses_an_embedder_endpoint_naming_it() {
    let host = wasmtime();
    let dir = tempfile::tempdir().unwrap();
    let call = Call {
        args: [
            "--store",
            "engram.db",
            "--embedder-url",
            "http://127.0.0.1:9/v1",
            "--embedder-model",
            "e5-small",
            "remember",
            "We adopted a kitten last week.",
            "Congratulations!",
            "--agent",
            "alice",
        ]
        .map(str::to_owned)
        .to_vec(),
        stdin: String::new(),
    };
    let output = run(&host, dir.path(), &call);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(output.stdout.is_empty(), "{stderr}");
    assert!(
        stderr.contains("http://127.0.0.1:9/v1: this build reaches no embedding endpoint"),
        "{stderr}"
    );
    let listed = output_of(
        &host,
        dir.path(),
        &["read", "--agent", "alice"],
        r#"{"record_type":"EVENT","selector":{"Latest":{"limit":10}},"request_id":"r"}"#,
    );
    assert_eq!(listed.trim(), r#"{"records":[]}"#);
}
