//! `engram-tokenizer.wasm`: the default tokenizer of every Engram host
//! (`engram-algorithms`' `O200kTokenizer`: OpenAI's `o200k_base`, with its
//! table of tokens built in) as a component of its own, exporting
//! `engram:memory/tokenizer`. The JavaScript package's wasm driver loads it
//! when a token budget first needs it, so that a domain that never counts
//! never fetches nor compiles it, and counts exactly as the native and WASI
//! hosts do when it does.
//!
//! Built for `wasm32-unknown-unknown`: it imports nothing.

wit_bindgen::generate!({
    path: ["../../../wit", "../json-layer/wit"],
    world: "engram:js/tokenizer",
    generate_all,
});

use engram_algorithms::Tokenizer as _;
use exports::engram::memory::tokenizer as wit_tokenizer;

/// The component's export.
struct Tokenizer;

export!(Tokenizer);

engram_algorithms::wit_tokenizer!(Tokenizer, wit_tokenizer, |text| {
    engram_algorithms::O200kTokenizer.count_tokens(text)
});
