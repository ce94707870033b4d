//! The default summarizer on any text up to the record limit: it answers,
//! never panics, and keeps to the engine's bounds and B5-S1.
#![no_main]

use engram::Summarizer;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (message, response) = match text.split_once('\u{1}') {
        Some((m, r)) => (m.to_owned(), Some(r.to_owned())),
        None => (text.into_owned(), None),
    };
    let summary = engram::ExtractiveSummarizer::default()
        .summarize(&message, response.as_deref())
        .expect("the default summarizer answers");
    assert!(summary.summary.len() <= 4096);
    assert!(summary.keywords.len() <= 128);
    assert!(summary.keywords.iter().all(|k| !k.is_empty() && k.len() <= 256));
    assert_eq!(summary.summary.is_empty(), summary.keywords.is_empty());
    // B5-S1: neither text whole, as the engine judges it.
    for raw in std::iter::once(message.as_str()).chain(response.as_deref()) {
        assert!(
            raw.split_whitespace().nth(1).is_none() || !summary.summary.contains(raw.trim()),
            "{raw:?} whole in {:?}",
            summary.summary
        );
    }
});
