//! The measure a host limits records by, and the reasons it gives when a
//! record or a summary is too large: the bytes of every string, plus 8 for
//! every list item (numbers, enums and options are not counted: a record
//! holds a fixed number of them). The measures of the component's record
//! types are written over this in [`json_wit_conversions!`](crate::json_wit_conversions).

/// Items one import commit takes at most.
pub const IMPORT_BATCH: usize = 500;
/// What one import commit may carry, in the host's measure of records
/// (bytes) and in index entries: well inside every host's batch limits
/// (`max_batch_bytes`, `max_batch_ops`).
pub const IMPORT_BYTES: usize = 4 << 20;
/// See [`IMPORT_BYTES`].
pub const IMPORT_OPS: usize = 4_000;

/// Records one expire commit removes at most: a record takes at most 132
/// deletes (its record, its time or version entry, its expiry entry, and an
/// ingested memory's 128 keyword entries or a current FACT's lookup
/// entries and tier), so a commit stays well inside the hosts' default
/// `max_batch_ops` of 10,000.
pub const EXPIRE_BATCH: u32 = 64;

/// Calls `expire` (a domain's `maintenance.expire`, given how many records
/// to remove at most) until no expired record is left: how many went. A
/// host whose read-limit ceiling is below [`EXPIRE_BATCH`] refuses that
/// limit naming its ceiling (`ceiling_of` reads it from the error): the
/// calls then ask for that many.
pub fn expire_all<E>(
    mut expire: impl FnMut(u32) -> Result<u32, E>,
    ceiling_of: impl Fn(&E) -> Option<u32>,
) -> Result<u64, E> {
    let mut removed = 0u64;
    let mut limit = EXPIRE_BATCH;
    loop {
        let n = match expire(limit) {
            Ok(n) => n,
            Err(e) => match ceiling_of(&e) {
                Some(ceiling) if (1..limit).contains(&ceiling) => {
                    limit = ceiling;
                    continue;
                }
                _ => return Err(e),
            },
        };
        removed += u64::from(n);
        if n < limit {
            return Ok(removed);
        }
    }
}

/// Cuts `items` into import commits within [`IMPORT_BATCH`],
/// [`IMPORT_BYTES`] and [`IMPORT_OPS`], by what each costs: its size in the
/// host's measure and the index entries it writes. An item above a bound
/// on its own goes alone.
pub fn import_batches<T>(items: &[T], cost: impl Fn(&T) -> (usize, usize)) -> Vec<&[T]> {
    let mut batches = Vec::new();
    let (mut start, mut bytes, mut ops) = (0, 0, 0);
    for (i, item) in items.iter().enumerate() {
        let (size, entries) = cost(item);
        if i > start
            && (i - start >= IMPORT_BATCH
                || bytes + size > IMPORT_BYTES
                || ops + entries > IMPORT_OPS)
        {
            batches.push(&items[start..i]);
            (start, bytes, ops) = (i, 0, 0);
        }
        bytes += size;
        ops += entries;
    }
    if start < items.len() {
        batches.push(&items[start..]);
    }
    batches
}

/// A message on one line: control characters (a newline, `\r`, ESC from
/// the input) are shown escaped, never acted on by a terminal.
pub fn one_line(message: &str) -> String {
    message
        .chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

/// What a list item costs beyond its own bytes.
pub const ITEM: usize = 8;

/// The size of a list of strings.
pub fn list_size(items: &[String]) -> usize {
    items.iter().map(|s| s.len() + ITEM).sum()
}

/// The size of a summarizer's answer: its summary and its keywords.
pub fn summary_size(summary: &str, keywords: &[String]) -> usize {
    summary.len() + list_size(keywords)
}

/// Why a record of `size` is refused under a limit of `max` bytes, if it
/// is: the reason that goes into the audit trail.
pub fn record_refusal(size: usize, max: usize) -> Option<String> {
    (size > max).then(|| {
        format!("the record is {size} bytes, above the host's limit of {max} (max_record_bytes)")
    })
}

/// Why a summarizer's answer is refused under a limit of `max` bytes, if it
/// is.
pub fn summary_refusal(summary: &str, keywords: &[String], max: usize) -> Option<String> {
    let size = summary_size(summary, keywords);
    (size > max).then(|| {
        format!("the summary is {size} bytes, above the host's limit of {max} (max_record_bytes)")
    })
}

#[cfg(test)]
mod import_tests {
    use super::*;

    #[test]
    fn import_batches_keep_every_item_in_order_within_each_bound() {
        let items: Vec<(usize, usize)> =
            (0..2_000).map(|i| ((i % 7) * 1_000, 1 + i % 13)).collect();
        let mut big = items.clone();
        big.insert(10, (IMPORT_BYTES + 1, 1));
        for items in [items, big] {
            let batches = import_batches(&items, |c| *c);
            let flat: Vec<_> = batches.iter().flat_map(|b| b.iter().copied()).collect();
            assert_eq!(flat, items, "every item once, in order");
            for batch in &batches {
                let bytes: usize = batch.iter().map(|c| c.0).sum();
                let ops: usize = batch.iter().map(|c| c.1).sum();
                assert!(!batch.is_empty() && batch.len() <= IMPORT_BATCH);
                assert!(batch.len() == 1 || (bytes <= IMPORT_BYTES && ops <= IMPORT_OPS));
            }
        }
    }

    #[test]
    fn one_line_escapes_control_characters_and_keeps_the_rest() {
        assert_eq!(one_line("a\nb\r\u{1b}[31mé"), "a\\nb\\r\\u{1b}[31mé");
    }
}
