//! OpenAI's `o200k_base` encoding (the GPT-4o, GPT-4.1, GPT-5 and o-series
//! models'), counted: the number of tokens `tiktoken`'s `encode_ordinary`
//! gives a text, without its regular-expression engine (a megabyte of code
//! in a WebAssembly build) and from a compact table of the tokens.
//!
//! Counting is tiktoken's, in two steps:
//!
//! 1. the text is split into pieces by the encoding's pattern
//!    (`tiktoken_rs::O200K_BASE_PAT_STR`), matched here alternative by
//!    alternative with the backtracking that pattern has (its character
//!    classes come from `regex-syntax`'s Unicode tables, by the build
//!    script);
//! 2. each piece is one token if it is one, otherwise its bytes are merged
//!    pair by pair, the pair whose merge has the lowest rank first (the
//!    leftmost on a tie), until no merged pair is a token: the count is the
//!    number of parts left.
//!
//! The table ([`RANKS_FILE`], `o200k_base.ranks`, 1.6 MB) holds every
//! token's bytes in rank order, each after one byte that gives its length.
//! It is built in ([`RANKS`], the feature `table`), or, where every megabyte
//! counts (`engram-cli.wasm`), read from the file [`TABLE_VAR`] names when
//! a token budget first needs it ([`from_file`]). A test checks the counts
//! against `tiktoken-rs` on generated text.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

include!(concat!(env!("OUT_DIR"), "/o200k_classes.rs"));

/// The file name of the table of tokens, as the hosts that read it on first
/// use ship it.
pub const RANKS_FILE: &str = "o200k_base.ranks";

/// The environment variable that names the table's file, for a build that
/// reads it ([`from_file`]).
pub const TABLE_VAR: &str = "ENGRAM_TOKENIZER";

/// The table of tokens ([`RANKS_FILE`]), written by the build.
#[cfg(feature = "table")]
pub const RANKS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.ranks"));

/// Counts `text` with the table read, at the first call, from the file
/// [`TABLE_VAR`] names; kept for the process. What went wrong (no such
/// variable, a file that cannot be read or is no table) fails every count,
/// and so every cycle with a token budget, with a reason that says so.
pub fn from_file(text: &str) -> Result<u32, String> {
    static ENCODING: std::sync::OnceLock<Result<Encoding, String>> = std::sync::OnceLock::new();
    ENCODING
        .get_or_init(|| {
            let path = std::env::var(TABLE_VAR).map_err(|_| {
                format!(
                    "counting tokens needs the o200k_base table ({RANKS_FILE}, shipped beside \
                     this build): set {TABLE_VAR} to its path"
                )
            })?;
            let table = std::fs::read(&path)
                .map_err(|e| format!("reading the o200k_base table {path}: {e}"))?;
            Encoding::from_ranks(&table).map_err(|e| format!("{path}: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)?
        .count_tokens(text)
}

/// The tokens of the encoding, by their bytes.
pub struct Encoding {
    ranks: HashMap<Box<[u8]>, u32>,
}

impl Encoding {
    /// The encoding from its table of tokens (the bytes of [`RANKS_FILE`]).
    pub fn from_ranks(table: &[u8]) -> Result<Self, String> {
        let mut ranks = HashMap::with_capacity(200_000);
        let (mut at, mut rank) = (0, 0u32);
        while at < table.len() {
            let len = usize::from(table[at]);
            let token = table
                .get(at + 1..at + 1 + len)
                .ok_or_else(|| format!("the table of tokens ends inside rank {rank}"))?;
            if len > 0 {
                ranks.insert(Box::from(token), rank);
            }
            at += 1 + len;
            rank += 1;
        }
        if ranks.len() < 256 {
            return Err(format!(
                "the table of tokens holds {} tokens, not every byte",
                ranks.len()
            ));
        }
        Ok(Encoding { ranks })
    }

    /// The number of tokens of `text`, as a tokenizer answers it.
    pub fn count_tokens(&self, text: &str) -> Result<u32, String> {
        u32::try_from(self.count(text)).map_err(|_| "more than 2^32 tokens".to_owned())
    }

    /// The number of tokens of `text`.
    pub fn count(&self, text: &str) -> usize {
        pieces(text)
            .map(|piece| {
                let bytes = piece.as_bytes();
                if self.ranks.contains_key(bytes) {
                    1
                } else {
                    self.merged_parts(bytes)
                }
            })
            .sum()
    }

    /// The rank of `bytes` as one token, if they are one.
    fn rank(&self, bytes: &[u8]) -> Option<u32> {
        self.ranks.get(bytes).copied()
    }

    /// How many parts `piece` (two bytes or more) merges into: the pair
    /// whose merge is the lowest-ranked token first, the leftmost on a tie.
    fn merged_parts(&self, piece: &[u8]) -> usize {
        let n = piece.len();
        if n < 2 {
            return n;
        }
        // Parts as a linked list of their starts; `next[i]` is the start
        // of the part after the one starting at `i` (n: none).
        let mut next: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
        let mut alive = vec![true; n];
        let mut heap = BinaryHeap::new();
        let pair = |start: usize, next: &[usize]| -> Option<u32> {
            let end = *next.get(next[start])?;
            self.rank(&piece[start..end])
        };
        for start in 0..n - 1 {
            if let Some(rank) = pair(start, &next) {
                heap.push(Reverse((rank, start, start + 1, next[start + 1])));
            }
        }
        let mut parts = n;
        while let Some(Reverse((_, start, middle, end))) = heap.pop() {
            // Stale: one of the two parts changed since this was pushed.
            if !alive[start] || !alive[middle] || next[start] != middle || next[middle] != end {
                continue;
            }
            alive[middle] = false;
            next[start] = end;
            if end < n {
                prev[end] = start;
            }
            parts -= 1;
            if let Some(rank) = pair(start, &next) {
                heap.push(Reverse((rank, start, next[start], next[next[start]])));
            }
            let before = prev[start];
            if before < n
                && let Some(rank) = pair(before, &next)
            {
                heap.push(Reverse((rank, before, start, next[start])));
            }
        }
        parts
    }
}

/// Whether `c` is in `class` (sorted inclusive ranges).
fn is(class: &[(u32, u32)], c: char) -> bool {
    let c = u32::from(c);
    class
        .binary_search_by(|&(start, end)| {
            if end < c {
                std::cmp::Ordering::Less
            } else if start > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// The pieces of `text` by the pattern, in order.
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < text.len() {
            let start = at;
            match piece_end(text, start) {
                Some(end) => {
                    at = end;
                    return Some(&text[start..end]);
                }
                // Unmatched text is no token (no character is, by the pattern).
                None => at += next_len(text, start),
            }
        }
        None
    })
}

/// The length in bytes of the character at `at`.
fn next_len(text: &str, at: usize) -> usize {
    text[at..].chars().next().map_or(1, char::len_utf8)
}

/// The character at `at`, if any.
fn char_at(text: &str, at: usize) -> Option<char> {
    text[at..].chars().next()
}

/// The end of the longest run of `class` from `at` (`at` if none).
fn run(text: &str, at: usize, class: &[(u32, u32)]) -> usize {
    text[at..]
        .char_indices()
        .find(|&(_, c)| !is(class, c))
        .map_or(text.len(), |(i, _)| at + i)
}

/// Where the piece at `at` ends: the first alternative of the pattern that
/// matches there, with the match a backtracking engine finds.
fn piece_end(text: &str, at: usize) -> Option<usize> {
    letters(text, at, upper_then_lower)
        .or_else(|| letters(text, at, upper_run))
        .or_else(|| digits(text, at))
        .or_else(|| symbols(text, at))
        .or_else(|| newlines(text, at))
        .or_else(|| spaces(text, at))
}

/// `[^\r\n\p{L}\p{N}]?` then `word` then an optional contraction: the
/// pattern's first two alternatives.
fn letters(text: &str, at: usize, word: fn(&str, usize) -> Option<usize>) -> Option<usize> {
    let prefixed = char_at(text, at)
        .filter(|&c| is(PREFIX, c))
        .and_then(|c| word(text, at + c.len_utf8()));
    prefixed
        .or_else(|| word(text, at))
        .map(|end| contraction(text, end))
}

/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+`: the upper
/// run as long as a lower run can still follow it.
fn upper_then_lower(text: &str, at: usize) -> Option<usize> {
    let upper_end = run(text, at, UPPER);
    // Give back upper characters, longest first, until one lower can start.
    let mut starts: Vec<usize> = text[at..upper_end]
        .char_indices()
        .map(|(i, _)| at + i)
        .collect();
    starts.push(upper_end);
    starts
        .into_iter()
        .rev()
        .find_map(|from| match char_at(text, from) {
            Some(c) if is(LOWER, c) => Some(run(text, from, LOWER)),
            _ => None,
        })
}

/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*`.
fn upper_run(text: &str, at: usize) -> Option<usize> {
    let upper_end = run(text, at, UPPER);
    (upper_end > at).then(|| run(text, upper_end, LOWER))
}

/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` after `at`.
fn contraction(text: &str, at: usize) -> usize {
    let Some(rest) = text[at..].strip_prefix('\'') else {
        return at;
    };
    let mut chars = rest.chars();
    let (first, second) = (chars.next(), chars.next());
    let one = |class: &[(u32, u32)]| first.is_some_and(|c| is(class, c));
    let two = |a: &[(u32, u32)], b: &[(u32, u32)]| one(a) && second.is_some_and(|c| is(b, c));
    let len = |n: usize| 1 + rest.chars().take(n).map(char::len_utf8).sum::<usize>();
    if one(CASE_S) || one(CASE_T) {
        at + len(1)
    } else if two(CASE_R, CASE_E) || two(CASE_V, CASE_E) {
        at + len(2)
    } else if one(CASE_M) {
        at + len(1)
    } else if two(CASE_L, CASE_L) {
        at + len(2)
    } else if one(CASE_D) {
        at + len(1)
    } else {
        at
    }
}

/// `\p{N}{1,3}`.
fn digits(text: &str, at: usize) -> Option<usize> {
    let end = text[at..]
        .char_indices()
        .take(3)
        .take_while(|&(_, c)| is(NUMBER, c))
        .last()
        .map(|(i, c)| at + i + c.len_utf8())?;
    Some(end)
}

/// ` ?[^\s\p{L}\p{N}]+[\r\n/]*`.
fn symbols(text: &str, at: usize) -> Option<usize> {
    let after_space = if text[at..].starts_with(' ') {
        Some(at + 1)
    } else {
        None
    };
    let symbols = |from: usize| {
        let end = run(text, from, SYMBOL);
        (end > from).then(|| {
            text[end..]
                .char_indices()
                .find(|&(_, c)| !matches!(c, '\r' | '\n' | '/'))
                .map_or(text.len(), |(i, _)| end + i)
        })
    };
    after_space.and_then(symbols).or_else(|| symbols(at))
}

/// `\s*[\r\n]+`: the spaces up to and with the last line break among them.
fn newlines(text: &str, at: usize) -> Option<usize> {
    let end = run(text, at, SPACE);
    text[at..end].rfind(['\r', '\n']).map(|i| at + i + 1)
}

/// `\s+(?!\S)|\s+`: the spaces, all but the last when a non-space follows
/// (it goes with what follows), unless that leaves none.
fn spaces(text: &str, at: usize) -> Option<usize> {
    let end = run(text, at, SPACE);
    if end == at {
        return None;
    }
    if end == text.len() {
        return Some(end);
    }
    let last = text[at..end]
        .char_indices()
        .last()
        .map_or(at, |(i, _)| at + i);
    Some(if last > at { last } else { end })
}

#[cfg(all(test, feature = "table"))]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::OnceLock;

    /// The counter, and `tiktoken-rs`'s encoding it must agree with.
    fn both() -> &'static (Encoding, tiktoken_rs::CoreBPE) {
        static BOTH: OnceLock<(Encoding, tiktoken_rs::CoreBPE)> = OnceLock::new();
        BOTH.get_or_init(|| {
            (
                Encoding::from_ranks(RANKS).expect("the built table"),
                tiktoken_rs::o200k_base().expect("tiktoken-rs's o200k_base"),
            )
        })
    }

    fn assert_counts_as_tiktoken(text: &str) {
        let (ours, theirs) = both();
        assert_eq!(
            ours.count(text),
            theirs.encode_ordinary(text).len(),
            "the count of {text:?}"
        );
    }

    /// Characters of every class the pattern tells apart: cased letters
    /// (with the contractions' letters and their case variants, `ſ`
    /// included), title-case, modifier and other letters, combining marks,
    /// digits of three kinds, white space of several kinds, line breaks,
    /// apostrophes, slashes and other symbols.
    const TRICKY: &[char] = &[
        'a', 'b', 's', 't', 'r', 'e', 'v', 'm', 'l', 'd', 'A', 'S', 'T', 'R', 'E', 'V', 'M', 'L',
        'D', 'ſ', 'K', 'é', 'É', 'ß', 'İ', 'Σ', 'ς', 'ǅ', 'ʰ', 'あ', '中', '\u{301}', '\u{903}',
        '\u{20dd}', '0', '7', '٣', 'Ⅻ', '½', ' ', ' ', ' ', '\t', '\n', '\r', '\u{a0}', '\u{2003}',
        '\u{3000}', '\u{200b}', '\u{85}', '\'', '\'', '/', '!', '.', ',', '-', '€', '😀', '"',
    ];

    fn tricky_text() -> impl Strategy<Value = String> {
        let one = prop_oneof![
            8 => proptest::sample::select(TRICKY),
            1 => any::<char>(),
        ];
        proptest::collection::vec(one, 0..48).prop_map(|chars| chars.into_iter().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// B5-F3: the default tokenizer counts as OpenAI's tiktoken does.
        #[test]
        fn b5_f3_counts_as_tiktoken_on_any_text(text in tricky_text()) {
            assert_counts_as_tiktoken(&text);
        }
    }

    #[test]
    fn b5_f3_counts_as_tiktoken_on_prose_code_and_long_runs() {
        for text in [
            "",
            "hello world",
            "I'm sure they'll say it's John's, we've seen what'd happen. DON'T YOU'RE",
            "  leading and trailing   \n\n\t  spaces  \r\n",
            "fn main() {\n    println!(\"{}\", 1_000_000 / 3);\n}\n// http://example.com/a/b",
            "Ünïcödé façade naïve coöperate 東京タワー 한국어 русский العربية ١٢٣٤",
            "e\u{301}te\u{301} – “quotes” — ’apostrophes’ … 😀👍🏽",
        ] {
            assert_counts_as_tiktoken(text);
        }
        // Pieces long enough that no token covers them: many merges.
        assert_counts_as_tiktoken(&"!?".repeat(5_000));
        assert_counts_as_tiktoken(&" ".repeat(10_000));
        assert_counts_as_tiktoken(&"abcdefghij".repeat(2_000));
        assert_counts_as_tiktoken(&"\u{301}".repeat(3_000));
    }

    #[test]
    fn a_damaged_table_is_refused_with_a_reason() {
        let cut = &RANKS[..RANKS.len() - 3];
        assert!(
            Encoding::from_ranks(cut)
                .err()
                .is_some_and(|why| why.contains("ends inside rank"))
        );
        assert!(Encoding::from_ranks(&[1, b'a']).is_err());
    }
}
