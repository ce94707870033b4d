//! `engram-standalone.wasm` run by the wasmtime CLI, one process per call,
//! its store `engram.db` in the folder it is given: what one process writes
//! the next reads, and the native host reads the same file, and the other
//! way round. The store's file format is one.

mod support;

use engram::types::{FactPayload, RecordType, StoredRecord};
use engram::{Mode, SqliteBackend};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use support::*;

/// A FACT for alice, in WAVE (the `--invoke` syntax).
const WRITE: &str = r#"write({record: fact({key: "user.diet", payload: semantic({content: "Vegetarian, no mushrooms.", context: "dining", valid-at: 1000, invalid-at: none, strength: 1.0, last-accessed: 1000, access-count: 0, sources: ["episode-1"], confidence: 0.9, contradictions: [], privacy-tier: sensitive})}), source: {agent-id: "alice", component: cognition, actor: user}, request-id: "w1"})"#;

/// The current version of the FACT `user.diet`.
const READ_DIET: &str =
    r#"read({record-type: fact, selector: by-key({key: "user.diet"}), request-id: "q"})"#;

/// Runs one call of the standalone component in a wasmtime process for
/// `agent`, `dir` preopened as `preopen` in the guest and the process's
/// folder; its standard output, the call's result in WAVE.
fn invoke(dir: &Path, preopen: &str, agent: &str, call: &str) -> String {
    let wasmtime = engram_wasi::wasmtime_cli().expect("the wasmtime CLI");
    let output = Command::new(wasmtime)
        .current_dir(dir)
        .arg("run")
        .arg("--dir")
        .arg(preopen)
        .arg("--env")
        .arg(format!("ENGRAM_AGENT={agent}"))
        .arg("--invoke")
        .arg(call)
        .arg(engram_wasi::STANDALONE)
        .output()
        .expect("wasmtime runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{call}: {}\n{stdout}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The id in a WAVE `accepted("…")`.
fn accepted_id(answer: &str) -> String {
    let rest = answer
        .trim()
        .strip_prefix("accepted(\"")
        .unwrap_or_else(|| panic!("not ACCEPTED: {answer}"));
    rest.split('"').next().unwrap().to_string()
}

// proves IO-W2, S-FILE: one file for every host; a retry answers the first id
#[test]
fn a_fact_written_by_one_process_is_read_by_the_next_and_by_the_native_host() {
    let dir = tempfile::tempdir().unwrap();
    let root = format!("{}::/", dir.path().display());
    let id = accepted_id(&invoke(dir.path(), &root, "alice", WRITE));
    assert!(dir.path().join("engram.db").is_file());

    // A second process, the folder preopened as the current one.
    let answer = invoke(dir.path(), ".", "alice", READ_DIET);
    assert!(answer.trim().starts_with("ok({records: [fact("), "{answer}");
    assert!(answer.contains(&format!("id: \"{id}\"")), "{answer}");
    assert!(answer.contains("Vegetarian, no mushrooms."), "{answer}");
    // The same write again is answered with the same id (IO-W2), from the
    // file.
    assert_eq!(accepted_id(&invoke(dir.path(), &root, "alice", WRITE)), id);

    let store = Arc::new(SqliteBackend::open(dir.path().join("engram.db")).unwrap());
    let mut alice = engram()
        .open("alice", Mode::Online, store.clone(), store)
        .unwrap();
    let found = records(&mut alice, RecordType::Fact, by_key("user.diet"));
    let [StoredRecord::Fact(stored)] = &found[..] else {
        panic!("one FACT expected, got {found:?}");
    };
    assert_eq!(stored.id, id);
    let FactPayload::Semantic(memory) = &stored.fact.payload else {
        panic!("a semantic memory expected: {stored:?}");
    };
    assert_eq!(memory.content, "Vegetarian, no mushrooms.");
}

// proves IO-W6, S-FILE
#[test]
fn what_the_native_host_wrote_the_component_reads_for_its_agent_only() {
    let dir = tempfile::tempdir().unwrap();
    let written = {
        let store = Arc::new(SqliteBackend::open(dir.path().join("engram.db")).unwrap());
        let mut alice = engram()
            .open("alice", Mode::Online, store.clone(), store)
            .unwrap();
        accept(&mut alice, "s1", state(5_000, "mission.current"))
    };
    let latest = r#"read({record-type: state, selector: latest({limit: 1}), request-id: "q"})"#;
    let answer = invoke(dir.path(), ".", "alice", latest);
    assert!(
        answer.trim().starts_with("ok({records: [state("),
        "{answer}"
    );
    assert!(answer.contains(&format!("id: \"{written}\"")), "{answer}");
    assert!(answer.contains("mission.current"), "{answer}");
    // Another agent's domain holds nothing (IO-W6).
    let answer = invoke(dir.path(), ".", "bob", latest);
    assert_eq!(answer.trim(), "ok({records: []})");
}
