//! An in-memory backend: a `BTreeMap` behind a mutex. For tests and for
//! hosts that keep nothing.

use super::{Backend, Op, Order, Pair, Precondition, StoreError};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Mutex, MutexGuard};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

/// An ordered map in memory; everything is gone when it is dropped.
#[derive(Default)]
pub struct MemoryBackend {
    map: Mutex<Map>,
    writers: crate::turns::Turns,
}

impl MemoryBackend {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> Result<MutexGuard<'_, Map>, StoreError> {
        self.map
            .lock()
            .map_err(|_| StoreError::Unavailable("the in-memory store was poisoned".into()))
    }
}

impl Backend for MemoryBackend {
    /// Threads writing one domain take turns.
    fn lock_domain(&self, prefix: &[u8]) -> Result<bool, StoreError> {
        self.writers
            .take(crate::domain_lock_key(prefix))
            .map(|()| true)
    }

    fn unlock_domain(&self, prefix: &[u8]) {
        self.writers.give(crate::domain_lock_key(prefix));
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.lock()?.get(key).cloned())
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: u32,
        order: Order,
    ) -> Result<Vec<Pair>, StoreError> {
        if start >= end {
            return Ok(Vec::new());
        }
        let map = self.lock()?;
        let range = map.range::<[u8], _>((Bound::Included(start), Bound::Excluded(end)));
        let pairs = |iter: &mut dyn Iterator<Item = (&Vec<u8>, &Vec<u8>)>| {
            iter.take(limit as usize)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        Ok(match order {
            Order::Ascending => pairs(&mut range.into_iter()),
            Order::Descending => pairs(&mut range.rev()),
        })
    }

    fn commit(&self, preconditions: &[Precondition], ops: &[Op]) -> Result<(), StoreError> {
        let mut map = self.lock()?;
        let holds = |p: &Precondition| match p {
            Precondition::Absent(key) => !map.contains_key(key),
            Precondition::Holds(key, value) => map.get(key) == Some(value),
        };
        if !preconditions.iter().all(holds) {
            return Err(StoreError::Conflict);
        }
        for op in ops {
            match op {
                Op::Put(key, value) => {
                    map.insert(key.clone(), value.clone());
                }
                Op::Delete(key) => {
                    map.remove(key);
                }
            }
        }
        Ok(())
    }
}
