//! The engine against a simple model of the contract
//! (`engram-contract-model`, `tests/contract-model`), on random sequences of writes and reads
//! by two agents: idempotency (IO-W2), order (IO-R7), bounds (IO-G6) and
//! isolation (IO-W6). `ENGRAM_MODEL_CASES` sets how many sequences (48 by
//! default); the fuzz target `model` runs the same model without a bound.

mod support;

use engram_contract_model::Step;
use proptest::prelude::*;
use support::{CEILING, engram};

fn limit() -> impl Strategy<Value = u32> {
    prop_oneof![8 => 1u32..6, 1 => Just(0u32), 1 => Just(CEILING + 1), 1 => Just(CEILING)]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..2usize, 0..6u8, any::<bool>(), -3..12i64, 0..3u8)
            .prop_map(|(agent, rid, state, ts, text)| Step::Write { agent, rid, state, ts, text }),
        2 => (0..2usize, any::<bool>(), limit())
            .prop_map(|(agent, state, limit)| Step::Latest { agent, state, limit }),
        2 => (0..2usize, any::<bool>(), -3..12i64, -3..12i64, limit())
            .prop_map(|(agent, state, from, to, limit)| Step::Range { agent, state, from, to, limit }),
        1 => (0..2usize, 0..64usize).prop_map(|(agent, known)| Step::ById { agent, known }),
    ]
}

fn cases() -> u32 {
    std::env::var("ENGRAM_MODEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn io_w2_io_w6_io_r7_io_g6_the_engine_answers_as_the_model(steps in prop::collection::vec(step(), 1..40)) {
        // proves IO-W2, IO-W6, IO-R7, IO-G6 on random sequences
        let answer = engram_contract_model::run(engram(), CEILING, &steps);
        prop_assert!(answer.is_ok(), "{}", answer.unwrap_err());
    }
}
