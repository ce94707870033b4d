//! Engram against the store users would pick instead: LangGraph's
//! `SqliteStore` (the store the OwnYou design names), on the same put / get /
//! list-of-100 workload, in one run, interleaved, at the same journal and
//! synchronous settings on both sides (WAL + FULL, WAL + NORMAL), medians
//! of 3 rounds; and the pages a put appends to the write-ahead log on each
//! side.
//!
//! `cargo bench --bench peers` (N = 2000), or `cargo bench --bench peers --
//! 10000`. The bench makes its own Python virtual environment in the target
//! folder and installs the pinned `langgraph-checkpoint-sqlite` into it.
//!
//! Both sides use their namespace API, one namespace of N values:
//! - put: one value per call, one commit each (Engram: `graph.put`, a FACT
//!   write; LangGraph: `store.put(namespace, key, value)`).
//! - get: one value by its key, in a scattered order (Engram: `graph.get`;
//!   LangGraph: `store.get`).
//! - list(100): every page of 100 of the namespace, in order (LangGraph:
//!   `store.search(namespace, limit=100, offset=…)`; Engram: `graph.list`
//!   with the key that ended the previous page as `after`, a continuation,
//!   not an offset). Reported per page.
//!
//! Settings: both sides in WAL mode, at synchronous FULL (a put is durable
//! when it returns: Engram's default) and at NORMAL (LangGraph's connection
//! set to WAL + NORMAL, Engram's `Synchronous::Normal`). Pages per put: the
//! frames a put appends to the WAL, counted over `FRAMES_N` puts into a
//! fresh file with no checkpoint in between (the log read frame by frame,
//! one commit a put), in all and by the table or index each page belongs
//! to (SQLite's `dbstat`).

use engram::graph::PutRequest;
use engram::io::WriteResult;
use engram::types::*;
use engram::{Engram, Mode, SqliteBackend, SqliteOptions, Synchronous};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

const LANGGRAPH: &str = "langgraph-checkpoint-sqlite==3.1.2";
const LANGGRAPH_CORE: &str = "langgraph-checkpoint==4.3.2";
const ROUNDS: usize = 3;
/// Puts over which the WAL frames of a put are counted.
const FRAMES_N: usize = 300;

const PYTHON: &str = r#"
import json, os, shutil, sqlite3, sys, time
from langgraph.store.sqlite import SqliteStore

path, synchronous, n, phase = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
conn.execute("PRAGMA journal_mode=WAL")
conn.execute(f"PRAGMA synchronous={synchronous}")
store = SqliteStore(conn)
store.setup()
ns = ("bench", "facts")
value = lambda i: {"content": f"The user prefers option {i} for dinner", "confidence": 0.9}
if phase == "frames":
    conn.execute("PRAGMA wal_autocheckpoint=0")
    wal = path + "-wal"
    for i in range(n):
        store.put(ns, f"k{i:08d}", value(i))
    # The file and its log as they are before the connection closes (and
    # checkpoints): read by the bench.
    for suffix in ["", "-wal"]:
        shutil.copyfile(path + suffix, path + ".kept" + suffix)
    print(json.dumps({}))
    sys.exit(0)
t = time.perf_counter()
for i in range(n):
    store.put(ns, f"k{i:08d}", value(i))
put = (time.perf_counter() - t) / n
t = time.perf_counter()
for i in range(n):
    assert store.get(ns, f"k{(i * 7919) % n:08d}") is not None
get = (time.perf_counter() - t) / n
lists = max(1, n // 100)
t = time.perf_counter()
for page in range(lists):
    assert len(store.search(ns, limit=100, offset=page * 100)) == 100
listed = (time.perf_counter() - t) / lists
print(json.dumps({"put": put * 1e6, "get": get * 1e6, "list": listed * 1e6}))
"#;

/// The virtual environment, made and filled once.
fn venv(target: &Path) -> anyhow::Result<PathBuf> {
    let dir = target.join("peers-venv");
    let python = dir.join("bin").join("python");
    let ready = Command::new(&python)
        .args(["-c", "import langgraph.store.sqlite"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ready {
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&dir)
            .status()?;
        anyhow::ensure!(made.success(), "python3 -m venv failed");
        let installed = Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", LANGGRAPH, LANGGRAPH_CORE])
            .status()?;
        anyhow::ensure!(installed.success(), "installing {LANGGRAPH} failed");
    }
    Ok(python)
}

#[derive(Clone, Copy, Default)]
struct Phases {
    put: f64,
    get: f64,
    list: f64,
}

/// LangGraph's answer to `phase` (`run` or `frames`) at `synchronous`.
fn langgraph_json(
    python: &Path,
    script: &Path,
    dir: &Path,
    synchronous: Synchronous,
    n: usize,
    phase: &str,
) -> anyhow::Result<serde_json::Value> {
    let mode = sqlite_name(synchronous);
    let path = dir.join(format!("langgraph-{mode}.db"));
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let out = Command::new(python)
        .arg(script)
        .arg(&path)
        .arg(mode)
        .arg(n.to_string())
        .arg(phase)
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// The name SQLite gives a synchronous setting.
fn sqlite_name(synchronous: Synchronous) -> &'static str {
    match synchronous {
        Synchronous::Full => "FULL",
        _ => "NORMAL",
    }
}

fn langgraph(
    python: &Path,
    script: &Path,
    dir: &Path,
    synchronous: Synchronous,
    n: usize,
) -> anyhow::Result<Phases> {
    let v = langgraph_json(python, script, dir, synchronous, n, "run")?;
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    Ok(Phases {
        put: f("put"),
        get: f("get"),
        list: f("list"),
    })
}

/// A fresh Engram store at `synchronous` and its bench domain.
fn engram_domain(
    engram: &Engram,
    dir: &Path,
    synchronous: Synchronous,
) -> anyhow::Result<(PathBuf, engram::Domain)> {
    let path = dir.join(format!("engram-{synchronous:?}.db"));
    for suffix in ["", "-wal", "-shm", "-trail"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let options = SqliteOptions {
        synchronous,
        ..SqliteOptions::default()
    };
    let store = Arc::new(SqliteBackend::open_with(&path, &options)?);
    let domain = engram.open("bench", Mode::Online, store.clone(), store)?;
    Ok((path, domain))
}

fn namespace() -> Vec<String> {
    vec!["bench".to_string(), "facts".to_string()]
}

/// Puts values `0..n`, one commit each.
fn put_all(domain: &mut engram::Domain, n: usize) -> anyhow::Result<()> {
    let source = WriteSource {
        agent_id: "bench".into(),
        component: SourceComponent::Cognition,
        actor: SourceActor::User,
    };
    for i in 0..n {
        let request = PutRequest {
            namespace: namespace(),
            id: format!("k{i:08}"),
            value: FactPayload::Semantic(SemanticMemory {
                content: format!("The user prefers option {i} for dinner"),
                context: "dining".into(),
                valid_at: 0,
                invalid_at: None,
                strength: 1.0,
                last_accessed: 0,
                access_count: 0,
                sources: vec![],
                confidence: 0.9,
                contradictions: vec![],
                privacy_tier: PrivacyTier::Public,
            }),
            source: source.clone(),
            request_id: format!("p{i}"),
        };
        anyhow::ensure!(matches!(domain.put(&request)?, WriteResult::Accepted(_)));
    }
    Ok(())
}

/// What a put appends to the write-ahead log: frames (pages) per put, in
/// all and by the table or index each page belongs to, over the last
/// `puts` commits of the log beside `db` (one commit a put).
struct WalPages {
    per_put: f64,
    by_tree: Vec<(String, f64)>,
}

/// Reads the log beside `db` frame by frame (a 32-byte header, then each
/// frame a 24-byte header — page number, and the database's size in pages
/// on a commit's last frame — and the page), keeps the last `puts`
/// commits, and names each page's table or index by `dbstat` (the log's
/// pages included: a read sees them).
fn wal_pages(db: &Path, puts: usize) -> anyhow::Result<WalPages> {
    let wal = std::fs::read(format!("{}-wal", db.display()))?;
    anyhow::ensure!(wal.len() >= 32, "{}-wal: no log", db.display());
    let word = |at: usize| u32::from_be_bytes(wal[at..at + 4].try_into().expect("4 bytes"));
    let page = word(8) as usize;
    let mut commits: Vec<Vec<u32>> = Vec::new();
    let mut frames = Vec::new();
    let mut at = 32;
    while at + 24 + page <= wal.len() {
        frames.push(word(at));
        if word(at + 4) != 0 {
            commits.push(std::mem::take(&mut frames));
        }
        at += 24 + page;
    }
    anyhow::ensure!(
        commits.len() >= puts,
        "{}-wal: {} commits, fewer than the {puts} puts",
        db.display(),
        commits.len()
    );
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let owners: std::collections::HashMap<u32, String> = conn
        .prepare("SELECT pageno, name FROM dbstat")?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut by_tree: std::collections::BTreeMap<String, usize> = Default::default();
    let last = &commits[commits.len() - puts..];
    for page in last.iter().flatten() {
        let owner = owners.get(page).cloned().unwrap_or_else(|| "(free)".into());
        *by_tree.entry(owner).or_default() += 1;
    }
    let mut by_tree: Vec<(String, f64)> = by_tree
        .into_iter()
        .map(|(tree, n)| (tree, n as f64 / puts as f64))
        .collect();
    by_tree.sort_by(|a, b| b.1.total_cmp(&a.1));
    Ok(WalPages {
        per_put: last.iter().map(Vec::len).sum::<usize>() as f64 / puts as f64,
        by_tree,
    })
}

/// The log pages of `n` puts into a fresh Engram store (fewer than the
/// store's checkpoint interval).
fn engram_frames(
    engram: &Engram,
    dir: &Path,
    synchronous: Synchronous,
    n: usize,
) -> anyhow::Result<WalPages> {
    let (path, mut domain) = engram_domain(engram, dir, synchronous)?;
    put_all(&mut domain, n)?;
    // Read while the store is open: closing it checkpoints the log.
    wal_pages(&path, n)
}

/// The log pages of `n` puts into a fresh `SqliteStore`: its script keeps
/// a copy of the file and its log before it closes the connection.
fn langgraph_frames(
    python: &Path,
    script: &Path,
    dir: &Path,
    n: usize,
) -> anyhow::Result<WalPages> {
    langgraph_json(python, script, dir, Synchronous::Full, n, "frames")?;
    wal_pages(&dir.join("langgraph-FULL.db.kept"), n)
}

/// One line of each side's log pages.
fn print_pages(name: &str, pages: &WalPages) {
    let trees: Vec<String> = pages
        .by_tree
        .iter()
        .map(|(tree, n)| format!("{tree} {n:.2}"))
        .collect();
    println!("  {name:<10} {:>5.2}: {}", pages.per_put, trees.join(", "));
}

fn engram_run(
    engram: &Engram,
    dir: &Path,
    synchronous: Synchronous,
    n: usize,
) -> anyhow::Result<Phases> {
    let (_, mut domain) = engram_domain(engram, dir, synchronous)?;
    let namespace = namespace();
    let started = Instant::now();
    put_all(&mut domain, n)?;
    let put = started.elapsed().as_secs_f64() / n as f64;
    let started = Instant::now();
    for i in 0..n {
        let id = format!("k{:08}", (i * 7919) % n);
        let found = domain
            .get("g", &namespace, &id)?
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        anyhow::ensure!(found.is_some());
    }
    let get = started.elapsed().as_secs_f64() / n as f64;
    let lists = (n / 100).max(1);
    let started = Instant::now();
    let mut after: Option<String> = None;
    for _ in 0..lists {
        let page = domain
            .list_after("l", &namespace, 100, after.as_deref())?
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        anyhow::ensure!(page.len() == 100);
        after = page.last().map(|fact| fact.fact.key.clone());
    }
    let list = started.elapsed().as_secs_f64() / lists as f64;
    Ok(Phases {
        put: put * 1e6,
        get: get * 1e6,
        list: list * 1e6,
    })
}

/// Engram's side alone at WAL + NORMAL (WAL + FULL when `full` is asked
/// for), for a profiler (`perf record`): `n` puts, then (unless `put` is
/// asked for alone) `n` gets each 20 times over, timed apart.
fn profile(n: usize) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let engram = Engram::new()?;
    let synchronous = if std::env::args().any(|a| a == "full") {
        Synchronous::Full
    } else {
        Synchronous::Normal
    };
    let (_, mut domain) = engram_domain(&engram, dir.path(), synchronous)?;
    let namespace = namespace();
    let started = Instant::now();
    put_all(&mut domain, n)?;
    let put = started.elapsed().as_secs_f64() / n as f64;
    let rounds = if std::env::args().any(|a| a == "put") {
        0
    } else {
        20
    };
    let started = Instant::now();
    for round in 0..rounds {
        for i in 0..n {
            let id = format!("k{:08}", (i * 7919 + round) % n);
            let found = domain
                .get("g", &namespace, &id)?
                .map_err(|e| anyhow::anyhow!("{e:?}"))?;
            anyhow::ensure!(found.is_some());
        }
    }
    let get = started.elapsed().as_secs_f64() / (rounds * n).max(1) as f64;
    println!(
        "profile: N = {n}, {synchronous:?}, put {:.1} µs, get {:.1} µs",
        put * 1e6,
        get * 1e6
    );
    Ok(())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(2_000)
        .max(100);
    if std::env::args().any(|a| a == "profile") {
        return profile(n);
    }
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let python = venv(&target)?;
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("langgraph_bench.py");
    std::fs::write(&script, PYTHON)?;
    let engram = Engram::new()?;
    let settings = [Synchronous::Full, Synchronous::Normal];
    let mut names = Vec::new();
    for synchronous in settings {
        let mode = sqlite_name(synchronous);
        names.push(format!("LangGraph SqliteStore, WAL + {mode}"));
        names.push(format!("Engram library, WAL + {mode}"));
    }
    let mut runs: Vec<Vec<Phases>> = vec![Vec::new(); names.len()];
    for _ in 0..ROUNDS {
        for (i, &synchronous) in settings.iter().enumerate() {
            runs[2 * i].push(langgraph(&python, &script, dir.path(), synchronous, n)?);
            runs[2 * i + 1].push(engram_run(&engram, dir.path(), synchronous, n)?);
        }
    }
    let medians: Vec<Phases> = runs
        .iter()
        .map(|r| Phases {
            put: median(&mut r.iter().map(|p| p.put).collect::<Vec<_>>()),
            get: median(&mut r.iter().map(|p| p.get).collect::<Vec<_>>()),
            list: median(&mut r.iter().map(|p| p.list).collect::<Vec<_>>()),
        })
        .collect();
    let peer_frames = langgraph_frames(&python, &script, dir.path(), FRAMES_N)?;
    let frames = engram_frames(&engram, dir.path(), Synchronous::Full, FRAMES_N)?;
    println!("peers: N = {n}, medians of {ROUNDS} interleaved rounds, µs per operation");
    println!("{:<46} {:>10} {:>10} {:>12}", "", "put", "get", "list(100)");
    for (name, m) in names.iter().zip(&medians) {
        println!(
            "{name:<46} {:>10.1} {:>10.1} {:>12.1}",
            m.put, m.get, m.list
        );
    }
    for (i, synchronous) in settings.iter().enumerate() {
        let (p, e) = (medians[2 * i], medians[2 * i + 1]);
        println!(
            "Engram speed / LangGraph's at WAL + {:<6}: put {:.2}×, get {:.2}×, list(100) {:.2}×",
            sqlite_name(*synchronous),
            p.put / e.put,
            p.get / e.get,
            p.list / e.list
        );
    }
    println!(
        "WAL pages a put appends (over {FRAMES_N} puts into a fresh file), by table or index:"
    );
    print_pages("LangGraph", &peer_frames);
    print_pages("Engram", &frames);
    Ok(())
}
