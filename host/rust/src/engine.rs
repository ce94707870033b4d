//! The engine compiled once ([`Engram`]), and the domains it opens.

use crate::domain::Domain;
use crate::state::DomainState;
use crate::{AuditSink, bindings, cache, limits, maintenance, types};
use crate::{Backend, COMPONENT, Config, Mode, Origin, Storage};
use anyhow::{Context, Result, anyhow, bail};
use engram_store::Scope;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{InstanceAllocationStrategy, PoolingAllocationConfig};

/// What one domain's instance may hold at most, for sizing the pool: the
/// component instantiates a few core modules (the engine and the adapter
/// shims `wit-component` adds), one linear memory and a few tables.
const CORE_INSTANCES_PER_DOMAIN: u32 = 8;
const TABLES_PER_DOMAIN: u32 = 4;
const MEMORIES_PER_DOMAIN: u32 = 1;
const WASM_PAGE: usize = 64 << 10;

/// The engine, compiled once; opens a domain per agent.
pub struct Engram {
    shared: Arc<Shared>,
    origin: Origin,
    cache_file: Option<PathBuf>,
}

/// What an [`Engram`] and every [`Domain`] it opened share.
pub(crate) struct Shared {
    pub(crate) engine: wasmtime::Engine,
    pub(crate) pre: bindings::EnginePre<DomainState>,
    pub(crate) config: Config,
    /// The memory limit, in whole pages.
    pub(crate) memory_bytes: usize,
    /// How many epoch ticks a call may run, when calls have a time limit.
    pub(crate) deadline_ticks: Option<u64>,
    /// How many domains are open, when their number is capped.
    pub(crate) live: AtomicU32,
    pub(crate) _ticker: Option<limits::Ticker>,
}

impl Engram {
    /// Compiles the engine component with the default [`Config`].
    pub fn new() -> Result<Self> {
        Self::with_config(Config::default())
    }

    /// Compiles the engine component, or loads it from
    /// [`Config::cache_dir`] when an earlier compilation with the same
    /// settings left it there.
    pub fn with_config(config: Config) -> Result<Self> {
        if config.read_limit_ceiling == 0
            || config.candidate_limit == 0
            || config.max_answer_bytes == 0
        {
            bail!("the read-limit ceiling and the candidate limit must be at least 1");
        }
        if config.max_record_bytes == 0 || config.max_batch_ops == 0 || config.max_batch_bytes == 0
        {
            bail!("the record and batch limits must be at least 1");
        }
        if config.max_memory_bytes < (2 << 20) || config.max_memory_bytes > (1 << 32) {
            bail!("the memory limit must be between 2 MiB and 4 GiB");
        }
        if config.call_timeout == Some(Duration::ZERO) {
            bail!("a call time limit must be above zero (or None, for no limit)");
        }
        if config.max_live_domains == Some(0) {
            bail!("the number of live domains must be at least 1 (or None, for no cap)");
        }
        let memory_bytes = config.max_memory_bytes.div_ceil(WASM_PAGE) * WASM_PAGE;

        let mut settings = wasmtime::Config::new();
        // Each instance's memory is reserved at the size of its limit, so a
        // pool of slots costs the limit (and a guard) per domain in address
        // space rather than 4 GiB; the price is explicit bounds checks.
        settings.memory_reservation(memory_bytes as u64);
        settings.memory_init_cow(true);
        let epoch = config.call_timeout.map(limits::epoch_plan);
        settings.epoch_interruption(epoch.is_some());
        if let Some(domains) = config.max_live_domains {
            let mut pool = PoolingAllocationConfig::new();
            pool.total_component_instances(domains)
                .total_core_instances(domains.saturating_mul(CORE_INSTANCES_PER_DOMAIN))
                .max_core_instances_per_component(CORE_INSTANCES_PER_DOMAIN)
                .total_memories(domains.saturating_mul(MEMORIES_PER_DOMAIN))
                .max_memories_per_component(MEMORIES_PER_DOMAIN)
                .total_tables(domains.saturating_mul(TABLES_PER_DOMAIN))
                .max_tables_per_component(TABLES_PER_DOMAIN)
                .max_tables_per_module(TABLES_PER_DOMAIN)
                .max_memory_size(memory_bytes)
                .table_elements(config.max_table_elements as usize);
            settings.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        }
        let engine = wasmtime::Engine::new(&settings)
            .map_err(anyhow::Error::from)
            .context("setting up the wasmtime engine")?;
        let loaded = cache::load_or_compile(
            &engine,
            COMPONENT,
            cache::COMPONENT_HASH,
            config.cache_dir.as_deref(),
        )?;
        let mut linker = Linker::new(&engine);
        bindings::Engine::add_to_linker::<DomainState, HasSelf<DomainState>>(
            &mut linker,
            |state| state,
        )?;
        let pre = bindings::EnginePre::new(linker.instantiate_pre(&loaded.component)?)?;
        let ticker = match epoch {
            Some((tick, _)) => {
                Some(limits::Ticker::start(&engine, tick).context("starting the epoch ticker")?)
            }
            None => None,
        };
        Ok(Engram {
            shared: Arc::new(Shared {
                engine,
                pre,
                config,
                memory_bytes,
                deadline_ticks: epoch.map(|(_, ticks)| ticks),
                live: AtomicU32::new(0),
                _ticker: ticker,
            }),
            origin: loaded.origin,
            cache_file: loaded.path,
        })
    }

    /// The compiled component, for inspecting its imports and exports.
    pub fn component(&self) -> &Component {
        self.shared.pre.instance_pre().component()
    }

    /// The wasmtime engine the component is compiled for.
    pub fn engine(&self) -> &wasmtime::Engine {
        &self.shared.engine
    }

    /// The model of the embedder the domains it opens embed with
    /// ([`Config::embedder`]), if it has one.
    pub fn embedder_model(&self) -> Option<crate::algorithms::Model> {
        self.shared
            .config
            .embedder
            .as_ref()
            .map(|embedder| embedder.model())
    }

    /// Whether the component was compiled now or loaded from the cache.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// The cache file the component was loaded from or written to, when
    /// [`Config::cache_dir`] is set.
    pub fn cache_file(&self) -> Option<&Path> {
        self.cache_file.as_deref()
    }

    /// How many domains this engine has open now.
    pub fn live_domains(&self) -> u32 {
        self.shared.live.load(Ordering::SeqCst)
    }

    /// Opens the memory domain of one agent, online, in the store `store`
    /// names: a SQLite file (created if absent) or a `postgres://` URL
    /// ([`Storage::open`]).
    pub fn open_store(&self, store: &str, agent_id: &str) -> Result<Domain> {
        let storage = Storage::open(store)?;
        self.open(agent_id, Mode::Online, storage.backend, storage.audit)
    }

    /// Opens the memory domain of one agent over `backend`: a fresh instance
    /// of the engine whose storage is scoped to that agent (IO-W6), whose
    /// audit entries go to `audit`, and whose writes are allowed by `mode`
    /// (IO-W7). Opening for maintenance takes the domain's maintenance lock,
    /// held until the domain is dropped, and fails while another holds it;
    /// online writes fail while it is held (see [`maintenance`]). Fails at
    /// once when [`Config::max_live_domains`] domains are open.
    pub fn open(
        &self,
        agent_id: &str,
        mode: Mode,
        backend: Arc<dyn Backend>,
        audit: Arc<dyn AuditSink>,
    ) -> Result<Domain> {
        if let Some(problem) = engram_store::scope::agent_id_problem(agent_id) {
            bail!(problem);
        }
        let slot = Slot::take(&self.shared)?;
        let config = &self.shared.config;
        let lock = match mode {
            Mode::Online => None,
            Mode::Maintenance => Some(maintenance::LockGuard::acquire(
                backend.clone(),
                agent_id,
                (config.clock)(),
            )?),
        };
        let state = DomainState {
            scope: Scope::new(
                agent_id,
                backend,
                audit,
                lock.as_ref().map(|l| l.value().to_vec()),
                config.scope_limits(),
                config.clock.clone(),
            ),
            mode,
            summarizer: config.summarizer.clone(),
            ranker: config.ranker.clone(),
            tokenizer: config.tokenizer.clone(),
            embedder: config.embedder.clone(),
            tier_ceiling: types::PrivacyTier::Private,
            expire_after: None,
            limits: crate::limits::Growth::new(
                self.shared.memory_bytes,
                config.max_table_elements as usize,
            ),
        };
        Domain::start(self.shared.clone(), state, lock, slot)
    }
}

/// A domain's claim on one of [`Config::max_live_domains`]; given back when
/// the domain is dropped.
pub(crate) struct Slot(Arc<Shared>);

impl Slot {
    fn take(shared: &Arc<Shared>) -> Result<Self> {
        let max = shared.config.max_live_domains.unwrap_or(u32::MAX);
        shared
            .live
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            })
            .map_err(|_| {
                anyhow!(
                    "all {max} domain slots are in use: close a domain first, \
                     or raise Config::max_live_domains"
                )
            })?;
        Ok(Slot(shared.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::SeqCst);
    }
}
