//! What a host sets for every domain it opens ([`Config`]).

use crate::{
    Bm25Ranker, Clock, Embedder, ExtractiveSummarizer, O200kTokenizer, Ranker, Summarizer,
    Tokenizer, system_time_ms,
};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What a host sets for every domain it opens: the engine's bounds, its
/// algorithms, and how its instances are made.
///
/// The limits, with their defaults (`Config::default()`):
///
/// | limit | default | when it is hit |
/// |---|---|---|
/// | [`read_limit_ceiling`](Config::read_limit_ceiling) | 1,000 | the read is refused with a typed error |
/// | [`max_answer_bytes`](Config::max_answer_bytes) | 16 MiB | the read is refused with `AnswerTooLarge` |
/// | [`candidate_limit`](Config::candidate_limit) | 256 | a retrieval reads no more index entries |
/// | [`max_record_bytes`](Config::max_record_bytes) | 1 MiB | the write is REJECTED and audited with the reason, before the engine runs |
/// | [`max_batch_ops`](Config::max_batch_ops) | 10,000 | the commit is refused: the write is REJECTED or the cycle's commit fails, reason audited |
/// | [`max_batch_bytes`](Config::max_batch_bytes) | 16 MiB | as for `max_batch_ops` |
/// | [`max_memory_bytes`](Config::max_memory_bytes) | 64 MiB | the instance is stopped (a trap): the call errs, the next gets a fresh instance |
/// | [`max_table_elements`](Config::max_table_elements) | 10,000 | as for `max_memory_bytes` |
/// | [`call_timeout`](Config::call_timeout) | 10 s | as for `max_memory_bytes` |
/// | [`max_live_domains`](Config::max_live_domains) | 1,000 | [`Engram::open`] fails at once |
#[derive(Clone)]
pub struct Config {
    /// The largest `limit` a read may carry (IO-G6). 1,000 by default.
    pub read_limit_ceiling: u32,
    /// The most bytes the records of one answer may take in the store: a
    /// read, history or graph call whose records hold more is refused with
    /// `AnswerTooLarge` and returns nothing (IO-G6). A quarter of
    /// [`max_memory_bytes`](Config::max_memory_bytes) at most, whatever is
    /// set here, so no valid read over valid data can run the engine out
    /// of memory. 16 MiB by default.
    pub max_answer_bytes: u64,
    /// The engine's clock; the system clock by default.
    pub clock: Clock,
    /// How many keyword-index entries one RetrieveMemory step may read to
    /// find its candidates (IO-G6). 256 by default.
    pub candidate_limit: u32,
    /// The summarizer cycles call; [`ExtractiveSummarizer`] by default.
    pub summarizer: Arc<dyn Summarizer>,
    /// The ranker cycles call; [`Bm25Ranker`] by default.
    pub ranker: Arc<dyn Ranker>,
    /// What counts the tokens of a prompt's memory lines for a plan with a
    /// token budget; [`O200kTokenizer`] (OpenAI's `o200k_base`) by default.
    pub tokenizer: Arc<dyn Tokenizer>,
    /// What embeds memories' summaries and questions, for recall by meaning
    /// as well as by words (S-VECTOR); `None` (the default): recall by
    /// keywords alone. A domain whose vectors another model made is
    /// refused at [`Engram::open`](crate::Engram::open) until
    /// [`Domain::reembed`](crate::Domain::reembed) has made them again.
    pub embedder: Option<Arc<dyn Embedder>>,
    /// The largest record a write may carry, measured by
    /// [`limits::record_size`] (the bytes of its strings, plus 8 per list
    /// item). A larger write is answered REJECTED, and the reason audited,
    /// before it reaches the engine; a summarizer answer larger than this
    /// fails its cycle. 1 MiB by default.
    pub max_record_bytes: usize,
    /// The most puts and deletes one atomic commit may carry: a write with
    /// its indexes, or every memory a cycle persists. A larger commit is
    /// refused by the host: the write is REJECTED or the cycle's commit
    /// fails, and the reason is in the audit trail. 10,000 by default.
    pub max_batch_ops: u32,
    /// The most bytes (keys and values) one atomic commit may carry; like
    /// [`max_batch_ops`](Config::max_batch_ops). 16 MiB by default.
    pub max_batch_bytes: usize,
    /// The largest linear memory an instance may grow to, in bytes (rounded
    /// up to whole 64 KiB pages; at least 2 MiB: the engine starts with
    /// a little over 1 MiB). Growing past it stops the
    /// instance (a trap). Each instance's slot reserves this much address
    /// space (plus a guard region); only what is touched is resident. 64 MiB
    /// by default.
    pub max_memory_bytes: usize,
    /// The most elements a table of an instance may hold; growing past it
    /// stops the instance. 10,000 by default.
    pub max_table_elements: u32,
    /// How long one call into the engine may run, host calls it makes
    /// included (wall-clock, by epoch interruption). A call past it is
    /// stopped between the limit and the limit plus a tenth; a host call
    /// that blocks is not cut short, the engine is stopped when it returns.
    /// `None` for no limit. 10 s by default.
    pub call_timeout: Option<Duration>,
    /// `Some(n)`: instances come from wasmtime's pooling allocator, with
    /// slots for `n` live domains made ready up front (copy-on-write memory
    /// images make an instance in microseconds); opening one more fails at
    /// once. `None`: each instance is allocated on demand, with no cap.
    /// `Some(1000)` by default.
    pub max_live_domains: Option<u32>,
    /// A folder to keep the compiled component in, so the next
    /// [`Engram`] made with the same settings loads it instead of compiling
    /// it (see [`Engram::origin`]). `None` (the default) compiles every time.
    pub cache_dir: Option<PathBuf>,
}

impl Default for Config {
    /// The store's limits are [`engram_store::Limits`]'s defaults, the ones
    /// every host takes.
    fn default() -> Self {
        let limits = engram_store::Limits::default();
        Config {
            read_limit_ceiling: limits.read_limit_ceiling,
            max_answer_bytes: limits.max_answer_bytes,
            clock: Arc::new(system_time_ms),
            candidate_limit: limits.candidate_limit,
            summarizer: Arc::new(ExtractiveSummarizer::default()),
            ranker: Arc::new(Bm25Ranker),
            tokenizer: Arc::new(O200kTokenizer),
            embedder: None,
            max_record_bytes: limits.max_record_bytes,
            max_batch_ops: limits.max_batch_ops,
            max_batch_bytes: limits.max_batch_bytes,
            max_memory_bytes: usize::try_from(limits.max_memory_bytes).unwrap_or(usize::MAX),
            max_table_elements: 10_000,
            call_timeout: Some(Duration::from_secs(10)),
            max_live_domains: Some(1_000),
            cache_dir: None,
        }
    }
}

impl Config {
    /// The limits a domain's [`Scope`] holds the engine's store calls to.
    pub(crate) fn scope_limits(&self) -> engram_store::Limits {
        engram_store::Limits {
            read_limit_ceiling: self.read_limit_ceiling,
            candidate_limit: self.candidate_limit,
            max_answer_bytes: self.max_answer_bytes,
            max_memory_bytes: self.max_memory_bytes as u64,
            max_record_bytes: self.max_record_bytes,
            max_batch_ops: self.max_batch_ops,
            max_batch_bytes: self.max_batch_bytes,
        }
    }
}
