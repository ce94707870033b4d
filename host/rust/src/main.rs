//! The `engram` command: the memory IO contract and execution cycles on a
//! store. Built natively (`native.rs`: SQLite or PostgreSQL, the engine run
//! by wasmtime in this process) and for `wasm32-wasip2` (`wasi.rs`: the
//! command component of `engram-cli.wasm`, whose calls go to the engine
//! component and whose store is the provider's); both run the same command
//! line (`cli/`).

mod cli;
// Under WASI only its import is reachable: the tools are `engram mcp`'s.
#[cfg_attr(target_family = "wasm", allow(dead_code))]
mod knowledge_graph;

#[cfg(not(target_family = "wasm"))]
mod mcp;
#[cfg(not(target_family = "wasm"))]
mod native;
#[cfg(target_family = "wasm")]
mod wasi;

#[cfg(not(target_family = "wasm"))]
use native::{binding, platform};
#[cfg(target_family = "wasm")]
use wasi::{binding, platform};

#[cfg(not(target_family = "wasm"))]
fn main() -> std::process::ExitCode {
    native::main()
}

#[cfg(target_family = "wasm")]
fn main() {
    wasi::main()
}
