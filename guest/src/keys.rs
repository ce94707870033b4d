//! The layout of the engine's records and indexes over the ordered key-value
//! store. Every key starts with a one-byte tag; the host adds its own domain
//! prefix in front, which the engine never sees.
//!
//! | tag | key after the tag                         | value                       |
//! |-----|-------------------------------------------|-----------------------------|
//! | `M` | `seq`                                     | last sequence number (u64)  |
//! | `M` | `clock`                                   | last transaction time (i64) |
//! | `R` | record id                                 | the stored record           |
//! | `K` | fact key                                  | current version: id, 0, sequence (8); or its id alone |
//! | `T` | type byte, timestamp (8), sequence (8)    | record id                   |
//! | `I` | request id                                | idempotency entry           |
//! | `W` | keyword length (2), keyword, sequence (8) | record id                   |
//! | `V` | fact key, 0, sequence (8)                 | id of a superseded version  |
//! | `Y` | entity type (1), fact key                 | id of the current entity    |
//! | `O` | from entity (2+n), type (2+n), fact key   | id of the current relation  |
//! | `N` | to entity (2+n), type (2+n), fact key     | id of the current relation  |
//! | `P` | fact key                                  | the key's privacy tier (1)  |
//! | `X` | expiry time (8), sequence (8)             | id of a record that expires |
//! | `Q` | generation (4), sequence (8)              | an ingested memory's summary vector (`vectors.rs`) |
//! | `M` | `vec`, `reembed`                          | the domain's embedding model, a re-embedding under way (`vectors.rs`) |
//!
//! A fact key with no `P` entry is public.
//!
//! A FACT version is found (S-VERSIONS) through `K` while it is current and through `V`
//! once it is superseded: the write that supersedes it moves it, with the
//! sequence number `K` kept for it, so a FACT write adds one index entry,
//! not two. A `K` entry that holds the id alone was written by builds before
//! 2026-11-25, which also gave the current version a `V` entry; both layouts
//! are read (history, export, expiry), and a write over the old one leaves
//! its `V` entry where it is.
//!
//! `(2+n)` is a string with its length in two bytes in front, so one
//! string's entries never mix with a longer string's that starts the same.
//!
//! Timestamps are stored big-endian with the sign bit flipped so that
//! bytewise order is numeric order; the sequence number after it breaks ties
//! in write order.
//!
//! Index entries hold a record id as its 32 hex digits. Records (`R`) and
//! idempotency entries (`I`) are values of the engine's own types, encoded
//! behind one format byte:
//!
//! | byte | encoding |
//! |------|----------|
//! | `2`  | postcard 1.0's wire format, written by this build: fields in declaration order, no names; a variant as its index, a length or an integer wider than a byte as a varint (signed ones zigzagged), a string as its length and UTF-8 bytes, an option as 0 or 1 and the value, a float as 8 little-endian bytes |
//! | `1`  | JSON text, fields by name (the first builds'): neither read nor written; a read that meets one fails, naming it (S-FORMAT) |
//!
//! A record is `Stored` (lib.rs): variant 0 a FACT (`stored-fact`), 1 an
//! EVENT (its id, then the `event` as written), 2 a STATE (`stored-state`);
//! the types and their field order are the WIT's. A change to any of them
//! is a new format byte, and the old one stays readable.
//!
//! A record that expires (`domain.expire-after`) is kept as format `3`:
//! its expiry time (a zigzag varint), then the record as format `2` holds
//! it. One that does not is written as format `2`, as before expiry was
//! kept.

use engram_keyspace::{prefix_range, successor};

/// The key of the domain's sequence counter.
pub const SEQ: &[u8] = b"Mseq";

/// The key of the domain's transaction clock: the last transaction time a
/// FACT version was given (8 bytes, big-endian, two's complement), so the
/// next is later whatever the host's clock says (MT-2). Absent in a domain
/// that has none yet, and in stores written before it was kept.
pub const CLOCK: &[u8] = b"Mclock";

const RECORD: u8 = b'R';
const FACT_KEY: u8 = b'K';
const TIME: u8 = b'T';
const IDEMPOTENCY: u8 = b'I';
const KEYWORD: u8 = b'W';
const VERSION: u8 = b'V';
const ENTITY_TYPE: u8 = b'Y';
const TIER: u8 = b'P';
const EXPIRY: u8 = b'X';
/// The edge-index tag of outgoing relationships.
pub const OUTGOING: u8 = b'O';
/// The edge-index tag of incoming relationships.
pub const INCOMING: u8 = b'N';

/// The time-index type byte of EVENT records.
pub const EVENT: u8 = b'E';
/// The time-index type byte of STATE records.
pub const STATE: u8 = b'S';

fn tagged(tag: u8, rest: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + rest.len());
    key.push(tag);
    key.extend_from_slice(rest);
    key
}

/// The key of a stored record.
pub fn record(id: &str) -> Vec<u8> {
    tagged(RECORD, id.as_bytes())
}

/// The key-index entry of a fact key.
pub fn fact_key(key: &str) -> Vec<u8> {
    tagged(FACT_KEY, key.as_bytes())
}

/// The privacy-tier entry of a fact key.
pub fn tier(key: &str) -> Vec<u8> {
    tagged(TIER, key.as_bytes())
}

/// The value of a fact key's entry: its current version's id and sequence
/// number.
pub fn current(id: &str, seq: u64) -> Vec<u8> {
    let mut value = Vec::with_capacity(id.len() + 9);
    value.extend_from_slice(id.as_bytes());
    value.push(0);
    value.extend_from_slice(&seq.to_be_bytes());
    value
}

/// Reads an index entry's value: a record id, and the sequence number a
/// fact key's entry keeps beside it (`None` in the layout of earlier
/// builds, whose current version also has its `V` entry).
pub fn indexed(value: &[u8]) -> Option<(&str, Option<u64>)> {
    let (id, seq) = match value.iter().position(|&b| b == 0) {
        None => (value, None),
        Some(at) => {
            let seq = <[u8; 8]>::try_from(&value[at + 1..]).ok()?;
            (&value[..at], Some(u64::from_be_bytes(seq)))
        }
    };
    Some((std::str::from_utf8(id).ok()?, seq))
}

/// The range `start..end` that holds every fact-key index entry.
pub fn fact_key_range() -> (Vec<u8>, Vec<u8>) {
    (vec![FACT_KEY], vec![FACT_KEY + 1])
}

/// The idempotency entry of a request id, scoped to the domain (S-IDEMP).
pub fn idempotency(request_id: &str) -> Vec<u8> {
    tagged(IDEMPOTENCY, request_id.as_bytes())
}

/// The version-index entry of a FACT version. Normalized keys hold no 0
/// byte, so the 0 after the key ends it.
pub fn version(key: &str, seq: u64) -> Vec<u8> {
    let mut entry = version_prefix(key);
    entry.extend_from_slice(&seq.to_be_bytes());
    entry
}

/// The range `start..end` of every version of one fact key.
pub fn version_range(key: &str) -> (Vec<u8>, Vec<u8>) {
    prefix_range(version_prefix(key))
}

fn version_prefix(key: &str) -> Vec<u8> {
    let mut prefix = tagged(VERSION, key.as_bytes());
    prefix.push(0);
    prefix
}

/// The range `start..end` of the fact-key index under a key prefix.
pub fn fact_key_prefix_range(prefix: &str) -> (Vec<u8>, Vec<u8>) {
    prefix_range(tagged(FACT_KEY, prefix.as_bytes()))
}

/// The entity-type index entry of an entity's key.
pub fn entity_type(kind: u8, key: &str) -> Vec<u8> {
    [&[ENTITY_TYPE, kind][..], key.as_bytes()].concat()
}

/// The range `start..end` of the entity-type index for one type.
pub fn entity_type_range(kind: u8) -> (Vec<u8>, Vec<u8>) {
    (vec![ENTITY_TYPE, kind], vec![ENTITY_TYPE, kind + 1])
}

/// Appends `text` with its length in two bytes in front. Strings longer
/// than 65,535 bytes are refused by validation before they get here.
fn counted(out: &mut Vec<u8>, text: &str) {
    let len = u16::try_from(text.len()).unwrap_or(u16::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(text.as_bytes());
}

/// The edge-index entry of a relationship's key, under `entity` (its source
/// for [`OUTGOING`], its target for [`INCOMING`]).
pub fn edge(direction: u8, entity: &str, kind: &str, key: &str) -> Vec<u8> {
    let mut entry = edge_prefix(direction, entity, Some(kind));
    entry.extend_from_slice(key.as_bytes());
    entry
}

/// The range `start..end` of an entity's edges in one direction, of one
/// relationship type or of all.
pub fn edge_range(direction: u8, entity: &str, kind: Option<&str>) -> (Vec<u8>, Vec<u8>) {
    prefix_range(edge_prefix(direction, entity, kind))
}

fn edge_prefix(direction: u8, entity: &str, kind: Option<&str>) -> Vec<u8> {
    let mut prefix = vec![direction];
    counted(&mut prefix, entity);
    if let Some(kind) = kind {
        counted(&mut prefix, kind);
    }
    prefix
}

/// The keyword-index entry of an ingested memory for one of its keywords.
/// The length in front keeps one keyword's entries apart from another's.
pub fn keyword(keyword: &str, seq: u64) -> Vec<u8> {
    let mut key = keyword_prefix(keyword);
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

/// The range `start..end` of every keyword-index entry of one keyword.
pub fn keyword_range(keyword: &str) -> (Vec<u8>, Vec<u8>) {
    prefix_range(keyword_prefix(keyword))
}

fn keyword_prefix(keyword: &str) -> Vec<u8> {
    let mut key = vec![KEYWORD];
    counted(&mut key, keyword);
    key
}

/// The expiry-index entry of a record that expires at `at`.
pub fn expiry(at: i64, seq: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(17);
    key.push(EXPIRY);
    key.extend_from_slice(&encode_timestamp(at));
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

/// The range `start..end` of the expiry-index entries of records whose
/// expiry is at or before `now`, earliest first.
pub fn expired_range(now: i64) -> (Vec<u8>, Vec<u8>) {
    let last = [&[EXPIRY][..], &encode_timestamp(now)].concat();
    (vec![EXPIRY], successor(&last))
}

/// The sequence number of an expiry-index entry.
pub fn expiry_seq(key: &[u8]) -> Option<u64> {
    match key {
        [EXPIRY, rest @ ..] if rest.len() == 16 => {
            <[u8; 8]>::try_from(&rest[8..]).ok().map(u64::from_be_bytes)
        }
        _ => None,
    }
}

/// The sequence number of a time-index entry's key.
pub fn time_seq(key: &[u8]) -> Option<u64> {
    match key {
        [TIME, _, rest @ ..] if rest.len() == 16 => {
            <[u8; 8]>::try_from(&rest[8..]).ok().map(u64::from_be_bytes)
        }
        _ => None,
    }
}

/// Maps a timestamp to 8 bytes whose bytewise order is numeric order.
pub fn encode_timestamp(ts: i64) -> [u8; 8] {
    ((ts as u64) ^ (1 << 63)).to_be_bytes()
}

/// The time-index entry of an EVENT or STATE record.
pub fn time(kind: u8, ts: i64, seq: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(18);
    key.push(TIME);
    key.push(kind);
    key.extend_from_slice(&encode_timestamp(ts));
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

/// The range `start..end` of time-index entries of one kind whose timestamp
/// lies in `from..=to`.
pub fn time_range(kind: u8, from: i64, to: i64) -> (Vec<u8>, Vec<u8>) {
    let start = [&[TIME, kind][..], &encode_timestamp(from)].concat();
    let last = [&[TIME, kind][..], &encode_timestamp(to)].concat();
    (start, successor(&last))
}

/// The range `start..end` of every time-index entry of one kind.
pub fn time_all(kind: u8) -> (Vec<u8>, Vec<u8>) {
    (vec![TIME, kind], vec![TIME, kind + 1])
}

/// A record id made of 128 random bits: 32 lower-case hex digits.
pub fn record_id((high, low): (u64, u64)) -> String {
    format!("{high:016x}{low:016x}")
}

/// The ranges an export reads, in the order it reads them: idempotency
/// entries, key tiers (before any record, so an imported record is never
/// shown above its tier), the time index (EVENT and STATE records), the
/// version index (superseded FACT versions), the fact keys (current
/// versions). A page's continuation is a key in the range it stopped in.
pub fn export_ranges() -> [(Vec<u8>, Vec<u8>); 5] {
    [IDEMPOTENCY, TIER, TIME, VERSION, FACT_KEY].map(|tag| (vec![tag], vec![tag + 1]))
}

/// What an exported key is an entry of.
pub enum Exported<'a> {
    /// An idempotency entry of this request id (bytes as stored).
    Request(&'a [u8]),
    /// A fact key's entry (its current version).
    Current,
    /// The tier entry of this fact key.
    Tier(&'a [u8]),
    /// A time-index entry with this sequence number.
    Time(u64),
    /// A version-index entry with this sequence number.
    Version(u64),
}

/// Reads a key of an export range back.
pub fn exported(key: &[u8]) -> Option<Exported<'_>> {
    let seq = |key: &[u8]| {
        let tail = key.len().checked_sub(8).map(|at| &key[at..])?;
        <[u8; 8]>::try_from(tail).ok().map(u64::from_be_bytes)
    };
    match key.split_first()? {
        (&IDEMPOTENCY, rest) => Some(Exported::Request(rest)),
        (&FACT_KEY, _) => Some(Exported::Current),
        (&TIER, rest) => Some(Exported::Tier(rest)),
        (&TIME, rest) if rest.len() == 17 => Some(Exported::Time(seq(rest)?)),
        (&VERSION, rest) if rest.len() > 9 => Some(Exported::Version(seq(rest)?)),
        _ => None,
    }
}

/// Whether `text` has the shape of a record id.
pub fn is_record_id(text: &str) -> bool {
    text.len() == 32 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_order_bytewise_as_numbers() {
        let values = [i64::MIN, -1_000, -1, 0, 1, 1_000, i64::MAX];
        for pair in values.windows(2) {
            assert!(
                encode_timestamp(pair[0]) < encode_timestamp(pair[1]),
                "{pair:?}"
            );
        }
    }

    #[test]
    fn a_time_range_holds_its_bounds_and_nothing_outside() {
        let (start, end) = time_range(EVENT, -5, 7);
        for (ts, inside) in [(-6, false), (-5, true), (0, true), (7, true), (8, false)] {
            for seq in [0, 1, u64::MAX] {
                let key = time(EVENT, ts, seq);
                assert_eq!(key >= start && key < end, inside, "ts {ts} seq {seq}");
            }
        }
        let (start, end) = time_range(EVENT, i64::MAX, i64::MAX);
        let key = time(EVENT, i64::MAX, u64::MAX);
        assert!(key >= start && key < end);
        assert!(time(STATE, i64::MIN, 0) >= end);
    }

    #[test]
    fn the_expired_range_holds_what_expired_by_now_and_nothing_later() {
        let (start, end) = expired_range(100);
        for (at, inside) in [(i64::MIN, true), (99, true), (100, true), (101, false)] {
            for seq in [0, 1, u64::MAX] {
                let key = expiry(at, seq);
                assert_eq!(key >= start && key < end, inside, "at {at} seq {seq}");
                assert_eq!(expiry_seq(&key), Some(seq));
            }
        }
        assert!(time(EVENT, 0, 0) < start);
    }

    #[test]
    fn keyword_ranges_hold_one_keyword_only() {
        let (start, end) = keyword_range("par");
        assert!(keyword("par", 0) >= start && keyword("par", u64::MAX) < end);
        for other in ["pa", "paris", "par\u{0}", "pas", ""] {
            let key = keyword(other, 7);
            assert!(key < start || key >= end, "{other:?}");
        }
    }

    #[test]
    fn record_ids_keep_every_random_bit() {
        assert_eq!(record_id((0, 1)), "00000000000000000000000000000001");
        assert_eq!(record_id((u64::MAX, 0)), "ffffffffffffffff0000000000000000");
        assert_ne!(record_id((1, 0)), record_id((0, 1)));
    }
}
