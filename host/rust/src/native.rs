//! The native build of the `engram` command: an embedded SQLite file or a
//! shared PostgreSQL database, the engine run by wasmtime in this process
//! (this library).

/// What the command line is written against: this crate's binding of the
/// WIT and its `Domain`.
pub mod binding {
    pub use crate::*;
}

/// How this build opens stores and domains.
pub mod platform {
    use crate::types::PrivacyTier;
    use crate::{AuditEntry, AuditQuery, Domain, Engram, Mode, Storage};
    use anyhow::Result;
    use indicatif::{ProgressBar, ProgressStyle};
    use std::path::PathBuf;
    use std::sync::OnceLock;

    /// An open store: the backend and the audit trail beside it.
    pub type Store = Storage;

    /// Where the compiled engine is kept; set once, from the command line.
    static CACHE_DIR: OnceLock<Option<PathBuf>> = OnceLock::new();

    /// The embedding endpoint the command was given, if any.
    static ENDPOINT: OnceLock<Option<engram_model::embedding::Endpoint>> = OnceLock::new();

    /// Takes the command line's settings of this build: `--no-cache` and
    /// the embedding endpoint.
    pub fn configure(no_cache: bool, endpoint: Option<engram_model::embedding::Endpoint>) {
        let _ = CACHE_DIR.set(cache_dir(no_cache));
        let _ = ENDPOINT.set(endpoint);
    }

    /// The cache folder ([`crate::default_cache_dir`]); none with
    /// `--no-cache`.
    fn cache_dir(no_cache: bool) -> Option<PathBuf> {
        if no_cache {
            return None;
        }
        crate::default_cache_dir()
    }

    /// Opens the store `spec` names: a SQLite file or a `postgres://` URL.
    pub fn open_store(spec: &str) -> Result<Store> {
        Storage::open(spec)
    }

    /// Opens an agent's domain in `mode`, its reads restricted to `ceiling`.
    pub fn open_domain(
        store: &Store,
        agent: &str,
        mode: Mode,
        ceiling: PrivacyTier,
    ) -> Result<Domain> {
        let domain = engine()?.open(agent, mode, store.backend.clone(), store.audit.clone())?;
        Ok(domain.restrict_to(ceiling))
    }

    /// The newest audit entries that match `query`, oldest first.
    pub fn audit_trail(store: &Store, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
        store.audit.trail(query)
    }

    /// Every domain the store holds.
    pub fn domains(store: &Store) -> Result<Vec<String>> {
        crate::maintenance::domains(store.backend.as_ref())
    }

    /// Forgets an agent's domain; the number of keys removed.
    pub fn forget(store: &Store, agent: &str, progress: &Progress) -> Result<u64> {
        crate::maintenance::forget(
            store.backend.clone(),
            store.audit.as_ref(),
            agent,
            (crate::system_time_ms(), None),
            &mut |n| progress.0.set_position(n),
        )
    }

    /// Serves one agent's domain as MCP tools over stdio until the client
    /// closes the connection, or over streamable HTTP at `http`.
    pub fn mcp(
        domain: Domain,
        agent: &str,
        tools: crate::cli::McpTools,
        http: Option<&str>,
        tokens: Option<engram_http::Tokens>,
    ) -> Result<()> {
        let tools = match tools {
            crate::cli::McpTools::Engram => engram_mcp::Tools::Engram,
            crate::cli::McpTools::KnowledgeGraph => engram_mcp::Tools::KnowledgeGraph,
            crate::cli::McpTools::All => engram_mcp::Tools::All,
        };
        engram_mcp::serve(domain, agent, tools, http, tokens)
    }

    /// Serves the HTTP API over `store` at `addr` until interrupted.
    pub fn serve(
        store: &Store,
        addr: &str,
        tokens: Option<engram_http::Tokens>,
        clock_from_request: bool,
        limits: engram_http::Limits,
    ) -> Result<()> {
        let options = crate::serve::Options {
            addr: addr.to_string(),
            tokens,
            clock_from_request,
            limits,
        };
        crate::serve::serve(store.clone(), engine()?, options)
    }

    /// Breaks an agent's maintenance lock; whether there was one.
    pub fn break_lock(store: &Store, agent: &str) -> Result<bool> {
        crate::maintenance::break_lock(store.backend.as_ref(), agent)
    }

    /// The engine, loaded from the cache folder when it holds a compiled
    /// copy. A command opens one domain at a time: its instance is
    /// allocated on demand rather than from a pool reserved for 1,000 (the
    /// memory, table and time limits are the same). The engine lives as
    /// long as the process: freeing the compiled code and stopping the
    /// epoch thread at exit would only cost time.
    fn engine() -> Result<&'static Engram> {
        static ENGINE: OnceLock<Engram> = OnceLock::new();
        if let Some(engine) = ENGINE.get() {
            return Ok(engine);
        }
        let config = crate::Config {
            cache_dir: CACHE_DIR.get().cloned().flatten(),
            max_live_domains: None,
            embedder: crate::endpoint_embedder(ENDPOINT.get().and_then(Option::as_ref))?,
            ..crate::Config::default()
        };
        let engine = Engram::with_config(config)?;
        Ok(ENGINE.get_or_init(|| engine))
    }

    /// A progress bar on standard error, drawn only when it is a terminal.
    pub struct Progress(ProgressBar);

    impl Progress {
        /// A bar for `total` steps, or a spinner when the total is unknown.
        pub fn new(total: Option<u64>, what: &'static str) -> Self {
            let bar = match total {
                Some(total) => ProgressBar::new(total),
                None => ProgressBar::new_spinner(),
            };
            let template = match total {
                Some(_) => "{msg} {bar:40} {pos}/{len} ({eta})",
                None => "{msg} {spinner} {pos}",
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style);
            }
            bar.set_message(what);
            Progress(bar)
        }

        /// `n` more steps done.
        pub fn inc(&self, n: u64) {
            self.0.inc(n);
        }

        /// Done: the bar goes.
        pub fn finish_and_clear(&self) {
            self.0.finish_and_clear();
        }
    }
}
