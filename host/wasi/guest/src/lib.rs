//! The WASI guests' binding of the engine: the engine's exports (`io`,
//! `history`, `graph`, `cycle`, `maintenance`) and the provider's store
//! (`engram:host/store`), imported as the world `engram:host/command` names
//! them, and the `Domain` the command line and the HTTP front are written
//! against ([`binding`]). The `engram` command of `engram-cli.wasm` and the
//! HTTP front of `engram-http.wasm` both run over it; `engram-wasi`
//! composes each with the engine and the provider.

wit_bindgen::generate!({
    path: ["../../../wit", "../wit"],
    world: "engram:host/command",
    additional_derives: [PartialEq],
    generate_all,
});

/// The provider's store interface (`engram:host/store`).
pub use self::engram::host::store as host_store;
/// The engine's interfaces, as this binding imports them.
pub use self::engram::memory as wit;

// The binding's modules: types, io, history, graph, cycle, export, json.
engram_surface::contract_modules!();

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
    pub use crate::{cycle, export, graph, history, io, json, plans, types};
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

    engram_surface::guest_domain!(Provider);
    engram_surface::domain_cycles!();
    engram_surface::domain_engine!();
    engram_mcp::domain_graph!();

    /// What the provider (`engram:host/store`) gives the domain.
    struct Provider;

    impl engram_surface::guest::GuestHost for Provider {
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

        /// Names who makes the calls from now on, kept in their audit
        /// entries (a server's token name, never its secret); `None`:
        /// nobody named.
        pub fn set_caller(&mut self, caller: Option<&str>) {
            host_store::set_caller(caller);
        }
    }
}
