//! What the host measures and enforces around the engine: the size of a
//! record before it enters the engine, and the clock that stops a call that
//! runs too long.

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

pub use crate::json::{fact_payload_size, record_size, summary_size};

/// Which of an instance's limits a growth it asked for ran past.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exceeded {
    /// Its linear memory, past this many bytes.
    Memory(usize),
    /// A table, past this many elements.
    Table(usize),
}

/// An instance's limiter: its memory and table sizes, every growth past
/// them refused as a trap, and which one was refused kept, so that a
/// stopped instance is named by what stopped it, never by an error's words.
#[derive(Clone, Debug)]
pub(crate) struct Growth {
    memory_bytes: usize,
    table_elements: usize,
    exceeded: Option<Exceeded>,
}

impl Growth {
    pub(crate) fn new(memory_bytes: usize, table_elements: usize) -> Self {
        Growth {
            memory_bytes,
            table_elements,
            exceeded: None,
        }
    }

    /// The limit a growth ran past since the last time asked, if one did.
    pub(crate) fn take_exceeded(&mut self) -> Option<Exceeded> {
        self.exceeded.take()
    }

    /// Whether growing to `desired` stays within `limit` and the item's
    /// own `maximum`; past them, `exceeded` is kept and the growth traps.
    fn allow(
        &mut self,
        desired: usize,
        limit: usize,
        maximum: Option<usize>,
        exceeded: Exceeded,
    ) -> wasmtime::Result<bool> {
        if desired > limit || maximum.is_some_and(|max| desired > max) {
            self.exceeded = Some(exceeded);
            return Err(wasmtime::Error::msg(match exceeded {
                Exceeded::Memory(bytes) => format!("growing memory past {bytes} bytes"),
                Exceeded::Table(elements) => format!("growing a table past {elements} elements"),
            }));
        }
        Ok(true)
    }
}

impl wasmtime::ResourceLimiter for Growth {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let limit = self.memory_bytes;
        self.allow(desired, limit, maximum, Exceeded::Memory(limit))
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.exceeded = Some(Exceeded::Memory(self.memory_bytes));
        Err(error)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let limit = self.table_elements;
        self.allow(desired, limit, maximum, Exceeded::Table(limit))
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.exceeded = Some(Exceeded::Table(self.table_elements));
        Err(error)
    }
}

/// Advances an engine's epoch every `tick` on a thread of its own, until
/// dropped. The thread holds only a weak reference to the engine.
pub(crate) struct Ticker {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    pub(crate) fn start(engine: &wasmtime::Engine, tick: Duration) -> std::io::Result<Self> {
        let (stop, stopped) = mpsc::channel::<()>();
        let engine = engine.weak();
        let thread = std::thread::Builder::new()
            .name("engram-epoch".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(tick) {
                    match engine.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                }
            })?;
        Ok(Ticker {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// How often the epoch advances for a call time limit, and how many ticks a
/// call may run: a call is stopped after at least `timeout` and at most
/// `timeout` and one tick (a tenth of it, 1 ms to 1 s).
pub(crate) fn epoch_plan(timeout: Duration) -> (Duration, u64) {
    let tick = (timeout / 10).clamp(Duration::from_millis(1), Duration::from_secs(1));
    let ticks = timeout.as_nanos().div_ceil(tick.as_nanos());
    // One more: the first tick may come at once after the deadline is set.
    (tick, u64::try_from(ticks).unwrap_or(u64::MAX - 1) + 1)
}
