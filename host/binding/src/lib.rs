//! The call surface the language packages reach the Rust host through: the
//! Node addon (`host/node`) and the Python module (`host/python`) run it. A package
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
//! The calls of a handle are the surface's ([`engram_surface`]) and
//! these:
//!
//! | name | `args` | answer |
//! |---|---|---|
//! | `audit` | `{"operation","outcome","since","until","limit"}`, each optional (`limit` 1 to 100,000, 100 by default) | the domain's newest matching entries, oldest first, as a JSON array of `engram audit` lines |
//! | `forget` | nothing | `{"agent_id","removed"}` ([`engram::Domain::forget`]) |
//! | `domains` | nothing | the agents whose domains hold anything in the store, a JSON array |
//! | `unlock` | nothing | `{"agent_id","unlocked"}`: the domain's maintenance lock broken, whoever held it |
//!
//! An answer is framed ([`Answer::framed`]): `V` (or `L`, a value that may
//! hold integers beyond 2^53), `I` (an input failure) or `R` (a refusal)
//! then its text. A failure of the host (the store, the engine's instance)
//! is a [`Failure`], its words on one line.

/// The error of a store's calls.
pub use anyhow::Error;
use anyhow::Result;
use engram::{
    Candidate, Config, Domain, Embedder, Engram, Mode, Model, Ranker, Role, Summarizer, Summary,
    Tokenizer,
};
use engram_store::settings::{Access, Settings};
use engram_store::{PostgresOptions, SqliteOptions, Storage, Synchronous};
pub use engram_surface::Answer;
use engram_surface::Session;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
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

    /// A store a caller supplies in its own language: its backend and the
    /// audit trail beside it (often the same object).
    pub fn from_parts(
        backend: Arc<dyn engram::Backend>,
        audit: Arc<dyn engram::AuditSink>,
    ) -> Self {
        Store {
            storage: Storage { backend, audit },
        }
    }

    /// Opens the store `spec` names (a SQLite file, created if absent, or a
    /// `postgres://` URL) with `options`, JSON (`{"sqlite":{"synchronous",
    /// "busyTimeout"},"postgres":{"schema","connectTimeout",…}}`; empty
    /// for the defaults). The error says why, on one line, a password in
    /// the URL hidden: [`OpenError::Invalid`] for options or a path that
    /// are not valid, [`OpenError::Failed`] for a store that cannot open.
    pub fn open(spec: &str, options: &str) -> Result<Self, OpenError> {
        let failed = |e: anyhow::Error| OpenError::Failed(shown(&e));
        let options: StoreOptions = if options.trim().is_empty() {
            StoreOptions::default()
        } else {
            serde_json::from_str(options)
                .map_err(|e| OpenError::Invalid(format!("the store's options: {e}")))?
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
            let store = Arc::new(engram::PostgresBackend::open_with(spec, &pg).map_err(failed)?);
            Storage {
                backend: store.clone(),
                audit: store,
            }
        } else if spec.contains("://") {
            Storage::open(spec).map_err(failed)?
        } else if spec.is_empty() {
            return Err(OpenError::Invalid(engram::backend::EMPTY_PATH.into()));
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
                    return Err(OpenError::Invalid(format!(
                        "synchronous must be FULL or NORMAL, not {other:?}"
                    )));
                }
            }
            if let Some(ms) = given.busy_timeout {
                sqlite.busy_timeout = Duration::from_millis(ms);
            }
            let store = Arc::new(engram::SqliteBackend::open_with(spec, &sqlite).map_err(failed)?);
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

    /// The store-wide maintenance call `name` (`export`, `import` or
    /// `expire`, [`engram::surface::maintain`]) with `args`, each domain
    /// opened for maintenance with `settings` (JSON, a domain's but for
    /// `agent` and `mode`, which are each domain's) and what the caller
    /// supplies, at the caller's `time` when the domains take it: the
    /// framed answer, a failure of the host among them.
    pub fn maintain(
        &self,
        name: &str,
        args: &str,
        settings: &str,
        plugins: Plugins,
        time: Option<i64>,
    ) -> String {
        let template = match serde_json::from_str::<serde_json::Value>(settings) {
            Ok(serde_json::Value::Object(template)) => template,
            Ok(_) => return Answer::Input("the settings are not a JSON object".into()).framed(),
            Err(e) => return Answer::Input(format!("the settings are not JSON: {e}")).framed(),
        };
        let settings_of = |agent: &str| {
            let mut settings = template.clone();
            settings.insert("agent".into(), agent.into());
            settings.insert("mode".into(), Access::Maintenance.word().into());
            Settings::parse(&serde_json::Value::Object(settings).to_string())
        };
        // The settings checked once, as any domain's (an agent's id is
        // checked with its domain).
        let opening = match settings_of("-").and_then(|settings| Opening::of(&settings, plugins)) {
            Ok(opening) => opening,
            Err(why) => return Answer::Input(why).framed(),
        };
        let open = |agent: &str| {
            let settings = settings_of(agent).map_err(anyhow::Error::msg)?;
            let (domain, clock) = opening.clone().open(self, &settings)?;
            if let Some(clock) = clock {
                clock.set(time);
            }
            Ok(domain)
        };
        engram::surface::maintain(&self.storage, name, args, open)
            .map(Answer::framed)
            .unwrap_or_else(|error| Failure::of(&error).framed())
    }

    /// Breaks the maintenance lock of `agent`'s domain, whoever holds it:
    /// `{"agent_id","unlocked"}`.
    pub fn unlock(&self, agent: &str) -> Result<String> {
        let unlocked = engram::maintenance::break_lock(self.storage.backend.as_ref(), agent)?;
        Ok(json!({"agent_id": agent, "unlocked": unlocked}).to_string())
    }
}

use engram::surface::{audit, domains};

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
    /// What embeds memories and questions (recall by meaning), reached
    /// through the caller's dispatch (`embed`): its model is the settings'
    /// `embedder`.
    pub embedder: Option<Arc<dyn Dispatch>>,
    /// Whether the caller has a clock of its own: it reads it as each call
    /// begins and hands the time in with the call ([`Handle::call`]), so
    /// the engine's time is never a call back into the caller's language.
    pub clock: bool,
}

/// How a package reaches the algorithms its caller gave: one function,
/// `kind` (`summarize`, `rank`, `count-tokens` or `embed`) and the arguments' JSON
/// text in, the answer's JSON text out framed `V…`, or `E<why>`.
pub trait Dispatch: Send + Sync {
    /// The framed answer of the caller's `kind` for `args`, or why it could
    /// not be reached.
    fn dispatch(&self, kind: &str, args: String) -> Result<String, String>;
}

/// The caller's algorithms behind a [`Dispatch`], as the engine calls them.
struct Dispatched(Arc<dyn Dispatch>);

impl Dispatched {
    /// The answer of the caller's `kind` for `args`, or why not.
    fn call(&self, kind: &str, args: Value) -> Result<Value, String> {
        let framed = self.0.dispatch(kind, args.to_string())?;
        match framed.split_at_checked(1) {
            Some(("V", text)) => {
                serde_json::from_str(text).map_err(|e| format!("the {kind} answered {e}"))
            }
            Some(("E", why)) => Err(why.to_owned()),
            _ => Err(format!(
                "the {kind} answered something other than its answer"
            )),
        }
    }

    /// `value` as a list of strings, or none.
    fn strings(value: &Value) -> Option<Vec<String>> {
        value
            .as_array()?
            .iter()
            .map(|s| s.as_str().map(str::to_owned))
            .collect()
    }
}

impl Summarizer for Dispatched {
    fn summarize(&self, message: &str, response: Option<&str>) -> Result<Summary, String> {
        let answer = self.call("summarize", json!([message, response]))?;
        let summary = answer["summary"]
            .as_str()
            .ok_or("the summarizer answered no string `summary`")?;
        let keywords = Self::strings(&answer["keywords"])
            .ok_or("the summarizer answered no list of strings `keywords`")?;
        Ok(Summary {
            summary: summary.to_owned(),
            keywords,
        })
    }
}

impl Ranker for Dispatched {
    fn rank(
        &self,
        keywords: &[String],
        candidates: &[Candidate],
        k: u32,
    ) -> Result<Vec<String>, String> {
        let candidates: Vec<Value> = candidates
            .iter()
            .map(|c| {
                let mut candidate = json!({"id": c.id, "summary": c.summary,
                    "keywords": c.keywords, "timestamp": c.timestamp.to_string()});
                if let Some(similarity) = c.similarity {
                    candidate["similarity"] = json!(similarity);
                }
                candidate
            })
            .collect();
        let answer = self.call("rank", json!([keywords, candidates, k]))?;
        Self::strings(&answer).ok_or_else(|| "the ranker answered no list of ids".to_owned())
    }
}

/// The caller's embedder behind a [`Dispatch`]: `embed` with `[texts,
/// role]` (`passage` or `query`), answered a list of vectors (lists of
/// numbers); its model is the one the settings name.
struct DispatchedEmbedder {
    dispatch: Dispatched,
    model: Model,
}

impl Embedder for DispatchedEmbedder {
    fn model(&self) -> Model {
        self.model.clone()
    }

    fn embed(&self, texts: &[String], role: Role) -> Result<Vec<Vec<f32>>, String> {
        let role = match role {
            Role::Passage => "passage",
            Role::Query => "query",
        };
        let answer = self.dispatch.call("embed", json!([texts, role]))?;
        let wrong = || "the embedder answered no list of vectors (lists of numbers)".to_owned();
        answer
            .as_array()
            .ok_or_else(wrong)?
            .iter()
            .map(|vector| {
                vector
                    .as_array()?
                    .iter()
                    .map(|x| x.as_f64().map(|x| x as f32))
                    .collect::<Option<Vec<f32>>>()
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(wrong)
    }
}

impl Tokenizer for Dispatched {
    fn count_tokens(&self, text: &str) -> Result<u32, String> {
        self.call("count-tokens", json!([text]))?
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| "the tokenizer answered no whole number of tokens".to_owned())
    }
}

/// The engine's own summarizer, ranker and tokenizer (every host's
/// defaults), reached as a caller's are: `kind` and the arguments' JSON
/// text in, the answer framed `V…` or `E<why>` (see [`Dispatch`]); for a
/// package that hands them to its callers to wrap or combine.
#[derive(Default)]
pub struct Builtin(Config);

impl Dispatch for Builtin {
    fn dispatch(&self, kind: &str, args: String) -> Result<String, String> {
        let Config {
            summarizer,
            ranker,
            tokenizer,
            ..
        } = &self.0;
        let args: Value = serde_json::from_str(&args).map_err(|e| format!("{kind}: {e}"))?;
        let text = |value: &Value| value.as_str().map(str::to_owned);
        let answer = match kind {
            "summarize" => {
                let message = text(&args[0]).ok_or("summarize: the message is no string")?;
                let response = text(&args[1]);
                summarizer
                    .summarize(&message, response.as_deref())
                    .map(|s| json!({"summary": s.summary, "keywords": s.keywords}))
            }
            "rank" => {
                let keywords = Dispatched::strings(&args[0]).ok_or("rank: no list of keywords")?;
                let candidates = args[1]
                    .as_array()
                    .and_then(|candidates| {
                        candidates.iter().map(candidate).collect::<Option<Vec<_>>>()
                    })
                    .ok_or("rank: no list of candidates {id, summary, keywords, timestamp}")?;
                let k = args[2]
                    .as_u64()
                    .and_then(|k| u32::try_from(k).ok())
                    .ok_or("rank: k is no whole number")?;
                ranker.rank(&keywords, &candidates, k).map(|ids| json!(ids))
            }
            "count-tokens" => {
                let text = text(&args[0]).ok_or("count-tokens: the text is no string")?;
                tokenizer.count_tokens(&text).map(|n| json!(n))
            }
            other => return Err(format!("no algorithm {other:?}")),
        };
        Ok(match answer {
            Ok(value) => format!("V{value}"),
            Err(why) => format!("E{why}"),
        })
    }
}

/// A ranker's candidate of its JSON form (`timestamp` a number or its
/// decimal text).
fn candidate(value: &Value) -> Option<Candidate> {
    let timestamp = &value["timestamp"];
    Some(Candidate {
        id: value["id"].as_str()?.to_owned(),
        summary: value["summary"].as_str()?.to_owned(),
        keywords: Dispatched::strings(&value["keywords"])?,
        timestamp: timestamp
            .as_i64()
            .or_else(|| timestamp.as_str()?.parse().ok())?,
        similarity: value["similarity"].as_f64().map(|s| s as f32),
    })
}

impl Plugins {
    /// The algorithms `given` names (`summarizer`, `ranker`, `tokenizer`,
    /// `embedder`),
    /// each reached through `dispatch`; `clock` as [`Plugins::clock`].
    pub fn dispatched(dispatch: Option<Arc<dyn Dispatch>>, given: &[String], clock: bool) -> Self {
        let mut plugins = Plugins {
            clock,
            ..Plugins::default()
        };
        if let Some(dispatch) = dispatch {
            let gives = |name: &str| given.iter().any(|g| g == name);
            let algorithms = || Arc::new(Dispatched(dispatch.clone()));
            if gives("summarizer") {
                plugins.summarizer = Some(algorithms());
            }
            if gives("ranker") {
                plugins.ranker = Some(algorithms());
            }
            if gives("tokenizer") {
                plugins.tokenizer = Some(algorithms());
            }
            if gives("embedder") {
                plugins.embedder = Some(dispatch.clone());
            }
        }
        plugins
    }
}

/// The time the caller's clock gave for the call under way; `i64::MIN`
/// between calls (the system's clock then).
struct CallTime(AtomicI64);

impl CallTime {
    const UNSET: i64 = i64::MIN;

    fn set(&self, time: Option<i64>) {
        self.0.store(time.unwrap_or(Self::UNSET), Ordering::SeqCst);
    }

    fn get(&self) -> i64 {
        match self.0.load(Ordering::SeqCst) {
            Self::UNSET => engram::system_time_ms(),
            time => time,
        }
    }
}

/// Why a domain could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// The settings are not valid: why.
    Invalid(String),
    /// Someone else holds the domain's maintenance lock: who, since when.
    Locked(String),
    /// The contract refuses it: the domain's vectors are another model's
    /// than the embedder's (S-VECTOR), both named.
    Refused(String),
    /// The store or the engine failed: why, on one line.
    Failed(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Invalid(why)
            | OpenError::Locked(why)
            | OpenError::Refused(why)
            | OpenError::Failed(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for OpenError {}

impl OpenError {
    /// The failure framed as a call's are ([`Failure::framed`]): `I`
    /// (invalid settings), `K` (locked) or `F` (failed), then why; `R`
    /// (refused) then its line, `{"error"}`.
    pub fn framed(&self) -> String {
        match self {
            OpenError::Invalid(why) => Answer::Input(why.clone()).framed(),
            OpenError::Locked(why) => Failure::Locked(why.clone()).framed(),
            OpenError::Refused(why) => Failure::Refused(why.clone()).framed(),
            OpenError::Failed(why) => Failure::Failed(why.clone()).framed(),
        }
    }
}

pub use engram::surface::Failure;
pub use engram_model::messages;

/// A failure of a store's call (not a domain's: its trail, its domains,
/// a lock broken), framed as a call's failures are: `F`, then why.
pub fn store_failure(error: &anyhow::Error) -> String {
    format!("F{}", shown(error))
}

/// A call of a closed domain, framed as a call's failures are: `C`, then
/// every package's words ([`engram_model::messages::CLOSED`]).
pub fn closed() -> String {
    format!("C{}", messages::CLOSED)
}

/// A call of a closed store, framed as a call's failures are: `C`, then
/// every package's words ([`engram_model::messages::STORE_CLOSED`]).
pub fn store_closed() -> String {
    format!("C{}", messages::STORE_CLOSED)
}

/// A call made from the call under way's own summarizer, ranker,
/// tokenizer, embedder or store, framed as a lock's failure: `K`, then why
/// ([`engram_model::messages::BUSY`]).
pub fn busy() -> String {
    format!("K{}", messages::BUSY)
}

/// What a domain is opened with besides its settings: the caller's
/// algorithms, its embedder with the settings' model, and whether calls
/// come with the caller's time.
#[derive(Clone)]
struct Opening {
    plugins: Plugins,
    embedder: Option<Arc<dyn Embedder>>,
}

impl Opening {
    /// Checks that an embedder comes with its model in `settings` and a
    /// model with its embedder: why not, when not.
    fn of(settings: &Settings, mut plugins: Plugins) -> Result<Self, String> {
        let embedder = match (plugins.embedder.take(), settings.embedder.clone()) {
            (Some(dispatch), Some((name, dimension))) => Some(Arc::new(DispatchedEmbedder {
                dispatch: Dispatched(dispatch),
                model: Model { name, dimension },
            }) as Arc<dyn Embedder>),
            (None, None) => None,
            (Some(_), None) => {
                return Err(
                    "an embedder needs its model in the settings: \"embedder\": {\"name\",\"dimension\"}".into(),
                );
            }
            (None, Some(_)) => {
                return Err(
                    "the settings name an embedder's model, but no embedder was given".into(),
                );
            }
        };
        Ok(Opening { plugins, embedder })
    }

    /// Opens the domain of `settings` in `store`: the domain, and the
    /// caller's time it reads when calls come with one.
    fn open(self, store: &Store, settings: &Settings) -> Result<(Domain, Option<Arc<CallTime>>)> {
        let Opening { plugins, embedder } = self;
        let engine = engine(settings.limits.max_memory_bytes)?;
        let mode = match settings.mode {
            Access::Online => Mode::Online,
            Access::Maintenance => Mode::Maintenance,
        };
        let storage = &store.storage;
        let mut domain = engine
            .open(
                &settings.agent,
                mode,
                storage.backend.clone(),
                storage.audit.clone(),
            )?
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
        if embedder.is_some() {
            domain = domain.with_embedder(embedder)?;
        }
        let time = plugins
            .clock
            .then(|| Arc::new(CallTime(AtomicI64::new(CallTime::UNSET))));
        if let Some(time) = &time {
            let time = time.clone();
            domain = domain.with_clock(Arc::new(move || time.get()));
        }
        Ok((domain, time))
    }
}

/// One agent's domain, open: its calls by name.
pub struct Handle {
    session: Session<Domain>,
    storage: Storage,
    agent: String,
    mode: Access,
    /// The caller's clock's time for the call under way, when it has one.
    time: Option<Arc<CallTime>>,
}

impl Handle {
    /// Opens the domain `settings` (JSON, [`engram_store::settings`]) name
    /// in `store`, with what the caller supplies.
    pub fn open(store: &Store, settings: &str, plugins: Plugins) -> Result<Self, OpenError> {
        let settings = Settings::parse(settings).map_err(OpenError::Invalid)?;
        let opening = Opening::of(&settings, plugins).map_err(OpenError::Invalid)?;
        let (domain, time) = opening
            .open(store, &settings)
            .map_err(|e| match Failure::of(&e) {
                Failure::Locked(why) => OpenError::Locked(why),
                Failure::Refused(why) => OpenError::Refused(why),
                other => OpenError::Failed(other.message().to_owned()),
            })?;
        Ok(Handle {
            session: Session::new(domain),
            storage: store.storage.clone(),
            agent: settings.agent,
            mode: settings.mode,
            time,
        })
    }

    /// The agent whose domain this is.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// How the domain is open: `online` or `maintenance`.
    pub fn mode(&self) -> &'static str {
        self.mode.word()
    }

    /// How many times the domain's engine instance stopped and was let go
    /// (the next call makes a fresh one).
    pub fn restarts(&mut self) -> u64 {
        self.session.engine().restarts()
    }

    /// Makes the call `name` with `args` (`input` names the input in an
    /// input failure of `write` and `read`; `time` is the caller's clock's,
    /// when the domain was opened with one): the framed answer
    /// ([`Answer::framed`]), or the host's failure. A failure that stopped
    /// the engine's instance also ends the cycles begun in it.
    pub fn call(
        &mut self,
        name: &str,
        input: &str,
        args: &str,
        time: Option<i64>,
    ) -> Result<String, Failure> {
        if let Some(clock) = &self.time {
            clock.set(time);
        }
        let answer = self.answer(name, input, args);
        if let Some(clock) = &self.time {
            clock.set(None);
        }
        answer
            .map(Answer::framed)
            .map_err(|error| Failure::of(&error))
    }

    fn answer(&mut self, name: &str, input: &str, args: &str) -> Result<Answer> {
        engram::surface::answer(
            &mut self.session,
            &self.storage,
            &self.agent,
            name,
            input,
            args,
        )
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
