//! The `engram` command: the memory IO contract and execution cycles on a
//! store. Built natively (the library's [`engram::cli`]: SQLite or
//! PostgreSQL, the engine run by wasmtime in this process; the language
//! packages' `engram` commands run the same function) and for
//! `wasm32-wasip2` (`wasi.rs`: the command component of `engram-cli.wasm`,
//! whose calls go to the engine component and whose store is the
//! provider's, and where the library is empty); both run the same command
//! line (`cli/`).

#[cfg(target_family = "wasm")]
mod cli;
#[cfg(target_family = "wasm")]
mod wasi;

#[cfg(target_family = "wasm")]
use wasi::{binding, platform};

#[cfg(not(target_family = "wasm"))]
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(engram::cli::main())
}

#[cfg(target_family = "wasm")]
fn main() {
    wasi::main()
}
