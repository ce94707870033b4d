//! The algorithms a cycle calls through the engine's imports (B5-F3): a
//! summarizer with keyword extraction and a ranker. A plugin host supplies
//! its own (an LLM, say) by implementing [`Summarizer`] and [`Ranker`]; the
//! defaults here are deterministic.
//!
//! - [`ExtractiveSummarizer`] takes keywords with YAKE (the `yake-rust`
//!   crate: statistical, single-document, no model or corpus to load) and
//!   builds the summary from the best sentence of the message and of the
//!   response, kept to their content words.
//! - [`Bm25Ranker`] scores candidates with BM25 (the `bm25` crate: its
//!   tokenizer stems and drops stop words) over each candidate's summary and
//!   keywords, ties broken newest first, then by id.

use std::collections::HashSet;

/// What a summarizer answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// A distilled statement; must not contain the raw texts verbatim.
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Its id.
    pub id: String,
    /// Its summary.
    pub summary: String,
    /// Its keywords.
    pub keywords: Vec<String>,
    /// When it was ingested.
    pub timestamp: i64,
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

/// The default summarizer: YAKE keywords and an extractive summary.
pub struct ExtractiveSummarizer {
    stop_words: yake_rust::StopWords,
    /// How many keywords to keep.
    pub keywords: usize,
    /// How many content words each side of the summary keeps.
    pub words: usize,
}

impl Default for ExtractiveSummarizer {
    fn default() -> Self {
        ExtractiveSummarizer {
            stop_words: yake_rust::StopWords::predefined("en")
                .unwrap_or_else(|| yake_rust::StopWords::custom(HashSet::new())),
            keywords: 8,
            words: 16,
        }
    }
}

impl ExtractiveSummarizer {
    /// The best sentence of `text` for `keywords`, kept to its content
    /// words: stop words and punctuation go, so the raw text never comes
    /// through whole.
    fn gist(&self, text: &str, keywords: &[String]) -> String {
        let sentences = text
            .split_inclusive(['.', '!', '?', '\n'])
            .map(str::trim)
            .filter(|s| !s.is_empty());
        let score = |sentence: &str| {
            let lower = sentence.to_lowercase();
            keywords
                .iter()
                .filter(|k| lower.contains(k.as_str()))
                .count()
        };
        // The first of the best-scoring sentences.
        let best = sentences.fold(None, |best: Option<(usize, &str)>, s| match best {
            Some((top, _)) if top >= score(s) => best,
            _ => Some((score(s), s)),
        });
        let Some((_, sentence)) = best else {
            return String::new();
        };
        let words: Vec<&str> = sentence
            .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '\''))
            .filter(|w| !w.is_empty())
            .collect();
        let content: Vec<&str> = words
            .iter()
            .copied()
            .filter(|w| !self.stop_words.contains(&w.to_lowercase()))
            .take(self.words)
            .collect();
        if !content.is_empty() && (content.len() < words.len() || words.len() < 2) {
            return content.join(" ");
        }
        // Nothing to leave out, or nothing but stop words: name the words
        // instead, so the text never comes through whole (B5-S1).
        let base = if content.is_empty() { &words } else { &content };
        if base.is_empty() {
            return String::new();
        }
        let mut named: Vec<String> = base.iter().map(|w| w.to_lowercase()).collect();
        named.sort();
        named.dedup();
        format!("about {}", named.join(", "))
    }
}

impl Summarizer for ExtractiveSummarizer {
    fn summarize(
        &self,
        user_message: &str,
        model_response: Option<&str>,
    ) -> Result<Summary, String> {
        let text = match model_response {
            Some(response) => format!("{user_message}\n{response}"),
            None => user_message.to_owned(),
        };
        let config = yake_rust::Config {
            ngrams: 2,
            ..yake_rust::Config::default()
        };
        let mut keywords: Vec<String> = Vec::new();
        for item in yake_rust::get_n_best(self.keywords * 2, &text, &self.stop_words, &config) {
            // One- and two-word phrases; keep each word once.
            for word in item.keyword.split_whitespace() {
                if keywords.len() < self.keywords && !keywords.iter().any(|k| k == word) {
                    keywords.push(word.to_owned());
                }
            }
        }
        let asked = self.gist(user_message, &keywords);
        if asked.is_empty() {
            return Err("the user's message has no content words to summarize".into());
        }
        let summary = match model_response.map(|r| self.gist(r, &keywords)) {
            Some(answered) if !answered.is_empty() => {
                format!("Asked: {asked}. Answered: {answered}.")
            }
            _ => format!("Asked: {asked}."),
        };
        Ok(Summary { summary, keywords })
    }
}

/// The default ranker: BM25 over summaries and keywords.
#[derive(Default)]
pub struct Bm25Ranker;

impl Ranker for Bm25Ranker {
    fn rank(
        &self,
        query_keywords: &[String],
        candidates: &[Candidate],
        k: u32,
    ) -> Result<Vec<String>, String> {
        let documents: Vec<String> = candidates
            .iter()
            .map(|c| format!("{} {}", c.summary, c.keywords.join(" ")))
            .collect();
        let corpus: Vec<&str> = documents.iter().map(String::as_str).collect();
        let embedder: bm25::Embedder =
            bm25::EmbedderBuilder::with_fit_to_corpus(bm25::Language::English, &corpus).build();
        let mut scorer = bm25::Scorer::<usize>::new();
        for (i, document) in corpus.iter().enumerate() {
            scorer.upsert(&i, embedder.embed(document));
        }
        let query = embedder.embed(&query_keywords.join(" "));
        let mut scored: Vec<(f32, usize)> = scorer
            .matches(&query)
            .into_iter()
            .map(|d| (d.score, d.id))
            .collect();
        scored.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| candidates[b.1].timestamp.cmp(&candidates[a.1].timestamp))
                .then_with(|| candidates[a.1].id.cmp(&candidates[b.1].id))
        });
        Ok(scored
            .into_iter()
            .take(k as usize)
            .map(|(_, i)| candidates[i].id.clone())
            .collect())
    }
}

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
        assert!(summary.keywords.len() <= 8);
    }

    #[test]
    fn bm25_puts_the_matching_candidate_first() {
        let candidate = |id: &str, summary: &str, ts| Candidate {
            id: id.into(),
            summary: summary.into(),
            keywords: vec![],
            timestamp: ts,
        };
        let candidates = [
            candidate("a", "Booked a flight to Lisbon", 1),
            candidate("b", "Asked for a vegetarian restaurant", 2),
            candidate("c", "Vegetarian dinner with Sarah at a vegetarian place", 3),
        ];
        let ranked = Bm25Ranker
            .rank(&["vegetarian".into()], &candidates, 2)
            .unwrap();
        assert_eq!(ranked.len(), 2);
        assert!(ranked.iter().all(|id| id != "a"));
    }
}
