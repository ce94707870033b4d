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

/// Both composed files, by name.
fn composed() -> [(&'static str, Vec<u8>); 2] {
    [
        ("engram-cli.wasm", read(engram_wasi::CLI)),
        ("engram-standalone.wasm", read(engram_wasi::STANDALONE)),
    ]
}

#[test]
fn the_composed_files_hold_the_engine_component_byte_for_byte() {
    let engine = engram_component::COMPONENT;
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
        let foreign: Vec<_> = imports
            .iter()
            .filter(|import| !import.starts_with("wasi:"))
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
fn engram_standalone_exports_the_engine_interfaces_and_their_types() {
    let exports = shape(&read(engram_wasi::STANDALONE)).exports;
    let mut wanted = vec!["engram:memory/types@0.1.0".to_string()];
    wanted.extend(shape(engram_component::COMPONENT).exports);
    assert!(wanted.iter().any(|name| name == "engram:memory/io@0.1.0"));
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
