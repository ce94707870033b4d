//! The `wasm32-wasip2` build of the `engram` command: the command component
//! of `engram-cli.wasm` (a WASI 0.2 command). The command line (`cli/`) is
//! compiled against this binding of the WIT: its calls go to the engine's
//! exports (`io`, `history`, `graph`, `cycle`, `maintenance`), which the
//! composition (`engram-wasi`) wires to the unchanged engine component, and
//! its stores are opened through the provider's `engram:host/store`
//! interface.

wit_bindgen::generate!({
    path: ["../../wit", "../wasi/wit"],
    world: "engram:host/command",
    additional_derives: [PartialEq],
    generate_all,
});

use self::engram::host::store as host_store;
use self::engram::memory as wit;
use anyhow::{Result, anyhow};

/// The record model of the contract (`engram:memory/types`).
pub mod types {
    pub use crate::wasi::wit::types::*;
}

/// The IO contract (`engram:memory/io`).
pub mod io {
    pub use crate::wasi::wit::io::*;
}

/// Versions of a FACT in time (`engram:memory/history`).
pub mod history {
    pub use crate::wasi::wit::history::*;
}

/// Entities, relationships and their lookups (`engram:memory/graph`).
pub mod graph {
    pub use crate::wasi::wit::graph::*;
}

/// Execution cycles (`engram:memory/cycle`).
pub mod cycle {
    pub use crate::wasi::wit::cycle::*;
}

/// Export and import of a domain (`engram:memory/maintenance`).
pub mod export {
    pub use crate::wasi::wit::maintenance::*;
}

/// The JSON model of the contract, with its conversions to this binding.
pub mod json {
    pub use engram_model::json::*;
    engram_model::wit_conversions!();
}

/// Ready-made execution plans (`engram_model::plans`) in this binding's
/// types: those the command line runs.
pub mod plans {
    use super::cycle::ExecutionPlan;

    /// Select context for a message and assemble the prompt, keeping `top_k`.
    pub fn recall(top_k: u32) -> ExecutionPlan {
        engram_model::plans::recall(top_k).into()
    }

    /// Summarize a finished turn and persist it.
    pub fn ingest() -> ExecutionPlan {
        engram_model::plans::ingest().into()
    }
}

/// What the command line is written against: the names the native host's
/// library gives it, over this component's binding.
pub mod binding {
    pub use crate::wasi::{cycle, export, graph, history, io, json, plans, types};
    pub use engram_model::audit;
    pub use engram_model::audit::{AuditEntry, AuditQuery};

    use super::{host_store, wit};
    use anyhow::{Result, anyhow};

    /// The longest agent id a domain may be opened for, in bytes.
    pub const MAX_AGENT_ID_LEN: usize = engram_store::scope::MAX_AGENT_ID_LEN;

    /// Milliseconds since the Unix epoch by the system clock (`wasi:clocks`).
    pub use engram_model::system_time_ms;

    /// How a domain is opened (IO-W7).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Mode {
        /// Normal operation: only COGNITION writes are accepted.
        Online,
        /// Offline maintenance: only MAINTENANCE writes are accepted.
        Maintenance,
    }

    engram_model::guest_domain!(Provider);
    engram_model::domain_cycles!();
    engram_model::domain_engine!();
    engram_mcp::domain_graph!();

    /// What the provider (`engram:host/store`) gives the domain.
    struct Provider;

    impl engram_model::guest::GuestHost for Provider {
        fn max_record_bytes() -> u64 {
            host_store::max_record_bytes()
        }

        fn append_refusal(mut entry: AuditEntry) -> Result<()> {
            entry.at = system_time_ms();
            host_store::append_audit(&serde_json::to_string(&entry)?).map_err(|e| anyhow!(e))
        }

        fn set_time(time: Option<i64>) {
            host_store::set_time(time);
        }

        /// `wasi:random`.
        fn entropy() -> Result<[u64; 2]> {
            let random = || getrandom::u64().map_err(|e| anyhow!("no entropy: {e}"));
            Ok([random()?, random()?])
        }

        fn take_failure() -> Option<String> {
            host_store::take_failure()
        }
    }

    /// What only this build's domain does: it is alone on its store, and
    /// the provider keeps the expiry of what it writes.
    impl Domain {
        /// Runs `f` as the one writer of the domain: under WASI the process
        /// is alone on its store, so there is no one to wait for.
        pub fn exclusively<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> Result<T> {
            Ok(f(self))
        }

        /// How long what the domain writes from now on is kept, in ms.
        pub fn set_expire_after(&mut self, ms: Option<u64>) {
            host_store::set_expire_after(ms);
        }
    }
}

/// How this build opens stores and domains: through the provider.
pub mod platform {
    use super::{Result, anyhow, host_store};
    use crate::binding::{AuditEntry, AuditQuery, Domain, Mode};
    use crate::wasi::types::PrivacyTier;
    use crate::wasi::wit::domain::AccessMode;

    /// An open store: the provider holds it; there is one per process.
    pub struct Store(());

    /// Nothing of this build is set from the command line: the compiled
    /// engine is the runtime's business (`wasmtime run` caches it).
    pub fn configure(_no_cache: bool, endpoint: Option<engram_model::embedding::Endpoint>) {
        if let Some(endpoint) = endpoint {
            ENDPOINT_REFUSED.with(|r| *r.borrow_mut() = Some(endpoint.url));
        }
    }

    thread_local! {
        /// An embedding endpoint this build was given: it has no network,
        /// so opening a domain says so.
        static ENDPOINT_REFUSED: std::cell::RefCell<Option<String>> =
            const { std::cell::RefCell::new(None) };
    }

    /// Opens the SQLite file `spec` names, in a folder the runtime
    /// preopened. PostgreSQL needs sockets this build does not have.
    pub fn open_store(spec: &str) -> Result<Store> {
        if spec.contains("://") {
            anyhow::bail!("{spec}: this build opens SQLite files only (no network)");
        }
        host_store::open(spec).map_err(|e| anyhow!(e))?;
        Ok(Store(()))
    }

    /// Scopes the engine to an agent's domain in `mode`, its reads
    /// restricted to `ceiling`.
    pub fn open_domain(
        _store: &Store,
        agent: &str,
        mode: Mode,
        ceiling: PrivacyTier,
    ) -> Result<Domain> {
        let mode = match mode {
            Mode::Online => AccessMode::Online,
            Mode::Maintenance => AccessMode::Maintenance,
        };
        if let Some(url) = ENDPOINT_REFUSED.with(|r| r.borrow().clone()) {
            anyhow::bail!("{url}: this build reaches no embedding endpoint (no network)");
        }
        host_store::enter(agent, mode, ceiling).map_err(|e| anyhow!(e))?;
        Ok(Domain::new(agent.to_owned()))
    }

    /// The newest audit entries that match `query`, oldest first.
    pub fn audit_trail(_store: &Store, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
        let lines =
            host_store::audit_trail(&serde_json::to_string(query)?).map_err(|e| anyhow!(e))?;
        lines
            .iter()
            .map(|line| Ok(serde_json::from_str(line)?))
            .collect()
    }

    /// Every domain the store holds.
    pub fn domains(_store: &Store) -> Result<Vec<String>> {
        host_store::domains().map_err(|e| anyhow!(e))
    }

    /// Forgets an agent's domain; the number of keys removed.
    pub fn forget(_store: &Store, agent: &str, _progress: &Progress) -> Result<u64> {
        host_store::forget(agent).map_err(|e| anyhow!(e))
    }

    /// `engram mcp` needs sockets and threads a WASI 0.2 command does not
    /// have: the native build serves it.
    pub fn mcp(
        _domain: Domain,
        _agent: &str,
        _tools: crate::cli::McpTools,
        _http: Option<&str>,
        _tokens: Option<engram_http::Tokens>,
    ) -> Result<()> {
        Err(anyhow!(
            "`engram mcp` is served by the native `engram` only, not under WASI"
        ))
    }

    /// `engram serve` needs sockets a WASI 0.2 command does not have:
    /// the native build serves the API, and `engram-http.wasm` under a
    /// `wasi:http` runtime.
    pub fn serve(
        _store: &Store,
        _addr: &str,
        _tokens: Option<engram_http::Tokens>,
        _clock_from_request: bool,
        _limits: engram_http::Limits,
    ) -> Result<()> {
        Err(anyhow!(
            "`engram serve` is served by the native `engram` only, not under WASI"
        ))
    }

    /// Breaks an agent's maintenance lock; whether there was one.
    pub fn break_lock(_store: &Store, agent: &str) -> Result<bool> {
        host_store::unlock(agent).map_err(|e| anyhow!(e))
    }

    /// Progress is not drawn: a component has no terminal of its own to
    /// ask about.
    pub struct Progress;

    impl Progress {
        /// A progress report that shows nothing.
        pub fn new(_total: Option<u64>, _what: &'static str) -> Self {
            Progress
        }

        /// `n` more steps done.
        pub fn inc(&self, _n: u64) {}

        /// Done.
        pub fn finish_and_clear(&self) {}
    }
}

/// `wasi:cli/exit`'s `exit-with-code`, so the command's exit codes are the
/// native binary's (the standard library's exit can only tell success from
/// failure under WASI 0.2). The wasmtime CLI provides it.
mod exit {
    wit_bindgen::generate!({
        inline: "
            package wasi:cli@0.2.6;
            interface exit {
                @since(version = 0.2.0)
                exit: func(status: result);
                @unstable(feature = cli-exit-with-code)
                exit-with-code: func(status-code: u8);
            }
            world exit-code { import exit; }
        ",
        world: "wasi:cli/exit-code",
        features: ["cli-exit-with-code"],
    });
}

/// Runs the command line; exits with its code.
pub fn main() {
    let code = crate::cli::main();
    host_store::close();
    if code != 0 {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        exit::wasi::cli::exit::exit_with_code(code);
    }
}
