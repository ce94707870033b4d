//! `engram serve` killed under load: 8 clients writing into 2 agents'
//! domains over HTTP, the server killed with SIGKILL mid-stream, started
//! again on the same store; every write it acknowledged is there once, with
//! one ACCEPTED audit entry, and a replay of it is answered with its id.
//! On a SQLite file, and on PostgreSQL. The shared scenarios, the
//! authentication cases and hostile requests over HTTP are
//! `host/js/test/serve.test.js` (run by `tests/javascript.rs`).

mod support;

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The compiled engine, kept for every run of the tests.
const CACHE_DIR: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/engram-cache");
/// The one token of these tests.
const SECRET: &str = "serve-test-0123456789abcdef0123456789abcdef";
/// The agents the clients write into.
const AGENTS: [&str; 2] = ["alice", "bob"];
/// How many clients write at once.
const CLIENTS: usize = 8;

/// `engram serve` running on `store`.
struct Server {
    child: Child,
    client: Client,
}

/// A client of a server.
#[derive(Clone)]
struct Client {
    base: String,
}

impl Server {
    fn start(store: &str, tokens: &std::path::Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
            .args([
                "--store",
                store,
                "serve",
                "--addr",
                "127.0.0.1:0",
                "--tokens",
            ])
            .arg(tokens)
            .env("ENGRAM_CACHE_DIR", CACHE_DIR)
            .env_remove("ENGRAM_TOKENS")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("engram serve starts");
        let mut stderr = BufReader::new(child.stderr.take().expect("its standard error"));
        let mut line = String::new();
        let base = loop {
            line.clear();
            let read = stderr
                .read_line(&mut line)
                .expect("engram serve's standard error");
            assert!(read > 0, "engram serve ended before it listened");
            if let Some(at) = line.find("http://") {
                break line[at..].split_whitespace().next().unwrap().to_string();
            }
        };
        // Keep reading what it says, so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in stderr.lines() {});
        Server {
            child,
            client: Client { base },
        }
    }

    fn post(&self, path: &str, body: &Value) -> Result<(u16, Value), String> {
        self.client.post(path, body)
    }

    fn kill(mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("the killed server");
    }
}

impl Client {
    /// A POST of `body` to `path`: the status and the answer.
    fn post(&self, path: &str, body: &Value) -> Result<(u16, Value), String> {
        let agent = ureq::Agent::new_with_config(
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(Duration::from_secs(30)))
                .build(),
        );
        let mut response = agent
            .post(format!("{}{path}", self.base))
            .header("authorization", format!("Bearer {SECRET}"))
            .send_json(body)
            .map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let answer: Value = response.body_mut().read_json().map_err(|e| e.to_string())?;
        Ok((status, answer))
    }
}

/// A STATE write of `agent` whose request id is `request_id`.
fn write(agent: &str, request_id: &str) -> Value {
    json!({"request": {
        "request_id": request_id,
        "source": {"agent_id": agent, "component": "COGNITION", "actor": "USER"},
        "record": {"record_type": "STATE", "timestamp": 1_700_000_000_000_i64,
                   "payload": {"subject": request_id, "properties": {"n": 1}}},
    }})
}

/// Writes from 8 clients into 2 agents until the server is killed with
/// SIGKILL, starts it again on `store`, and checks every acknowledged write.
fn acknowledged_writes_survive_a_kill(store: &str) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.jsonl");
    std::fs::write(
        &tokens,
        json!({"name": "load", "secret": SECRET, "agents": "*", "level": "cross-agent"})
            .to_string(),
    )
    .unwrap();
    let server = Server::start(store, &tokens);
    let stop = Arc::new(AtomicBool::new(false));
    // agent -> request id -> stored id, for every 200.
    let acknowledged: Arc<Mutex<BTreeMap<String, BTreeMap<String, String>>>> = Arc::default();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let (server, stop, acknowledged) =
                (server.client.clone(), stop.clone(), acknowledged.clone());
            std::thread::spawn(move || {
                let agent = AGENTS[client % AGENTS.len()];
                for n in 0.. {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let request_id = format!("c{client}-{n}");
                    match server.post(
                        &format!("/agents/{agent}/write"),
                        &write(agent, &request_id),
                    ) {
                        Ok((200, answer)) => {
                            let id = answer["ACCEPTED"]["stored_id"]
                                .as_str()
                                .unwrap_or_else(|| panic!("{request_id}: {answer}"))
                                .to_string();
                            acknowledged
                                .lock()
                                .unwrap()
                                .entry(agent.to_string())
                                .or_default()
                                .insert(request_id, id);
                        }
                        Ok((status, answer)) => {
                            assert!(
                                status == 503 || status == 429,
                                "{request_id}: {status} {answer}"
                            );
                        }
                        // The server is gone: this write was not acknowledged.
                        Err(_) => break,
                    }
                }
            })
        })
        .collect();
    // Until every agent has acknowledged writes, and some more.
    for _ in 0..600 {
        let counts: Vec<usize> = {
            let acknowledged = acknowledged.lock().unwrap();
            AGENTS
                .iter()
                .map(|a| acknowledged.get(*a).map_or(0, BTreeMap::len))
                .collect()
        };
        if counts.iter().all(|&n| n >= 20) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Killed while the clients still write.
    server.kill();
    stop.store(true, Ordering::SeqCst);
    for client in clients {
        client.join().expect("a client");
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(
        AGENTS
            .iter()
            .all(|agent| acknowledged.get(*agent).is_some_and(|w| !w.is_empty())),
        "both agents acknowledged writes"
    );

    let server = Server::start(store, &tokens);
    for (agent, writes) in &acknowledged {
        let (status, records) = server
            .post(&format!("/agents/{agent}/export"), &json!({}))
            .unwrap();
        assert_eq!(status, 200, "{records}");
        let stored: Vec<&str> = records
            .as_array()
            .unwrap()
            .iter()
            .filter(|line| line["item"]["kind"] == "record")
            .map(|line| line["item"]["id"].as_str().unwrap())
            .collect();
        let distinct: BTreeSet<&str> = stored.iter().copied().collect();
        assert_eq!(
            distinct.len(),
            stored.len(),
            "{agent}: a record stored twice"
        );
        let (status, trail) = server
            .post(
                "/audit",
                &json!({"audit_agent": agent, "operation": "WRITE", "outcome": "ACCEPTED", "limit": 100_000}),
            )
            .unwrap();
        assert_eq!(status, 200, "{trail}");
        let mut accepted: BTreeMap<&str, usize> = BTreeMap::new();
        for entry in trail.as_array().unwrap() {
            *accepted
                .entry(entry["request_id"].as_str().unwrap())
                .or_default() += 1;
        }
        for (request_id, id) in writes {
            assert!(
                distinct.contains(id.as_str()),
                "{agent}: {request_id} ({id}) was acknowledged and is gone"
            );
            assert_eq!(
                accepted.get(request_id.as_str()),
                Some(&1),
                "{agent}: {request_id} has one ACCEPTED entry"
            );
            let (status, replay) = server
                .post(&format!("/agents/{agent}/write"), &write(agent, request_id))
                .unwrap();
            assert_eq!(status, 200, "{replay}");
            assert_eq!(
                replay["ACCEPTED"]["stored_id"],
                json!(id),
                "{agent}: {request_id} replayed"
            );
        }
        eprintln!(
            "{agent}: {} acknowledged, {} stored",
            writes.len(),
            stored.len()
        );
    }
    server.kill();
}

// proves IO-W2
#[test]
fn io_w2_every_write_engram_serve_acknowledged_survives_a_kill_9_under_load_once_with_its_audit_entry()
 {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("engram.db");
    acknowledged_writes_survive_a_kill(store.to_str().unwrap());
}

support::postgres_test! {
    // proves IO-W2
    fn io_w2_every_write_engram_serve_acknowledged_on_postgresql_survives_a_kill_9_under_load() {
        let url = support::required_postgres_url();
        let schema = support::PgSchema::fresh(&url, "serve_kill");
        acknowledged_writes_survive_a_kill(&schema.store_url());
    }
}
