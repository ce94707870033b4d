//! Does ContextSelect bring back the memory that answers the question?
//!
//! `cargo bench --bench recall` (seed 7, 12 agents' worth of conversation),
//! or `cargo bench --bench recall -- SEED SESSIONS`.
//!
//! The bench makes its own labeled conversations, seeded: two speakers
//! whose names recur in hundreds of turns, greetings and small talk, facts
//! stated once and asked about much later in other words (inflected forms:
//! "donated" asked as "donate"), and distractor turns that share the facts'
//! words. Every turn goes through a real ingest cycle at its own time (the
//! default summarizer: the raw text is never stored); every question
//! through a real ContextSelect (the default ranker, top_k 10). In the same
//! run, on the same turns and questions, plain BM25 (the `bm25` crate: its
//! English tokenizer stems and drops stop words) over the raw turn texts is
//! the baseline. It prints recall@5 and recall@10 of both and the ratio.
//!
//! With `ENGRAM_RECALL_DATASET=FILE` it also writes the turns and questions
//! to FILE as JSON Lines (`{"message","response","time"}` per turn, then
//! `{"question","evidence"}` per question, `evidence` the index of the turn
//! that answers it), for other hosts' recall runs on the same data
//! (`host/python/bench/recall.py`).

use engram::cycle::{Stage, StepOutput, TurnInput};
use engram::{Config, Engram, Mode, Storage};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// A seeded generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next() % items.len() as u64) as usize]
    }
}

struct Turn {
    message: String,
    response: String,
    time: i64,
}

struct Question {
    text: String,
    /// The turn that answers it.
    evidence: usize,
}

const SPEAKERS: [(&str, &str); 3] = [
    ("Caroline", "Melanie"),
    ("Jon", "Gina"),
    ("Audrey", "Andrew"),
];

/// (past-tense statement, question, the object's words) of a fact; `{o}`
/// is the object.
const FACTS: [(&str, &str); 12] = [
    (
        "I donated {o} to the shelter last week",
        "When did {s} donate {o}?",
    ),
    (
        "I finally painted {o} over the weekend",
        "What did {s} paint recently?",
    ),
    (
        "we adopted {o} from a rescue group",
        "Which pet did {s} adopt?",
    ),
    (
        "I signed up for {o} classes at the community center",
        "What classes is {s} taking?",
    ),
    (
        "my daughter's birthday party had {o} as the theme",
        "What was the theme of {s}'s daughter's birthday?",
    ),
    (
        "I started volunteering at {o} on Saturdays",
        "Where does {s} volunteer?",
    ),
    (
        "I bought {o} for the new apartment",
        "What did {s} buy for the apartment?",
    ),
    (
        "I ran {o} last month and finished strong",
        "Which race did {s} run?",
    ),
    (
        "my grandmother gave me {o} before she moved",
        "What did {s}'s grandmother give them?",
    ),
    (
        "I've been reading {o} every night",
        "What book is {s} reading?",
    ),
    ("we hiked {o} during our trip", "Which trail did {s} hike?"),
    (
        "I learned to bake {o} from my aunt",
        "What did {s} learn to bake?",
    ),
];

const OBJECTS: [&str; 40] = [
    "old winter coats",
    "a sunflower mural",
    "a beagle named Max",
    "pottery",
    "dinosaurs",
    "the animal shelter",
    "a velvet sofa",
    "the city marathon",
    "a silver locket",
    "Dune",
    "the Angel's Landing trail",
    "sourdough bread",
    "children's books",
    "a lighthouse",
    "a grey kitten",
    "salsa dancing",
    "unicorns",
    "the food bank",
    "a standing desk",
    "a half marathon",
    "a quilt",
    "Pride and Prejudice",
    "the coastal path",
    "apple pie",
    "camping gear",
    "a portrait of my dog",
    "two rabbits",
    "watercolor",
    "pirates",
    "the library",
    "a record player",
    "a trail race",
    "her wedding ring",
    "The Hobbit",
    "the ridge loop",
    "cinnamon rolls",
    "a bicycle",
    "a forest landscape",
    "a parrot",
    "yoga",
];

const SMALL_TALK: [&str; 14] = [
    "Hey {l}! How have you been?",
    "Hi {l}, super busy week here, wow.",
    "Haha that's awesome, thanks for sharing!",
    "Oh wow, that sounds like so much fun.",
    "Good to hear from you, {l}!",
    "Totally agree, it's been a crazy few days.",
    "Thanks so much, {l}, you're the best!",
    "Hope your week is going well!",
    "Yeah, I know what you mean.",
    "That's so cool! Tell me more sometime.",
    "Ugh, Mondays, am I right?",
    "I'm doing great, thanks for asking!",
    "Sounds lovely, {l}!",
    "Lol, classic. Talk soon!",
];

const DISTRACT: [&str; 6] = [
    "{l}, I saw an ad about {o} at the mall today, made me think of you.",
    "My neighbor keeps talking about {o}, it's getting old.",
    "Do you think {o} is worth the money?",
    "There was a news story about {o} this morning.",
    "I almost forgot, the shop had a sale on {o}.",
    "Someone at work asked me about {o}, funny timing.",
];

/// Builds `sessions` sessions of 24 turns each: about one turn in twelve
/// states a fact (each fact once), one in four is a distractor sharing a
/// fact's object, the rest small talk.
fn conversations(seed: u64, sessions: usize) -> (Vec<Turn>, Vec<Question>) {
    let mut rng = Rng(seed | 1);
    // Every fact is stated once: each (statement, object) pair, shuffled.
    let mut facts: Vec<(usize, usize)> = (0..FACTS.len())
        .flat_map(|f| (0..OBJECTS.len()).map(move |o| (f, o)))
        .collect();
    for i in (1..facts.len()).rev() {
        facts.swap(i, (rng.next() % (i as u64 + 1)) as usize);
    }
    let mut turns = Vec::new();
    let mut questions = Vec::new();
    let day = 86_400_000;
    let mut time = 1_700_000_000_000i64;
    for session in 0..sessions {
        let (speaker, listener) = SPEAKERS[session % SPEAKERS.len()];
        time += day;
        for t in 0..24 {
            let fill = |text: &str, o: &str| {
                text.replace("{l}", listener)
                    .replace("{s}", speaker)
                    .replace("{o}", o)
            };
            let roll = rng.next() % 12;
            let fact = if roll < 1 { facts.pop() } else { None };
            let (message, evidence) = if let Some((f, o)) = fact {
                let (statement, question) = FACTS[f];
                let object = OBJECTS[o];
                let text = format!("Hey {listener}! {}.", fill(statement, object));
                questions.push(Question {
                    text: fill(question, object),
                    evidence: turns.len(),
                });
                (text, true)
            } else if roll < 4 {
                let object = *rng.pick(&OBJECTS);
                (fill(rng.pick::<&str>(&DISTRACT), object), false)
            } else {
                (fill(rng.pick::<&str>(&SMALL_TALK), ""), false)
            };
            let response = if evidence {
                format!("Wow {speaker}, that's amazing! Tell me more.")
            } else {
                fill(rng.pick::<&str>(&SMALL_TALK), "").replace(listener, speaker)
            };
            let message = format!("{speaker}: {message}");
            turns.push(Turn {
                message,
                response: format!("{listener}: {response}"),
                time: time + t as i64 * 60_000,
            });
        }
    }
    (turns, questions)
}

/// Where the evidence ranks in `ranked` (ids of turns), if in the first 10.
fn hit(ranked: &[usize], evidence: usize) -> (bool, bool) {
    let at = ranked.iter().position(|t| *t == evidence);
    (at.is_some_and(|i| i < 5), at.is_some_and(|i| i < 10))
}

/// Writes the turns and questions as JSON Lines to `path`, for the other
/// hosts' recall benches.
fn write_dataset(
    turns: &[Turn],
    questions: &[Question],
    path: &std::ffi::OsStr,
) -> anyhow::Result<()> {
    let mut lines = String::new();
    for turn in turns {
        let line = serde_json::json!({"message": turn.message, "response": turn.response, "time": turn.time});
        lines.push_str(&format!("{line}\n"));
    }
    for question in questions {
        let line = serde_json::json!({"question": question.text, "evidence": question.evidence});
        lines.push_str(&format!("{line}\n"));
    }
    std::fs::write(path, lines)?;
    Ok(())
}

/// Engram's hits at 5 and 10: every turn through an ingest cycle at its own
/// time, then each question's ContextSelect; and how long ingesting took.
fn engram_recall(
    turns: &[Turn],
    questions: &[Question],
) -> anyhow::Result<((usize, usize), std::time::Duration)> {
    let now = Arc::new(AtomicI64::new(0));
    let clock = now.clone();
    let engram = Engram::with_config(Config {
        clock: Arc::new(move || clock.load(Ordering::SeqCst)),
        ..Config::default()
    })?;
    let storage = Storage::memory();
    let mut domain = engram.open("bench", Mode::Online, storage.backend, storage.audit)?;
    let ingest = engram::plans::ingest();
    let mut turn_of = std::collections::HashMap::new();
    let started = std::time::Instant::now();
    for (i, turn) in turns.iter().enumerate() {
        now.store(turn.time, Ordering::SeqCst);
        let cycle = domain
            .begin_cycle(&ingest, "bench", &format!("turn-{i}"))?
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let input = TurnInput {
            user_message: Some(turn.message.clone()),
            model_response: Some(turn.response.clone()),
        };
        for stage in [Stage::SummarizeMemory, Stage::PersistMemory] {
            domain
                .run_stage(&cycle, stage, &input)?
                .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        }
        let ids = domain
            .commit_cycle(&cycle)?
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        domain.drop_cycle(cycle)?;
        for id in ids {
            turn_of.insert(id, i);
        }
    }
    let ingest_time = started.elapsed();
    let recall = engram::plans::recall(10);
    let mut engram_hits = (0, 0);
    for (q, question) in questions.iter().enumerate() {
        let cycle = domain
            .begin_cycle(&recall, "bench", &format!("q-{q}"))?
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let input = TurnInput {
            user_message: Some(question.text.clone()),
            model_response: None,
        };
        domain
            .run_stage(&cycle, Stage::ContextSelect, &input)?
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let ranked: Vec<usize> = match domain.step_output(&cycle, "select")? {
            Some(StepOutput::Selected(memories)) => memories
                .iter()
                .filter_map(|m| turn_of.get(&m.id).copied())
                .collect(),
            _ => Vec::new(),
        };
        domain.drop_cycle(cycle)?;
        let (at5, at10) = hit(&ranked, question.evidence);
        engram_hits.0 += usize::from(at5);
        engram_hits.1 += usize::from(at10);
    }

    Ok((engram_hits, ingest_time))
}

/// The baseline's hits at 5 and 10: BM25 over the raw turn texts.
fn raw_recall(turns: &[Turn], questions: &[Question]) -> (usize, usize) {
    let texts: Vec<String> = turns
        .iter()
        .map(|t| format!("{}\n{}", t.message, t.response))
        .collect();
    let corpus: Vec<&str> = texts.iter().map(String::as_str).collect();
    let embedder: bm25::Embedder =
        bm25::EmbedderBuilder::with_fit_to_corpus(bm25::Language::English, &corpus).build();
    let mut scorer = bm25::Scorer::<usize>::new();
    for (i, text) in corpus.iter().enumerate() {
        scorer.upsert(&i, embedder.embed(text));
    }
    let mut raw_hits = (0, 0);
    for question in questions {
        let mut matches = scorer.matches(&embedder.embed(&question.text));
        matches.sort_by(|a, b| b.score.total_cmp(&a.score).then(b.id.cmp(&a.id)));
        let ranked: Vec<usize> = matches.into_iter().take(10).map(|m| m.id).collect();
        let (at5, at10) = hit(&ranked, question.evidence);
        raw_hits.0 += usize::from(at5);
        raw_hits.1 += usize::from(at10);
    }

    raw_hits
}

fn main() -> anyhow::Result<()> {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let seed = args.first().copied().unwrap_or(7);
    let sessions = args.get(1).copied().unwrap_or(240) as usize;
    let (turns, questions) = conversations(seed, sessions);
    if let Some(path) = std::env::var_os("ENGRAM_RECALL_DATASET") {
        write_dataset(&turns, &questions, &path)?;
    }
    let (engram_hits, ingest_time) = engram_recall(&turns, &questions)?;
    let raw_hits = raw_recall(&turns, &questions);
    let n = questions.len().max(1) as f64;
    let pct = |hits: usize| 100.0 * hits as f64 / n;
    println!(
        "engram recall benchmark: seed {seed}, {} turns in {sessions} sessions, {} questions; ingest {:.1} ms/turn",
        turns.len(),
        questions.len(),
        ingest_time.as_secs_f64() * 1000.0 / turns.len().max(1) as f64
    );
    println!("                               recall@5   recall@10");
    println!(
        "engram (summaries + keywords)   {:>6.1}%     {:>6.1}%",
        pct(engram_hits.0),
        pct(engram_hits.1)
    );
    println!(
        "BM25 over the raw turn texts    {:>6.1}%     {:>6.1}%",
        pct(raw_hits.0),
        pct(raw_hits.1)
    );
    println!(
        "engram / raw-text baseline      {:>6.2}×     {:>6.2}×",
        engram_hits.0 as f64 / raw_hits.0.max(1) as f64,
        engram_hits.1 as f64 / raw_hits.1.max(1) as f64
    );
    Ok(())
}
