//! Builds the components of Engram's JavaScript package (its wasm driver,
//! for browsers and Workers) and
//! composes the JSON layer and the host layer with the engine component,
//! unchanged (`engram-engine`):
//!
//! 1. adds the `wasm32-unknown-unknown` target with rustup when the
//!    toolchain lacks it;
//! 2. builds the JSON layer (`host/js-components/json-layer`), the default summarizer
//!    and ranker (`host/js-components/algorithms`), the default tokenizer
//!    (`host/js-components/tokenizer`), the HTTP API's decisions for the Worker
//!    (`host/js-components/http-api`) and the host layer of the language hosts
//!    (`host/js-components/adapter`) for `wasm32-unknown-unknown` with the `guest`
//!    profile, in a target folder of their own in `OUT_DIR`;
//! 3. encodes the core modules as components with `wit-component`, as
//!    `engram-engine` does the engine;
//! 4. composes them with `wac-graph`: `engram-host.wasm` is the engine
//!    whose `persistence`, `audit` and `domain` imports, and the JSON
//!    layer's `engram:js/host`, are supplied by the host layer, which
//!    imports a raw store (`engram:adapter/store`, `host/js-components/adapter/wit`) and the
//!    engine's types, summarizer, ranker and tokenizer; it exports `engram:js/calls`
//!    and `engram:adapter/domain`. `engram-host-builtin.wasm` is that with the
//!    summarizer and ranker inside too; those two are `engram-algorithms.wasm`
//!    as they are, and the tokenizer `engram-tokenizer.wasm`, which the
//!    JavaScript package loads when a token budget first needs it, and
//!    `engram-http-api.wasm`, which its Worker routes and authenticates by;
//! 5. writes them to `OUT_DIR` only (`ENGRAM_HOST`, `ENGRAM_HOST_BUILTIN`,
//!    `ENGRAM_JS_ALGORITHMS`, `ENGRAM_JS_TOKENIZER`, `ENGRAM_JS_HTTP_API` for the crate), with the SQLite schema
//!    and the limits' defaults (`limits.json`, of `engram-store`)
//!    the package reads; the crate's binary prints that folder for the
//!    JavaScript package's build.

use anyhow::{Context, Result, ensure};
use engram_build::compose::{Part, read, wire, write_if_changed};
use engram_build::{Build, componentize, rust_target};
use std::path::{Path, PathBuf};
use wac_graph::{CompositionGraph, EncodeOptions};

/// The target the components are built for: no WASI, as the engine.
const TARGET: &str = "wasm32-unknown-unknown";
/// The workspace's profile for components: small (`opt-level = "s"`, LTO,
/// no debug information).
const PROFILE: &str = "guest";
/// The JSON layer's package, and its core module as cargo names it.
const API: (&str, &str) = ("engram-json-layer", "engram_json_layer.wasm");
/// The algorithms' package, and their core module as cargo names it.
const ALGORITHMS: (&str, &str) = (
    "engram-algorithms-component",
    "engram_algorithms_component.wasm",
);
/// The tokenizer's package, and its core module.
const TOKENIZER: (&str, &str) = (
    "engram-tokenizer-component",
    "engram_tokenizer_component.wasm",
);
/// The HTTP API's decisions (for the Worker), and its core module.
const HTTP_API: (&str, &str) = (
    "engram-http-api-component",
    "engram_http_api_component.wasm",
);
/// The host layer of the language hosts, and its core module.
const ADAPTER: (&str, &str) = ("engram-host-adapter", "engram_host_adapter.wasm");
/// The engine with the JSON layer and the host layer.
const HOST_FILE: &str = "engram-host.wasm";
/// The same, with the default summarizer and ranker inside (the tokenizer
/// still imported: it is loaded when a token budget first needs it).
const HOST_BUILTIN_FILE: &str = "engram-host-builtin.wasm";
/// The summarizer's and ranker's component.
const ALGORITHMS_FILE: &str = "engram-algorithms.wasm";
/// The tokenizer's component.
const TOKENIZER_FILE: &str = "engram-tokenizer.wasm";
/// The HTTP API's decisions' component.
const HTTP_API_FILE: &str = "engram-http-api.wasm";
/// The interface the composition exports.
const CALLS: &str = "engram:js/calls@0.1.0";
/// What the host layer does for its host besides the engine's calls.
const DOMAIN: &str = "engram:adapter/domain@0.1.0";
/// An engine import the host layer supplies (with `audit` and `domain`).
const PERSISTENCE: &str = "engram:memory/persistence@0.2.0";
/// What the composition leaves for its host to supply: the raw store, and
/// the engine's types, summarizer, ranker and tokenizer.
const HOST: &[&str] = &["engram:memory/", "engram:adapter/"];

/// The SQLite schema every host runs, put beside the components: the
/// JavaScript package's Durable Object store runs it from there.
const SQLITE_SCHEMA: &str = "host/store/src/sqlite-schema.sql";
const SQLITE_SCHEMA_FILE: &str = "sqlite-schema.sql";
/// The limits' defaults of every host (`engram_store::Limits`), and the
/// audit trail's read bounds (`audit_limit`, `max_audit_limit`), as JSON:
/// what the JavaScript package tells its callers (`DEFAULT_LIMITS`) and
/// holds a read of a trail written in JavaScript to.
const LIMITS_FILE: &str = "limits.json";
/// The PostgreSQL connection's defaults of every host
/// (`engram_store::postgres_defaults`), in ms by the settings' names: the
/// JavaScript package's `DEFAULT_POSTGRES_OPTIONS`.
const POSTGRES_DEFAULTS_FILE: &str = "postgres-defaults.json";
/// The words every package says of a domain's state
/// (`engram_model::messages`): the JavaScript package's `MESSAGES`.
const MESSAGES_FILE: &str = "messages.json";

fn main() -> Result<()> {
    // Not `host/js-components` whole: a build's output may live there.
    let build = Build::new(&[
        "host/js-components/json-layer/src",
        "host/js-components/json-layer/Cargo.toml",
        "host/js-components/json-layer/wit",
        "host/js-components/algorithms/src",
        "host/js-components/algorithms/Cargo.toml",
        "host/js-components/tokenizer/src",
        "host/js-components/tokenizer/Cargo.toml",
        "host/js-components/http-api/src",
        "host/js-components/http-api/Cargo.toml",
        "host/http",
        "host/js-components/adapter/src",
        "host/js-components/adapter/Cargo.toml",
        "host/js-components/adapter/wit",
        "host/model",
        "host/algorithms",
        "host/store/src",
        "host/store/Cargo.toml",
        "guest/keyspace",
        "wit",
    ])?;
    let (out_dir, workspace) = (&build.out_dir, build.workspace.as_path());
    let engine = build.engine()?;

    rust_target::ensure(TARGET, "the JavaScript package's components")?;
    let built = build_modules(workspace, &out_dir.join("js-target"))?;
    let api = componentize(&read(&built.join(API.1))?).context("encoding the JSON layer")?;
    let algorithms =
        componentize(&read(&built.join(ALGORITHMS.1))?).context("encoding the algorithms")?;
    let tokenizer =
        componentize(&read(&built.join(TOKENIZER.1))?).context("encoding the tokenizer")?;
    let adapter =
        componentize(&read(&built.join(ADAPTER.1))?).context("encoding the host layer")?;
    let http_api =
        componentize(&read(&built.join(HTTP_API.1))?).context("encoding the HTTP API")?;
    let host = compose(&engine, &api, &adapter, None).context("composing engram-host.wasm")?;
    let builtin = compose(&engine, &api, &adapter, Some(&algorithms))
        .context("composing engram-host-builtin.wasm")?;

    for (name, bytes, var) in [
        (HOST_FILE, &host, "ENGRAM_HOST"),
        (HOST_BUILTIN_FILE, &builtin, "ENGRAM_HOST_BUILTIN"),
        (ALGORITHMS_FILE, &algorithms, "ENGRAM_JS_ALGORITHMS"),
        (TOKENIZER_FILE, &tokenizer, "ENGRAM_JS_TOKENIZER"),
        (HTTP_API_FILE, &http_api, "ENGRAM_JS_HTTP_API"),
    ] {
        let path = out_dir.join(name);
        write_if_changed(&path, bytes)?;
        println!("cargo:rustc-env={var}={}", path.display());
    }
    let schema = read(&workspace.join(SQLITE_SCHEMA))?;
    write_if_changed(&out_dir.join(SQLITE_SCHEMA_FILE), &schema)?;
    let limits = limits();
    write_if_changed(&out_dir.join(LIMITS_FILE), limits.as_bytes())?;
    let postgres = engram_store::postgres_defaults::json();
    write_if_changed(&out_dir.join(POSTGRES_DEFAULTS_FILE), postgres.as_bytes())?;
    write_if_changed(
        &out_dir.join(MESSAGES_FILE),
        engram_model::messages::json().as_bytes(),
    )?;
    Ok(())
}

/// The limits' defaults of every host as a JSON object, by their Rust
/// names (every field: a new one does not compile until it is here), the
/// audit trail's read bounds and an embeddings endpoint's bounds.
fn limits() -> String {
    let engram_store::Limits {
        read_limit_ceiling,
        candidate_limit,
        max_answer_bytes,
        max_memory_bytes,
        max_record_bytes,
        max_batch_ops,
        max_batch_bytes,
    } = engram_store::Limits::default();
    let fields = [
        ("read_limit_ceiling", u64::from(read_limit_ceiling)),
        ("candidate_limit", u64::from(candidate_limit)),
        ("max_answer_bytes", max_answer_bytes),
        ("max_memory_bytes", max_memory_bytes),
        ("max_record_bytes", max_record_bytes as u64),
        ("max_batch_ops", u64::from(max_batch_ops)),
        ("max_batch_bytes", max_batch_bytes as u64),
        ("audit_limit", u64::from(engram_model::audit::AUDIT_LIMIT)),
        (
            "max_audit_limit",
            u64::from(engram_model::audit::MAX_AUDIT_LIMIT),
        ),
        (
            "endpoint_timeout_ms",
            engram_model::embedding::ENDPOINT_TIMEOUT.as_millis() as u64,
        ),
        (
            "endpoint_batch",
            engram_model::embedding::ENDPOINT_BATCH as u64,
        ),
    ];
    let fields: Vec<String> = fields
        .iter()
        .map(|(name, value)| format!("  \"{name}\": {value}"))
        .collect();
    format!("{{\n{}\n}}\n", fields.join(",\n"))
}

/// Builds the JSON layer, the algorithms, the tokenizer and the host layer
/// for `wasm32-unknown-unknown` in `target_dir`; the folder their core
/// modules are in.
fn build_modules(workspace: &Path, target_dir: &Path) -> Result<PathBuf> {
    let build = rust_target::build(
        workspace,
        target_dir,
        TARGET,
        PROFILE,
        &[API.0, ALGORITHMS.0, TOKENIZER.0, ADAPTER.0, HTTP_API.0],
    );
    rust_target::run(build, "the JavaScript package's components", TARGET)?;
    Ok(target_dir.join(TARGET).join(PROFILE))
}

/// `engram-host.wasm`: the engine's `persistence`, `audit` and `domain`
/// and the JSON layer's `engram:js/host` wired to the host layer, the JSON
/// layer's imports of the engine's interfaces to the engine; what none
/// supplies (`engram:adapter/store`, `engram:memory/types`, the summarizer,
/// ranker and tokenizer) is imported by the composition, once per name;
/// exports `engram:js/calls` and `engram:adapter/domain`. With the
/// `algorithms`, `engram-host-builtin.wasm`: the engine's summarizer and
/// ranker are theirs (the tokenizer is still imported).
fn compose(
    engine: &[u8],
    api: &[u8],
    adapter: &[u8],
    algorithms: Option<&[u8]>,
) -> Result<Vec<u8>> {
    let mut graph = CompositionGraph::new();
    let engine = Part::register(&mut graph, "engram:engine", engine)?;
    let api = Part::register(&mut graph, "engram:js-api", api)?;
    let adapter = Part::register(&mut graph, "engram:host-layer", adapter)?;
    wire(&mut graph, &adapter, &[], HOST)?;
    let exports = adapter.exports(&graph);
    for name in [PERSISTENCE, DOMAIN] {
        ensure!(
            exports.iter().any(|export| export == name),
            "the host layer does not export `{name}`"
        );
    }
    let mut suppliers = vec![&adapter];
    let algorithms = algorithms
        .map(|algorithms| -> Result<Part> {
            let algorithms = Part::register(&mut graph, "engram:algorithms", algorithms)?;
            wire(&mut graph, &algorithms, &[], HOST)?;
            Ok(algorithms)
        })
        .transpose()?;
    suppliers.extend(algorithms.as_ref());
    wire(&mut graph, &engine, &suppliers, HOST)?;
    let mut api_suppliers = vec![&engine];
    api_suppliers.extend(suppliers.iter().copied());
    wire(&mut graph, &api, &api_suppliers, HOST)?;
    ensure!(
        api.exports(&graph).iter().any(|name| name == CALLS),
        "the JSON layer does not export `{CALLS}`"
    );
    let node = graph.alias_instance_export(api.node, CALLS)?;
    graph.export(node, CALLS)?;
    let node = graph.alias_instance_export(adapter.node, DOMAIN)?;
    graph.export(node, DOMAIN)?;
    Ok(graph.encode(EncodeOptions::default())?)
}
