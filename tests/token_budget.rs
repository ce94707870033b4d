//! A prompt that fits a token budget: a plan's `token_budget` bounds the
//! memory lines PromptAssemble lists, counted by the host's tokenizer
//! (OpenAI's `o200k_base` by default), to the token; the memories past it
//! are left out, and the step's output says how many. The real component in
//! wasmtime.

mod support;

use engram::cycle::*;
use engram::types::RecordType;
use engram::{Domain, O200kTokenizer, Tokenizer};
use std::sync::{Arc, Mutex};
use support::*;

/// Memories about one trip, of unlike lengths, each found by the query
/// "flight paris" (the keywords `ingested` gives them).
const SUMMARIES: [&str; 5] = [
    "Flight to Paris booked for 14 May, seat 12A, leaving at 9:05.",
    "The Paris hotel is the Hôtel des Grands Boulevards, two nights.",
    "Sarah wants a window seat on every flight; she gets airsick over the wing.",
    "Paris: dinner at Septime on the 15th, a table for two at 20:30, vegetarian menu asked for.",
    "Return flight from Paris on the 17th.",
];

/// A domain holding [`SUMMARIES`], each a minute after the one before.
fn domain_with_memories() -> (Fixture, Domain) {
    let fx = Fixture::memory();
    let mut domain = fx.open("alice");
    for (i, summary) in SUMMARIES.iter().enumerate() {
        let record = ingested(1_767_225_600_000 + 60_000 * i as i64, summary);
        let answer = domain
            .write(&request("alice", &format!("m{i}"), record))
            .unwrap();
        assert!(
            matches!(answer, engram::io::WriteResult::Accepted(_)),
            "{answer:?}"
        );
    }
    (fx, domain)
}

/// A plan recalling every memory (top_k 5) with `budget`.
fn recall_plan(budget: Option<u32>) -> ExecutionPlan {
    let mut plan = engram::plans::recall(SUMMARIES.len() as u32);
    plan.metadata.token_budget = budget;
    plan
}

fn question() -> TurnInput {
    TurnInput {
        user_message: Some("What about my flight to Paris?".into()),
        model_response: None,
    }
}

/// Runs ContextSelect and PromptAssemble of `plan`: the prompt, or the
/// cycle's error.
fn prompt(domain: &mut Domain, plan: &ExecutionPlan) -> Result<AssembledPrompt, CycleError> {
    let cycle = domain
        .begin_cycle(plan, "s", "ask")
        .unwrap()
        .expect("the plan is valid");
    let result = (|| {
        for stage in [Stage::ContextSelect, Stage::PromptAssemble] {
            domain.run_stage(&cycle, stage, &question()).unwrap()?;
        }
        match domain.step_output(&cycle, "prompt").unwrap() {
            Some(StepOutput::Prompt(prompt)) => Ok(prompt),
            other => panic!("the prompt step produced {other:?}"),
        }
    })();
    domain.drop_cycle(cycle).unwrap();
    result
}

/// The prompt's memory line of each memory, in order: its time in ISO
/// 8601 UTC, to the second, then its summary.
fn lines(context: &[RetrievedMemory]) -> Vec<String> {
    context
        .iter()
        .map(|m| {
            let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(m.timestamp as u64);
            let time = humantime::format_rfc3339_seconds(at);
            format!("- [{time}] {}", m.summary)
        })
        .collect()
}

/// The prompt text listing `lines`.
fn text(lines: &[String]) -> String {
    let listed = if lines.is_empty() {
        " none".to_owned()
    } else {
        format!("\n{}", lines.join("\n"))
    };
    format!("Relevant memories:{listed}\n\nUser: What about my flight to Paris?")
}

/// A tokenizer of the host's: counts bytes, and keeps every text it was
/// asked to count; or answers `failure`.
#[derive(Default)]
struct Counter {
    asked: Mutex<Vec<String>>,
    failure: Option<String>,
    panics: bool,
}

impl Tokenizer for Counter {
    fn count_tokens(&self, text: &str) -> Result<u32, String> {
        self.asked.lock().unwrap().push(text.to_owned());
        if self.panics {
            panic!("a broken tokenizer");
        }
        match &self.failure {
            Some(why) => Err(why.clone()),
            None => Ok(text.len() as u32),
        }
    }
}

/// Set in the process [`the_builtin_tokenizer_is_built_at_the_first_budget_not_before`]
/// runs its check in.
const ALONE: &str = "ENGRAM_TEST_TOKENIZER_ALONE";

#[test]
fn the_builtin_tokenizer_is_built_at_the_first_budget_not_before() {
    const NAME: &str = "the_builtin_tokenizer_is_built_at_the_first_budget_not_before";
    // The check needs a process no other test has counted in: this binary
    // again, running this test alone.
    if std::env::var_os(ALONE).is_none() {
        let alone = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", NAME, "--test-threads=1"])
            .env(ALONE, "1")
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&alone.stdout),
            String::from_utf8_lossy(&alone.stderr)
        );
        assert!(alone.status.success(), "{said}");
        assert!(
            said.contains("1 passed"),
            "the test did not run alone: {said}"
        );
        return;
    }
    assert!(!O200kTokenizer::built(), "built before anything ran");
    let (_fx, mut domain) = domain_with_memories();
    let without = prompt(&mut domain, &recall_plan(None)).unwrap();
    assert_eq!(without.context.len(), SUMMARIES.len());
    assert!(
        !O200kTokenizer::built(),
        "writes and a recall without a budget built the tokenizer"
    );
    prompt(&mut domain, &recall_plan(Some(1_000))).unwrap();
    assert!(
        O200kTokenizer::built(),
        "a recall with a budget did not count with the built-in tokenizer"
    );
}

#[test]
fn b5_p4_the_token_budget_bounds_the_prompt_to_the_token_with_o200k_base() {
    // proves B5-P4: the budget comes from the plan's metadata; the default
    // tokenizer is o200k_base, and the bound holds to the token.
    let (_fx, mut domain) = domain_with_memories();
    let all = prompt(&mut domain, &recall_plan(None)).unwrap();
    assert_eq!(all.context.len(), SUMMARIES.len());
    assert_eq!(all.left_out, 0);
    let all_lines = lines(&all.context);
    assert_eq!(all.text, text(&all_lines));

    let o200k = O200kTokenizer;
    let count = |n: usize| o200k.count_tokens(&all_lines[..n].join("\n")).unwrap();
    for n in 1..=SUMMARIES.len() {
        // A budget of exactly the count of the first n lines keeps n.
        let fits = prompt(&mut domain, &recall_plan(Some(count(n)))).unwrap();
        assert_eq!(fits.context, all.context[..n], "budget {}", count(n));
        assert_eq!(fits.left_out as usize, SUMMARIES.len() - n);
        assert_eq!(fits.text, text(&all_lines[..n]));
        // One token less keeps n - 1: the n-th line would pass it.
        assert!(count(n - 1) < count(n));
        let short = prompt(&mut domain, &recall_plan(Some(count(n) - 1))).unwrap();
        assert_eq!(
            short.context,
            all.context[..n - 1],
            "budget {}",
            count(n) - 1
        );
        assert_eq!(short.left_out as usize, SUMMARIES.len() - n + 1);
        assert_eq!(short.text, text(&all_lines[..n - 1]));
    }
    // Not even the first line fits: no memory, every one left out.
    let none = prompt(&mut domain, &recall_plan(Some(1))).unwrap();
    assert!(none.context.is_empty());
    assert_eq!(none.left_out as usize, SUMMARIES.len());
    assert_eq!(none.text, text(&[]));
    // A budget that holds everything leaves nothing out.
    let roomy = prompt(&mut domain, &recall_plan(Some(100_000))).unwrap();
    assert_eq!((roomy.context, roomy.left_out), (all.context, 0));
}

#[test]
fn b5_f3_the_engine_counts_with_whatever_tokenizer_the_host_supplies() {
    // proves B5-F3: counting is the host's; the engine asks for the joined
    // lines so far, whole, and stops at the first that passes the budget.
    let (_fx, domain) = domain_with_memories();
    let counter = Arc::new(Counter::default());
    let mut domain = domain.with_tokenizer(counter.clone());
    let all = prompt(&mut domain, &recall_plan(None)).unwrap();
    assert!(
        counter.asked.lock().unwrap().is_empty(),
        "no budget: the tokenizer is never called"
    );
    let all_lines = lines(&all.context);
    let two = all_lines[..2].join("\n");
    let bounded = prompt(&mut domain, &recall_plan(Some(two.len() as u32))).unwrap();
    assert_eq!(bounded.context, all.context[..2]);
    assert_eq!(bounded.left_out, 3);
    assert_eq!(
        *counter.asked.lock().unwrap(),
        [all_lines[0].clone(), two.clone(), all_lines[..3].join("\n")],
        "each prefix counted whole, and nothing after the first that passed"
    );
    // Bytes and o200k tokens cut in other places: the bytes of three lines
    // cut there, and hold every line's tokens.
    let three = all_lines[..3].join("\n").len() as u32;
    let by_bytes = prompt(&mut domain, &recall_plan(Some(three))).unwrap();
    assert_eq!(by_bytes.left_out, 2);
    let by_tokens = prompt(
        &mut domain.with_tokenizer(Arc::new(O200kTokenizer)),
        &recall_plan(Some(three)),
    )
    .unwrap();
    assert_eq!(
        by_tokens.left_out, 0,
        "{three} bytes hold every line's tokens"
    );
}

#[test]
fn b5_f1_a_failing_tokenizer_fails_the_cycle_and_persists_nothing() {
    // proves B5-F1, B5-D1
    for (counter, why) in [
        (
            Counter {
                failure: Some("no tokenizer here".into()),
                ..Counter::default()
            },
            "no tokenizer here",
        ),
        (
            Counter {
                panics: true,
                ..Counter::default()
            },
            "the tokenizer panicked",
        ),
    ] {
        let (_fx, domain) = domain_with_memories();
        let mut domain = domain.with_tokenizer(Arc::new(counter));
        let mut plan = engram::plans::turn(3);
        plan.metadata.token_budget = Some(1_000);
        let cycle = domain
            .begin_cycle(&plan, "s", "turn")
            .unwrap()
            .expect("the plan is valid");
        let input = TurnInput {
            user_message: Some("I moved the flight to Paris to the 15th.".into()),
            model_response: Some("Done: Paris on the 15th.".into()),
        };
        domain
            .run_stage(&cycle, Stage::ContextSelect, &input)
            .unwrap()
            .expect("ContextSelect runs");
        let failed = domain
            .run_stage(&cycle, Stage::PromptAssemble, &input)
            .unwrap();
        assert_eq!(failed, Err(CycleError::TokenizerFailed(why.into())));
        // The failed cycle refuses the rest, and nothing is stored.
        assert_eq!(
            domain
                .run_stage(&cycle, Stage::SummarizeMemory, &input)
                .unwrap(),
            Err(CycleError::Closed)
        );
        assert_eq!(
            domain.commit_cycle(&cycle).unwrap(),
            Err(CycleError::Closed)
        );
        domain.drop_cycle(cycle).unwrap();
        let stored = records(&mut domain, RecordType::Event, limit(CEILING));
        assert_eq!(stored.len(), SUMMARIES.len());
    }
}

#[test]
fn b5_p4_a_zero_or_unused_token_budget_is_refused_before_anything_runs() {
    // proves B5-P4
    let (_fx, domain) = domain_with_memories();
    let counter = Arc::new(Counter::default());
    let mut domain = domain.with_tokenizer(counter.clone());
    let refused = |domain: &mut Domain, plan: &ExecutionPlan| match domain
        .begin_cycle(plan, "s", "refused")
        .unwrap()
    {
        Ok(_) => panic!("the plan was accepted: {plan:?}"),
        Err(error) => error,
    };
    let zero = refused(&mut domain, &recall_plan(Some(0)));
    assert_eq!(
        zero,
        PlanError {
            step: Some("prompt".into()),
            rule: "B5-P4".into(),
            kind: PlanErrorKind::ZeroTokenBudget,
        }
    );
    let mut ingest = engram::plans::ingest();
    ingest.metadata.token_budget = Some(500);
    let unused = refused(&mut domain, &ingest);
    assert_eq!(
        unused,
        PlanError {
            step: None,
            rule: "B5-P4".into(),
            kind: PlanErrorKind::UnusedTokenBudget,
        }
    );
    assert!(counter.asked.lock().unwrap().is_empty());
}
