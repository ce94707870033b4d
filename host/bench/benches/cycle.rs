//! ContextSelect latency (median and p99, top-k 10) with 10k and 100k
//! ingested memories, and full-cycle throughput, through the engine on a
//! SQLite file with the default summarizer and BM25 ranker.
//!
//! `cargo bench --bench cycle` (10,000 and 100,000 memories), or
//! `cargo bench --bench cycle -- 5000` for one size.
//!
//! Memories are written through `io.write` (their summaries and keywords
//! drawn from a fixed vocabulary by a seeded generator); the timed queries
//! run the plan's ContextSelect stage: SummarizeMemory of the question,
//! RetrieveMemory through the keyword index (candidate limit 256), and
//! ContextSelect. Then the same with an embedder (384 numbers, made from a
//! hash of the text: a stand-in whose own time is printed apart, for the
//! latency of gathering by meaning, exact over every vector of the
//! domain, not for its quality: that is `cargo bench --bench recall`).

use engram::cycle::*;
use engram::io::WriteRequest;
use engram::types::*;
use engram::{
    Bm25Ranker, Candidate, Config, Embedder, Engram, ExtractiveSummarizer, Mode, Model, Ranker,
    Role, SqliteBackend, SqliteOptions, Summarizer, Synchronous,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// 384 numbers from a hash of the text, timed: a stand-in model for
/// latency.
#[derive(Default)]
struct Hashed {
    nanos: AtomicU64,
    calls: AtomicU64,
}

impl Embedder for Hashed {
    fn model(&self) -> Model {
        Model {
            name: "hashed-384".into(),
            dimension: 384,
        }
    }

    fn embed(&self, texts: &[String], _: Role) -> Result<Vec<Vec<f32>>, String> {
        let start = Instant::now();
        let vectors = texts
            .iter()
            .map(|text| {
                let mut state = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
                });
                (0..384)
                    .map(|_| {
                        state = state
                            .wrapping_mul(6_364_136_223_846_793_005)
                            .wrapping_add(1);
                        ((state >> 40) as f32 / (1u64 << 24) as f32) - 0.5
                    })
                    .collect()
            })
            .collect();
        self.nanos
            .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.calls.fetch_add(1, Ordering::Relaxed);
        Ok(vectors)
    }
}
use std::time::{Duration, Instant};

const WORDS: [&str; 48] = [
    "lisbon",
    "porto",
    "flight",
    "hotel",
    "vegetarian",
    "restaurant",
    "dinner",
    "lunch",
    "sarah",
    "birthday",
    "gift",
    "museum",
    "train",
    "ticket",
    "weather",
    "spring",
    "beach",
    "coffee",
    "meeting",
    "office",
    "budget",
    "invoice",
    "doctor",
    "dentist",
    "gym",
    "yoga",
    "book",
    "concert",
    "jazz",
    "wine",
    "market",
    "bakery",
    "garden",
    "paint",
    "kitchen",
    "recipe",
    "pasta",
    "sushi",
    "tennis",
    "running",
    "marathon",
    "passport",
    "visa",
    "insurance",
    "taxi",
    "airport",
    "bike",
    "camera",
];

/// A small seeded generator, so every run writes the same memories.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as usize
    }

    fn word(&mut self) -> &'static str {
        WORDS[self.next() % WORDS.len()]
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Fills the store at `path` with `n` memories: set-up, not measured, so
/// no disk flush per write.
fn fill(n: usize, engram: &Engram, path: &std::path::Path, rng: &mut Lcg) -> anyhow::Result<()> {
    let fast = SqliteOptions {
        synchronous: Synchronous::Normal,
        ..SqliteOptions::default()
    };
    let store = Arc::new(SqliteBackend::open_with(path, &fast)?);
    let mut domain = engram.open("bench", Mode::Online, store.clone(), store)?;
    let source = WriteSource {
        agent_id: "bench".into(),
        component: SourceComponent::Cognition,
        actor: SourceActor::System,
    };
    let start = Instant::now();
    for i in 0..n {
        let keywords: Vec<String> = (0..5).map(|_| rng.word().to_string()).collect();
        let summary = format!(
            "Asked about {} and {}; planned {} with {}.",
            keywords[0], keywords[1], keywords[2], keywords[3]
        );
        // Index terms as the default summarizer makes them, so the
        // questions' terms meet them.
        let keywords = keywords
            .iter()
            .flat_map(|k| engram::algorithms::terms(k))
            .collect();
        let record = MemoryRecord::Event(Event {
            timestamp: 1_700_000_000_000 + i as i64,
            payload: EventPayload::Ingested(IngestedMemory {
                session_ref: format!("s{}", i / 50),
                summary,
                keywords,
            }),
        });
        let request = WriteRequest {
            record,
            source: source.clone(),
            request_id: format!("m{i}"),
        };
        domain.write(&request)?;
    }
    eprintln!("# wrote {n} memories in {:.1?}", start.elapsed());
    Ok(())
}

/// ContextSelect of 300 questions: the median and p99.
fn context_select(n: usize, domain: &mut engram::Domain, rng: &mut Lcg) -> anyhow::Result<()> {
    let plan = engram::plans::turn(10);
    let queries = 300;
    let mut latencies = Vec::with_capacity(queries);
    let mut found = 0;
    for q in 0..queries {
        let question = format!(
            "What about the {} and the {} {}?",
            rng.word(),
            rng.word(),
            rng.word()
        );
        let cycle = domain
            .begin_cycle(&plan, "bench", &format!("q{q}"))?
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let input = TurnInput {
            user_message: Some(question),
            model_response: None,
        };
        let start = Instant::now();
        let results = domain
            .run_stage(&cycle, Stage::ContextSelect, &input)?
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        latencies.push(start.elapsed());
        if let Some(StepOutput::Selected(context)) = results.last().map(|r| r.output.clone()) {
            found += context.len();
        }
        domain.drop_cycle(cycle)?;
    }
    latencies.sort();
    println!(
        "{n:>7} memories  ContextSelect (top-k 10): median {:>8.2?}  p99 {:>8.2?}  mean context {:.1}",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        found as f64 / queries as f64
    );
    Ok(())
}

/// Where the time goes: the host's default algorithms alone, on the same
/// kind of input.
fn algorithms(n: usize, rng: &mut Lcg) -> anyhow::Result<()> {
    let summarizer = ExtractiveSummarizer::default();
    let candidates: Vec<Candidate> = (0..256)
        .map(|i| Candidate {
            id: format!("{i:016x}"),
            summary: format!(
                "Asked about {} and {}; planned {} with {}.",
                rng.word(),
                rng.word(),
                rng.word(),
                rng.word()
            ),
            keywords: (0..5).map(|_| rng.word().to_string()).collect(),
            timestamp: i,
            similarity: None,
        })
        .collect();
    let rounds = 100u32;
    let start = Instant::now();
    for _ in 0..rounds {
        summarizer
            .summarize("What about the lisbon and the hotel budget?", None)
            .map_err(anyhow::Error::msg)?;
    }
    let summarize = start.elapsed() / rounds;
    let query = vec![
        "lisbon".to_string(),
        "hotel".to_string(),
        "budget".to_string(),
    ];
    let start = Instant::now();
    for _ in 0..rounds {
        Bm25Ranker
            .rank(&query, &candidates, 10)
            .map_err(anyhow::Error::msg)?;
    }
    let rank = start.elapsed() / rounds;
    println!(
        "{n:>7} memories  of which, natively: summarizer {summarize:.2?}, BM25 ranker over 256 candidates {rank:.2?}"
    );
    Ok(())
}

/// Whole turns: every stage and the commit, synchronous=FULL.
fn full_cycles(n: usize, domain: &mut engram::Domain, rng: &mut Lcg) -> anyhow::Result<()> {
    let plan = engram::plans::turn(10);
    let turns = 100;
    let start = Instant::now();
    for t in 0..turns {
        let cycle = domain
            .begin_cycle(&plan, "bench", &format!("t{t}"))?
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let input = TurnInput {
            user_message: Some(format!(
                "Plan the {} trip with a {} stop, please.",
                rng.word(),
                rng.word()
            )),
            model_response: Some(format!(
                "Done: the {} and the {} are booked for you.",
                rng.word(),
                rng.word()
            )),
        };
        for stage in [
            Stage::ContextSelect,
            Stage::PromptAssemble,
            Stage::SummarizeMemory,
            Stage::PersistMemory,
        ] {
            domain
                .run_stage(&cycle, stage, &input)?
                .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        }
        domain
            .commit_cycle(&cycle)?
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        domain.drop_cycle(cycle)?;
    }
    let elapsed = start.elapsed();
    println!(
        "{n:>7} memories  full cycles: {:.0} cycles/s ({:.2?} per cycle, recall + ingest + commit)",
        turns as f64 / elapsed.as_secs_f64(),
        elapsed / turns
    );
    Ok(())
}

/// Remembers `turns` turns (summarize, persist, commit: what `remember`
/// does): the time a turn, with the embedder's own time apart.
fn remember_turns(
    label: &str,
    domain: &mut engram::Domain,
    rng: &mut Lcg,
    hashed: &Hashed,
) -> anyhow::Result<()> {
    let turns = 1_000u32;
    let nanos = hashed.nanos.load(Ordering::Relaxed);
    let start = Instant::now();
    for _ in 0..turns {
        let message = format!(
            "We booked the {} trip with a {} stop in May.",
            rng.word(),
            rng.word()
        );
        domain
            .remember(&message, "Lovely, noted.")
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    }
    let elapsed = start.elapsed() / turns;
    let embedder =
        Duration::from_nanos((hashed.nanos.load(Ordering::Relaxed) - nanos) / u64::from(turns));
    println!(
        "{label:<17} remember: {elapsed:.2?} a turn (the embedder's own time {embedder:.2?} of it)"
    );
    Ok(())
}

fn run(n: usize, engram: &Engram, dense: &Engram, hashed: &Hashed) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("engram.db");
    let mut rng = Lcg(n as u64);
    fill(n, engram, &path, &mut rng)?;
    let store = Arc::new(SqliteBackend::open(&path)?);
    let mut domain = engram.open("bench", Mode::Online, store.clone(), store)?;
    context_select(n, &mut domain, &mut rng)?;
    algorithms(n, &mut rng)?;
    full_cycles(n, &mut domain, &mut rng)?;
    remember_turns("", &mut domain, &mut rng, hashed)?;

    // The same memories with vectors; the queries' embedding timed apart.
    let path = dir.path().join("dense.db");
    let mut rng = Lcg(n as u64);
    fill(n, dense, &path, &mut rng)?;
    let store = Arc::new(SqliteBackend::open(&path)?);
    let mut domain = dense.open("bench", Mode::Online, store.clone(), store)?;
    let (nanos, calls) = (
        hashed.nanos.load(Ordering::Relaxed),
        hashed.calls.load(Ordering::Relaxed),
    );
    print!("with an embedder: ");
    context_select(n, &mut domain, &mut rng)?;
    let calls = (hashed.calls.load(Ordering::Relaxed) - calls).max(1);
    println!(
        "{:>7} memories  of which the embedder's own time: {:.2?} a question",
        "",
        Duration::from_nanos((hashed.nanos.load(Ordering::Relaxed) - nanos) / calls)
    );
    remember_turns("with an embedder:", &mut domain, &mut rng, hashed)?;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let sizes: Vec<usize> = match std::env::args().skip(1).find(|a| !a.starts_with('-')) {
        Some(n) => vec![n.parse()?],
        None => vec![10_000, 100_000],
    };
    let engram = Engram::new()?;
    let hashed = Arc::new(Hashed::default());
    let dense = Engram::with_config(Config {
        embedder: Some(hashed.clone()),
        ..Config::default()
    })?;
    for n in sizes {
        run(n, &engram, &dense, &hashed)?;
    }
    Ok(())
}
