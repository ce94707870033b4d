//! The components of Engram's JavaScript package, built by this crate's
//! build script for `wasm32-unknown-unknown` (no WASI anywhere), to be
//! loaded through jco:
//!
//! - [`API`], `engram-js.wasm`: the JSON layer (`host/js/api`, world
//!   `engram:js/api` of `host/js/wit/js.wit`) composed with the unchanged
//!   engine component (`engram-component`). It exports `engram:js/calls`:
//!   the `engram` command line's requests as JSON text in, the very lines
//!   the command line prints out. It imports the engine's imports
//!   (`engram:memory/persistence`, `audit`, `domain`, `summarizer`,
//!   `ranker`, and the types of `engram:memory/types`) and
//!   `engram:js/host`, all of which the JavaScript host supplies;
//! - [`ALGORITHMS`], `engram-algorithms.wasm`: the default summarizer and
//!   ranker of every host (`engram-algorithms`), exporting
//!   `engram:memory/summarizer` and `engram:memory/ranker`, for the
//!   JavaScript host to hand to the engine when its caller gives no
//!   algorithm of its own.
//!
//! `cargo build -p engram-js` (or a build of a crate that depends on this
//! one) also copies the files to `target/js/` in the workspace (to
//! `$CARGO_TARGET_DIR/js/` when that is set).

/// The path of `engram-js.wasm`, the JSON layer composed with the engine,
/// in the build script's output folder.
pub const API: &str = env!("ENGRAM_JS_API");

/// The path of `engram-algorithms.wasm`, the default algorithms, in the
/// build script's output folder.
pub const ALGORITHMS: &str = env!("ENGRAM_JS_ALGORITHMS");

/// The path of `engram-py.wasm`: `engram-js.wasm` whose engine's
/// `engram:memory/persistence`, `audit` and `domain` and whose JSON
/// layer's `engram:js/host` are supplied by the Python package's adapter
/// (`host/python/adapter`), which imports `engram:py/store` instead.
pub const PY_API: &str = env!("ENGRAM_PY_API");

/// The path of `engram-py-builtin.wasm`: [`PY_API`] with the default
/// algorithms composed in, so it imports no summarizer and no ranker.
pub const PY_BUILTIN: &str = env!("ENGRAM_PY_BUILTIN");
