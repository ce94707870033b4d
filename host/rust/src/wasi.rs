//! The `wasm32-wasip2` build of the `engram` command: the command component
//! of `engram-cli.wasm` (a WASI 0.2 command). The command line (`cli/`) is
//! compiled against this binding of the WIT: its calls go to the engine's
//! exports (`io`, `history`, `graph`, `cycle`, `maintenance`), which the
//! composition (`engram-wasi`) wires to the unchanged engine component, and
//! its stores are opened through the provider's `engram:host/store`
//! interface.

use anyhow::{Result, anyhow};
pub use engram_wasi_guest::{binding, host_store, types, wit};

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
