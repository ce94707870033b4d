//! `engram-algorithms.wasm`: the default summarizer and ranker of every
//! Engram host (`engram-algorithms`: `ExtractiveSummarizer`, `Bm25Ranker`)
//! as a component of their own, exporting `engram:memory/summarizer` and
//! `engram:memory/ranker`, composed into `engram-host-builtin.wasm` and
//! called by the JavaScript package when its caller gives one of the two,
//! so that its cycles remember and recall exactly as the native and WASI
//! hosts'. The tokenizer is `engram-tokenizer.wasm`, loaded apart.
//!
//! Built for `wasm32-unknown-unknown`: it imports nothing but the types of
//! `engram:memory/types` its exports refer to.

wit_bindgen::generate!({
    path: ["../../../wit", "../json-layer/wit"],
    world: "engram:js/algorithms",
    generate_all,
});

use exports::engram::memory::{ranker as wit_ranker, summarizer as wit_summarizer};

/// The largest summary the summarizer may answer, in the measure of a
/// record's size (the bytes of the summary and of each keyword, plus 8 per
/// keyword): the hosts' default `max_record_bytes`, 1 MiB, so that a
/// summary the engine would have to refuse storing fails the cycle here,
/// as it does in the native and WASI hosts.
const MAX_SUMMARY_BYTES: usize = 1 << 20;

/// The component's exports.
struct Algorithms;

export!(Algorithms);

engram_algorithms::wit_guests!(Algorithms, wit_ranker, wit_summarizer, |s| {
    engram_model::size::summary_refusal(&s.summary, &s.keywords, MAX_SUMMARY_BYTES)
});
