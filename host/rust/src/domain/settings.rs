//! What a domain is opened with beyond its store: its limits, clock,
//! algorithms, tier ceiling and how long what it writes is kept. A setting
//! reaches the running instance at once, and every later one.

use super::Domain;
use crate::{Clock, Embedder, Ranker, Summarizer, Tokenizer, types};
use std::sync::Arc;

impl Domain {
    /// Holds this domain's calls to `limits` instead of its engine's
    /// ([`Config`]'s read ceiling, candidate, answer, record and batch
    /// limits). The memory its instances may grow to stays its engine's
    /// ([`Config::max_memory_bytes`]); `limits.max_memory_bytes` bounds its
    /// answers to a quarter of it.
    pub fn with_limits(mut self, limits: engram_store::Limits) -> Self {
        self.state.scope.set_limits(limits);
        if let Some(live) = &mut self.live {
            live.store.data_mut().scope.set_limits(limits);
        }
        self
    }

    /// Takes this domain's time (the engine's transaction time and the
    /// audit entries' stamps) from `clock` instead of its engine's
    /// ([`Config::clock`]).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.state.scope.set_clock(clock.clone());
        if let Some(live) = &mut self.live {
            live.store.data_mut().scope.set_clock(clock);
        }
        self
    }

    /// The highest privacy tier this domain's reads may return (MT-1).
    pub fn tier_ceiling(&self) -> types::PrivacyTier {
        self.state.tier_ceiling
    }

    /// Keeps what this domain writes from now on for `ms` milliseconds only
    /// (`domain.expire-after`), or, with `None`, until it is removed
    /// otherwise (the default). A record expires at its time of writing (a
    /// FACT's transaction time, the engine's time for an EVENT or STATE)
    /// plus `ms`; from then on no read answers it, and
    /// [`Domain::expire`] removes it.
    pub fn set_expire_after(&mut self, ms: Option<u64>) {
        self.state.expire_after = ms;
        if let Some(live) = self.live.as_mut() {
            live.store.data_mut().expire_after = ms;
        }
    }

    /// How long this domain keeps what it writes, in milliseconds; `None`
    /// until removed otherwise.
    pub fn expire_after(&self) -> Option<u64> {
        self.state.expire_after
    }

    /// Replaces the summarizer this domain's cycles call.
    pub fn with_summarizer(mut self, summarizer: Arc<dyn Summarizer>) -> Self {
        self.state.summarizer = summarizer.clone();
        if let Some(live) = &mut self.live {
            live.store.data_mut().summarizer = summarizer;
        }
        self
    }

    /// Replaces the ranker this domain's cycles call.
    pub fn with_ranker(mut self, ranker: Arc<dyn Ranker>) -> Self {
        self.state.ranker = ranker.clone();
        if let Some(live) = &mut self.live {
            live.store.data_mut().ranker = ranker;
        }
        self
    }

    /// Replaces the tokenizer this domain's cycles count a prompt's tokens
    /// with.
    pub fn with_tokenizer(mut self, tokenizer: Arc<dyn Tokenizer>) -> Self {
        self.state.tokenizer = tokenizer.clone();
        if let Some(live) = &mut self.live {
            live.store.data_mut().tokenizer = tokenizer;
        }
        self
    }

    /// Replaces the embedder this domain's writes and cycles embed with
    /// (`None`: recall by keywords alone). Refused, naming both models,
    /// when the domain's vectors were made by another model:
    /// [`Domain::reembed`] makes them again.
    pub fn with_embedder(mut self, embedder: Option<Arc<dyn Embedder>>) -> anyhow::Result<Self> {
        self.state.embedder = embedder.clone();
        if let Some(live) = &mut self.live {
            live.store.data_mut().embedder = embedder;
        }
        self.check_model()?;
        Ok(self)
    }
}
