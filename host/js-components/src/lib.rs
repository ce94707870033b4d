//! The components of Engram's JavaScript package (its wasm driver, for
//! browsers and Workers), built by this
//! crate's build script for `wasm32-unknown-unknown` (no WASI anywhere):
//!
//! - [`HOST`], `engram-host.wasm`: the unchanged engine component
//!   (`engram-engine`) composed with the JSON layer (`host/js-components/json-layer`,
//!   world `engram:js/api` of `host/js-components/json-layer/wit/js.wit`) and the host layer of
//!   the language hosts (`host/js-components/adapter`, world `engram:adapter/adapter`
//!   of `host/js-components/adapter/wit/adapter.wit`). It exports `engram:js/calls`: the
//!   `engram` command line's requests as JSON text in, the very lines the
//!   command line prints out; and `engram:adapter/domain`: opening and closing a
//!   domain with its maintenance lock, forgetting, breaking a lock, listing
//!   domains. The host layer is `engram-store`'s `Scope` and maintenance,
//!   the Rust every host runs: it imports only a raw store
//!   (`engram:adapter/store`), and the composition the engine's summarizer,
//!   ranker, tokenizer and types, which the language host supplies;
//! - [`HOST_BUILTIN`], `engram-host-builtin.wasm`: the same with the
//!   default summarizer and ranker composed in, so it imports neither; it
//!   still imports the tokenizer;
//! - [`ALGORITHMS`], `engram-algorithms.wasm`: the default summarizer and
//!   ranker of every host (`engram-algorithms`), exporting
//!   `engram:memory/summarizer` and `engram:memory/ranker`, for a host to
//!   call when its caller gives one of the two but not the other;
//! - [`TOKENIZER`], `engram-tokenizer.wasm`: the default tokenizer
//!   (`o200k_base`, its table of tokens inside), exporting
//!   `engram:memory/tokenizer`, which the JavaScript package loads when a
//!   token budget first needs it;
//! - [`HTTP_API`], `engram-http-api.wasm`: the HTTP API's decisions
//!   (`engram-http`: routes, tokens, refusals), exporting `engram:js/http`,
//!   by which the Cloudflare Worker routes and authenticates.
//!
//! The build script writes them, with the SQLite schema and the limits'
//! defaults (`limits.json`), into its output folder only; `cargo run -q -p
//! engram-js-components` builds them and prints that folder, which the
//! JavaScript package's `npm run build` asks for.

/// The path of `engram-host.wasm`, the engine with the JSON layer and the
/// host layer, in the build script's output folder.
pub const HOST: &str = env!("ENGRAM_HOST");

/// The path of `engram-host-builtin.wasm`: [`HOST`] with the default
/// algorithms composed in.
pub const HOST_BUILTIN: &str = env!("ENGRAM_HOST_BUILTIN");

/// The path of `engram-algorithms.wasm`, the default summarizer and
/// ranker, in the build script's output folder.
pub const ALGORITHMS: &str = env!("ENGRAM_JS_ALGORITHMS");

/// The path of `engram-tokenizer.wasm`, the default tokenizer, in the build
/// script's output folder.
pub const TOKENIZER: &str = env!("ENGRAM_JS_TOKENIZER");

/// The path of `engram-http-api.wasm`, the HTTP API's decisions, in the
/// build script's output folder.
pub const HTTP_API: &str = env!("ENGRAM_JS_HTTP_API");
