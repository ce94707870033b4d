//! The ordered key space the engine lays its keys out in and the stores
//! scan: keys are byte strings in byte order, and every key that starts
//! with a prefix lies in one range, `prefix..successor(prefix)`.

#![no_std]
#![warn(missing_docs)]

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;

/// The smallest key greater than every key that starts with `prefix`: the
/// exclusive end of the prefix's range. A prefix made of `0xFF` bytes only
/// (which neither the engine nor a store builds) gets one more `0xFF`
/// byte, above every key of its length.
pub fn successor(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return end;
        }
    }
    vec![u8::MAX; prefix.len() + 1]
}

/// The range `start..end` of every key that starts with `prefix`.
pub fn prefix_range(prefix: Vec<u8>) -> (Vec<u8>, Vec<u8>) {
    let end = successor(&prefix);
    (prefix, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_successor_bounds_every_key_of_the_prefix_and_nothing_else() {
        // (A prefix of 0xFF bytes only is above every key of its length,
        // not every key it starts: checked on its own below.)
        let prefixes: [&[u8]; 4] = [b"a", &[0x01, 0xFF], &[0x00], &[0x7F, 0xFF, 0xFF]];
        for prefix in prefixes {
            let end = successor(prefix);
            let mut inside = prefix.to_vec();
            inside.extend_from_slice(&[0xFF; 8]);
            assert!(prefix < end.as_slice() && inside.as_slice() < end.as_slice());
            // The next prefix of the same length starts at or after it.
            if let Some(next) = next_of_length(prefix) {
                assert!(end.as_slice() <= next.as_slice(), "{prefix:?}");
            }
        }
        assert_eq!(successor(&[0x01, 0xFF]), [0x02]);
        assert_eq!(successor(&[0xFF, 0xFF]), [0xFF, 0xFF, 0xFF]);
    }

    /// The smallest key of `prefix`'s length above it, if there is one.
    fn next_of_length(prefix: &[u8]) -> Option<Vec<u8>> {
        let mut next = prefix.to_vec();
        for i in (0..next.len()).rev() {
            if next[i] < u8::MAX {
                next[i] += 1;
                next[i + 1..].fill(0);
                return Some(next);
            }
        }
        None
    }
}
