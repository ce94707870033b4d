//! The call surface the language packages reach the Rust host through: the
//! Node addon (`host/node`) runs it, and the Python module will. A package
//! opens a [`Store`] (a SQLite file, a PostgreSQL URL, or memory) and a
//! [`Handle`] on one agent's domain in it from the settings every package
//! gives as JSON ([`engram_store::settings`]), then makes every call by
//! name, JSON text in, one answer string out ([`Handle::call`]): one
//! crossing a call. Everything a host adds around the engine is the Rust
//! library's (`engram`): the stores, their locks and trail, the limits,
//! the maintenance lock, the audit entries, the compiled engine's cache. A
//! package supplies only what its language supplies: the summarizer,
//! ranker, tokenizer or clock a caller gives ([`Plugins`]).
//!
//! The calls of a handle are the surface's ([`engram_model::surface`]) and
//! these:
//!
//! | name | `args` | answer |
//! |---|---|---|
//! | `audit` | `{"operation","outcome","since","until","limit"}`, each optional (`limit` 1 to 100,000, 100 by default) | the domain's newest matching entries, oldest first, as a JSON array of `engram audit` lines |
//! | `forget` | nothing | `{"agent_id","removed"}` ([`engram::Domain::forget`]) |
//! | `domains` | nothing | the agents whose domains hold anything in the store, a JSON array |
//! | `unlock` | nothing | `{"agent_id","unlocked"}`: the domain's maintenance lock broken, whoever held it |
//!
//! An answer is framed ([`Answer::framed`]): `V`, `I` (an input failure)
//! or `R` (a refusal) then its text. A failure of the host (the store, the
//! engine's instance) is an `Err`, its words on one line.

use anyhow::{Context, Result, anyhow};
use engram::audit::{AuditQuery, Operation, Outcome};
use engram::{Clock, Config, Domain, Engram, Mode, Ranker, Summarizer, Tokenizer};
pub use engram_model::surface::Answer;
use engram_model::surface::Session;
use engram_store::settings::{Access, Settings};
use engram_store::{PostgresOptions, SqliteOptions, Storage, Synchronous};
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The engines of the process, compiled once each (or loaded from the
/// compiled engine's cache, [`engram::default_cache_dir`]): one per memory
/// limit a domain asks for.
fn engine(max_memory_bytes: u64) -> Result<Arc<Engram>> {
    static ENGINES: Mutex<BTreeMap<u64, Arc<Engram>>> = Mutex::new(BTreeMap::new());
    let mut engines = ENGINES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(engine) = engines.get(&max_memory_bytes) {
        return Ok(engine.clone());
    }
    let config = Config {
        max_memory_bytes: usize::try_from(max_memory_bytes).unwrap_or(usize::MAX),
        cache_dir: engram::default_cache_dir(),
        // A package opens domains as its caller asks: each instance is
        // allocated when made, with no pool reserved up front and no cap.
        max_live_domains: None,
        ..Config::default()
    };
    let engine = Arc::new(Engram::with_config(config)?);
    engines.insert(max_memory_bytes, engine.clone());
    Ok(engine)
}

/// How a store named by a path or URL is opened: `{"sqlite":{…},
/// "postgres":{…}}`, each optional, the Rust host's defaults for what is
/// left out.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreOptions {
    #[serde(default)]
    sqlite: Option<SqliteSettings>,
    #[serde(default)]
    postgres: Option<PostgresSettings>,
}

/// [`SqliteOptions`] by the JavaScript package's names.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SqliteSettings {
    /// `FULL` or `NORMAL`.
    #[serde(default)]
    synchronous: Option<String>,
    /// ms.
    #[serde(default)]
    busy_timeout: Option<u64>,
}

/// [`PostgresOptions`] by the JavaScript package's names, times in ms.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PostgresSettings {
    #[serde(default)]
    schema: Option<String>,
    #[serde(default)]
    connect_timeout: Option<u64>,
    #[serde(default)]
    statement_timeout: Option<u64>,
    #[serde(default)]
    idle_in_transaction_timeout: Option<u64>,
    #[serde(default)]
    keepalives_idle: Option<u64>,
    #[serde(default)]
    tcp_user_timeout: Option<u64>,
}

/// Whether `spec` names a PostgreSQL database rather than a file.
fn is_postgres(spec: &str) -> bool {
    spec.split_once("://").is_some_and(|(scheme, _)| {
        scheme.eq_ignore_ascii_case("postgres") || scheme.eq_ignore_ascii_case("postgresql")
    })
}

/// A store: where the domains opened in it keep their memory and their
/// audit trail.
#[derive(Clone)]
pub struct Store {
    storage: Storage,
}

impl Store {
    /// A store in memory only, gone with the last handle on it.
    pub fn memory() -> Self {
        Store {
            storage: Storage::memory(),
        }
    }

    /// Opens the store `spec` names (a SQLite file, created if absent, or a
    /// `postgres://` URL) with `options`, JSON (`{"sqlite":{"synchronous",
    /// "busyTimeout"},"postgres":{"schema","connectTimeout",…}}`; empty
    /// for the defaults). The error says why, on one line, a password in
    /// the URL hidden.
    pub fn open(spec: &str, options: &str) -> Result<Self> {
        let options: StoreOptions = if options.trim().is_empty() {
            StoreOptions::default()
        } else {
            serde_json::from_str(options).context("the store's options")?
        };
        let storage = if is_postgres(spec) {
            let given = options.postgres.unwrap_or_default();
            let mut pg = PostgresOptions {
                schema: given.schema,
                ..PostgresOptions::default()
            };
            let ms = Duration::from_millis;
            let set = |slot: &mut Duration, value: Option<u64>| {
                if let Some(value) = value {
                    *slot = ms(value);
                }
            };
            set(&mut pg.connect_timeout, given.connect_timeout);
            set(&mut pg.statement_timeout, given.statement_timeout);
            set(
                &mut pg.idle_in_transaction_timeout,
                given.idle_in_transaction_timeout,
            );
            set(&mut pg.keepalives_idle, given.keepalives_idle);
            set(&mut pg.tcp_user_timeout, given.tcp_user_timeout);
            let store = Arc::new(engram::PostgresBackend::open_with(spec, &pg)?);
            Storage {
                backend: store.clone(),
                audit: store,
            }
        } else if spec.contains("://") {
            Storage::open(spec)?
        } else {
            let given = options.sqlite.unwrap_or_default();
            let mut sqlite = SqliteOptions::default();
            match given
                .synchronous
                .as_deref()
                .map(str::to_ascii_uppercase)
                .as_deref()
            {
                None | Some("FULL") => {}
                Some("NORMAL") => sqlite.synchronous = Synchronous::Normal,
                Some(other) => {
                    return Err(anyhow!("synchronous must be FULL or NORMAL, not {other:?}"));
                }
            }
            if let Some(ms) = given.busy_timeout {
                sqlite.busy_timeout = Duration::from_millis(ms);
            }
            let store = Arc::new(engram::SqliteBackend::open_with(spec, &sqlite)?);
            Storage {
                backend: store.clone(),
                audit: store,
            }
        };
        Ok(Store { storage })
    }

    /// The newest entries of the trail that match `query` (JSON: `{"agent",
    /// "operation","outcome","since","until","limit"}`, each optional),
    /// oldest first: a JSON array of `engram audit` lines. An input failure
    /// when the query is not one.
    pub fn audit(&self, query: &str) -> Result<Answer> {
        audit(&self.storage, None, query)
    }

    /// The agents whose domains hold anything, in key order: a JSON array.
    pub fn domains(&self) -> Result<String> {
        domains(&self.storage)
    }

    /// Breaks the maintenance lock of `agent`'s domain, whoever holds it:
    /// `{"agent_id","unlocked"}`.
    pub fn unlock(&self, agent: &str) -> Result<String> {
        let unlocked = engram::maintenance::break_lock(self.storage.backend.as_ref(), agent)?;
        Ok(json!({"agent_id": agent, "unlocked": unlocked}).to_string())
    }
}

/// The agents whose domains hold anything in `storage`: a JSON array.
fn domains(storage: &Storage) -> Result<String> {
    let agents = engram::maintenance::domains(storage.backend.as_ref())?;
    Ok(json!(agents).to_string())
}

/// The trail's entries `query` asks for (of `agent`'s domain only, when
/// given).
fn audit(storage: &Storage, agent: Option<&str>, query: &str) -> Result<Answer> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Query {
        #[serde(default)]
        agent: Option<String>,
        #[serde(default)]
        operation: Option<Operation>,
        #[serde(default)]
        outcome: Option<Outcome>,
        #[serde(default)]
        since: Option<i64>,
        #[serde(default)]
        until: Option<i64>,
        #[serde(default)]
        limit: Option<u32>,
    }
    let text = if query.trim().is_empty() { "{}" } else { query };
    let query: Query = match serde_json::from_str(text) {
        Ok(query) => query,
        Err(e) => return Ok(Answer::Input(format!("audit: not a valid query: {e}"))),
    };
    let limit = query.limit.unwrap_or(engram::audit::AUDIT_LIMIT);
    if !(1..=engram::audit::MAX_AUDIT_LIMIT).contains(&limit) {
        return Ok(Answer::Input(format!(
            "audit: the limit must be 1 to {}",
            engram::audit::MAX_AUDIT_LIMIT
        )));
    }
    let entries = storage.audit.trail(&AuditQuery {
        agent: agent.map(str::to_owned).or(query.agent),
        since: query.since,
        until: query.until,
        operation: query.operation,
        outcome: query.outcome,
        limit,
    })?;
    Ok(Answer::Value(serde_json::to_string(&entries)?))
}

/// What a caller supplies in its own language, each in place of the host's
/// default when given: called back from Rust.
#[derive(Clone, Default)]
pub struct Plugins {
    /// The summarizer cycles call.
    pub summarizer: Option<Arc<dyn Summarizer>>,
    /// The ranker cycles call.
    pub ranker: Option<Arc<dyn Ranker>>,
    /// What counts a prompt's tokens for a token budget.
    pub tokenizer: Option<Arc<dyn Tokenizer>>,
    /// The domain's time, ms since the epoch.
    pub clock: Option<Clock>,
}

/// Why a domain could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// The settings are not valid: why.
    Invalid(String),
    /// The store or the engine failed (a maintenance lock someone else
    /// holds among them): why, on one line.
    Failed(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Invalid(why) | OpenError::Failed(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for OpenError {}

/// One agent's domain, open: its calls by name.
pub struct Handle {
    session: Session<Domain>,
    storage: Storage,
    agent: String,
}

impl Handle {
    /// Opens the domain `settings` (JSON, [`engram_store::settings`]) name
    /// in `store`, with what the caller supplies.
    pub fn open(store: &Store, settings: &str, plugins: Plugins) -> Result<Self, OpenError> {
        let settings = Settings::parse(settings).map_err(|why| {
            OpenError::Invalid(why.strip_prefix("invalid: ").unwrap_or(&why).to_owned())
        })?;
        let failed = |e: anyhow::Error| OpenError::Failed(shown(&e));
        let engine = engine(settings.limits.max_memory_bytes).map_err(failed)?;
        let mode = match settings.mode {
            Access::Online => Mode::Online,
            Access::Maintenance => Mode::Maintenance,
        };
        let storage = store.storage.clone();
        let mut domain = engine
            .open(
                &settings.agent,
                mode,
                storage.backend.clone(),
                storage.audit.clone(),
            )
            .map_err(failed)?
            .restrict_to(tier(settings.tier_ceiling))
            .with_limits(settings.limits);
        domain.set_expire_after(settings.expire_after);
        if let Some(summarizer) = plugins.summarizer {
            domain = domain.with_summarizer(summarizer);
        }
        if let Some(ranker) = plugins.ranker {
            domain = domain.with_ranker(ranker);
        }
        if let Some(tokenizer) = plugins.tokenizer {
            domain = domain.with_tokenizer(tokenizer);
        }
        if let Some(clock) = plugins.clock {
            domain = domain.with_clock(clock);
        }
        Ok(Handle {
            session: Session::new(domain),
            storage,
            agent: settings.agent,
        })
    }

    /// The agent whose domain this is.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// Makes the call `name` with `args` (`input` names the input in an
    /// input failure of `write` and `read`): the framed answer
    /// ([`Answer::framed`]), or the host's failure. A failure that stopped
    /// the engine's instance also ends the cycles begun in it.
    pub fn call(&mut self, name: &str, input: &str, args: &str) -> Result<String> {
        let answer = match name {
            "audit" => audit(&self.storage, Some(&self.agent), args)?,
            "forget" => {
                let removed = self.session.engine().forget()?;
                self.session.lose_cycles();
                Answer::Value(json!({"agent_id": self.agent, "removed": removed}).to_string())
            }
            "domains" => Answer::Value(domains(&self.storage)?),
            "unlock" => {
                let unlocked =
                    engram::maintenance::break_lock(self.storage.backend.as_ref(), &self.agent)?;
                Answer::Value(json!({"agent_id": self.agent, "unlocked": unlocked}).to_string())
            }
            _ => {
                let restarts = self.session.engine().restarts();
                let answer = self.session.call(name, input, args);
                if self.session.engine().restarts() != restarts {
                    self.session.lose_cycles();
                }
                answer.map_err(|e| anyhow!(shown(&e)))?
            }
        };
        Ok(answer.framed())
    }
}

/// The engine's privacy tier of the JSON model's.
fn tier(tier: engram_model::json::PrivacyTier) -> engram::types::PrivacyTier {
    use engram::types::PrivacyTier as T;
    use engram_model::json::PrivacyTier as J;
    match tier {
        J::Public => T::Public,
        J::Sensitive => T::Sensitive,
        J::Private => T::Private,
    }
}

/// An error on one line, each cause's first line, the engine's wasm
/// backtrace left out: as the command line shows it.
pub fn shown(error: &anyhow::Error) -> String {
    engram::cli::shown(error)
}

/// Runs the `engram` command line `args` (the program's name first) in
/// this process: its exit code. What a package's `engram` command runs.
pub fn main(args: Vec<String>) -> u8 {
    engram::cli::main_with(args)
}
