//! `engram mcp`: one agent's memory domain as Model Context Protocol tools
//! ([`serve`], feature `server`), and the knowledge graph of the reference
//! MCP memory server kept as Engram FACTs ([`graph`]), which `engram
//! maintenance import-graph` also writes.
//!
//! Both run on any binding of the engine through the call surface every
//! host shares ([`engram_surface::Engine`], in the JSON model), and
//! the few calls of a [`Domain`] beyond it. The native host's `Domain` and
//! the WASI command's implement it with [`domain_graph!`].

#![warn(missing_docs)]

pub mod graph;
#[cfg(feature = "server")]
mod server;

#[cfg(feature = "server")]
pub use server::{Tools, serve};

use engram_model::json;
use engram_surface::Engine;

/// For [`domain_graph!`]'s expansion in other crates.
#[doc(hidden)]
pub use engram_model;

/// A domain the graph and the server run on: the call surface, and what
/// they need of the domain beyond it.
pub trait Domain: Engine<Fault = anyhow::Error> {
    /// Runs `f` as the domain's one writer: every other writer of the
    /// domain waits until it returns.
    fn exclusively<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> anyhow::Result<T>;
    /// The time the engine is told instead of the clock's, while set.
    fn time(&self) -> Option<i64>;
    /// Names who makes the calls from now on (a token's name), kept in
    /// their audit entries; `None`: nobody named.
    fn set_caller(&mut self, caller: Option<&str>);
    /// Why a write of `record` would be REJECTED for its size, if it would.
    fn oversized(&self, record: &json::Record) -> Option<String>;
}

/// Implements [`Domain`] for a binding's `Domain` (the native host's, the
/// WASI command's), with the binding's `types` module in scope.
#[macro_export]
macro_rules! domain_graph {
    () => {
        impl $crate::Domain for Domain {
            fn exclusively<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> anyhow::Result<T> {
                Domain::exclusively(self, f)
            }

            fn time(&self) -> Option<i64> {
                Domain::time(self)
            }

            fn set_caller(&mut self, caller: Option<&str>) {
                Domain::set_caller(self, caller)
            }

            fn oversized(&self, record: &$crate::engram_model::json::Record) -> Option<String> {
                self.oversized_record(&types::MemoryRecord::from(record.clone()))
            }
        }
    };
}

/// Resolves at SIGINT (Ctrl-C) or SIGTERM, for a server to stop gracefully
/// on: each signal only when nothing else in the process handles it. In a
/// process whose runtime already handles one (Node handles both, to reset
/// the terminal before it exits), taking it over would hand each delivery
/// back and forth between the two handlers; there, the runtime's own
/// handling ends the process (a call under way commits whole or not at all).
#[cfg(feature = "server")]
pub async fn stop_signal() {
    // Each disposition is read before anything here registers a handler.
    let ours = (unhandled(libc::SIGINT), unhandled(libc::SIGTERM));
    let interrupt = async {
        if ours.0 {
            let _ = tokio::signal::ctrl_c().await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    let terminate = async {
        let signal = if ours.1 {
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok()
        } else {
            None
        };
        match signal {
            Some(mut signal) => {
                signal.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}

/// Whether `signal` has its default disposition: no handler installed.
#[cfg(feature = "server")]
fn unhandled(signal: libc::c_int) -> bool {
    // SAFETY: sigaction with a null new action only reads the current one
    // into `current`, a zeroed plain C struct owned here.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut current) == 0
            && current.sa_sigaction == libc::SIG_DFL
    }
}
