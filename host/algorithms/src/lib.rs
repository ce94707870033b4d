//! The algorithms a cycle calls through the engine's imports (B5-F3): a
//! summarizer with keyword extraction, a ranker and a token counter. A
//! plugin host supplies its own (an LLM, say) by implementing
//! [`Summarizer`], [`Ranker`] and [`Tokenizer`]; the defaults here are
//! deterministic.
//!
//! **Normalization.** Both defaults see words the same way ([`terms`]):
//! split on anything that is not a letter, a digit or an apostrophe (but a
//! number keeps its `.`, `,`, `:`, `/` and `-`: `6:45`, `2025-03-14`, and
//! `1,450` is `1450`), lowercased, possessive `'s` dropped, stop words and
//! filler ("hey",
//! "wow", "super", "thanks") left out, and each word reduced to its stem by
//! the Snowball English stemmer (the `rust-stemmers` crate), so "donated",
//! "donates" and "donating" are one index term, `donat`. Keywords are
//! normalized at ingestion and the query's keywords at query time by the
//! same function, so they meet in the keyword index.
//!
//! - [`ExtractiveSummarizer`] writes the turn as a short statement that
//!   keeps its facts whole: every negation, number, name, date, time and
//!   condition, who said it, never the raw text ([`summary`]); and indexes
//!   every term of the turn, the summary's first: so every word the
//!   summary keeps is reachable through the keyword index.
//! - [`Bm25Ranker`] scores each candidate with BM25 over its keywords and
//!   the normalized words of its summary, times the share of the query's
//!   terms it holds, ties broken newest first, then by id.
//! - [`O200kTokenizer`] counts tokens with OpenAI's `o200k_base` encoding
//!   (the GPT-4o, GPT-4.1, GPT-5 and o-series models') as `tiktoken` does
//!   ([`o200k`]), from the table of tokens the build takes from the
//!   `tiktoken-rs` crate: nothing is downloaded. It bounds a prompt to a
//!   plan's token budget.

pub mod o200k;
pub mod summary;

pub use summary::ExtractiveSummarizer;

use rust_stemmers::{Algorithm, Stemmer};
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

/// What a summarizer answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// A distilled statement; must not contain the raw texts verbatim. An
    /// empty summary (with no keywords) says the turn had nothing worth
    /// remembering: the cycle then persists nothing for it.
    pub summary: String,
    /// Index terms.
    pub keywords: Vec<String>,
}

/// Summarizes a turn. An `Err` fails the cycle.
pub trait Summarizer: Send + Sync {
    /// Summarizes the user's message and, after the answer, the model's
    /// response.
    fn summarize(
        &self,
        user_message: &str,
        model_response: Option<&str>,
    ) -> Result<Summary, String>;
}

/// One candidate memory for a ranker.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// Its id.
    pub id: String,
    /// Its summary.
    pub summary: String,
    /// Its keywords.
    pub keywords: Vec<String>,
    /// When it was ingested.
    pub timestamp: i64,
    /// The cosine similarity of its summary's vector to the question's,
    /// when the host has an embedder and the memory a vector.
    pub similarity: Option<f32>,
}

/// Orders candidates for a query. The answer must be at most `k` ids of
/// the given candidates, each once, best first; anything else fails the
/// cycle, as does an `Err`.
pub trait Ranker: Send + Sync {
    /// Ranks `candidates` for `query_keywords`.
    fn rank(
        &self,
        query_keywords: &[String],
        candidates: &[Candidate],
        k: u32,
    ) -> Result<Vec<String>, String>;
}

/// What a text is to an [`Embedder`]: a memory's summary, or a question.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A memory's summary, to be found.
    Passage,
    /// A question, to find with.
    Query,
}

/// Which model an [`Embedder`] is: a domain records the model of its
/// vectors and refuses another's.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Model {
    /// Its name (`e5-small-v2`), 1 to 256 bytes.
    pub name: String,
    /// How many numbers a vector has, 1 to 4,096.
    pub dimension: u32,
}

/// Embeds texts as vectors: recall by meaning (S-VECTOR). The engine
/// embeds each memory's summary once, when it stores it, and each question
/// once; it keeps nothing else of the text.
pub trait Embedder: Send + Sync {
    /// The model, the same for the embedder's whole life.
    fn model(&self) -> Model;
    /// One vector of [`Model::dimension`] finite numbers for each text, in
    /// order. An `Err`, or any other answer, fails the call that needed it.
    fn embed(&self, texts: &[String], role: Role) -> Result<Vec<Vec<f32>>, String>;
}

/// Counts the tokens of a text, as the model a prompt is for does. An `Err`
/// fails the cycle.
pub trait Tokenizer: Send + Sync {
    /// The number of tokens of `text`.
    fn count_tokens(&self, text: &str) -> Result<u32, String>;
}

/// The default tokenizer: OpenAI's `o200k_base` encoding, the one of the
/// GPT-4o, GPT-4.1, GPT-5 and o-series models, counted as `tiktoken` counts
/// ([`o200k`]). Text is counted as ordinary text: the spelling of a special
/// token (`<|endoftext|>`) counts as the characters it is. The encoding
/// (200,000 tokens) is built at the first count and kept for the process,
/// so a host that never counts pays nothing for it.
///
/// Its table of tokens is built in (the feature `table`, on by default); a
/// build without it counts with [`o200k::from_file`] instead.
#[cfg(feature = "table")]
#[derive(Clone, Copy, Debug, Default)]
pub struct O200kTokenizer;

/// The encoding of [`O200kTokenizer`], built from the table at the first
/// count of the process.
#[cfg(feature = "table")]
static O200K: std::sync::OnceLock<Result<o200k::Encoding, String>> = std::sync::OnceLock::new();

#[cfg(feature = "table")]
impl O200kTokenizer {
    /// Whether this process has built the encoding: false until a count
    /// (a token budget) first asks for it.
    pub fn built() -> bool {
        O200K.get().is_some()
    }
}

#[cfg(feature = "table")]
impl Tokenizer for O200kTokenizer {
    fn count_tokens(&self, text: &str) -> Result<u32, String> {
        O200K
            .get_or_init(|| o200k::Encoding::from_ranks(o200k::RANKS))
            .as_ref()
            .map_err(Clone::clone)?
            .count_tokens(text)
    }
}

/// English stop words: words that say nothing of what a turn is about.
const STOP_WORDS: &str = "a about above after again against all am an and any are aren't as at be \
    because been before being below between both but by can can't cannot could couldn't did didn't \
    do does doesn't doing don't down during each few for from further had hadn't has hasn't have \
    haven't having he he'd he'll he's her here here's hers herself him himself his how how's i i'd \
    i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my myself no nor \
    not of off on once only or other ought our ours ourselves out over own same shan't she she'd \
    she'll she's should shouldn't so some such than that that's the their theirs them themselves \
    then there there's these they they'd they'll they're they've this those through to too under \
    until up very was wasn't we we'd we'll we're we've were weren't what what's when when's where \
    where's which while who who's whom why why's will with won't would wouldn't you you'd you'll \
    you're you've your yours yourself yourselves also just really actually yes yet still even much \
    many lot lots get got gets getting going go goes went gonna wanna let like would've could've \
    should've one ones thing things something anything everything nothing way ever every";

/// Greetings, fillers and pleasantries: words of small talk, never index
/// terms, and a sentence of nothing else is left out of a summary.
const FILLER: &str = "hey hi hello hiya howdy yo bye goodbye cheers thanks thank thx ty please \
    pls sure ok okay okey alright yeah yep yup nope nah wow whoa oh ooh ah aha haha hahaha lol lmao \
    omg hmm hm um uh huh wow super cool nice great awesome amazing fantastic wonderful lovely \
    glad happy welcome sorry indeed totally absolutely definitely exactly right well anyway \
    anyways btw guess know think mean feel sounds sound good bad fun stuff kind sort pretty \
    quite busy day week today tonight hear sharing asking chat chatting catch catching talk \
    talking soon later best miss tell sometime question anytime";

static STOP: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| STOP_WORDS.split_whitespace().collect());
static SMALL_TALK: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| FILLER.split_whitespace().collect());
static STEMMER: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// The longest word kept as a term or in a summary, in characters; a
/// longer run of letters is no word (a key, an encoding), whatever its
/// script.
const MAX_WORD_LEN: usize = 48;

/// The words of `text`: runs of letters, digits and apostrophes; a number
/// written with `.`, `,`, `:`, `/` or `-` between its digits (`3.5`,
/// `1,450`, `6:45`, `3/4`, `2024-05-03`) is one word.
fn words(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        loop {
            let start = rest.find(|c: char| c.is_alphanumeric() || c == '\'' || c == '\u{2019}')?;
            rest = &rest[start..];
            let mut end = rest.len();
            let mut previous = None;
            let mut chars = rest.char_indices().peekable();
            while let Some((i, c)) = chars.next() {
                let joins = c.is_alphanumeric()
                    || c == '\''
                    || c == '\u{2019}'
                    || (matches!(c, '.' | ',' | ':' | '/' | '-')
                        && previous.is_some_and(|p: char| p.is_ascii_digit())
                        && chars.peek().is_some_and(|(_, n)| n.is_ascii_digit()));
                if !joins {
                    end = i;
                    break;
                }
                previous = Some(c);
            }
            let word = rest[..end].trim_matches(|c| c == '\'' || c == '\u{2019}');
            rest = &rest[end..];
            if !word.is_empty() {
                return Some(word);
            }
        }
    })
}

/// A word's lowercase form with a possessive `'s` dropped, and a number's
/// thousands separators (`1,450` is `1450`).
fn lower(word: &str) -> String {
    let lower = word.to_lowercase().replace('\u{2019}', "'");
    let lower = match lower.strip_suffix("'s") {
        Some(stem) if !stem.is_empty() => stem.to_owned(),
        _ => lower,
    };
    if lower.contains(',') && lower.starts_with(|c: char| c.is_ascii_digit()) {
        lower.replace(',', "")
    } else {
        lower
    }
}

/// Whether a lowercased word is content: not a stop word, not filler, not
/// a lone letter (a lone digit is a number), not absurdly long.
fn is_content(lower: &str) -> bool {
    (lower.chars().count() > 1 || lower.chars().all(|c| c.is_ascii_digit()))
        && lower.chars().count() <= MAX_WORD_LEN
        && !STOP.contains(lower)
        && !SMALL_TALK.contains(lower)
}

/// The index term of a lowercased content word: its Snowball stem.
fn stem(lower: &str) -> String {
    STEMMER.stem(lower).into_owned()
}

/// Writes the conversions between this crate's [`Candidate`] and
/// [`Summary`] and a binding's `ranker` and `summarizer` types (the modules
/// named, of any binding of the WIT: the wasmtime host's or a component's).
#[macro_export]
macro_rules! ranker_summarizer_conversions {
    ($ranker:path, $summarizer:path) => {
        const _: () = {
            use $ranker as ranker;
            use $summarizer as summarizer;
            impl From<ranker::Candidate> for $crate::Candidate {
                fn from(c: ranker::Candidate) -> Self {
                    $crate::Candidate {
                        id: c.id,
                        summary: c.summary,
                        keywords: c.keywords,
                        timestamp: c.timestamp,
                        similarity: c.similarity,
                    }
                }
            }
            impl From<$crate::Summary> for summarizer::Summary {
                fn from(s: $crate::Summary) -> Self {
                    summarizer::Summary {
                        summary: s.summary,
                        keywords: s.keywords,
                    }
                }
            }
        };
    };
}

/// Writes, for `$guest`, a component's exports of the default algorithms:
/// `summarizer.summarize` ([`ExtractiveSummarizer`], its answer refused with
/// the reason `$refusal` gives, a `fn(&Summary) -> Option<String>`) and
/// `ranker.rank` ([`Bm25Ranker`]), over the binding's `ranker` and
/// `summarizer` export modules; with [`ranker_summarizer_conversions!`].
/// The tokenizer is [`wit_tokenizer!`]'s.
#[macro_export]
macro_rules! wit_guests {
    ($guest:ty, $ranker:path, $summarizer:path, $refusal:expr) => {
        $crate::ranker_summarizer_conversions!($ranker, $summarizer);
        const _: () = {
            use $crate::{Ranker as _, Summarizer as _};
            use $ranker as ranker;
            use $summarizer as summarizer;
            /// The summarizer cycles call, with its default settings.
            static SUMMARIZER: std::sync::LazyLock<$crate::ExtractiveSummarizer> =
                std::sync::LazyLock::new($crate::ExtractiveSummarizer::default);
            impl summarizer::Guest for $guest {
                fn summarize(
                    user_message: String,
                    model_response: Option<String>,
                ) -> Result<summarizer::Summary, String> {
                    let summary = SUMMARIZER.summarize(&user_message, model_response.as_deref())?;
                    let refusal: fn(&$crate::Summary) -> Option<String> = $refusal;
                    match refusal(&summary) {
                        Some(why) => Err(why),
                        None => Ok(summary.into()),
                    }
                }
            }
            impl ranker::Guest for $guest {
                fn rank(
                    query_keywords: Vec<String>,
                    candidates: Vec<ranker::Candidate>,
                    k: u32,
                ) -> Result<Vec<String>, String> {
                    let candidates: Vec<$crate::Candidate> = candidates
                        .into_iter()
                        .map($crate::Candidate::from)
                        .collect();
                    $crate::Bm25Ranker.rank(&query_keywords, &candidates, k)
                }
            }
        };
    };
}

/// Writes, for `$guest`, a component's export of the default tokenizer:
/// `tokenizer.count-tokens` (`$count`, a `fn(&str) -> Result<u32, String>`:
/// the count of `o200k_base`, its table built in or read from a file), over
/// the binding's `tokenizer` export module.
#[macro_export]
macro_rules! wit_tokenizer {
    ($guest:ty, $tokenizer:path, $count:expr) => {
        const _: () = {
            use $tokenizer as tokenizer;
            impl tokenizer::Guest for $guest {
                fn count_tokens(text: String) -> Result<u32, String> {
                    let count: fn(&str) -> Result<u32, String> = $count;
                    count(&text)
                }
            }
        };
    };
}

/// The normalized index terms of `text`, in order, repeats kept: what both
/// the default summarizer (at ingestion and for a query) and the default
/// ranker see.
pub fn terms(text: &str) -> Vec<String> {
    words(text)
        .map(lower)
        .filter(|w| is_content(w))
        .map(|w| stem(&w))
        .collect()
}

/// The default ranker: BM25 (k1 = 1.2, b = 0.5) over each candidate's
/// keywords and the terms of its summary, times the share of the query's
/// terms the candidate holds (the coordination factor); what it must find
/// is S-RECALL. When candidates carry a similarity (an embedder), the
/// scores by words and by meaning are fused ([`MEANING_WEIGHT`]): a memory
/// found both ways comes first; one that holds every word of the question
/// is still found when its meaning is far.
#[derive(Default)]
pub struct Bm25Ranker;

impl Ranker for Bm25Ranker {
    fn rank(
        &self,
        query_keywords: &[String],
        candidates: &[Candidate],
        k: u32,
    ) -> Result<Vec<String>, String> {
        let mut scored = bm25_scores(&query_terms(query_keywords), candidates);
        best_first(&mut scored, candidates);
        if candidates.iter().any(|c| c.similarity.is_some()) {
            scored = fused_with_meaning(&scored, candidates);
            best_first(&mut scored, candidates);
        }
        Ok(scored
            .into_iter()
            .take(k as usize)
            .map(|(_, i)| candidates[i].id.clone())
            .collect())
    }
}

/// The terms of a query's keywords: a keyword from another summarizer is
/// normalized here too.
fn query_terms(query_keywords: &[String]) -> HashSet<String> {
    query_keywords
        .iter()
        .flat_map(|k| {
            let normalized = terms(k);
            if normalized.is_empty() {
                vec![k.to_lowercase()]
            } else {
                normalized
            }
        })
        .collect()
}

/// Each candidate's BM25 score for `query` times the share of its terms
/// the candidate holds, with the candidate's index; those above 0 only.
fn bm25_scores(query: &HashSet<String>, candidates: &[Candidate]) -> Vec<(f64, usize)> {
    const K1: f64 = 1.2;
    // Half the usual length normalization (0.75): a summary is a short
    // statement whose length follows what was said (a thing of two
    // words, a speaker's name), not verbosity, and the usual b ranked a
    // memory lower for naming a two-word thing (the `recall` bench,
    // seed 7: recall@10 65.6% at 0.75, 69.4% at 0.5).
    const B: f64 = 0.5;
    let documents: Vec<HashMap<String, f64>> = candidates
        .iter()
        .map(|c| {
            let mut counts: HashMap<String, f64> = HashMap::new();
            let keyword_terms = c.keywords.iter().map(|k| k.to_lowercase());
            for term in terms(&c.summary).into_iter().chain(keyword_terms) {
                *counts.entry(term).or_default() += 1.0;
            }
            counts
        })
        .collect();
    let n = documents.len().max(1) as f64;
    let lengths: Vec<f64> = documents.iter().map(|d| d.values().sum()).collect();
    let average = (lengths.iter().sum::<f64>() / n).max(1.0);
    let idf: HashMap<&String, f64> = query
        .iter()
        .map(|term| {
            let df = documents.iter().filter(|d| d.contains_key(term)).count() as f64;
            (term, ((n - df + 0.5) / (df + 0.5) + 1.0).ln())
        })
        .collect();
    documents
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let score = idf
                .iter()
                .map(|(term, idf)| {
                    let tf = d.get(*term).copied().unwrap_or(0.0);
                    idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * lengths[i] / average))
                })
                .sum::<f64>();
            // The share of the query's terms the memory holds (Lucene's
            // classic coordination factor): a memory that holds every term
            // of the question outranks one that holds fewer but more
            // often. The IDF is the candidates', and they were gathered
            // through the question's terms, so a term many of them hold (a
            // name) weighs little though it is what tells them apart.
            let held = idf.keys().filter(|term| d.contains_key(**term)).count();
            (score * held as f64 / idf.len().max(1) as f64, i)
        })
        .filter(|(score, _)| *score > 0.0)
        .collect()
}

/// Orders scores of `candidates` best first: then the newest, then by id.
fn best_first(scored: &mut [(f64, usize)], candidates: &[Candidate]) {
    scored.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| candidates[b.1].timestamp.cmp(&candidates[a.1].timestamp))
            .then_with(|| candidates[a.1].id.cmp(&candidates[b.1].id))
    })
}

/// The word scores `scored` (best first) fused with the candidates'
/// similarities: each order's scores brought to 0..1 (similarities from
/// the least to the most similar candidate, word scores as shares of the
/// best), then weighed ([`MEANING_WEIGHT`]): relative score fusion.
fn fused_with_meaning(scored: &[(f64, usize)], candidates: &[Candidate]) -> Vec<(f64, usize)> {
    let mut by_meaning: Vec<(f64, usize)> = candidates
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.similarity.map(|s| (f64::from(s), i)))
        .collect();
    best_first(&mut by_meaning, candidates);
    let best_words = scored.first().map_or(1.0, |s| s.0);
    let (most, least) = (
        by_meaning.first().map_or(1.0, |s| s.0),
        by_meaning.last().map_or(0.0, |s| s.0),
    );
    let span = most - least;
    let mut fused: HashMap<usize, f64> = HashMap::new();
    for (similarity, i) in &by_meaning {
        let share = if span > 0.0 {
            (similarity - least) / span
        } else {
            1.0
        };
        *fused.entry(*i).or_default() += MEANING_WEIGHT * share;
    }
    for (score, i) in scored {
        *fused.entry(*i).or_default() += (1.0 - MEANING_WEIGHT) * score / best_words;
    }
    fused.into_iter().map(|(i, score)| (score, i)).collect()
}

/// How much the order by meaning weighs in the default ranker's fusion
/// (the order by words weighs the rest): each candidate scores this times
/// its similarity brought to 0..1 among the candidates, plus the rest times
/// its word score as a share of the best (relative score fusion). Chosen on
/// the `recall` bench with e5-small (seed 7, recall@5 / @10): reciprocal-rank
/// fusion (k = 60) 72.7 / 78.6; this fusion at 0.5 84.4 / 89.8, 0.7
/// 90.3 / 93.2, 0.8 91.5 / 93.9, 0.9 92.2 / 93.8; by meaning alone
/// 92.5 / 93.9, by words alone 56.6 / 62.3 (docs/testing.md).
pub const MEANING_WEIGHT: f64 = 0.8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_keeps_content_words_and_never_the_raw_text() {
        let message = "Can you find me a vegetarian restaurant near the office for Friday?";
        let response = "Green Leaf on Main Street is vegetarian and ten minutes from the office.";
        let summary = ExtractiveSummarizer::default()
            .summarize(message, Some(response))
            .unwrap();
        assert!(!summary.summary.contains(message) && !summary.summary.contains(response));
        assert!(
            summary.summary.contains("vegetarian restaurant"),
            "{}",
            summary.summary
        );
        assert!(
            summary.keywords.iter().any(|k| k == "vegetarian"),
            "{:?}",
            summary.keywords
        );
    }

    #[test]
    fn inflected_forms_meet_in_one_term_and_small_talk_is_not_indexed() {
        assert_eq!(terms("donated"), terms("donating"));
        assert_eq!(terms("Donates"), terms("donate"));
        assert_eq!(terms("daughter's birthday"), terms("daughter birthday"));
        assert!(terms("Hey wow, super! Thanks, okay.").is_empty());
    }

    #[test]
    fn the_summary_carries_the_fact_not_the_greeting() {
        let message =
            "Hey Mel! Super busy this week. I took my kids to a pottery workshop on Saturday.";
        let summary = ExtractiveSummarizer::default()
            .summarize(message, Some("Wow, that sounds fun!"))
            .unwrap();
        assert!(
            summary.summary.contains("pottery workshop"),
            "{}",
            summary.summary
        );
        assert!(
            !summary.summary.to_lowercase().contains("hey"),
            "{}",
            summary.summary
        );
        // Every word the summary keeps is reachable through the index, but
        // the speaker's name put for "I", which every memory has.
        for term in terms(&summary.summary).into_iter().filter(|t| t != "user") {
            assert!(
                summary.keywords.contains(&term),
                "{term} in {:?}",
                summary.keywords
            );
        }
    }

    #[test]
    fn a_turn_with_nothing_to_say_has_an_empty_summary() {
        for (message, response) in [("🙂", Some("")), ("hey!", Some("hi :)")), ("", None)] {
            let summary = ExtractiveSummarizer::default()
                .summarize(message, response)
                .unwrap();
            assert!(summary.summary.is_empty() && summary.keywords.is_empty());
        }
    }

    #[test]
    fn huge_inputs_without_sentence_breaks_are_summarized_quickly() {
        let long = "pottery ".repeat(12_000) + &"word".repeat(250_000);
        let started = std::time::Instant::now();
        let summary = ExtractiveSummarizer::default()
            .summarize(&long, Some(&long))
            .unwrap();
        assert!(!summary.summary.is_empty());
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
    }

    // proves S-VECTOR: the default ranker fuses the order by words and the
    // order by meaning; a memory found by meaning alone is ranked, and
    // without similarities the order is BM25's
    #[test]
    fn s_vector_the_default_ranker_fuses_words_and_meaning() {
        let candidate = |id: &str, summary: &str, ts, similarity| Candidate {
            id: id.into(),
            summary: summary.into(),
            keywords: terms(summary),
            timestamp: ts,
            similarity,
        };
        let query = terms("Which hotel did I book in Lisbon?");
        let lexical = [
            candidate("words", "User booked Hotel Avenida in Lisbon.", 1, None),
            candidate("other", "User likes the hotel gym.", 2, None),
            candidate("meaning", "User reserved a room at the Avenida.", 3, None),
        ];
        let ranked = Bm25Ranker.rank(&query, &lexical, 3).unwrap();
        assert_eq!(ranked, ["words", "other"], "the order of words alone");
        let fused: Vec<Candidate> = lexical
            .iter()
            .zip([0.80, 0.20, 0.85])
            .map(|(c, s)| Candidate {
                similarity: Some(s),
                ..c.clone()
            })
            .collect();
        // Similarities 0..1 among the three: words 0.92, other 0, meaning
        // 1; words: 0.8 × 0.92 + 0.2 × 1 (the best by words); meaning: 0.8;
        // other: 0.2 × its share of the best word score, below 0.2.
        let ranked = Bm25Ranker.rank(&query, &fused, 3).unwrap();
        assert_eq!(ranked, ["words", "meaning", "other"]);
        // One candidate alone by meaning is not pushed out by its own span.
        let alone = [Candidate {
            similarity: Some(0.5),
            ..lexical[2].clone()
        }];
        assert_eq!(Bm25Ranker.rank(&query, &alone, 3).unwrap(), ["meaning"]);
    }

    #[test]
    fn bm25_puts_the_matching_candidate_first() {
        let candidate = |id: &str, summary: &str, ts| Candidate {
            id: id.into(),
            summary: summary.into(),
            keywords: terms(summary),
            timestamp: ts,
            similarity: None,
        };
        let candidates = [
            candidate("a", "Booked a flight to Lisbon", 1),
            candidate("b", "Asked for a vegetarian restaurant", 2),
            candidate("c", "Vegetarian dinner with Sarah at a vegetarian place", 3),
        ];
        let ranked = Bm25Ranker
            .rank(&terms("vegetarian"), &candidates, 2)
            .unwrap();
        assert_eq!(ranked.len(), 2);
        assert!(ranked.iter().all(|id| id != "a"));
    }
}

#[cfg(all(test, feature = "table"))]
mod tokenizer_tests {
    use super::*;

    /// The counts OpenAI's own tiktoken gives with `o200k_base`: the default
    /// tokenizer is that encoding, not an estimate from the length.
    #[test]
    fn the_default_tokenizer_counts_with_o200k_base() {
        let tokenizer = O200kTokenizer;
        assert_eq!(tokenizer.count_tokens(""), Ok(0));
        assert_eq!(tokenizer.count_tokens("hello world"), Ok(2));
        assert_eq!(
            tokenizer.count_tokens("- [1767225600000] Sarah is vegetarian"),
            Ok(11)
        );
        // A special token's spelling is ordinary text.
        assert!(tokenizer.count_tokens("<|endoftext|>").unwrap() > 1);
    }
}
