//! Writers of a domain taking turns within one process: a thread that
//! wants a domain another thread of the process is writing waits until it
//! is let go. What keeps other processes out is the backend's own lock.

use crate::StoreError;
use std::collections::HashSet;
use std::sync::{Condvar, Mutex};

/// The domains (by lock key) a thread of this process is writing.
#[derive(Default)]
pub(crate) struct Turns {
    held: Mutex<HashSet<i64>>,
    freed: Condvar,
}

impl Turns {
    /// Waits until no other thread of the process holds `key`, then holds
    /// it; [`Turns::give`] must follow.
    pub(crate) fn take(&self, key: i64) -> Result<(), StoreError> {
        let poisoned = |_| StoreError::Unavailable("the writers' queue was poisoned".into());
        let mut held = self.held.lock().map_err(poisoned)?;
        while held.contains(&key) {
            held = self.freed.wait(held).map_err(poisoned)?;
        }
        held.insert(key);
        Ok(())
    }

    /// Lets the next thread waiting for `key` in.
    pub(crate) fn give(&self, key: i64) {
        if let Ok(mut held) = self.held.lock() {
            held.remove(&key);
        }
        self.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn threads_wanting_one_key_hold_it_one_at_a_time() {
        let turns = Arc::new(Turns::default());
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (turns, inside, most) = (turns.clone(), inside.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        turns.take(7).unwrap();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                        turns.give(7);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 1);
    }
}
