//! Retrieval that finds the evidence: fair candidate gathering across the
//! query's keywords, normalized keywords, and turns with nothing to keep.
//! The real component in wasmtime with the default algorithms.

mod support;

use engram::cycle::*;
use engram::types::*;
use support::*;

fn memory(timestamp: i64, summary: &str) -> MemoryRecord {
    MemoryRecord::Event(Event {
        timestamp,
        payload: EventPayload::Ingested(IngestedMemory {
            session_ref: "s".into(),
            summary: summary.into(),
            keywords: engram::algorithms::terms(summary),
        }),
    })
}

fn select(domain: &mut engram::Domain, top_k: u32, question: &str) -> Vec<RetrievedMemory> {
    let cycle = domain
        .begin_cycle(&engram::plans::recall(top_k), "s", "q")
        .unwrap()
        .unwrap();
    let input = TurnInput {
        user_message: Some(question.into()),
        model_response: None,
    };
    domain
        .run_stage(&cycle, Stage::ContextSelect, &input)
        .unwrap()
        .unwrap();
    let selected = match domain.step_output(&cycle, "select").unwrap() {
        Some(StepOutput::Selected(memories)) => memories,
        other => panic!("{other:?}"),
    };
    domain.drop_cycle(cycle).unwrap();
    selected
}

#[test]
fn a_keyword_held_by_ten_thousand_memories_does_not_hide_a_rarer_one() {
    // proves S-GATHER, IO-G6: the candidate limit (256) is shared among the
    // query's keywords, so the one memory holding "pottery" is a candidate
    // although 10,000 newer memories hold "caroline", which sorts first.
    let fx = Fixture::memory();
    let mut alice = fx.open("alice");
    let evidence = accept(
        &mut alice,
        "evidence",
        memory(1, "Caroline took the kids to a pottery workshop"),
    );
    for i in 0..10_000 {
        accept(
            &mut alice,
            &format!("m{i}"),
            memory(
                10 + i,
                &format!("Caroline talked about her plans number {i}"),
            ),
        );
    }
    let selected = select(&mut alice, 5, "What did Caroline do at the pottery class?");
    assert_eq!(
        selected.first().map(|m| m.id.as_str()),
        Some(evidence.as_str())
    );
    // The retrieval's audit entry says what it read, and that it stopped at
    // the limit.
    let trail = fx.trail();
    let retrieval = trail
        .iter()
        .rev()
        .find(|e| e.request_id == "q#retrieve")
        .expect("the retrieval is audited");
    let reason = retrieval.reason.as_deref().unwrap_or_default();
    assert!(
        reason.contains("256 keyword-index entries read"),
        "{reason}"
    );
    assert!(reason.contains("candidate limit was reached"), "{reason}");
}

#[test]
fn inflected_forms_and_a_summary_word_are_found() {
    // proves S-RECALL: keywords are normalized the same way at ingestion and
    // at query time, and every word of a summary is indexed.
    let fx = Fixture::sqlite();
    let mut alice = fx.open("alice");
    let cycle = alice
        .begin_cycle(&engram::plans::ingest(), "s", "turn-1")
        .unwrap()
        .unwrap();
    let input = TurnInput {
        user_message: Some("Hey! Guess what, I donated my old bikes to the school charity.".into()),
        model_response: Some("That is generous of you!".into()),
    };
    for stage in [Stage::SummarizeMemory, Stage::PersistMemory] {
        alice.run_stage(&cycle, stage, &input).unwrap().unwrap();
    }
    let ids = alice.commit_cycle(&cycle).unwrap().unwrap();
    alice.drop_cycle(cycle).unwrap();
    assert_eq!(ids.len(), 1);
    for question in ["Who donates bikes?", "What about the charities?", "school"] {
        let selected = select(&mut alice, 3, question);
        assert_eq!(selected.len(), 1, "{question}");
        assert_eq!(selected[0].id, ids[0]);
        assert!(
            !selected[0].summary.contains("Hey"),
            "{}",
            selected[0].summary
        );
    }
}

backend_test! {
    fn b5_d1_a_turn_with_nothing_to_summarize_commits_no_memory_and_does_not_fail(fx) {
        // proves B5-D1, B5-F1: an emoji or an empty response is not an error;
        // the cycle succeeds and stores nothing for it.
        let mut alice = fx.open("alice");
        for (i, (message, response)) in [("🙂", ""), ("hey!", "hi :)"), ("👍", "👍")]
            .into_iter()
            .enumerate()
        {
            let cycle = alice
                .begin_cycle(&engram::plans::turn(3), "s", &format!("t{i}"))
                .unwrap()
                .unwrap();
            let input = TurnInput {
                user_message: Some(message.into()),
                model_response: Some(response.into()),
            };
            for stage in [
                Stage::ContextSelect,
                Stage::PromptAssemble,
                Stage::SummarizeMemory,
                Stage::PersistMemory,
            ] {
                let ran = alice.run_stage(&cycle, stage, &input).unwrap();
                assert!(ran.is_ok(), "{}: {message:?} {stage:?}: {ran:?}", fx.name);
            }
            assert_eq!(alice.commit_cycle(&cycle).unwrap(), Ok(vec![]));
            alice.drop_cycle(cycle).unwrap();
        }
        assert!(records(&mut alice, RecordType::Event, limit(10)).is_empty());
    }
}

#[test]
fn b5_s1_a_huge_message_without_sentence_breaks_is_summarized_not_a_panic() {
    // proves B5-S1: 90 KB and 1 MB of words with no sentence break are
    // summarized into a bounded statement; nothing panics.
    let fx = Fixture::memory();
    let mut alice = fx.open("alice");
    let words = [
        "pottery", "workshop", "caroline", "painting", "donated", "bikes",
    ];
    for size in [90_000, 1_000_000] {
        let mut message = String::new();
        let mut i = 0;
        while message.len() < size {
            message.push_str(words[i % words.len()]);
            message.push(' ');
            i += 1;
        }
        let cycle = alice
            .begin_cycle(&engram::plans::ingest(), "s", &format!("big-{size}"))
            .unwrap()
            .unwrap();
        let input = TurnInput {
            user_message: Some(message),
            model_response: Some("ok".into()),
        };
        for stage in [Stage::SummarizeMemory, Stage::PersistMemory] {
            alice.run_stage(&cycle, stage, &input).unwrap().unwrap();
        }
        assert_eq!(
            alice.commit_cycle(&cycle).unwrap().map(|ids| ids.len()),
            Ok(1)
        );
        alice.drop_cycle(cycle).unwrap();
    }
}
