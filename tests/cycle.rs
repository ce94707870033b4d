//! Execution cycles (B-005), rule by rule: plans refused before anything
//! runs, stages, explicit step outputs, one atomic commit, and the
//! summarizer and ranker behind the engine's imports. The real component in
//! wasmtime, in memory and on SQLite files.

mod support;

use engram::cycle::*;
use engram::io::{ById, ReadRequest, ReadSelector};
use engram::types::{RecordType, StoredRecord};
use engram::{
    Bm25Ranker, Candidate, Cycle, Domain, ExtractiveSummarizer, Ranker, Summarizer, Summary,
};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use support::*;

// ---- plans -------------------------------------------------------------------

use engram::plans::{ingest_steps, recall_steps};

fn plan(top_k: Option<u32>, steps: Vec<PlanStep>) -> ExecutionPlan {
    ExecutionPlan {
        metadata: PlanMetadata {
            top_k,
            token_budget: None,
        },
        steps,
    }
}

fn full_plan(top_k: u32) -> ExecutionPlan {
    engram::plans::turn(top_k)
}

fn ingest_plan() -> ExecutionPlan {
    engram::plans::ingest()
}

const STAGES: [Stage; 4] = [
    Stage::ContextSelect,
    Stage::PromptAssemble,
    Stage::SummarizeMemory,
    Stage::PersistMemory,
];

fn input(message: &str, response: Option<&str>) -> TurnInput {
    TurnInput {
        user_message: Some(message.into()),
        model_response: response.map(Into::into),
    }
}

fn begin(domain: &mut Domain, plan: &ExecutionPlan, request_id: &str) -> Cycle {
    domain
        .begin_cycle(plan, "session-1", request_id)
        .expect("the call succeeds")
        .expect("the plan is valid")
}

/// Runs every stage and commits; the first cycle error ends it.
fn turn(
    domain: &mut Domain,
    plan: &ExecutionPlan,
    request_id: &str,
    message: &str,
    response: &str,
) -> Result<Vec<String>, CycleError> {
    let cycle = begin(domain, plan, request_id);
    let result = (|| {
        for stage in STAGES {
            domain
                .run_stage(&cycle, stage, &input(message, Some(response)))
                .unwrap()?;
        }
        domain.commit_cycle(&cycle).unwrap()
    })();
    domain.drop_cycle(cycle).unwrap();
    result
}

/// The context a full cycle selected for `message`, without persisting.
fn recall(
    domain: &mut Domain,
    top_k: u32,
    message: &str,
) -> Result<Vec<RetrievedMemory>, CycleError> {
    let cycle = begin(domain, &plan(Some(top_k), recall_steps()), "recall");
    let result = domain
        .run_stage(&cycle, Stage::ContextSelect, &input(message, None))
        .unwrap();
    let selected = result.map(|_| match domain.step_output(&cycle, "select").unwrap() {
        Some(StepOutput::Selected(memories)) => memories,
        other => panic!("select produced {other:?}"),
    });
    domain.drop_cycle(cycle).unwrap();
    selected
}

const TURNS: [(&str, &str); 4] = [
    (
        "Could you find me a vegetarian restaurant near the office for Friday lunch?",
        "Green Leaf on Main Street serves vegetarian food and is ten minutes from the office.",
    ),
    (
        "Please book a direct flight to Lisbon next month, I hate layovers.",
        "I found a direct TAP flight to Lisbon on the 14th leaving at 9:05.",
    ),
    (
        "My partner Sarah is vegetarian too, remember that for dinners.",
        "Noted: Sarah is vegetarian, I will pick vegetarian places for your dinners.",
    ),
    (
        "What is the weather like in Lisbon in spring?",
        "Lisbon in spring is mild, around 20 degrees with occasional rain.",
    ),
];

fn ingest_all(domain: &mut Domain) -> Vec<String> {
    TURNS
        .iter()
        .enumerate()
        .flat_map(|(i, (m, r))| {
            turn(domain, &ingest_plan(), &format!("turn-{i}"), m, r).expect("the turn commits")
        })
        .collect()
}

// ---- algorithms a plugin host could supply -----------------------------------

/// What the ranker was asked: query keywords, candidates, k.
type RankCall = (Vec<String>, Vec<Candidate>, u32);

/// Records what the engine asked and answers with the default algorithms,
/// or with a fixed answer.
#[derive(Default)]
struct Recorder {
    summarize_calls: Mutex<Vec<(String, Option<String>)>>,
    rank_calls: Mutex<Vec<RankCall>>,
    summary: Mutex<Option<Result<Summary, String>>>,
    ranking: Mutex<Option<Result<Vec<String>, String>>>,
}

impl Summarizer for Recorder {
    fn summarize(
        &self,
        user_message: &str,
        model_response: Option<&str>,
    ) -> Result<Summary, String> {
        self.summarize_calls
            .lock()
            .unwrap()
            .push((user_message.into(), model_response.map(Into::into)));
        match self.summary.lock().unwrap().clone() {
            Some(answer) => answer,
            None => ExtractiveSummarizer::default().summarize(user_message, model_response),
        }
    }
}

impl Ranker for Recorder {
    fn rank(
        &self,
        query: &[String],
        candidates: &[Candidate],
        k: u32,
    ) -> Result<Vec<String>, String> {
        self.rank_calls
            .lock()
            .unwrap()
            .push((query.to_vec(), candidates.to_vec(), k));
        match self.ranking.lock().unwrap().clone() {
            Some(answer) => answer,
            None => Bm25Ranker.rank(query, candidates, k),
        }
    }
}

fn recorded(domain: Domain) -> (Domain, Arc<Recorder>) {
    let recorder = Arc::new(Recorder::default());
    let domain = domain
        .with_summarizer(recorder.clone())
        .with_ranker(recorder.clone());
    (domain, recorder)
}

fn events(domain: &mut Domain) -> usize {
    records(domain, RecordType::Event, limit(CEILING)).len()
}

// ---- plan validation -----------------------------------------------------------

fn refused_plan(domain: &mut Domain, plan: &ExecutionPlan) -> PlanError {
    match domain.begin_cycle(plan, "session-1", "refused").unwrap() {
        Ok(_) => panic!("the plan was accepted: {plan:?}"),
        Err(error) => error,
    }
}

backend_test! {
    fn b5_p3_b5_p1_b5_f4_every_invalid_plan_shape_is_refused_before_anything_runs(fx) {
        // proves B5-P3, B5-P1, B5-P2, B5-P4, B5-F4
        let (mut alice, recorder) = recorded(fx.open("alice"));
        let before = fx.dump();
        let mut cases: Vec<(ExecutionPlan, &str, &str, PlanErrorKind)> = Vec::new();
        // RetrieveMemory outside ContextSelect.
        for stage in [
            Stage::PromptAssemble,
            Stage::SummarizeMemory,
            Stage::PersistMemory,
        ] {
            let mut steps = recall_steps();
            steps[1].stage = stage;
            steps.truncate(2);
            cases.push((
                plan(Some(3), steps),
                "retrieve",
                "B5-P3",
                PlanErrorKind::WrongStage,
            ));
        }
        // Anything in PromptAssemble that touches the store.
        let mut steps = ingest_steps();
        steps[1].stage = Stage::PromptAssemble;
        steps[0].stage = Stage::ContextSelect;
        steps[0].kind = StepKind::SummarizeMemory(SummarizeInput::UserMessage);
        cases.push((
            plan(None, steps),
            "persist",
            "B5-P3",
            PlanErrorKind::WrongStage,
        ));
        // A summary outside the stages that may summarize.
        let mut steps = ingest_steps();
        steps[0].stage = Stage::PromptAssemble;
        steps.truncate(1);
        cases.push((
            plan(None, steps),
            "summary",
            "B5-P1",
            PlanErrorKind::WrongStage,
        ));
        // PersistMemory fed by anything but a SummarizeMemory output.
        let mut steps = [recall_steps(), ingest_steps()].concat();
        steps[5].inputs = vec!["select".into()];
        cases.push((
            plan(Some(3), steps),
            "persist",
            "B5-F4",
            PlanErrorKind::WrongInput("select".into()),
        ));
        let mut steps = ingest_steps();
        steps[1].inputs = vec![];
        cases.push((
            plan(None, steps),
            "persist",
            "B5-F4",
            PlanErrorKind::WrongInput(String::new()),
        ));
        // RetrieveMemory fed by anything but a SummarizeMemory output (keywords come only from it).
        let mut steps = recall_steps();
        steps[1].inputs = vec![];
        cases.push((
            plan(Some(3), steps),
            "retrieve",
            "B5-P2",
            PlanErrorKind::WrongInput(String::new()),
        ));
        // A missing, zero or unbounded top-k.
        cases.push((
            plan(None, recall_steps()),
            "retrieve",
            "B5-P4",
            PlanErrorKind::MissingTopK,
        ));
        // A zero top-k has an error of its own, not MissingTopK.
        cases.push((
            plan(Some(0), recall_steps()),
            "retrieve",
            "B5-P4",
            PlanErrorKind::ZeroTopK,
        ));
        cases.push((
            plan(Some(CEILING + 1), recall_steps()),
            "retrieve",
            "IO-G6",
            PlanErrorKind::TopKOutOfBounds(CEILING),
        ));
        // A reference to an unknown or later step.
        let mut steps = recall_steps();
        steps[2].inputs = vec!["nowhere".into()];
        cases.push((
            plan(Some(3), steps),
            "select",
            "B5-F4",
            PlanErrorKind::UnknownInput("nowhere".into()),
        ));
        let mut steps = recall_steps();
        steps[2].inputs = vec!["prompt".into()];
        cases.push((
            plan(Some(3), steps),
            "select",
            "B5-F4",
            PlanErrorKind::LaterInput("prompt".into()),
        ));
        let mut steps = recall_steps();
        steps[2].inputs = vec!["select".into()];
        cases.push((
            plan(Some(3), steps),
            "select",
            "B5-F4",
            PlanErrorKind::LaterInput("select".into()),
        ));
        // Stages going backwards, and names used twice.
        let steps = [ingest_steps(), recall_steps()].concat();
        cases.push((
            plan(Some(3), steps),
            "query",
            "B5-F4",
            PlanErrorKind::StageOutOfOrder,
        ));
        let mut steps = recall_steps();
        steps[1].name = "query".into();
        cases.push((
            plan(Some(3), steps),
            "query",
            "B5-F4",
            PlanErrorKind::DuplicateName,
        ));

        for (bad, step_name, rule, kind) in cases {
            let error = refused_plan(&mut alice, &bad);
            assert_eq!(
                error.step.as_deref(),
                Some(step_name),
                "{}: {bad:?}",
                fx.name
            );
            assert_eq!(error.rule, rule, "{}: {bad:?}", fx.name);
            assert_eq!(error.kind, kind, "{}: {bad:?}", fx.name);
        }
        assert!(
            recorder.summarize_calls.lock().unwrap().is_empty(),
            "no step ran"
        );
        assert!(
            recorder.rank_calls.lock().unwrap().is_empty(),
            "no step ran"
        );
        assert_eq!(fx.dump(), before, "{}: nothing was stored", fx.name);
    }
}

// ---- storage invariants ------------------------------------------------------------

#[test]
fn b5_s1_raw_text_and_responses_never_reach_the_database_file() {
    // proves B5-S1
    let fx = Fixture::sqlite();
    let mut alice = fx.open("alice");
    for (i, (message, response)) in TURNS.iter().enumerate() {
        turn(
            &mut alice,
            &full_plan(3),
            &format!("t{i}"),
            message,
            response,
        )
        .expect("the turn commits");
    }
    assert_eq!(events(&mut alice), TURNS.len());
    drop(alice);
    let folder = fx.folder().expect("a SQLite fixture");
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(folder).unwrap() {
        bytes.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("Lisbon"), "the summaries are in the file");
    for (message, response) in TURNS {
        assert!(
            !text.contains(message),
            "the raw message is in the file: {message}"
        );
        assert!(
            !text.contains(response),
            "the model's response is in the file: {response}"
        );
    }
}

backend_test! {
    fn b5_s1_a_summary_that_repeats_the_raw_text_fails_the_cycle(fx) {
        // proves B5-S1
        let (mut alice, recorder) = recorded(fx.open("alice"));
        let (message, response) = TURNS[0];
        for echo in [message, response] {
            *recorder.summary.lock().unwrap() = Some(Ok(Summary {
                summary: format!("Summary: {echo}"),
                keywords: vec!["x".into()],
            }));
            let error = turn(&mut alice, &ingest_plan(), "echo", message, response).unwrap_err();
            assert!(
                matches!(error, CycleError::SummaryRefused(_)),
                "{}: {error:?}",
                fx.name
            );
        }
        assert_eq!(events(&mut alice), 0, "{}", fx.name);
    }
}

backend_test! {
    fn b5_s2_an_ingested_memory_stores_exactly_its_five_fields(fx) {
        // proves B5-S2, B5-F4: the persisted summary is the SummarizeMemory output
        let mut alice = fx.open("alice");
        let cycle = begin(&mut alice, &ingest_plan(), "s2");
        let (message, response) = TURNS[1];
        for stage in STAGES {
            alice
                .run_stage(&cycle, stage, &input(message, Some(response)))
                .unwrap()
                .unwrap();
        }
        let Some(StepOutput::Summarized(summary)) = alice.step_output(&cycle, "summary").unwrap()
        else {
            panic!()
        };
        let ids = alice.commit_cycle(&cycle).unwrap().unwrap();
        alice.drop_cycle(cycle).unwrap();
        // The stored value is byte for byte the encoding of the five
        // fields and nothing else: the format byte, then postcard's wire
        // format (see guest/src/keys.rs), written out here by hand.
        let record_key = [b"R".as_slice(), ids[0].as_bytes()].concat();
        let stored = fx
            .dump()
            .into_iter()
            .find(|(k, _)| k.ends_with(&record_key))
            .map(|(_, v)| v)
            .expect("the stored memory");
        let mut keywords = summary.keywords.clone();
        keywords.sort();
        keywords.dedup();
        let mut expected = vec![2, 1]; // format 2; the record is an EVENT
        postcard_str(&mut expected, &ids[0]); // id
        postcard_varint(&mut expected, zigzag(stored_timestamp(&mut alice, &ids[0]))); // timestamp
        expected.push(0); // an ingested memory
        postcard_str(&mut expected, "session-1"); // session_ref
        postcard_str(&mut expected, &summary.summary); // summary
        postcard_varint(&mut expected, summary.keywords.len() as u64); // keywords
        for keyword in &summary.keywords {
            postcard_str(&mut expected, keyword);
        }
        assert_eq!(stored, expected, "{}", fx.name);
        assert!(!summary.summary.is_empty() && !keywords.is_empty());
    }
}

fn postcard_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn postcard_str(out: &mut Vec<u8>, text: &str) {
    postcard_varint(out, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
}

/// The timestamp the engine gave an ingested memory, read through the IO.
fn stored_timestamp(domain: &mut Domain, id: &str) -> i64 {
    let read = domain
        .read(&ReadRequest {
            record_type: RecordType::Event,
            selector: ReadSelector::ById(ById { id: id.into() }),
            request_id: "s2-read".into(),
        })
        .unwrap()
        .unwrap();
    match &read.records[..] {
        [StoredRecord::Event(event)] => event.timestamp,
        other => panic!("{other:?}"),
    }
}

// ---- steps -------------------------------------------------------------------------

backend_test! {
    fn b5_p1_b5_p2_summaries_and_keywords_come_only_from_summarize_steps(fx) {
        // proves B5-P1, B5-P2, B5-F3
        let (mut alice, recorder) = recorded(fx.open("alice"));
        ingest_all(&mut alice);
        assert_eq!(
            recorder.summarize_calls.lock().unwrap().len(),
            TURNS.len(),
            "one call per SummarizeMemory step"
        );
        // A plan without a SummarizeMemory step never calls the summarizer.
        let empty = plan(None, vec![]);
        let cycle = begin(&mut alice, &empty, "empty");
        assert_eq!(
            alice.commit_cycle(&cycle).unwrap().unwrap(),
            Vec::<String>::new()
        );
        assert_eq!(recorder.summarize_calls.lock().unwrap().len(), TURNS.len());
        // SummarizeMemory alone stores nothing.
        let before = fx.dump();
        let only_summary = plan(None, ingest_steps()[..1].to_vec());
        turn(
            &mut alice,
            &only_summary,
            "summary-only",
            "I like tea",
            "Noted",
        )
        .unwrap();
        assert_eq!(fx.dump(), before, "{}", fx.name);
        // Retrieval queries with the keywords of its SummarizeMemory step,
        // and changes no stored keyword.
        let stored = fx.dump();
        *recorder.summary.lock().unwrap() = Some(Ok(Summary {
            summary: "About food".into(),
            keywords: vec!["vegetarian".into(), "dinners".into()],
        }));
        recall(&mut alice, 3, "What should we eat?").unwrap();
        let calls = recorder.rank_calls.lock().unwrap();
        assert_eq!(
            calls.last().unwrap().0,
            ["vegetarian", "dinners"],
            "{}",
            fx.name
        );
        drop(calls);
        assert_eq!(fx.dump(), stored, "{}: retrieval writes nothing", fx.name);
    }
}

backend_test! {
    fn b5_p3_the_prompt_stage_never_touches_the_store(fx) {
        // proves B5-P3
        let faulty = Faulty::over(fx.backend.clone());
        let mut alice = fx.open_over("alice", faulty.clone());
        ingest_all(&mut alice);
        let cycle = begin(&mut alice, &plan(Some(2), recall_steps()), "p3");
        let message = "Any vegetarian restaurant for dinner?";
        alice
            .run_stage(&cycle, Stage::ContextSelect, &input(message, None))
            .unwrap()
            .unwrap();
        faulty.reset_counts();
        faulty.fail_reads.store(true, Ordering::SeqCst);
        faulty.fail_commits.store(true, Ordering::SeqCst);
        let results = alice
            .run_stage(
                &cycle,
                Stage::PromptAssemble,
                &TurnInput {
                    user_message: None,
                    model_response: None,
                },
            )
            .unwrap()
            .unwrap();
        let StepOutput::Prompt(prompt) = &results[0].output else {
            panic!()
        };
        assert_eq!(
            faulty.gets.load(Ordering::SeqCst) + faulty.scanned.load(Ordering::SeqCst),
            0
        );
        assert_eq!(prompt.context.len(), 2, "{}", fx.name);
        assert!(
            prompt.text.starts_with("Relevant memories:\n- ["),
            "{}",
            prompt.text
        );
        assert!(
            prompt.text.ends_with(&format!("\n\nUser: {message}")),
            "{}",
            prompt.text
        );
        alice.drop_cycle(cycle).unwrap();
    }
}

backend_test! {
    fn b5_p4_top_k_comes_from_the_plan_metadata(fx) {
        // proves B5-P4
        let (mut alice, recorder) = recorded(fx.open("alice"));
        ingest_all(&mut alice);
        *recorder.summary.lock().unwrap() = Some(Ok(Summary {
            summary: "q".into(),
            keywords: vec!["vegetarian".into(), "lisbon".into()],
        }));
        for k in [1, 2, 3] {
            let context = recall(&mut alice, k, "vegetarian food in Lisbon").unwrap();
            assert_eq!(context.len(), k as usize, "{}", fx.name);
            assert_eq!(
                recorder.rank_calls.lock().unwrap().last().unwrap().2,
                k,
                "the ranker is given the plan's top-k"
            );
        }
    }
}

// ---- commit --------------------------------------------------------------------------

backend_test! {
    fn b5_d1_memories_are_saved_only_by_a_committed_cycle_whose_steps_all_succeeded(fx) {
        // proves B5-D1
        let mut alice = fx.open("alice");
        let (message, response) = TURNS[0];
        let before = fx.dump();
        // Every stage ran, but no commit yet: nothing is stored.
        let cycle = begin(&mut alice, &full_plan(3), "d1");
        for stage in STAGES {
            alice
                .run_stage(&cycle, stage, &input(message, Some(response)))
                .unwrap()
                .unwrap();
        }
        assert_eq!(fx.dump(), before, "{}: staged, not saved", fx.name);
        // A dropped cycle persists nothing.
        alice.drop_cycle(cycle).unwrap();
        assert_eq!(fx.dump(), before);
        // A commit before every stage ran is refused and ends the cycle.
        let cycle = begin(&mut alice, &full_plan(3), "d1-early");
        alice
            .run_stage(&cycle, Stage::ContextSelect, &input(message, None))
            .unwrap()
            .unwrap();
        assert_eq!(
            alice.commit_cycle(&cycle).unwrap(),
            Err(CycleError::Unfinished)
        );
        assert_eq!(
            alice
                .run_stage(&cycle, Stage::PromptAssemble, &input(message, None))
                .unwrap(),
            Err(CycleError::Closed)
        );
        alice.drop_cycle(cycle).unwrap();
        assert_eq!(fx.dump(), before);
        // Stages run in order, each once.
        let cycle = begin(&mut alice, &full_plan(3), "d1-order");
        assert_eq!(
            alice
                .run_stage(&cycle, Stage::PromptAssemble, &input(message, None))
                .unwrap(),
            Err(CycleError::StageOutOfOrder)
        );
        alice.drop_cycle(cycle).unwrap();
        // The whole cycle commits once; a second commit is refused.
        let cycle = begin(&mut alice, &full_plan(3), "d1-ok");
        for stage in STAGES {
            alice
                .run_stage(&cycle, stage, &input(message, Some(response)))
                .unwrap()
                .unwrap();
        }
        let ids = alice.commit_cycle(&cycle).unwrap().unwrap();
        assert_eq!(ids.len(), 1);
        assert_eq!(alice.commit_cycle(&cycle).unwrap(), Err(CycleError::Closed));
        alice.drop_cycle(cycle).unwrap();
        assert_eq!(events(&mut alice), 1, "{}", fx.name);
        // proves IO-W2, S-CYCLE: for cycles, a retry of the committed cycle under the
        // same request id (its memory stamped with a new time) is answered
        // with the ids the first commit stored, and stores nothing new.
        assert_eq!(
            turn(&mut alice, &full_plan(3), "d1-ok", message, response),
            Ok(ids.clone())
        );
        assert_eq!(events(&mut alice), 1);
        // The same request id for another turn is refused.
        assert_eq!(
            turn(
                &mut alice,
                &full_plan(3),
                "d1-ok",
                "Another question entirely?",
                response
            ),
            Err(CycleError::CommitFailed)
        );
        assert_eq!(events(&mut alice), 1);
    }
}

backend_test! {
    fn b5_f2_a_commit_failure_stops_the_cycle_and_persists_nothing(fx) {
        // proves B5-F2
        let faulty = Faulty::over(fx.backend.clone());
        let mut alice = fx.open_over("alice", faulty.clone());
        let before = fx.dump();
        faulty.fail_commits.store(true, Ordering::SeqCst);
        let cycle = begin(&mut alice, &full_plan(3), "f2");
        for stage in STAGES {
            alice
                .run_stage(&cycle, stage, &input(TURNS[0].0, Some(TURNS[0].1)))
                .unwrap()
                .unwrap();
        }
        assert_eq!(
            alice.commit_cycle(&cycle).unwrap(),
            Err(CycleError::CommitFailed),
            "{}",
            fx.name
        );
        assert_eq!(
            alice.commit_cycle(&cycle).unwrap(),
            Err(CycleError::Closed),
            "it stops at once"
        );
        alice.drop_cycle(cycle).unwrap();
        assert_eq!(fx.dump(), before, "{}", fx.name);
        let reason = fx.trail().into_iter().rev().find_map(|e| e.reason).unwrap();
        assert!(reason.contains(FAULT_DETAIL), "{reason}");
    }
}

// ---- retrieval -------------------------------------------------------------------------

backend_test! {
    fn b5_d3_a_damaged_ranker_answer_fails_the_cycle(fx) {
        // proves B5-D3
        let (mut alice, recorder) = recorded(fx.open("alice"));
        let ids = ingest_all(&mut alice);
        let before = fx.dump();
        for (answer, damage) in [
            (vec!["no-such-id".to_string()], Damage::UnknownId),
            (vec![ids[0].clone(), ids[0].clone()], Damage::DuplicateId),
            (ids[..3].to_vec(), Damage::TooMany),
        ] {
            *recorder.ranking.lock().unwrap() = Some(Ok(answer));
            let error =
                turn(&mut alice, &full_plan(2), "d3", "vegetarian Lisbon", "ok").unwrap_err();
            assert_eq!(error, CycleError::RankingDamaged(damage), "{}", fx.name);
        }
        assert_eq!(fx.dump(), before, "{}: nothing persisted", fx.name);
    }
}

backend_test! {
    fn b5_f1_a_retrieval_error_fails_the_cycle_never_an_empty_context(fx) {
        // proves B5-F1
        let faulty = Faulty::over(fx.backend.clone());
        let (alice, recorder) = recorded(fx.open_over("alice", faulty.clone()));
        let mut alice = alice;
        ingest_all(&mut alice);
        let before = fx.dump();
        *recorder.ranking.lock().unwrap() = Some(Err("ranking service down".into()));
        assert_eq!(
            turn(&mut alice, &full_plan(2), "f1", "vegetarian", "ok").unwrap_err(),
            CycleError::RankerFailed("ranking service down".into())
        );
        *recorder.ranking.lock().unwrap() = None;
        *recorder.summary.lock().unwrap() = Some(Err("model unavailable".into()));
        assert_eq!(
            turn(&mut alice, &full_plan(2), "f1", "vegetarian", "ok").unwrap_err(),
            CycleError::SummarizerFailed("model unavailable".into())
        );
        *recorder.summary.lock().unwrap() = None;
        faulty.fail_reads.store(true, Ordering::SeqCst);
        assert_eq!(
            recall(&mut alice, 2, "vegetarian").unwrap_err(),
            CycleError::StorageUnavailable,
            "{}",
            fx.name
        );
        faulty.fail_reads.store(false, Ordering::SeqCst);
        assert_eq!(fx.dump(), before, "{}: nothing persisted", fx.name);
        // A retrieval that finds nothing is an empty context, not an error.
        assert_eq!(recall(&mut alice, 2, "quantum chromodynamics").unwrap(), []);
    }
}

backend_test! {
    fn b5_d2_b5_s3_retrieval_returns_exactly_id_summary_and_timestamp(fx) {
        // proves B5-D2, B5-S3
        let mut alice = fx.open("alice");
        let ids = ingest_all(&mut alice);
        let context = recall(
            &mut alice,
            3,
            "Which vegetarian places for dinner with Sarah?",
        )
        .unwrap();
        assert!(!context.is_empty(), "{}", fx.name);
        for memory in &context {
            assert!(ids.contains(&memory.id));
            let stored = records(&mut alice, RecordType::Event, by_id(&memory.id));
            let engram::types::StoredRecord::Event(event) = &stored[0] else {
                panic!()
            };
            let engram::types::StoredEventPayload::Ingested(view) = &event.payload else {
                panic!()
            };
            assert_eq!(
                (memory.summary.as_str(), memory.timestamp),
                (view.summary.as_str(), event.timestamp)
            );
        }
        // The shape has no room for keywords: RetrievedMemory { id, summary, timestamp }.
        let RetrievedMemory {
            id: _,
            summary: _,
            timestamp: _,
        } = context[0].clone();
    }
}

backend_test! {
    fn b5_f3_the_engine_follows_whatever_ranker_the_host_supplies(fx) {
        // proves B5-F3
        struct Oldest;
        impl Ranker for Oldest {
            fn rank(
                &self,
                _: &[String],
                candidates: &[Candidate],
                k: u32,
            ) -> Result<Vec<String>, String> {
                // Oldest first; two of one millisecond (a loaded machine
                // ingests some in the same one) in the reverse of the
                // candidates' order, which is newest first.
                let mut sorted: Vec<Candidate> = candidates.iter().rev().cloned().collect();
                sorted.sort_by_key(|c| c.timestamp);
                Ok(sorted.into_iter().take(k as usize).map(|c| c.id).collect())
            }
        }
        let (mut alice, recorder) = recorded(fx.open("alice"));
        ingest_all(&mut alice);
        *recorder.summary.lock().unwrap() = Some(Ok(Summary {
            summary: "q".into(),
            keywords: vec!["vegetarian".into()],
        }));
        let by_bm25 = recall(&mut alice, 3, "q?").unwrap();
        let candidates = recorder
            .rank_calls
            .lock()
            .unwrap()
            .last()
            .unwrap()
            .1
            .clone();
        assert!(
            candidates.len() >= 2,
            "{}: the index found the vegetarian memories",
            fx.name
        );
        assert!(
            candidates
                .windows(2)
                .all(|w| w[0].timestamp >= w[1].timestamp),
            "candidates come newest first"
        );
        let mut oldest = fx
            .open("alice")
            .with_ranker(Arc::new(Oldest))
            .with_summarizer(recorder.clone());
        let by_age = recall(&mut oldest, 3, "q?").unwrap();
        let mut expected: Vec<String> = candidates
            .iter()
            .rev()
            .take(3)
            .map(|c| c.id.clone())
            .collect();
        expected.truncate(by_age.len());
        assert_eq!(
            by_age.iter().map(|m| m.id.clone()).collect::<Vec<_>>(),
            expected,
            "{}",
            fx.name
        );
        assert_eq!(by_bm25.len(), by_age.len());
    }
}

backend_test! {
    fn b5_f5_two_cycles_in_flight_never_see_each_others_outputs(fx) {
        // proves B5-F5
        let mut alice = fx.open("alice");
        ingest_all(&mut alice);
        let a = begin(&mut alice, &full_plan(2), "a");
        let b = begin(&mut alice, &plan(None, ingest_steps()), "b");
        alice
            .run_stage(&a, Stage::ContextSelect, &input("vegetarian dinner", None))
            .unwrap()
            .unwrap();
        alice
            .run_stage(
                &b,
                Stage::SummarizeMemory,
                &input("Book a table in Porto", Some("Booked for 8pm")),
            )
            .unwrap()
            .unwrap();
        assert!(alice.step_output(&a, "select").unwrap().is_some());
        assert!(
            alice.step_output(&b, "select").unwrap().is_none(),
            "{}: b sees nothing of a",
            fx.name
        );
        let Some(StepOutput::Summarized(of_b)) = alice.step_output(&b, "summary").unwrap() else {
            panic!()
        };
        assert!(
            alice.step_output(&a, "summary").unwrap().is_none(),
            "a has not summarized yet"
        );
        for stage in [
            Stage::PromptAssemble,
            Stage::SummarizeMemory,
            Stage::PersistMemory,
        ] {
            alice
                .run_stage(
                    &a,
                    stage,
                    &input("vegetarian dinner", Some("Try Green Leaf")),
                )
                .unwrap()
                .unwrap();
        }
        let Some(StepOutput::Summarized(of_a)) = alice.step_output(&a, "summary").unwrap() else {
            panic!()
        };
        assert_ne!(of_a, of_b);
        alice
            .run_stage(
                &b,
                Stage::PersistMemory,
                &TurnInput {
                    user_message: None,
                    model_response: None,
                },
            )
            .unwrap()
            .unwrap();
        let ids_b = alice.commit_cycle(&b).unwrap().unwrap();
        let ids_a = alice.commit_cycle(&a).unwrap().unwrap();
        assert_ne!(ids_a, ids_b);
        alice.drop_cycle(a).unwrap();
        alice.drop_cycle(b).unwrap();
        // A new cycle starts with nothing.
        let c = begin(&mut alice, &full_plan(2), "c");
        assert!(alice.step_output(&c, "summary").unwrap().is_none());
        alice.drop_cycle(c).unwrap();
    }
}

#[test]
fn the_sample_plan_is_the_library_turn_plan() {
    let text = include_str!("../samples/plan.json");
    let plan: engram::json::Plan = serde_json::from_str(text).expect("the sample plan parses");
    assert_eq!(ExecutionPlan::from(plan), engram::plans::turn(3));
}

// proves IO-W2, B5-S1: `remember` twice with one request id stores one
// memory, the raw turn is not stored, and `recall` finds it, dated in ISO
// 8601 in the prompt; a refusal is the typed `TurnError::Refused`.
#[test]
fn io_w2_remember_twice_with_one_request_id_stores_one_memory_and_recall_finds_it() {
    let fx = Fixture::sqlite();
    let mut alice = fx.open("alice");
    let turn = engram::RememberArgs {
        message: "I booked the Hotel Avenida in Lisbon.".into(),
        response: "Lovely!".into(),
        session: Some("trip".into()),
        request_id: Some("t1".into()),
        time: Some(1_767_259_800_000),
    };
    let first = alice.remember_with(turn.clone()).unwrap();
    assert_eq!(first.request_id, "t1");
    assert_eq!(first.committed.len(), 1);
    assert_eq!(alice.remember_with(turn.clone()).unwrap(), first);
    let fresh = alice.remember("Sarah is vegetarian.", "Noted.").unwrap();
    assert!(fresh.request_id.starts_with("remember-") && fresh.request_id.len() == 41);
    let events = alice
        .read(&read(RecordType::Event, latest(10)))
        .unwrap()
        .expect("a bounded read");
    assert_eq!(
        events.records.len(),
        2,
        "one memory for the turn, one for the other"
    );
    let stored = format!("{:?}", events.records);
    assert!(
        !stored.contains("I booked the Hotel Avenida in Lisbon."),
        "{stored}"
    );
    let recalled = alice.recall("Which hotel did I book?").unwrap();
    assert_eq!(recalled.memories.len(), 1);
    assert_eq!(recalled.memories[0].id, first.committed[0]);
    assert_eq!(recalled.memories[0].timestamp, 1_767_259_800_000);
    assert!(
        recalled
            .prompt
            .lines()
            .any(|line| line == "- [2026-01-01T09:30:00Z] User booked Hotel Avenida in Lisbon."),
        "{}",
        recalled.prompt
    );
    let other_turn = engram::RememberArgs {
        message: "Another turn entirely.".into(),
        ..turn
    };
    match alice.remember_with(other_turn) {
        Err(engram::TurnError::Refused(line)) => {
            assert_eq!(line, serde_json::json!({"cycle_error": "CommitFailed"}))
        }
        other => panic!("another turn under the same id: {other:?}"),
    }
    let mut zero = engram::RecallArgs::new("anything");
    zero.top_k = 0;
    match alice.recall_with(zero) {
        Err(engram::TurnError::Refused(line)) => assert_eq!(line["plan_error"]["rule"], "B5-P4"),
        other => panic!("a top_k of 0: {other:?}"),
    }
}
