//! The components the JavaScript package's wasm driver loads (`engram-js-components`'s
//! build script): each imports exactly what its host supplies, nothing of
//! WASI, and exports the calls only (the engine's, or the JSON layer's and
//! the host layer's).

use engram_js_components::{ALGORITHMS, HOST, HOST_BUILTIN, TOKENIZER};
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

/// Checks that the component at `path` imports and exports exactly these.
fn assert_world(path: &str, imports: &[&str], exports: &[&str]) {
    let (found_imports, found_exports) = world(path);
    assert_eq!(found_imports, imports, "the imports of {path}");
    assert_eq!(found_exports, exports, "the exports of {path}");
}

/// The composition imports a raw store where the engine imports
/// `persistence`, `audit` and `domain`, and exports the host layer's calls
/// beside the JSON layer's; nothing of WASI.
#[test]
fn the_host_composition_imports_the_store_instead_of_persistence() {
    assert_world(
        HOST,
        &[
            "engram:adapter/store@0.1.0",
            "engram:memory/embedder@0.2.0",
            "engram:memory/ranker@0.2.0",
            "engram:memory/summarizer@0.2.0",
            "engram:memory/tokenizer@0.2.0",
            "engram:memory/types@0.2.0",
        ],
        &["engram:adapter/domain@0.1.0", "engram:js/calls@0.1.0"],
    );
}

/// With the summarizer and ranker inside, neither is imported; the
/// tokenizer is, so that it is loaded only when a token budget needs it.
#[test]
fn the_builtin_composition_imports_the_store_the_types_the_tokenizer_and_the_embedder() {
    assert_world(
        HOST_BUILTIN,
        &[
            "engram:adapter/store@0.1.0",
            "engram:memory/embedder@0.2.0",
            "engram:memory/tokenizer@0.2.0",
            "engram:memory/types@0.2.0",
        ],
        &["engram:adapter/domain@0.1.0", "engram:js/calls@0.1.0"],
    );
}

/// The algorithms import only the types their exports refer to.
#[test]
fn the_algorithms_export_the_summarizer_and_the_ranker() {
    assert_world(
        ALGORITHMS,
        &["engram:memory/types@0.2.0"],
        &[
            "engram:memory/ranker@0.2.0",
            "engram:memory/summarizer@0.2.0",
        ],
    );
}

/// The tokenizer imports nothing, and carries its table: the composition
/// without it holds no table of tokens.
#[test]
fn the_tokenizer_exports_the_tokenizer_alone_and_the_compositions_hold_no_table() {
    assert_world(TOKENIZER, &[], &["engram:memory/tokenizer@0.2.0"]);
    // Sixteen stretches of the table, from its start to its end, as the
    // table holds them; and the table's size: a composition smaller than
    // the table cannot hold it whole, whatever the stretches look like.
    let table = engram_algorithms::o200k::RANKS;
    let stretches: Vec<&[u8]> = (0..16)
        .map(|i| {
            let at = i * (table.len() - 64) / 15;
            &table[at..at + 64]
        })
        .collect();
    let read = |path: &str| std::fs::read(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let holding = |bytes: &[u8]| {
        stretches
            .iter()
            .filter(|stretch| bytes.windows(64).any(|window| window == **stretch))
            .count()
    };
    assert_eq!(
        holding(&read(TOKENIZER)),
        16,
        "the tokenizer holds its table"
    );
    for path in [HOST, HOST_BUILTIN, ALGORITHMS] {
        let bytes = read(path);
        assert_eq!(
            holding(&bytes),
            0,
            "{path} holds stretches of the table of tokens"
        );
        assert!(
            bytes.len() < table.len(),
            "{path} ({} bytes) is as big as the table of tokens ({} bytes)",
            bytes.len(),
            table.len()
        );
    }
}
