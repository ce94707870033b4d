//! The limits a server of the API keeps, each refused with a status of its
//! own before any domain sees the call (docs/http.md).

use std::time::Duration;

/// A server's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The largest body a call may have, in bytes: 413 beyond it.
    pub max_body_bytes: usize,
    /// How many calls may be under way at once: 503 beyond it.
    pub max_calls: usize,
    /// How many calls may wait for one agent: 429 beyond it.
    pub max_waiting: usize,
    /// How long a body may take to arrive (408), and a call may wait for
    /// its agent (503).
    pub wait: Duration,
    /// How many agents' domains a server keeps open between calls (the
    /// least recently used idle one is closed beyond it).
    pub max_agents: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 8 << 20,
            max_calls: 64,
            max_waiting: 32,
            wait: Duration::from_secs(30),
            max_agents: 256,
        }
    }
}
