//! The composed WASI components as files: the engine inside them is the
//! engine component itself, byte for byte; nothing but WASI is left for the
//! runtime to supply; each exports what it is run through.

use std::ops::Range;
use std::process::Command;
use wasmparser::{Parser, Payload, Validator};

/// What a component shows at its top level.
struct Shape {
    /// The names it imports.
    imports: Vec<String>,
    /// The names it exports.
    exports: Vec<String>,
    /// Where each component nested in it lies in its bytes.
    components: Vec<Range<usize>>,
}

/// Validates `bytes` as a component and reads its top level.
fn shape(bytes: &[u8]) -> Shape {
    Validator::new()
        .validate_all(bytes)
        .expect("the file is a valid component");
    let mut shape = Shape {
        imports: Vec::new(),
        exports: Vec::new(),
        components: Vec::new(),
    };
    let mut depth = 0u32;
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.expect("the component parses") {
            Payload::ModuleSection { .. } => depth += 1,
            Payload::ComponentSection {
                unchecked_range, ..
            } => {
                if depth == 0 {
                    let start = usize::try_from(unchecked_range.start).unwrap();
                    let end = usize::try_from(unchecked_range.end).unwrap();
                    shape.components.push(start..end);
                }
                depth += 1;
            }
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(section) if depth == 0 => {
                for import in section {
                    let import = import.expect("an import parses");
                    shape.imports.push(import.name.full_name().into_owned());
                }
            }
            Payload::ComponentExportSection(section) if depth == 0 => {
                for export in section {
                    let export = export.expect("an export parses");
                    shape.exports.push(export.name.full_name().into_owned());
                }
            }
            _ => {}
        }
    }
    shape
}

fn read(path: &str) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|err| panic!("reading {path}: {err}"))
}

/// The composed files, by name.
fn composed() -> [(&'static str, Vec<u8>); 3] {
    [
        ("engram-cli.wasm", read(engram_wasi::CLI)),
        ("engram-standalone.wasm", read(engram_wasi::STANDALONE)),
        ("engram-http.wasm", read(engram_wasi::HTTP)),
    ]
}

#[test]
fn the_composed_files_hold_the_engine_component_byte_for_byte() {
    let engine = engram_engine::COMPONENT;
    for (name, bytes) in composed() {
        let nested = shape(&bytes).components;
        assert!(
            nested.iter().any(|range| &bytes[range.clone()] == engine),
            "{name}: none of its {} components is the engine component",
            nested.len()
        );
    }
}

#[test]
fn every_import_of_the_composed_files_is_a_wasi_interface() {
    for (name, bytes) in composed() {
        let imports = shape(&bytes).imports;
        assert!(!imports.is_empty(), "{name} imports nothing");
        // Stable WASI 0.2 interfaces only.
        let foreign: Vec<_> = imports
            .iter()
            .filter(|import| !(import.starts_with("wasi:") && import.contains("@0.2.")))
            .collect();
        assert!(foreign.is_empty(), "{name} imports {foreign:?}");
    }
}

#[test]
fn engram_cli_exports_only_wasi_cli_run() {
    let exports = shape(&read(engram_wasi::CLI)).exports;
    assert_eq!(exports.len(), 1, "{exports:?}");
    assert!(exports[0].starts_with("wasi:cli/run@0.2."), "{exports:?}");
}

#[test]
fn engram_http_exports_only_wasi_http_incoming_handler() {
    let exports = shape(&read(engram_wasi::HTTP)).exports;
    assert_eq!(exports.len(), 1, "{exports:?}");
    assert!(
        exports[0].starts_with("wasi:http/incoming-handler@0.2."),
        "{exports:?}"
    );
}

#[test]
fn engram_standalone_exports_the_engine_interfaces_and_their_types() {
    let exports = shape(&read(engram_wasi::STANDALONE)).exports;
    let mut wanted = vec!["engram:memory/types@0.2.0".to_string()];
    wanted.extend(shape(engram_engine::COMPONENT).exports);
    assert!(wanted.iter().any(|name| name == "engram:memory/io@0.2.0"));
    assert_eq!(exports, wanted);
}

#[test]
fn engram_cli_runs_as_a_wasi_command() {
    let wasmtime = engram_wasi::wasmtime_cli().expect("the wasmtime CLI");
    let output = Command::new(wasmtime)
        .arg("run")
        .arg(engram_wasi::CLI)
        .arg("--help")
        .output()
        .expect("wasmtime runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}\n{stdout}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    for command in ["write", "read"] {
        assert!(stdout.contains(command), "{stdout}");
    }
}

/// Runs `engram-cli.wasm` (compiled ahead once) with `dir` preopened as
/// `/` and `tokenizer` (options of `wasmtime run`) for its tokenizer's
/// table: its exit status and what it printed.
fn engram_cli(dir: &std::path::Path, tokenizer: &[String], args: &[&str]) -> (bool, String) {
    let wasmtime = engram_wasi::wasmtime_cli().expect("the wasmtime CLI");
    let compiled = engram_wasi::precompiled(
        engram_wasi::CLI,
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
    )
    .expect("engram-cli.wasm compiled ahead");
    let output = Command::new(wasmtime)
        .arg("run")
        .arg("--allow-precompiled")
        .args(tokenizer)
        .arg("--dir")
        .arg(format!("{}::/", dir.display()))
        .arg(compiled)
        .args(["--store", "/engram.db"])
        .args(args)
        .output()
        .expect("wasmtime runs");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), printed)
}

// proves B5-F3: the tokenizer's table is read when a token budget first needs it, and only then
#[test]
fn b5_f3_engram_cli_reads_the_tokenizer_table_only_when_a_budget_asks_for_it() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    // A table that is not there: what runs without a budget never notices.
    let missing = vec![
        "--env".to_owned(),
        format!(
            "{}=/no-such-folder/{}",
            engram_wasi::TOKENIZER_VAR,
            engram_wasi::TOKENIZER_FILE
        ),
    ];
    let (ok, printed) = engram_cli(
        dir.path(),
        &missing,
        &[
            "remember",
            "I booked the Hotel Avenida in Lisbon for May.",
            "Noted, the Hotel Avenida.",
            "--agent",
            "alice",
        ],
    );
    assert!(ok, "remember without a table: {printed}");
    let question = [
        "recall",
        "Which hotel did I book in Lisbon?",
        "--agent",
        "alice",
    ];
    let (ok, printed) = engram_cli(dir.path(), &missing, &question);
    assert!(
        ok && printed.contains("Avenida"),
        "recall without a budget: {printed}"
    );

    // A budget needs the table: without it the cycle fails, saying why.
    let budget = [&question[..], &["--token-budget", "100"]].concat();
    let (ok, printed) = engram_cli(dir.path(), &missing, &budget);
    assert!(!ok, "a budget without the table succeeded: {printed}");
    assert!(
        printed.contains("reading the o200k_base table /no-such-folder/"),
        "the failure names the table: {printed}"
    );

    // With the table, the budget is kept.
    let (ok, printed) = engram_cli(dir.path(), &engram_wasi::tokenizer_options(), &budget);
    assert!(
        ok && printed.contains("Avenida"),
        "a budget with the table: {printed}"
    );
    let (ok, printed) = engram_cli(
        dir.path(),
        &engram_wasi::tokenizer_options(),
        &[&question[..], &["--token-budget", "1"]].concat(),
    );
    assert!(
        ok && printed.contains("\"left_out\":1"),
        "a budget of one token: {printed}"
    );
}
