//! Plan validation: any plan the JSON model reads is refused with a plan
//! error naming its rule, or begins a cycle; the engine never traps.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::{LazyLock, Mutex};

static DOMAIN: LazyLock<Mutex<engram::Domain>> = LazyLock::new(|| {
    let engram = Box::leak(Box::new(engram::Engram::new().expect("the engine compiles")));
    let storage = engram::Storage::memory();
    Mutex::new(
        engram
            .open("fuzz", engram::Mode::Online, storage.backend, storage.audit)
            .expect("a domain opens"),
    )
});

fuzz_target!(|data: &[u8]| {
    let Ok(plan) = serde_json::from_slice::<engram::json::Plan>(data) else { return };
    let plan: engram::cycle::ExecutionPlan = plan.into();
    let mut domain = DOMAIN.lock().unwrap();
    match domain.begin_cycle(&plan, "s", "fuzz").expect("the engine answers") {
        Ok(cycle) => domain.drop_cycle(cycle).expect("a cycle drops"),
        Err(error) => assert!(error.rule.starts_with("B5-") || error.rule.starts_with("IO-")),
    }
    assert_eq!(domain.restarts(), 0, "the engine never traps on a plan");
});
