//! The `engram` binary driven end to end: each call is a new process on the
//! same SQLite file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The compiled engine, kept for every run of the tests in the build's own
/// temporary folder.
const CACHE_DIR: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/engram-cache");

struct Cli {
    dir: tempfile::TempDir,
}

impl Cli {
    fn new() -> Self {
        Cli {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn store(&self) -> PathBuf {
        self.dir.path().join("memory.db")
    }

    fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn run(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
            .current_dir(self.dir.path())
            .env_remove("ENGRAM_STORE")
            .env("ENGRAM_CACHE_DIR", CACHE_DIR)
            .env_remove("ENGRAM_AGENT")
            .arg("--store")
            .arg(self.store())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // A command that stops before reading its input (a usage error)
        // closes the pipe: what it answers is what the test checks.
        let written = child.stdin.take().unwrap().write_all(stdin.as_bytes());
        if let Err(error) = written {
            assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe, "{error}");
        }
        child.wait_with_output().unwrap()
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

fn json_lines(output: &Output) -> Vec<serde_json::Value> {
    stdout(output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const FACT: &str = r#"{"request_id":"r1","source":{"agent_id":"alice","component":"COGNITION","actor":"USER"},
 "record":{"record_type":"FACT","key":"user.diet","payload":{"semantic":{"content":"Prefers vegetarian food",
 "context":"dining","valid_at":1700000000000,"strength":1.0,"last_accessed":1700000000000,"access_count":0,
 "confidence":0.9,"privacy_tier":"sensitive"}}}}"#;

fn event(request_id: &str, agent: &str, timestamp: i64) -> String {
    format!(
        r#"{{"request_id":"{request_id}","source":{{"agent_id":"{agent}","component":"COGNITION","actor":"USER"}},"record":{{"record_type":"EVENT","timestamp":{timestamp},"payload":{{"ingested":{{"session_ref":"s1","summary":"Asked about flights","keywords":["flight"]}}}}}}}}"#
    )
}

fn assert_one_line_error(output: &Output, code: i32, mentions: &[&str]) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stderr: {}",
        stderr(output)
    );
    let message = stderr(output);
    assert_eq!(message.lines().count(), 1, "one line: {message:?}");
    assert!(message.starts_with("engram: "), "{message}");
    for m in mentions {
        assert!(message.contains(m), "{message:?} names {m:?}");
    }
    assert!(stdout(output).is_empty());
}

#[test]
fn write_then_read_in_new_processes_finds_the_record() {
    // proves IO-W1, IO-W2, IO-R4 through the CLI; the file keeps what it accepted
    let cli = Cli::new();
    let request = cli.file("fact.json", FACT);
    let first = cli.run(
        &["write", "--agent", "alice", request.to_str().unwrap()],
        "",
    );
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let answer: serde_json::Value = serde_json::from_str(&stdout(&first)).unwrap();
    let stored_id = answer["ACCEPTED"]["stored_id"]
        .as_str()
        .expect("ACCEPTED with a stored_id")
        .to_owned();
    // A retry of the same request in a new process names the same record.
    let again = cli.run(
        &["write", "--agent", "alice", request.to_str().unwrap()],
        "",
    );
    assert_eq!(stdout(&again), stdout(&first));

    let read = cli.run(
        &["read", "--agent", "alice"],
        r#"{"record_type":"FACT","selector":{"ByKey":{"key":"user.diet"}},"request_id":"q1"}"#,
    );
    assert_eq!(read.status.code(), Some(0), "{}", stderr(&read));
    let answer: serde_json::Value = serde_json::from_str(&stdout(&read)).unwrap();
    let records = answer["records"].as_array().unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["id"], stored_id.as_str());
    assert_eq!(records[0]["record_type"], "FACT");
    assert_eq!(
        records[0]["payload"]["semantic"]["content"],
        "Prefers vegetarian food"
    );
}

// Floats whose shortest text a fast parser reads as a neighbour (serde_json
// without `float_roundtrip` reads about a third of all doubles so): a FACT's
// strength written as that text is read back as the same text, the same float.
#[test]
fn a_float_written_is_read_back_as_the_very_value_written() {
    let cli = Cli::new();
    for (i, text) in [
        "1.0715660391465826e-75",
        "3.0261999441573203e-52",
        "1.2345678901234568e-300",
    ]
    .into_iter()
    .enumerate()
    {
        let request = FACT
            .replace("\"r1\"", &format!("\"r{i}\""))
            .replace("user.diet", &format!("user.f{i}"))
            .replace("\"strength\":1.0", &format!("\"strength\":{text}"));
        let written = cli.run(&["write", "--agent", "alice"], &request);
        assert_eq!(written.status.code(), Some(0), "{}", stderr(&written));
        let read = cli.run(
            &["read", "--agent", "alice"],
            &format!(
                r#"{{"record_type":"FACT","selector":{{"ByKey":{{"key":"user.f{i}"}}}},"request_id":"q{i}"}}"#
            ),
        );
        assert_eq!(read.status.code(), Some(0), "{}", stderr(&read));
        let answer = stdout(&read);
        assert!(
            answer.contains(&format!("\"strength\":{text},")),
            "{text}: {answer}"
        );
        let value: serde_json::Value = serde_json::from_str(&answer).unwrap();
        let strength = value["records"][0]["payload"]["semantic"]["strength"]
            .as_f64()
            .unwrap();
        assert_eq!(strength, text.parse::<f64>().unwrap(), "{text}");
    }
}

#[test]
fn batch_mode_answers_a_line_for_each_line() {
    // proves IO-W6, IO-W8, IO-R7, IO-G6 through the CLI
    let cli = Cli::new();
    let lines = [
        event("e1", "alice", 30),
        event("e2", "alice", 10),
        event("e3", "mallory", 20),
        event("e4", "alice", 20),
    ];
    let out = cli.run(
        &["write", "--agent", "alice", "--batch"],
        &(lines.join("\n") + "\n\n"),
    );
    assert_eq!(out.status.code(), Some(1), "a REJECTED write exits 1");
    let answers = json_lines(&out);
    assert_eq!(answers.len(), 4);
    assert_eq!(
        answers[2],
        serde_json::json!("REJECTED"),
        "mallory's record is not alice's"
    );
    assert!(
        answers
            .iter()
            .enumerate()
            .all(|(i, a)| i == 2 || a["ACCEPTED"]["stored_id"].is_string())
    );

    let reads = [
        r#"{"record_type":"EVENT","selector":{"ByTimeRange":{"from":0,"to":100,"limit":10}},"request_id":"q1"}"#,
        r#"{"record_type":"EVENT","selector":{"Latest":{"limit":0}},"request_id":"q2"}"#,
        r#"{"record_type":"EVENT","selector":{"ByKey":{"key":"user.diet"}},"request_id":"q3"}"#,
        r#"{"record_type":"STATE","selector":{"Limit":{"limit":1}},"request_id":"q4"}"#,
    ];
    let out = cli.run(
        &["read", "--agent", "alice", "--batch", "-"],
        &reads.join("\n"),
    );
    assert_eq!(out.status.code(), Some(1), "a refused read exits 1");
    let answers = json_lines(&out);
    let times: Vec<i64> = answers[0]["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["timestamp"].as_i64().unwrap())
        .collect();
    assert_eq!(times, [10, 20, 30]);
    assert_eq!(
        answers[1],
        serde_json::json!({"error": {"LimitOutOfBounds": {"max": 1000}}})
    );
    assert_eq!(
        answers[2],
        serde_json::json!({"error": "SelectorNotAllowed"})
    );
    assert_eq!(answers[3], serde_json::json!({"records": []}));
}

#[test]
fn malformed_input_gets_one_line_a_nonzero_exit_and_writes_nothing() {
    // proves IO-W1 at the CLI boundary: a request the contract has no place for is refused whole
    let cli = Cli::new();
    let store = cli.store();
    let cases: Vec<(String, Vec<&str>)> = vec![
        ("{\"request_id\": ".into(), vec!["standard input", "EOF"]),
        ("[]".into(), vec!["not a valid write request"]),
        (
            FACT.replace("\"COGNITION\"", "\"COG\""),
            vec!["unknown variant `COG`"],
        ),
        (
            FACT.replace(
                "\"strength\":1.0,",
                "\"strength\":1.0,\"raw_content\":\"hi\",",
            ),
            vec!["unknown field `raw_content`"],
        ),
        (
            FACT.replace("\"key\":\"user.diet\",", ""),
            vec!["missing field `key`"],
        ),
        (
            FACT.replace("\"FACT\"", "\"MEMORY\""),
            vec!["unknown variant `MEMORY`"],
        ),
    ];
    for (input, mentions) in cases {
        let out = cli.run(&["write", "--agent", "alice"], &input);
        assert_one_line_error(&out, 3, &mentions);
        assert!(
            !store.exists(),
            "nothing was written, not even an empty store"
        );
    }
    // In a batch, one bad line stops everything before anything runs.
    let batch = [
        event("e1", "alice", 1),
        event("e2", "alice", 2),
        "{oops".to_string(),
    ]
    .join("\n");
    let out = cli.run(&["write", "--agent", "alice", "--batch"], &batch);
    assert_one_line_error(&out, 3, &["line 3"]);
    assert!(!store.exists());
    // A file that is not there.
    let out = cli.run(&["write", "--agent", "alice", "missing.json"], "");
    assert_one_line_error(&out, 3, &["missing.json"]);
    // A read request with a negative limit or an unknown selector.
    cli.run(&["write", "--agent", "alice"], &event("e1", "alice", 1));
    for (input, mention) in [
        (
            r#"{"record_type":"EVENT","selector":{"Latest":{"limit":-1}},"request_id":"q"}"#,
            "invalid value: integer `-1`",
        ),
        (
            r#"{"record_type":"EVENT","selector":{"Similar":{"text":"paris"}},"request_id":"q"}"#,
            "unknown variant `Similar`",
        ),
        (
            r#"{"record_type":"EVENT","selector":{"Latest":{"limit":5}}}"#,
            "missing field `request_id`",
        ),
    ] {
        let out = cli.run(&["read", "--agent", "alice"], input);
        assert_one_line_error(&out, 3, &[mention]);
    }
}

#[test]
fn store_problems_exit_4_with_one_line() {
    let cli = Cli::new();
    let read = r#"{"record_type":"EVENT","selector":{"Latest":{"limit":5}},"request_id":"q"}"#;
    let out = cli.run(&["read", "--agent", "alice"], read);
    assert_one_line_error(&out, 4, &["memory.db", "no store here"]);
    std::fs::write(
        cli.store(),
        "this is not a database at all, only some text ".repeat(40),
    )
    .unwrap();
    let out = cli.run(&["write", "--agent", "alice"], &event("e1", "alice", 1));
    assert_one_line_error(&out, 4, &["memory.db", "not an Engram store"]);
}

#[test]
fn usage_errors_exit_2_with_what_was_wrong() {
    let cli = Cli::new();
    for (args, says) in [
        (&["write"][..], "--agent"),
        (
            &["forget", "--agent", "alice"][..],
            "unrecognized subcommand 'forget'",
        ),
        (
            &["read", "--agent", "alice", "--nope"][..],
            "unexpected argument '--nope'",
        ),
    ] {
        let out = cli.run(args, "");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).is_empty());
    }
    assert!(!cli.store().exists(), "no store was made");
}

#[test]
fn the_audit_trail_shows_every_call_with_its_reason() {
    // proves IO-W8: the reason for a rejection is kept in the trail, outside the IO
    let cli = Cli::new();
    let maintenance = event("m1", "alice", 1).replace("COGNITION", "MAINTENANCE");
    cli.run(
        &["write", "--agent", "alice", "--batch"],
        &[event("e1", "alice", 1), maintenance].join("\n"),
    );
    cli.run(
        &["read", "--agent", "bob"],
        r#"{"record_type":"EVENT","selector":{"Latest":{"limit":5}},"request_id":"q1"}"#,
    );
    let out = cli.run(&["audit"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let trail = json_lines(&out);
    assert_eq!(trail.len(), 3);
    assert_eq!(trail[0]["outcome"], "ACCEPTED");
    assert_eq!(trail[1]["outcome"], "REJECTED");
    assert!(trail[1]["reason"].as_str().unwrap().contains("IO-W7"));
    assert_eq!(trail[1]["source"]["component"], "MAINTENANCE");
    assert_eq!(trail[2]["operation"], "READ");
    assert_eq!(trail[2]["agent_id"], "bob");
    let only_bob = json_lines(&cli.run(&["audit", "--agent", "bob"], ""));
    assert_eq!(only_bob.len(), 1);
    // Filters by operation, outcome and time, each narrowing the trail.
    let rejected = json_lines(&cli.run(&["audit", "--outcome", "rejected"], ""));
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0]["request_id"], "m1");
    let writes = json_lines(&cli.run(&["audit", "--operation", "WRITE"], ""));
    assert_eq!(writes.len(), 2);
    let at = trail[2]["at"].as_i64().unwrap();
    let after = json_lines(&cli.run(&["audit", "--since", &at.to_string()], ""));
    assert_eq!(
        after.len(),
        trail
            .iter()
            .filter(|e| e["at"].as_i64().unwrap() >= at)
            .count()
    );
    assert!(after.iter().all(|e| e["at"].as_i64().unwrap() >= at));
    assert!(after.iter().any(|e| e["agent_id"] == "bob"));
    let before = json_lines(&cli.run(&["audit", "--until", &at.to_string()], ""));
    assert_eq!(
        before.len(),
        trail
            .iter()
            .filter(|e| e["at"].as_i64().unwrap() < at)
            .count()
    );
    assert!(before.iter().all(|e| e["at"].as_i64().unwrap() < at));
    assert_eq!(
        json_lines(&cli.run(&["audit", "--limit", "1"], "")),
        trail[2..]
    );
    let bad = cli.run(&["audit", "--outcome", "MAYBE"], "");
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn a_tier_ceiling_hides_what_is_above_it() {
    // proves S-TIER (through the CLI)
    let cli = Cli::new();
    let private = FACT
        .replace("\"r1\"", "\"r2\"")
        .replace("user.diet", "user.health")
        .replace("sensitive", "private");
    let public = FACT
        .replace("\"r1\"", "\"r3\"")
        .replace("user.diet", "user.name")
        .replace("sensitive", "public");
    let batch = [FACT, &private, &public]
        .map(|l| l.replace('\n', ""))
        .join("\n");
    let out = cli.run(&["write", "--agent", "alice", "--batch"], &batch);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let all = r#"{"record_type":"FACT","selector":{"Limit":{"limit":10}},"request_id":"q"}"#;
    let keys = |tier: &str| -> Vec<String> {
        let out = cli.run(&["read", "--agent", "alice", "--tier-ceiling", tier], all);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let answer: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        answer["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["key"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(keys("private"), ["user.diet", "user.health", "user.name"]);
    assert_eq!(keys("sensitive"), ["user.diet", "user.name"]);
    assert_eq!(keys("public"), ["user.name"]);
    let bad = cli.run(
        &["read", "--agent", "alice", "--tier-ceiling", "secret"],
        "",
    );
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn the_default_store_is_engram_db_in_the_working_folder() {
    let cli = Cli::new();
    let out = Command::new(env!("CARGO_BIN_EXE_engram"))
        .current_dir(cli.dir.path())
        .env_remove("ENGRAM_STORE")
        .env("ENGRAM_CACHE_DIR", CACHE_DIR)
        .env("ENGRAM_AGENT", "alice")
        .args([
            "write",
            cli.file("e.json", &event("e1", "alice", 1))
                .to_str()
                .unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(Path::new(&cli.dir.path().join("engram.db")).exists());
}

const PLAN: &str = include_str!("../samples/plan.json");

#[test]
fn a_cycle_prints_each_stage_and_commits_its_summary_only() {
    // proves B5-S1, B5-D1, B5-P4 through the CLI
    let cli = Cli::new();
    let plan = cli.file("plan.json", PLAN);
    let plan = plan.to_str().unwrap();
    let message = "Could you find me a vegetarian restaurant near the office for Friday lunch?";
    let response = "Green Leaf on Main Street serves vegetarian food and is ten minutes away.";
    let out = cli.run(
        &[
            "cycle",
            plan,
            "--agent",
            "alice",
            "--message",
            message,
            "--response",
            response,
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = json_lines(&out);
    let stages: Vec<&str> = lines.iter().filter_map(|l| l["stage"].as_str()).collect();
    assert_eq!(
        stages,
        [
            "ContextSelect",
            "PromptAssemble",
            "SummarizeMemory",
            "PersistMemory"
        ]
    );
    let committed = lines.last().unwrap()["committed"].as_array().unwrap();
    assert_eq!(committed.len(), 1);

    // The next turn retrieves it and puts it in the prompt.
    let message_file = cli.file("question.txt", "Any vegetarian place for lunch?");
    let out = cli.run(
        &[
            "cycle",
            plan,
            "--agent",
            "alice",
            "--message-file",
            message_file.to_str().unwrap(),
            "--response",
            "Green Leaf again.",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = json_lines(&out);
    let prompt = &lines[1]["steps"][0]["output"]["prompt"];
    assert_eq!(prompt["context"][0]["id"], committed[0]);
    assert_eq!(
        prompt["context"][0].as_object().unwrap().len(),
        3,
        "id, summary, timestamp"
    );
    assert!(
        prompt["text"]
            .as_str()
            .unwrap()
            .ends_with("User: Any vegetarian place for lunch?")
    );

    let bytes = std::fs::read(cli.store()).unwrap();
    let wal = std::fs::read(cli.store().with_extension("db-wal")).unwrap_or_default();
    let text = String::from_utf8_lossy(&[bytes, wal].concat()).into_owned();
    assert!(
        !text.contains(message) && !text.contains(response),
        "raw text reached the file"
    );

    // A plan without top_k is refused before anything runs.
    let no_top_k = cli.file("no-top-k.json", &PLAN.replace("\"top_k\": 3", ""));
    let out = cli.run(
        &[
            "cycle",
            no_top_k.to_str().unwrap(),
            "--agent",
            "alice",
            "--message",
            "hi there",
            "--response",
            "hello",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["plan_error"]["rule"], "B5-P4");
    // A malformed plan is bad input.
    let broken = cli.file(
        "broken.json",
        "{\"metadata\":{},\"steps\":[{\"name\":\"x\"}]}",
    );
    let out = cli.run(
        &[
            "cycle",
            broken.to_str().unwrap(),
            "--agent",
            "alice",
            "--message",
            "hi",
        ],
        "",
    );
    assert_one_line_error(&out, 3, &["broken.json", "not a valid execution plan"]);
}

#[test]
fn b5_p4_cycle_token_budget_sets_the_plans_budget() {
    // proves B5-P4 through the CLI: --token-budget is the plan's budget
    let cli = Cli::new();
    let plan = cli.file("plan.json", PLAN);
    let plan = plan.to_str().unwrap();
    let turn = |budget: &str, request_id: &str| {
        cli.run(
            &[
                "cycle",
                plan,
                "--agent",
                "alice",
                "--message",
                "Any vegetarian restaurant near the office?",
                "--response",
                "Green Leaf on Main Street serves vegetarian food.",
                "--request-id",
                request_id,
                "--token-budget",
                budget,
            ],
            "",
        )
    };
    let out = turn("1000", "t1");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = turn("1", "t2");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = json_lines(&out);
    let prompt = &lines[1]["steps"][0]["output"]["prompt"];
    assert_eq!(prompt["context"], serde_json::json!([]));
    assert_eq!(prompt["left_out"], 1, "{prompt}");
    let out = turn("0", "t3");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        json_lines(&out),
        [
            serde_json::json!({"plan_error":{"step":"prompt","rule":"B5-P4","kind":"ZeroTokenBudget"}})
        ]
    );
}

#[test]
fn the_demo_ingests_the_sample_conversation_once_and_answers_a_question() {
    let cli = Cli::new();
    let out = cli.run(&["demo"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("# ingesting the sample conversation"),
        "{text}"
    );
    assert_eq!(text.matches("\"committed\"").count(), 6);
    let context = text
        .split("# ContextSelect")
        .nth(1)
        .unwrap()
        .split("# PromptAssemble")
        .next()
        .unwrap();
    let selected: serde_json::Value = serde_json::from_str(context).unwrap();
    let memories = selected["selected"].as_array().unwrap();
    assert!(!memories.is_empty() && memories.len() <= 3);
    assert!(
        memories
            .iter()
            .any(|m| m["summary"].as_str().unwrap().contains("Sarah"))
    );
    assert!(text.contains("User: Where should I take Sarah for dinner in Lisbon?"));
    let again = stdout(&cli.run(&["demo", "--question", "Which hotel did I book?"], ""));
    assert!(again.contains("already in"), "{again}");
    assert!(again.contains("Casa"), "{again}");
}

#[test]
fn history_and_as_of_print_the_versions_of_a_key() {
    // proves MT-2 through the CLI
    let cli = Cli::new();
    let vegan = FACT
        .replace("Prefers vegetarian food", "Prefers vegan food")
        .replace("\"r1\"", "\"r2\"");
    // Two runs, so the versions are known at two different times (a batch
    // may write both within one millisecond, and as of that time the
    // newer is the answer).
    for version in [FACT.to_owned(), vegan] {
        let out = cli.run(&["write", "--agent", "alice"], &version);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let out = cli.run(&["history", "user.diet", "--agent", "alice"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let answer = &json_lines(&out)[0];
    let versions = answer["records"].as_array().unwrap();
    assert_eq!(versions.len(), 2);
    assert_eq!(
        versions[0]["payload"]["semantic"]["content"],
        "Prefers vegan food"
    );
    assert!(versions[1]["superseded_at"].is_i64());
    let first_known = versions[1]["created_at"].as_i64().unwrap();
    let out = cli.run(
        &[
            "as-of",
            "user.diet",
            "--agent",
            "alice",
            "--known",
            &first_known.to_string(),
        ],
        "",
    );
    let answer = &json_lines(&out)[0];
    assert_eq!(
        answer["records"][0]["payload"]["semantic"]["content"],
        "Prefers vegetarian food"
    );
    let out = cli.run(
        &["as-of", "user.diet", "--agent", "alice", "--valid", "-5"],
        "",
    );
    assert_eq!(json_lines(&out)[0], serde_json::json!({"records": []}));
    let out = cli.run(&["history", "User Diet", "--agent", "alice"], "");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        json_lines(&out)[0],
        serde_json::json!({"error": "InvalidKey"})
    );
}

#[test]
fn list_entities_and_relationships_answer_from_the_indexes() {
    // proves MT-7, MT-8 through the CLI
    let cli = Cli::new();
    let samples = include_str!("../samples/memories.jsonl");
    let out = cli.run(&["write", "--agent", "alice", "--batch"], samples);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let keys = |args: &[&str]| -> Vec<String> {
        let out = cli.run(args, "");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        json_lines(&out)[0]["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["key"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        keys(&["entities", "person", "--agent", "alice"]),
        ["entity.sarah"]
    );
    assert_eq!(
        keys(&[
            "relationships",
            "USER",
            "--agent",
            "alice",
            "--type",
            "KNOWS"
        ]),
        ["rel.user.knows.sarah"]
    );
    assert_eq!(
        keys(&[
            "relationships",
            "entity.sarah",
            "--agent",
            "alice",
            "--incoming"
        ]),
        ["rel.user.knows.sarah"]
    );
    assert_eq!(
        keys(&["list", "rule", "--agent", "alice"]),
        ["rule.travel.direct-flights"]
    );
    assert!(
        keys(&["list", "rul", "--agent", "alice"]).is_empty(),
        "whole segments only"
    );
    // proves MT-9 through the CLI
    let out = cli.run(
        &["traverse", "USER", "--agent", "alice", "--max-depth", "1"],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let walk = &json_lines(&out)[0];
    let nodes: Vec<&str> = walk["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["key"].as_str().unwrap())
        .collect();
    assert_eq!(nodes, ["USER", "entity.sarah"]);
    assert_eq!(
        walk["nodes"][1]["entity"]["payload"]["entity"]["name"],
        "Sarah"
    );
    assert_eq!(walk["edges"][0]["key"], "rel.user.knows.sarah");
    let out = cli.run(
        &["traverse", "USER", "--agent", "alice", "--max-nodes", "0"],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        json_lines(&out)[0],
        serde_json::json!({"error": {"LimitOutOfBounds": {"max": 1000}}})
    );
}

#[test]
fn a_bad_agent_id_is_a_usage_error_and_opens_nothing() {
    // proves S-AGENT: an agent id of 0 or 257 bytes is refused before any
    // store is opened or created.
    let cli = Cli::new();
    let long = "a".repeat(257);
    for agent in ["", long.as_str()] {
        let out = cli.run(&["write", "--agent", agent], &event("e1", agent, 1));
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(!cli.store().exists(), "no store was created");
    }
    let ok = "b".repeat(256);
    let out = cli.run(&["write", "--agent", &ok], &event("e1", &ok, 1));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn messages_are_one_line_with_control_characters_escaped_and_lines_named() {
    let cli = Cli::new();
    // Raw newlines, carriage returns and ESC in the input are shown escaped.
    let out = cli.run(
        &["write", "--agent", "alice"],
        "{\"request_id\":\"x\u{1b}[31m\r\nmore\", \"bogus\": 1}",
    );
    assert_one_line_error(&out, 3, &["standard input"]);
    let message = stderr(&out);
    assert!(
        !message.contains('\u{1b}') && !message.contains('\r'),
        "{message:?}"
    );
    // Invalid UTF-8 names its line.
    let mut batch = event("e1", "alice", 1).into_bytes();
    batch.extend_from_slice(b"\n{\"request_id\":\"\xff\xfe\"}\n");
    let path = cli.dir.path().join("bad.jsonl");
    std::fs::write(&path, batch).unwrap();
    let out = cli.run(
        &[
            "write",
            "--agent",
            "alice",
            "--batch",
            path.to_str().unwrap(),
        ],
        "",
    );
    assert_one_line_error(&out, 3, &["bad.jsonl", "line 2", "UTF-8"]);
    assert!(!cli.store().exists(), "nothing ran");
}

#[test]
fn b5_p4_a_plan_without_metadata_is_refused_by_the_engine_and_a_turn_needs_its_response() {
    // proves B5-P4: no metadata means no top_k; the engine names the rule.
    let cli = Cli::new();
    let plan: serde_json::Value = serde_json::from_str(PLAN).unwrap();
    let bare = serde_json::json!({"steps": plan["steps"]});
    let path = cli.file("bare.json", &bare.to_string());
    let out = cli.run(
        &[
            "cycle",
            path.to_str().unwrap(),
            "--agent",
            "alice",
            "--message",
            "Where should we eat?",
            "--response",
            "Green Leaf.",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let lines = json_lines(&out);
    assert_eq!(lines[0]["plan_error"]["rule"], "B5-P4");
    assert_eq!(lines[0]["plan_error"]["kind"], "MissingTopK");
    // A plan that summarizes the turn needs the model's response: a usage
    // error before anything runs, not a failed cycle.
    let path = cli.file("plan.json", PLAN);
    let out = cli.run(
        &[
            "cycle",
            path.to_str().unwrap(),
            "--agent",
            "alice",
            "--message",
            "Where should we eat?",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--response"));
}

#[test]
fn a_full_disk_gets_one_line_and_loses_nothing_acknowledged() {
    // The file-size limit stands in for a full disk: writes past it fail
    // with EFBIG. The command answers REJECTED or fails with one line; every
    // ACCEPTED write is there once the limit is lifted.
    let cli = Cli::new();
    let seed = cli.run(&["write", "--agent", "alice"], &event("seed", "alice", 1));
    assert_eq!(seed.status.code(), Some(0), "{}", stderr(&seed));
    let batch: String = (0..400)
        .map(|i| event(&format!("e{i}"), "alice", i) + "\n")
        .collect();
    let input = cli.file("batch.jsonl", &batch);
    let script = "trap '' XFSZ; ulimit -f 256; exec \"$0\" --store \"$1\" write --agent alice --batch \"$2\"";
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_engram"))
        .arg(cli.store())
        .arg(&input)
        .env("ENGRAM_CACHE_DIR", CACHE_DIR)
        .output()
        .unwrap();
    let answers = stdout(&out);
    let accepted: Vec<String> = answers
        .lines()
        .filter_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            Some(v["ACCEPTED"]["stored_id"].as_str()?.to_owned())
        })
        .collect();
    assert!(accepted.len() < 400, "the limit was reached");
    let message = stderr(&out);
    match out.status.code() {
        // Each write past the limit answered REJECTED, the normal answer
        // (IO-W8), with the I/O error as its reason in the trail.
        Some(1) => {
            assert!(message.is_empty(), "{message}");
            let rejected: Vec<&str> = answers
                .lines()
                .filter(|l| !l.contains("ACCEPTED"))
                .collect();
            assert_eq!(rejected.len() + accepted.len(), 400, "one answer a write");
            assert!(rejected.iter().all(|l| *l == "\"REJECTED\""), "{answers}");
            let trail =
                json_lines(&cli.run(&["audit", "--outcome", "rejected", "--limit", "1000"], ""));
            assert_eq!(trail.len(), rejected.len(), "each rejection audited");
            for entry in trail {
                let reason = entry["reason"].as_str().unwrap_or_default();
                assert!(reason.contains("writing the file failed"), "{entry}");
            }
        }
        // The command stopped: one line naming the store.
        _ => {
            assert_eq!(message.lines().count(), 1, "{message}");
            assert!(message.starts_with("engram: "), "{message}");
            assert!(message.contains("memory.db"), "{message}");
        }
    }
    for id in &accepted {
        let read = format!(
            r#"{{"record_type":"EVENT","selector":{{"ById":{{"id":"{id}"}}}},"request_id":"r"}}"#
        );
        let out = cli.run(&["read", "--agent", "alice"], &read);
        assert!(stdout(&out).contains(id.as_str()), "{id} is readable");
    }
}

#[test]
fn io_w2_cycle_batch_ingests_past_turns_at_their_own_times_and_replays() {
    // proves IO-W2, S-CYCLE, MT-2: for cycles, each turn is a cycle run at the turn's
    // own timestamp, in one process; running the batch again answers the
    // same ids and stores nothing new.
    let cli = Cli::new();
    let plan = cli.file(
        "ingest.json",
        r#"{"metadata":{},"steps":[
            {"name":"summary","stage":"SummarizeMemory","kind":{"SummarizeMemory":{"of":"turn"}}},
            {"name":"persist","stage":"PersistMemory","kind":"PersistMemory","inputs":["summary"]}]}"#,
    );
    let turns = [
        r#"{"message":"I adopted a beagle named Max last weekend.","response":"Congratulations on Max!","session":"s1","request_id":"t1","timestamp":1600000000000}"#,
        r#"{"message":"🙂","response":"","request_id":"t2","timestamp":1600000100000}"#,
        r#"{"message":"My sister Ana moved to Porto in March.","response":"Porto is lovely in spring.","session":"s2","request_id":"t3","timestamp":1600000200000}"#,
    ]
    .join("\n");
    let batch = cli.file("turns.jsonl", &turns);
    let args = [
        "cycle",
        plan.to_str().unwrap(),
        "--agent",
        "alice",
        "--batch",
        batch.to_str().unwrap(),
    ];
    let first = cli.run(&args, "");
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let answers = json_lines(&first);
    assert_eq!(answers.len(), 3);
    assert_eq!(answers[0]["request_id"], "t1");
    assert_eq!(answers[0]["committed"].as_array().unwrap().len(), 1);
    assert_eq!(
        answers[1]["committed"],
        serde_json::json!([]),
        "nothing to keep"
    );
    let again = cli.run(&args, "");
    assert_eq!(json_lines(&again), answers, "a replay answers the same ids");
    let read = r#"{"record_type":"EVENT","selector":{"Limit":{"limit":10}},"request_id":"r"}"#;
    let out = cli.run(&["read", "--agent", "alice"], read);
    let records = &json_lines(&out)[0]["records"];
    let times: Vec<i64> = records
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["timestamp"].as_i64().unwrap())
        .collect();
    assert_eq!(times, [1_600_000_000_000, 1_600_000_200_000]);
}
