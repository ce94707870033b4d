//! The measure a host limits records by, and the reasons it gives when a
//! record or a summary is too large: the bytes of every string, plus 8 for
//! every list item (numbers, enums and options are not counted: a record
//! holds a fixed number of them). The measures of the component's record
//! types are written over this in [`wit_conversions!`](crate::wit_conversions).

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
