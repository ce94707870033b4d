//! What the compiled component itself declares: its imports (Engram's own
//! interfaces, nothing from WASI), its one export, and the shapes of the
//! contract's types as wasmtime sees them in the binary.

mod support;

use std::collections::BTreeMap;
use support::engram;
use wasmtime::component::types::{ComponentFunc, ComponentItem, Type};

const PACKAGE: &str = "engram:memory";
const VERSION: &str = "0.2.0";

fn interface(name: &str) -> String {
    format!("{PACKAGE}/{name}@{VERSION}")
}

/// The functions of an imported or exported instance, by name.
fn functions(item: &ComponentItem) -> BTreeMap<String, ComponentFunc> {
    let ComponentItem::ComponentInstance(instance) = item else {
        panic!("not an instance: {item:?}")
    };
    instance
        .exports(engram().engine())
        .filter_map(|(name, export)| match export.ty {
            ComponentItem::ComponentFunc(f) => Some((name.to_owned(), f)),
            _ => None,
        })
        .collect()
}

fn imports() -> BTreeMap<String, ComponentItem> {
    let ty = engram().component().component_type();
    ty.imports(engram().engine())
        .map(|(name, e)| (name.to_owned(), e.ty))
        .collect()
}

fn exports() -> BTreeMap<String, ComponentItem> {
    let ty = engram().component().component_type();
    ty.exports(engram().engine())
        .map(|(name, e)| (name.to_owned(), e.ty))
        .collect()
}

fn io() -> BTreeMap<String, ComponentFunc> {
    functions(&exports()[&interface("io")])
}

fn param(f: &ComponentFunc, index: usize) -> Type {
    f.params().nth(index).expect("a parameter").1
}

fn field(ty: &Type, name: &str) -> Type {
    let Type::Record(record) = ty else {
        panic!("not a record: {ty:?}")
    };
    record
        .fields()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no field {name}"))
        .ty
}

fn field_names(ty: &Type) -> Vec<String> {
    let Type::Record(record) = ty else {
        panic!("not a record: {ty:?}")
    };
    record.fields().map(|f| f.name.to_owned()).collect()
}

fn case_names(ty: &Type) -> Vec<String> {
    match ty {
        Type::Variant(v) => v.cases().map(|c| c.name.to_owned()).collect(),
        Type::Enum(e) => e.names().map(str::to_owned).collect(),
        _ => panic!("not a variant or enum: {ty:?}"),
    }
}

fn case(ty: &Type, name: &str) -> Option<Type> {
    let Type::Variant(v) = ty else {
        panic!("not a variant: {ty:?}")
    };
    v.cases()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no case {name}"))
        .ty
}

#[test]
fn the_component_imports_only_engram_interfaces_and_nothing_from_wasi() {
    // The strongest sandbox: no filesystem, sockets, clock or randomness of its own.
    let names: Vec<String> = imports().into_keys().collect();
    let expected: Vec<String> = [
        "audit",
        "domain",
        "embedder",
        "persistence",
        "ranker",
        "summarizer",
        "tokenizer",
        "types",
    ]
    .iter()
    .map(|n| interface(n))
    .collect();
    assert_eq!(names, expected);
    assert!(names.iter().all(|n| !n.starts_with("wasi:")));
    let persistence: Vec<String> = functions(&imports()[&interface("persistence")])
        .into_keys()
        .collect();
    assert_eq!(persistence, ["commit", "get", "get-many", "scan"]);
    let domain: Vec<String> = functions(&imports()[&interface("domain")])
        .into_keys()
        .collect();
    assert_eq!(
        domain,
        [
            "agent",
            "answer-byte-limit",
            "candidate-limit",
            "expire-after",
            "id-entropy",
            "mode",
            "now",
            "read-limit-ceiling",
            "tier-ceiling",
        ]
    );
}

#[test]
fn io_r3_the_io_interface_is_the_only_way_in_or_out() {
    // proves IO-R3: reads reach memory only through the engine's exports:
    // `io.read`, the history and graph extensions and the RetrieveMemory
    // step of a cycle, all bounded and audited inside the engine; the
    // maintenance export answers only a domain opened for maintenance. The
    // storage capability is imported by the engine and never exported, so
    // no other module can read through it.
    let names: Vec<String> = exports().into_keys().collect();
    assert_eq!(
        names,
        [
            interface("cycle"),
            interface("graph"),
            interface("history"),
            interface("io"),
            interface("maintenance")
        ]
    );
    let maintenance: Vec<String> = functions(&exports()[&interface("maintenance")])
        .into_keys()
        .collect();
    assert_eq!(
        maintenance,
        ["expire", "export", "import", "reembed", "vector-model"]
    );
    let graph: Vec<String> = functions(&exports()[&interface("graph")])
        .into_keys()
        .collect();
    assert_eq!(
        graph,
        [
            "entities-of-type",
            "get",
            "list",
            "put",
            "relationships-of",
            "traverse"
        ]
    );
    let history: Vec<String> = functions(&exports()[&interface("history")])
        .into_keys()
        .collect();
    assert_eq!(
        history,
        ["as-of", "versions"],
        "each names one key and a bound"
    );
    assert_eq!(io().into_keys().collect::<Vec<_>>(), ["read", "write"]);
    let cycle: Vec<String> = functions(&exports()[&interface("cycle")])
        .into_keys()
        .collect();
    assert_eq!(
        cycle,
        [
            "[method]cycle.commit",
            "[method]cycle.output",
            "[method]cycle.run-stage",
            "[static]cycle.begin"
        ]
    );
}

#[test]
fn io_w1_io_w3_io_w4_a_write_request_is_record_source_and_request_id() {
    // proves IO-W1, IO-W3, IO-W4, IO-T1
    let write = &io()["write"];
    let request = param(write, 0);
    assert_eq!(field_names(&request), ["record", "source", "request-id"]);
    assert_eq!(
        case_names(&field(&request, "record")),
        ["fact", "event", "state"],
        "exactly one of three types"
    );
    let source = field(&request, "source");
    // Traceable, and no field for a semantic judgement.
    assert_eq!(field_names(&source), ["agent-id", "component", "actor"]);
    assert_eq!(
        case_names(&field(&source, "component")),
        ["cognition", "maintenance"]
    );
    assert_eq!(
        case_names(&field(&source, "actor")),
        ["system", "user", "external"]
    );
    assert!(matches!(field(&source, "agent-id"), Type::String));
    assert!(matches!(field(&request, "request-id"), Type::String));
}

#[test]
fn io_w8_a_write_result_is_accepted_with_an_id_or_rejected_with_nothing() {
    // proves IO-W8
    let write = &io()["write"];
    let results: Vec<Type> = write.results().collect();
    assert_eq!(results.len(), 1);
    assert_eq!(case_names(&results[0]), ["accepted", "rejected"]);
    assert!(matches!(case(&results[0], "accepted"), Some(Type::String)));
    assert!(
        case(&results[0], "rejected").is_none(),
        "no reason code crosses the IO"
    );
}

#[test]
fn io_r2_io_g5_the_selectors_are_a_closed_set_of_bounds() {
    // proves IO-R2, IO-G5, IO-R5, IO-R1, IO-T1
    let read = &io()["read"];
    let request = param(read, 0);
    assert_eq!(
        field_names(&request),
        ["record-type", "selector", "request-id"]
    );
    assert_eq!(
        case_names(&field(&request, "record-type")),
        ["fact", "event", "state"]
    );
    let selector = field(&request, "selector");
    assert_eq!(
        case_names(&selector),
        ["by-id", "by-key", "by-time-range", "latest", "limit"]
    );
    let payload = |name: &str| case(&selector, name).expect("every selector carries its bound");
    assert_eq!(field_names(&payload("by-id")), ["id"]);
    assert_eq!(field_names(&payload("by-key")), ["key"]);
    assert_eq!(
        field_names(&payload("by-time-range")),
        ["from", "to", "limit"]
    );
    assert!(
        matches!(field(&payload("by-time-range"), "from"), Type::S64),
        "timestamps are s64"
    );
    assert!(
        matches!(field(&payload("by-time-range"), "limit"), Type::U32),
        "a limit cannot be negative"
    );
    assert_eq!(field_names(&payload("latest")), ["limit"]);
    assert_eq!(field_names(&payload("limit")), ["limit"]);
}

#[test]
fn io_r6_io_g3_io_g4_a_read_answers_records_or_a_typed_error_and_nothing_more() {
    // proves IO-R6, IO-G3, IO-G4, B5-S2, B5-S3
    let read = &io()["read"];
    let result = read.results().next().expect("a result");
    let Type::Result(result) = result else {
        panic!("read returns a result")
    };
    let ok = result.ok().expect("records");
    assert_eq!(field_names(&ok), ["records"]);
    let error = result.err().expect("a typed error");
    assert_eq!(
        case_names(&error),
        [
            "selector-not-allowed",
            "limit-out-of-bounds",
            "invalid-range",
            "invalid-key",
            "invalid-request-id",
            "storage-unavailable",
            "answer-too-large"
        ]
    );
    assert!(
        case(&error, "storage-unavailable").is_none(),
        "no storage detail crosses the IO"
    );
    let Type::List(list) = field(&ok, "records") else {
        panic!("a list")
    };
    let stored = list.ty();
    assert_eq!(case_names(&stored), ["fact", "event", "state"]);
    // Nothing derived at read time: each kind is its id, what was written,
    // and for a FACT the engine's transaction times.
    let fact = case(&stored, "fact").unwrap();
    assert_eq!(
        field_names(&fact),
        ["id", "created-at", "superseded-at", "fact"]
    );
    let event = case(&stored, "event").unwrap();
    assert_eq!(field_names(&event), ["id", "timestamp", "payload"]);
    let ingested = case(&field(&event, "payload"), "ingested").unwrap();
    assert_eq!(
        field_names(&ingested),
        ["session-ref", "summary"],
        "keywords never leave the engine"
    );
    let state = case(&stored, "state").unwrap();
    assert_eq!(field_names(&state), ["id", "state"]);
    // As written, an ingested memory can hold nothing but the B-005 fields.
    let request = param(&io()["write"], 0);
    let event = case(&field(&request, "record"), "event").unwrap();
    assert_eq!(field_names(&event), ["timestamp", "payload"]);
    let ingested = case(&field(&event, "payload"), "ingested").unwrap();
    assert_eq!(
        field_names(&ingested),
        ["session-ref", "summary", "keywords"]
    );
}
