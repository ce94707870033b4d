//! What one engine instance may reach ([`DomainState`]), and the host
//! calls the engine makes on it: its agent's part of the store, the audit
//! trail, the domain's settings and the algorithms.

use crate::bindings;
use crate::bindings::engram::memory::{
    audit as wit_audit, domain as wit_domain, embedder as wit_embedder, persistence,
    ranker as wit_ranker, summarizer as wit_summarizer, tokenizer as wit_tokenizer,
};
use crate::{Candidate, Embedder, Mode, Ranker, Role, Summarizer, Tokenizer, backend, types};
use engram_store::Scope;
use std::sync::Arc;

/// What one engine instance may reach: its agent's part of the store (the
/// [`Scope`] every host shares), its algorithms, and how it was opened.
#[derive(Clone)]
pub(crate) struct DomainState {
    pub(crate) scope: Scope,
    pub(crate) mode: Mode,
    pub(crate) summarizer: Arc<dyn Summarizer>,
    pub(crate) ranker: Arc<dyn Ranker>,
    pub(crate) tokenizer: Arc<dyn Tokenizer>,
    pub(crate) embedder: Option<Arc<dyn Embedder>>,
    pub(crate) tier_ceiling: types::PrivacyTier,
    pub(crate) expire_after: Option<u64>,
    pub(crate) limits: crate::limits::Growth,
}

engram_store::engine_entry_from_wit!(wit_audit, types);

fn storage_error(error: backend::StoreError) -> persistence::StorageError {
    match error {
        backend::StoreError::Conflict => persistence::StorageError::Conflict,
        backend::StoreError::Unavailable(why) => persistence::StorageError::Unavailable(why),
    }
}

impl persistence::Host for DomainState {
    fn get(&mut self, key: Vec<u8>) -> Result<Option<Vec<u8>>, persistence::StorageError> {
        self.scope.get(&key).map_err(storage_error)
    }

    fn get_many(
        &mut self,
        keys: Vec<Vec<u8>>,
    ) -> Result<Vec<Option<Vec<u8>>>, persistence::StorageError> {
        self.scope.get_many(&keys).map_err(storage_error)
    }

    fn scan(
        &mut self,
        start: Vec<u8>,
        end: Vec<u8>,
        limit: u32,
        order: persistence::Direction,
    ) -> Result<Vec<persistence::Entry>, persistence::StorageError> {
        let order = match order {
            persistence::Direction::Ascending => backend::Order::Ascending,
            persistence::Direction::Descending => backend::Order::Descending,
        };
        let pairs = self
            .scope
            .scan(&start, &end, limit, order)
            .map_err(storage_error)?;
        Ok(pairs
            .into_iter()
            .map(|(key, value)| persistence::Entry { key, value })
            .collect())
    }

    fn commit(
        &mut self,
        preconditions: Vec<persistence::Precondition>,
        ops: Vec<persistence::Op>,
        trail: Vec<wit_audit::Entry>,
    ) -> Result<(), persistence::StorageError> {
        let preconditions = preconditions
            .into_iter()
            .map(|p| match p {
                persistence::Precondition::Absent(key) => backend::Precondition::Absent(key),
                persistence::Precondition::Holds(e) => backend::Precondition::Holds(e.key, e.value),
            })
            .collect();
        let ops = ops
            .into_iter()
            .map(|op| match op {
                persistence::Op::Put(e) => backend::Op::Put(e.key, e.value),
                persistence::Op::Delete(key) => backend::Op::Delete(key),
            })
            .collect();
        let trail = trail.into_iter().map(engine_entry).collect();
        self.scope
            .commit(preconditions, ops, trail)
            .map_err(storage_error)
    }
}

impl wit_audit::Host for DomainState {
    fn append(&mut self, entry: wit_audit::Entry) -> wasmtime::Result<()> {
        self.scope
            .append(engine_entry(entry))
            .map_err(wasmtime::Error::from_anyhow)
    }
}

impl wit_domain::Host for DomainState {
    fn agent(&mut self) -> String {
        self.scope.agent_id().to_owned()
    }

    fn mode(&mut self) -> wit_domain::AccessMode {
        match self.mode {
            Mode::Online => wit_domain::AccessMode::Online,
            Mode::Maintenance => wit_domain::AccessMode::Maintenance,
        }
    }

    fn now(&mut self) -> i64 {
        self.scope.now()
    }

    fn answer_byte_limit(&mut self) -> u64 {
        self.scope.limits().answer_byte_limit()
    }

    fn read_limit_ceiling(&mut self) -> u32 {
        self.scope.limits().read_limit_ceiling
    }

    fn candidate_limit(&mut self) -> u32 {
        self.scope.limits().candidate_limit
    }

    fn tier_ceiling(&mut self) -> types::PrivacyTier {
        self.tier_ceiling
    }

    fn expire_after(&mut self) -> Option<u64> {
        self.expire_after
    }

    /// 128 random bits, read from the system in one call.
    fn id_entropy(&mut self) -> wasmtime::Result<(u64, u64)> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| {
            wasmtime::Error::from_anyhow(anyhow::anyhow!("no entropy for record ids: {e}"))
        })?;
        let (high, low) = bytes.split_at(8);
        let word = |half: &[u8]| u64::from_le_bytes(half.try_into().expect("8 bytes"));
        Ok((word(high), word(low)))
    }
}

/// Ranks a privacy tier: public < sensitive < private.
pub(crate) fn tier_rank(tier: types::PrivacyTier) -> u8 {
    match tier {
        types::PrivacyTier::Public => 0,
        types::PrivacyTier::Sensitive => 1,
        types::PrivacyTier::Private => 2,
    }
}

impl wit_summarizer::Host for DomainState {
    fn summarize(
        &mut self,
        user_message: String,
        model_response: Option<String>,
    ) -> Result<wit_summarizer::Summary, String> {
        let summarizer = &self.summarizer;
        let summary = plugin("summarizer", || {
            summarizer.summarize(&user_message, model_response.as_deref())
        })?;
        if let Some(why) = self
            .scope
            .limits()
            .summary_refusal(&summary.summary, &summary.keywords)
        {
            return Err(why);
        }
        Ok(summary.into())
    }
}

impl wit_ranker::Host for DomainState {
    fn rank(
        &mut self,
        query_keywords: Vec<String>,
        candidates: Vec<wit_ranker::Candidate>,
        k: u32,
    ) -> Result<Vec<String>, String> {
        let candidates: Vec<Candidate> = candidates.into_iter().map(Candidate::from).collect();
        let ranker = &self.ranker;
        plugin("ranker", || ranker.rank(&query_keywords, &candidates, k))
    }
}

impl wit_tokenizer::Host for DomainState {
    fn count_tokens(&mut self, text: String) -> Result<u32, String> {
        let tokenizer = &self.tokenizer;
        plugin("tokenizer", || tokenizer.count_tokens(&text))
    }
}

impl wit_embedder::Host for DomainState {
    fn identity(&mut self) -> Option<wit_embedder::Model> {
        let model = self.embedder.as_ref()?.model();
        Some(wit_embedder::Model {
            name: model.name,
            dimension: model.dimension,
        })
    }

    fn embed(
        &mut self,
        texts: Vec<String>,
        role: wit_embedder::Role,
    ) -> Result<Vec<Vec<f32>>, String> {
        let embedder = self.embedder.as_ref().ok_or("the host has no embedder")?;
        let role = match role {
            wit_embedder::Role::Passage => Role::Passage,
            wit_embedder::Role::Query => Role::Query,
        };
        plugin("embedder", || embedder.embed(&texts, role))
    }
}

/// Calls an algorithm of the host's: one that panics fails the cycle (its
/// error says which), never the host.
fn plugin<T>(name: &str, call: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(call))
        .map_err(|_| format!("the {name} panicked"))?
}

impl bindings::engram::memory::types::Host for DomainState {}
