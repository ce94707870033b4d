//! Writes into `OUT_DIR` the stop lists of the languages the summarizer
//! knows beside English (`stop_lists.rs`, from the `stop-words` crate), and
//! the o200k_base encoding as the token counter reads it (`o200k.rs`):
//!
//! - `o200k_base.ranks`: every token's bytes in rank order, each after a
//!   byte that gives its length (0 for a rank no token has), taken from
//!   OpenAI's `o200k_base.tiktoken` as the `tiktoken-rs` crate carries it;
//! - `o200k_classes.rs`: the character classes of the encoding's
//!   pre-tokenizing pattern (`tiktoken_rs::O200K_BASE_PAT_STR`), as
//!   `regex-syntax` reads them (the Unicode tables `tiktoken-rs`'s regular
//!   expressions use), so the counter splits text exactly as that pattern
//!   does without a regular-expression engine.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::{env, fs};

/// The classes the pattern is made of, by the name `o200k.rs` gives them.
const CLASSES: &[(&str, &str)] = &[
    ("PREFIX", r"[^\r\n\p{L}\p{N}]"),
    ("UPPER", r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"),
    ("LOWER", r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"),
    ("NUMBER", r"\p{N}"),
    ("SYMBOL", r"[^\s\p{L}\p{N}]"),
    ("SPACE", r"\s"),
    // The letters of the contractions, matched case-insensitively.
    ("CASE_S", r"(?i:s)"),
    ("CASE_T", r"(?i:t)"),
    ("CASE_R", r"(?i:r)"),
    ("CASE_E", r"(?i:e)"),
    ("CASE_V", r"(?i:v)"),
    ("CASE_M", r"(?i:m)"),
    ("CASE_L", r"(?i:l)"),
    ("CASE_D", r"(?i:d)"),
];

include!("src/languages.rs");

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/languages.rs");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::write(out.join("o200k_classes.rs"), classes()).expect("writing o200k_classes.rs");
    fs::write(out.join("o200k_base.ranks"), ranks()).expect("writing o200k_base.ranks");
    fs::write(out.join("stop_lists.rs"), stop_lists()).expect("writing stop_lists.rs");
}

/// The stop list of each language of `LANGUAGES`, in its order, each one
/// string of words separated by spaces (the summarizer splits them at its
/// first foreign side), so no other language's list is built in.
fn stop_lists() -> String {
    let mut source =
        String::from("// Written by build.rs from the stop-words crate's NLTK lists.\n&[\n");
    for (code, _, _) in LANGUAGES {
        let words = stop_words::lookup(code).unwrap_or_else(|| panic!("no stop list for {code}"));
        assert!(words.iter().all(|w| !w.contains(char::is_whitespace)));
        writeln!(source, "    {:?},", words.join(" ")).unwrap();
    }
    source.push_str("]\n");
    source
}

/// Each class as a sorted table of inclusive code point ranges.
fn classes() -> String {
    let mut source = String::from("// Written by build.rs from regex-syntax's Unicode tables.\n");
    for (name, class) in CLASSES {
        let hir = regex_syntax::Parser::new()
            .parse(class)
            .unwrap_or_else(|e| panic!("{class}: {e}"));
        let regex_syntax::hir::HirKind::Class(regex_syntax::hir::Class::Unicode(ranges)) =
            hir.kind()
        else {
            panic!("{class} is no Unicode class");
        };
        writeln!(source, "/// `{class}`").unwrap();
        write!(source, "pub(crate) static {name}: &[(u32, u32)] = &[").unwrap();
        for range in ranges.ranges() {
            write!(
                source,
                "({:#x}, {:#x}),",
                u32::from(range.start()),
                u32::from(range.end())
            )
            .unwrap();
        }
        source.push_str("];\n");
    }
    source
}

/// The ranks: each token's length, then its bytes, in rank order.
fn ranks() -> Vec<u8> {
    let encoding = tiktoken_rs::o200k_base().expect("tiktoken-rs's o200k_base");
    let mut out = Vec::with_capacity(1 << 21);
    // The ordinary tokens' ranks are 0..199998; the special ones above them
    // are never counted as such (text is counted as ordinary text).
    let mut rank = 0;
    while let Ok(bytes) = encoding.decode_bytes(&[rank]) {
        let len = u8::try_from(bytes.len()).expect("a token of at most 255 bytes");
        assert!(len > 0, "rank {rank} is empty");
        out.push(len);
        out.extend_from_slice(&bytes);
        rank += 1;
    }
    assert_eq!(rank, 199_998, "o200k_base has 199,998 ordinary tokens");
    out
}
