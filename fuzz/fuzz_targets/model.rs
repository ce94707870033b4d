//! The engine's writes and reads against the model of the contract
//! (idempotency, order, bounds, isolation), on sequences the fuzzer makes.
#![no_main]

use arbitrary::{Result, Unstructured};
use engram_contract_model::Step;
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;

const CEILING: u32 = 20;

static ENGRAM: LazyLock<engram::Engram> = LazyLock::new(|| {
    engram::Engram::with_config(engram::Config {
        read_limit_ceiling: CEILING,
        max_live_domains: None,
        ..engram::Config::default()
    })
    .expect("the engine compiles")
});

fn limit(u: &mut Unstructured) -> Result<u32> {
    Ok(match u.int_in_range(0..=9)? {
        0 => 0,
        1 => CEILING + 1,
        2 => CEILING,
        _ => u.int_in_range(1..=6)?,
    })
}

fn step(u: &mut Unstructured) -> Result<Step> {
    let agent = u.int_in_range(0..=1)?;
    Ok(match u.int_in_range(0..=8)? {
        0..=3 => Step::Write {
            agent,
            rid: u.int_in_range(0..=5)?,
            state: u.arbitrary()?,
            ts: u.int_in_range(-3..=11)?,
            text: u.int_in_range(0..=2)?,
        },
        4..=5 => Step::Latest { agent, state: u.arbitrary()?, limit: limit(u)? },
        6..=7 => Step::Range {
            agent,
            state: u.arbitrary()?,
            from: u.int_in_range(-3..=11)?,
            to: u.int_in_range(-3..=11)?,
            limit: limit(u)?,
        },
        _ => Step::ById { agent, known: u.int_in_range(0..=63)? },
    })
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let mut steps = Vec::new();
    while steps.len() < 64 {
        match step(&mut u) {
            Ok(step) => steps.push(step),
            Err(_) => break,
        }
    }
    if let Err(why) = engram_contract_model::run(&ENGRAM, CEILING, &steps) {
        panic!("{why}");
    }
});
