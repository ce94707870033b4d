//! The JSON layer of the JavaScript package (world `engram:js/api`): the
//! call surface every language package reaches a domain through
//! (`engram_surface`: the `engram` command line's requests and
//! answers, JSON text in and out) over the engine's exports (`io`,
//! `history`, `graph`, `cycle`, `maintenance`), which the build of
//! `engram-js-components` wires to the unchanged engine component. The
//! surface, and the conversions of the JSON model, are the ones the native
//! binding runs over the Rust library: this crate only binds the engine's
//! exports as a `Domain` ([`binding`]).
//!
//! Built for `wasm32-unknown-unknown`: it imports no WASI, no clock and no
//! randomness. What it asks of its host besides the engine is in
//! `engram:js/host`: the agent, the largest record a write may carry, and
//! where an audit entry of a write it refused goes.
//!
//! No input makes it panic: malformed JSON, an unknown field or a missing
//! one is answered `failure::input` with one line naming the input.

wit_bindgen::generate!({
    path: ["../../../wit", "wit"],
    world: "engram:js/api",
    generate_all,
});

use engram::js::host;
use engram::memory as wit;
use engram_surface::{Answer, BeginArgs, Engine, RunCycleArgs, Session};
use exports::engram::js::calls::{self, ExportPage, Failure};
use serde_json::Value;
use std::cell::RefCell;

// The binding's modules: types, io, history, graph, cycle, export, json.
engram_surface::contract_modules!();

/// The engine's exports as a `Domain` with the calls of the Rust library's
/// (`engram::Domain`), written by `engram-model` as for every component
/// (`guest_domain!`) over what this component's host gives it: a failure of
/// the engine stops the instance (the host then makes a fresh one), so none
/// of these calls fails otherwise.
pub mod binding {
    use super::{cycle, export, graph, history, host, io, json, types, wit};
    use anyhow::Result;

    engram_surface::guest_domain!(Host);
    engram_surface::domain_cycles!();
    engram_surface::domain_engine!();

    /// What the JavaScript host (`engram:js/host`) gives the domain.
    struct Host;

    impl engram_surface::guest::GuestHost for Host {
        fn max_record_bytes() -> u64 {
            host::max_record_bytes()
        }

        /// The entry as `append-audit` takes it: the `engram audit` line
        /// without `at` and `agent_id`, which the host adds.
        fn append_refusal(entry: engram_model::audit::AuditEntry) -> Result<()> {
            let mut value = serde_json::to_value(&entry)?;
            if let Some(fields) = value.as_object_mut() {
                fields.shift_remove("at");
                fields.shift_remove("agent_id");
            }
            host::append_audit(&value.to_string());
            Ok(())
        }

        fn set_time(time: Option<i64>) {
            host::set_time(time);
        }

        fn entropy() -> Result<[u64; 2]> {
            let (high, low) = host::entropy();
            Ok([high, low])
        }
    }
}

thread_local! {
    /// The instance's session: its cycles in flight. Made at the first call.
    static SESSION: RefCell<Option<Session<binding::Domain>>> = const { RefCell::new(None) };
}

/// Makes a call of the surface in the instance's session.
fn surface(name: &str, input: &str, args: &str) -> Answer {
    in_session(|session| session.call(name, input, args))
}

/// Makes `call` in the instance's session.
fn in_session(
    call: impl FnOnce(&mut Session<binding::Domain>) -> anyhow::Result<Answer>,
) -> Answer {
    SESSION.with_borrow_mut(|session| {
        let session =
            session.get_or_insert_with(|| Session::new(binding::Domain::new(host::agent())));
        match call(session) {
            Ok(answer) => answer,
            // The binding's calls never fail: a failure of the engine traps.
            Err(fault) => panic!("{fault:#}"),
        }
    })
}

/// A surface call's answer as a typed export answers it.
fn typed(answer: Answer) -> Result<String, Failure> {
    match answer {
        Answer::Value(text) => Ok(text),
        Answer::Input(text) => Err(Failure::Input(text)),
        Answer::Refused(text) => Err(Failure::Refused(text)),
    }
}

/// Lines of a surface call's answer.
fn lines(answer: Answer) -> Result<Vec<String>, Failure> {
    typed(answer).map(|text| {
        if text.is_empty() {
            Vec::new()
        } else {
            text.split('\n').map(str::to_owned).collect()
        }
    })
}

/// The engine, for the typed calls the surface has no name for.
fn engine<T>(f: impl FnOnce(&mut binding::Domain) -> T) -> T {
    SESSION.with_borrow_mut(|session| {
        f(session
            .get_or_insert_with(|| Session::new(binding::Domain::new(host::agent())))
            .engine())
    })
}

/// The component's exports.
struct Api;

export!(Api);

impl calls::Guest for Api {
    type Turn = Turn;

    fn write(input: String, text: String, batch: bool) -> Result<Vec<String>, Failure> {
        lines(surface(
            if batch { "write-batch" } else { "write" },
            &input,
            &text,
        ))
    }

    fn read(input: String, text: String, batch: bool) -> Result<Vec<String>, Failure> {
        lines(surface(
            if batch { "read-batch" } else { "read" },
            &input,
            &text,
        ))
    }

    fn call(request: String) -> String {
        let (name, rest) = request.split_once('\0').unwrap_or((&request, ""));
        let (input, args) = match name {
            "write" | "write-batch" | "read" | "read-batch" => {
                rest.split_once('\0').unwrap_or(("input", rest))
            }
            _ => ("input", rest),
        };
        let mut answer = surface(name, input, args).framed();
        answer.push('\0');
        answer.push_str(&host::take_trail());
        answer
    }

    fn remember(args: String) -> Result<String, Failure> {
        typed(surface("remember", "", &args))
    }

    fn recall(args: String) -> Result<String, Failure> {
        typed(surface("recall", "", &args))
    }

    fn history(args: String) -> Result<String, Failure> {
        typed(surface("history", "", &args))
    }

    fn as_of(args: String) -> Result<String, Failure> {
        typed(surface("as-of", "", &args))
    }

    fn list(args: String) -> Result<String, Failure> {
        typed(surface("list", "", &args))
    }

    fn entities(args: String) -> Result<String, Failure> {
        typed(surface("entities", "", &args))
    }

    fn relationships(args: String) -> Result<String, Failure> {
        typed(surface("relationships", "", &args))
    }

    fn traverse(args: String) -> Result<String, Failure> {
        typed(surface("traverse", "", &args))
    }

    fn export(start: Option<Vec<u8>>, limit: u32) -> Result<ExportPage, Failure> {
        let page = engine(|domain| Engine::export_page(domain, start.as_deref(), limit));
        let (items, next) = match page {
            Ok(Ok(page)) => page,
            Ok(Err(refused)) => return Err(Failure::Refused(refused.to_string())),
            // The binding's calls never fail: a failure of the engine traps.
            Err(fault) => panic!("{fault:#}"),
        };
        Ok(ExportPage {
            items: items.iter().map(engram_surface::line).collect(),
            next,
        })
    }

    fn import(items: Vec<String>) -> Result<u32, Failure> {
        let args = serde_json::to_string(&items).unwrap_or_default();
        let answer: serde_json::Value = serde_json::from_str(&typed(surface("import", "", &args))?)
            .map_err(|e| Failure::Input(e.to_string()))?;
        Ok(answer["new"].as_u64().unwrap_or_default() as u32)
    }

    fn expire() -> Result<u64, Failure> {
        let answer: serde_json::Value = serde_json::from_str(&typed(surface("expire", "", ""))?)
            .map_err(|e| Failure::Input(e.to_string()))?;
        Ok(answer["expired"].as_u64().unwrap_or_default())
    }

    fn run_cycle(
        plan: String,
        session: String,
        request_id: String,
        message: Option<String>,
        response: Option<String>,
    ) -> Result<Vec<String>, Failure> {
        // The plan's text is parsed once, by the surface: no JSON text of
        // the arguments is made around it.
        let args = RunCycleArgs {
            plan: Value::String(plan),
            session: Some(session),
            request_id: Some(request_id),
            message,
            response,
        };
        lines(in_session(|session| session.run_cycle_call(args)))
    }
}

/// A cycle begun by `turn.begin`, run stage by stage by its caller: a
/// cycle of the instance's session.
struct Turn {
    cycle: u64,
}

impl calls::GuestTurn for Turn {
    fn begin(plan: String, session: String, request_id: String) -> Result<calls::Turn, Failure> {
        let args = BeginArgs {
            plan: Value::String(plan),
            session: Some(session),
            request_id: Some(request_id),
        };
        let begun: Value = serde_json::from_str(&typed(in_session(|s| s.begin_call(args)))?)
            .map_err(|e| Failure::Input(e.to_string()))?;
        Ok(calls::Turn::new(Turn {
            cycle: begun["cycle"].as_u64().unwrap_or_default(),
        }))
    }

    fn run_stage(
        &self,
        stage: String,
        message: Option<String>,
        response: Option<String>,
    ) -> Result<String, Failure> {
        let args = serde_json::json!({
            "cycle": self.cycle, "stage": stage, "message": message, "response": response,
        });
        typed(surface("cycle-stage", "", &args.to_string()))
    }

    fn output(&self, step: String) -> Option<String> {
        let args = serde_json::json!({"cycle": self.cycle, "step": step});
        typed(surface("cycle-output", "", &args.to_string()))
            .ok()
            .filter(|output| output != "null")
    }

    fn commit(&self) -> Result<String, Failure> {
        let args = serde_json::json!({ "cycle": self.cycle });
        typed(surface("cycle-commit", "", &args.to_string()))
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let args = serde_json::json!({ "cycle": self.cycle });
        surface("cycle-drop", "", &args.to_string());
    }
}
