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

#[cfg(test)]
mod tests {
    use super::{ALGORITHMS, API, PY_API, PY_BUILTIN};
    use wasmparser::{Parser, Payload};

    /// The names a component imports and exports itself (not those of the
    /// components and modules nested in it).
    fn world(path: &str) -> (Vec<String>, Vec<String>) {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
        let (mut imports, mut exports) = (Vec::new(), Vec::new());
        let mut depth = 0usize;
        for payload in Parser::new(0).parse_all(&bytes) {
            match payload.expect("a valid component") {
                Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
                Payload::End(_) => depth = depth.saturating_sub(1),
                Payload::ComponentImportSection(section) if depth == 0 => {
                    for import in section {
                        imports.push(import.expect("an import").name.name.to_owned());
                    }
                }
                Payload::ComponentExportSection(section) if depth == 0 => {
                    for export in section {
                        exports.push(export.expect("an export").name.name.to_owned());
                    }
                }
                _ => {}
            }
        }
        imports.sort();
        exports.sort();
        println!("{path}\n  imports: {imports:?}\n  exports: {exports:?}");
        (imports, exports)
    }

    /// The composition imports what the JavaScript host supplies, and
    /// nothing of WASI; it exports the calls only.
    #[test]
    fn the_api_imports_the_engines_imports_and_the_host() {
        let (imports, exports) = world(API);
        let expected: Vec<String> = [
            "engram:js/host@0.1.0",
            "engram:memory/audit@0.1.0",
            "engram:memory/domain@0.1.0",
            "engram:memory/persistence@0.1.0",
            "engram:memory/ranker@0.1.0",
            "engram:memory/summarizer@0.1.0",
            "engram:memory/types@0.1.0",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(imports, expected);
        assert_eq!(exports, ["engram:js/calls@0.1.0"]);
    }

    /// The Python composition imports `engram:py/store` where the
    /// JavaScript one imports `persistence`, `audit`, `domain` and
    /// `engram:js/host`, and the rest the same.
    #[test]
    fn the_python_api_imports_the_store_instead_of_persistence() {
        let (imports, exports) = world(PY_API);
        let expected: Vec<String> = [
            "engram:memory/ranker@0.1.0",
            "engram:memory/summarizer@0.1.0",
            "engram:memory/types@0.1.0",
            "engram:py/store@0.1.0",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(imports, expected);
        assert_eq!(exports, ["engram:js/calls@0.1.0"]);
    }

    /// With the algorithms inside, no summarizer or ranker is imported.
    #[test]
    fn the_builtin_python_api_imports_the_store_and_the_types_only() {
        let (imports, exports) = world(PY_BUILTIN);
        assert_eq!(
            imports,
            ["engram:memory/types@0.1.0", "engram:py/store@0.1.0"]
        );
        assert_eq!(exports, ["engram:js/calls@0.1.0"]);
    }

    /// The algorithms import only the types their exports refer to.
    #[test]
    fn the_algorithms_export_the_summarizer_and_the_ranker() {
        let (imports, exports) = world(ALGORITHMS);
        assert_eq!(imports, ["engram:memory/types@0.1.0"]);
        assert_eq!(
            exports,
            [
                "engram:memory/ranker@0.1.0",
                "engram:memory/summarizer@0.1.0"
            ]
        );
    }
}
