//! `engram serve` against the library, in one run: 8 clients, each its own
//! agent, each remembering N turns and then recalling N questions; first
//! through the Rust library (8 threads, a domain each, one SQLite file),
//! then over HTTP on loopback through `engram serve` (this crate's
//! `engram`, release build) on another file, with a bearer token; then
//! through `engram-http.wasm` under the pinned `wasmtime serve` (an
//! instance a request, one request at a time on its store). Prints
//! each way's throughput (calls a second, all clients together) and p99
//! (ms), and the ratios. synchronous=FULL both ways.
//!
//! `cargo bench --bench serve` (N = 100), or `cargo bench --bench serve -- 300`.

#[path = "common/binary.rs"]
mod binary;

use engram::{Domain, Engram, Mode, Storage};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How many clients call at once.
const CLIENTS: usize = 8;
/// The bench's token.
const SECRET: &str = "bench-0123456789abcdef0123456789abcdef01";

/// One client's turn `i` and question `i`.
fn turn(client: usize, i: usize) -> (String, String, String) {
    (
        format!("Turn {i}: client {client} booked the hotel number {i} in Lisbon for the trip."),
        format!("Noted, hotel {i} is booked."),
        format!("Which hotel number {i} did I book in Lisbon?"),
    )
}

/// The times of every call of one phase, and the phase's wall time.
struct Phase {
    times: Vec<f64>,
    wall: f64,
}

impl Phase {
    fn per_second(&self) -> f64 {
        self.times.len() as f64 / self.wall
    }

    fn p99_ms(&self) -> f64 {
        let mut times = self.times.clone();
        times.sort_by(f64::total_cmp);
        times[(times.len() * 99 / 100).min(times.len() - 1)] * 1e3
    }
}

/// Runs `call(client, i)` N times in each of 8 threads at once.
fn phase(n: usize, call: impl Fn(usize, usize) + Send + Sync + 'static) -> Phase {
    let call = Arc::new(call);
    let started = Instant::now();
    let threads: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let call = call.clone();
            std::thread::spawn(move || {
                (0..n)
                    .map(|i| {
                        let at = Instant::now();
                        call(client, i);
                        at.elapsed().as_secs_f64()
                    })
                    .collect::<Vec<f64>>()
            })
        })
        .collect();
    let times = threads
        .into_iter()
        .flat_map(|thread| thread.join().expect("a client"))
        .collect();
    Phase {
        times,
        wall: started.elapsed().as_secs_f64(),
    }
}

/// Remember and recall through the library: a domain per client.
fn library(n: usize, path: &Path) -> anyhow::Result<(Phase, Phase)> {
    let storage = Storage::open(path.to_str().unwrap())?;
    let engram = Engram::new()?;
    let domains: Arc<Vec<std::sync::Mutex<Domain>>> = Arc::new(
        (0..CLIENTS)
            .map(|client| {
                engram
                    .open(
                        &format!("agent-{client}"),
                        Mode::Online,
                        storage.backend.clone(),
                        storage.audit.clone(),
                    )
                    .map(std::sync::Mutex::new)
            })
            .collect::<anyhow::Result<_>>()?,
    );
    let remember = {
        let domains = domains.clone();
        phase(n, move |client, i| {
            let (message, response, _) = turn(client, i);
            let mut domain = domains[client].lock().unwrap();
            domain.remember(&message, &response).expect("remembered");
        })
    };
    let recall = phase(n, move |client, i| {
        let (_, _, question) = turn(client, i);
        let mut domain = domains[client].lock().unwrap();
        domain.recall(&question).expect("recalled");
    });
    Ok((remember, recall))
}

/// The bench's token, as a server takes it.
fn token() -> String {
    json!({"name": "bench", "secret": SECRET, "agents": "*", "level": "cognition"}).to_string()
}

/// Remember and recall over HTTP through `engram serve`.
fn server(n: usize, path: &Path) -> anyhow::Result<(Phase, Phase)> {
    let dir = tempfile::tempdir()?;
    let tokens = dir.path().join("tokens.jsonl");
    std::fs::write(&tokens, token())?;
    let mut child = Command::new(binary::engram())
        .arg("--store")
        .arg(path)
        .args(["serve", "--addr", "127.0.0.1:0", "--tokens"])
        .arg(&tokens)
        .stderr(Stdio::piped())
        .spawn()?;
    let base = listening(&mut child, "engram serve")?;
    let phases = over_http(n, base);
    child.kill()?;
    child.wait()?;
    Ok(phases)
}

/// The address `server` (`what`) says on standard error it listens at
/// (`http://IP:PORT`), once it says it; the rest of what it says is read
/// and dropped.
fn listening(server: &mut std::process::Child, what: &str) -> anyhow::Result<String> {
    let mut stderr = BufReader::new(server.stderr.take().expect("its standard error"));
    let mut line = String::new();
    let base = loop {
        line.clear();
        anyhow::ensure!(stderr.read_line(&mut line)? > 0, "{what} ended");
        if let Some(at) = line.find("http://") {
            let address = line[at..].split_whitespace().next().unwrap_or_default();
            break address.trim_end_matches('/').to_string();
        }
    };
    std::thread::spawn(move || for _ in stderr.lines() {});
    Ok(base)
}

/// Remember and recall over HTTP through `engram-http.wasm` under the
/// pinned `wasmtime serve` (an instance a request), its store in `dir`.
fn component(n: usize, dir: &Path) -> anyhow::Result<(Phase, Phase)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let tokenizer = Path::new(engram_wasi::TOKENIZER)
        .parent()
        .expect("the components' folder");
    let mut child = Command::new(engram_wasi::wasmtime_cli()?)
        .args(["serve", "-O", "pooling-allocator=n", "-Scli", "--dir"])
        .arg(format!("{}::/data", dir.display()))
        .arg("--dir")
        .arg(format!("{}::/engram", tokenizer.display()))
        .args(["--env", "ENGRAM_STORE=/data/engram.db", "--env"])
        .arg(format!("ENGRAM_TOKENS={}", token()))
        .args([
            "--env",
            "ENGRAM_TOKENIZER=/engram/o200k_base.ranks",
            "--addr",
        ])
        .arg(format!("127.0.0.1:{port}"))
        .arg(engram_wasi::HTTP)
        .stderr(Stdio::piped())
        .spawn()?;
    let base = listening(&mut child, "wasmtime serve")?;
    let phases = over_http(n, base);
    child.kill()?;
    child.wait()?;
    Ok(phases)
}

/// Remember, then recall, over HTTP at `base`.
fn over_http(n: usize, base: String) -> (Phase, Phase) {
    let base = Arc::new(base);
    let post = move |base: &str, path: String, body: serde_json::Value| {
        let agent = ureq::Agent::new_with_config(
            ureq::Agent::config_builder()
                .timeout_global(Some(Duration::from_secs(60)))
                .build(),
        );
        agent
            .post(format!("{base}{path}"))
            .header("authorization", format!("Bearer {SECRET}"))
            .send_json(body)
            .expect("a 200")
            .body_mut()
            .read_to_string()
            .expect("an answer");
    };
    let remember = {
        let base = base.clone();
        phase(n, move |client, i| {
            let (message, response, _) = turn(client, i);
            post(
                &base,
                format!("/agents/agent-{client}/remember"),
                json!({"message": message, "response": response}),
            );
        })
    };
    let recall = {
        let base = base.clone();
        phase(n, move |client, i| {
            let (_, _, question) = turn(client, i);
            post(
                &base,
                format!("/agents/agent-{client}/recall"),
                json!({"question": question}),
            );
        })
    };
    (remember, recall)
}

fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100);
    let dir = tempfile::tempdir()?;
    let (lib_remember, lib_recall) = library(n, &dir.path().join("library.db"))?;
    let (http_remember, http_recall) = server(n, &dir.path().join("serve.db"))?;
    let wasm_dir = dir.path().join("component");
    std::fs::create_dir_all(&wasm_dir)?;
    let (wasm_remember, wasm_recall) = component(n, &wasm_dir)?;
    println!("{CLIENTS} clients × N = {n} calls each, an agent a client, synchronous=FULL:");
    println!("                            remember/s  p99 ms   recall/s  p99 ms");
    for (name, remember, recall) in [
        ("library (in process)", &lib_remember, &lib_recall),
        ("engram serve (HTTP)", &http_remember, &http_recall),
        ("engram-http.wasm", &wasm_remember, &wasm_recall),
    ] {
        println!(
            "  {name:<22} {:11.0} {:7.2} {:10.0} {:7.2}",
            remember.per_second(),
            remember.p99_ms(),
            recall.per_second(),
            recall.p99_ms()
        );
    }
    println!(
        "  serve / library        {:11.2} {:7.2} {:10.2} {:7.2}",
        http_remember.per_second() / lib_remember.per_second(),
        http_remember.p99_ms() / lib_remember.p99_ms(),
        http_recall.per_second() / lib_recall.per_second(),
        http_recall.p99_ms() / lib_recall.p99_ms()
    );
    println!(
        "  component / library    {:11.2} {:7.2} {:10.2} {:7.2}",
        wasm_remember.per_second() / lib_remember.per_second(),
        wasm_remember.p99_ms() / lib_remember.p99_ms(),
        wasm_recall.per_second() / lib_recall.per_second(),
        wasm_recall.p99_ms() / lib_recall.p99_ms()
    );
    Ok(())
}
