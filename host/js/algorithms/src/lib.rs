//! `engram-algorithms.wasm`: the default summarizer and ranker of every
//! Engram host (`engram-algorithms`: [`ExtractiveSummarizer`],
//! [`Bm25Ranker`]) as a component of their own, exporting
//! `engram:memory/summarizer` and `engram:memory/ranker`. The JavaScript
//! package calls it when its caller gives no algorithm of its own, so that
//! its cycles remember and recall exactly as the native and WASI hosts'.
//!
//! Built for `wasm32-unknown-unknown`: it imports nothing but the types of
//! `engram:memory/types` its exports refer to.

wit_bindgen::generate!({
    path: ["../../../wit", "../wit"],
    world: "engram:js/algorithms",
    generate_all,
});

use engram_algorithms::{Bm25Ranker, Candidate, ExtractiveSummarizer, Ranker, Summarizer};
use exports::engram::memory::{ranker as wit_ranker, summarizer as wit_summarizer};

engram_algorithms::wit_conversions!(wit_ranker, wit_summarizer);
use std::sync::LazyLock;

/// The largest summary the summarizer may answer, in the measure of a
/// record's size (the bytes of the summary and of each keyword, plus 8 per
/// keyword): the hosts' default `max_record_bytes`, 1 MiB, so that a
/// summary the engine would have to refuse storing fails the cycle here,
/// as it does in the native and WASI hosts.
const MAX_SUMMARY_BYTES: usize = 1 << 20;

/// The component's exports.
struct Algorithms;

export!(Algorithms);

/// The summarizer cycles call, with its default settings.
static SUMMARIZER: LazyLock<ExtractiveSummarizer> = LazyLock::new(ExtractiveSummarizer::default);

impl wit_summarizer::Guest for Algorithms {
    fn summarize(
        user_message: String,
        model_response: Option<String>,
    ) -> Result<wit_summarizer::Summary, String> {
        let summary = SUMMARIZER.summarize(&user_message, model_response.as_deref())?;
        if let Some(why) = engram_model::size::summary_refusal(
            &summary.summary,
            &summary.keywords,
            MAX_SUMMARY_BYTES,
        ) {
            return Err(why);
        }
        Ok(summary.into())
    }
}

impl wit_ranker::Guest for Algorithms {
    fn rank(
        query_keywords: Vec<String>,
        candidates: Vec<wit_ranker::Candidate>,
        k: u32,
    ) -> Result<Vec<String>, String> {
        let candidates: Vec<Candidate> = candidates.into_iter().map(Candidate::from).collect();
        Bm25Ranker.rank(&query_keywords, &candidates, k)
    }
}
