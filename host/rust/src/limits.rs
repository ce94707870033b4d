//! What the host measures and enforces around the engine: the size of a
//! record before it enters the engine, and the clock that stops a call that
//! runs too long.

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

pub use crate::json::{fact_payload_size, record_size, summary_size};

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
