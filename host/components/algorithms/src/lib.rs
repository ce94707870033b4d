//! `engram-algorithms.wasm`: the default summarizer, ranker and tokenizer
//! of every Engram host (`engram-algorithms`: [`ExtractiveSummarizer`],
//! [`Bm25Ranker`], [`O200kTokenizer`]) as a component of their own,
//! exporting `engram:memory/summarizer`, `engram:memory/ranker` and
//! `engram:memory/tokenizer`. The JavaScript and Python packages call it
//! when their caller gives no algorithm of its own, so that their cycles
//! remember, recall and count tokens exactly as the native and WASI
//! hosts'.
//!
//! Built for `wasm32-unknown-unknown`: it imports nothing but the types of
//! `engram:memory/types` its exports refer to.

wit_bindgen::generate!({
    path: ["../../../wit", "../json-layer/wit"],
    world: "engram:js/algorithms",
    generate_all,
});

use exports::engram::memory::{
    ranker as wit_ranker, summarizer as wit_summarizer, tokenizer as wit_tokenizer,
};

/// The largest summary the summarizer may answer, in the measure of a
/// record's size (the bytes of the summary and of each keyword, plus 8 per
/// keyword): the hosts' default `max_record_bytes`, 1 MiB, so that a
/// summary the engine would have to refuse storing fails the cycle here,
/// as it does in the native and WASI hosts.
const MAX_SUMMARY_BYTES: usize = 1 << 20;

/// The component's exports.
struct Algorithms;

export!(Algorithms);

engram_algorithms::wit_guests!(Algorithms, wit_ranker, wit_summarizer, wit_tokenizer, |s| {
    engram_model::size::summary_refusal(&s.summary, &s.keywords, MAX_SUMMARY_BYTES)
});
