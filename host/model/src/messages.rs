//! The words every package says of a domain's state, the same in Python
//! and JavaScript: the native module and the addon answer them, and the
//! JavaScript package's own driver reads them from `gen/limits.js`
//! (`MESSAGES`, written from [`json`] by the components' build).

/// A call of a domain that was closed.
pub const CLOSED: &str = "the domain is closed";

/// What follows why when a call stopped the domain's engine instance (it
/// ran past its time, grew past its memory, trapped, or a call of the host
/// failed).
pub const STOPPED: &str = "its instance was stopped, and the next call gets a fresh one";

/// A call of a store that was closed.
pub const STORE_CLOSED: &str = "the store is closed";

/// A call of a domain made while one of its calls is under way on the same
/// thread: from that call's summarizer, ranker, tokenizer, embedder or
/// store.
pub const BUSY: &str = "a call of this domain is under way: the summarizer, ranker, tokenizer, embedder or store may not call its own domain";

/// Text that is not Unicode (a lone surrogate of UTF-16): refused, never
/// rewritten, so that two different ids never become one.
pub const NOT_UNICODE: &str =
    "the request holds text that is not Unicode (a lone surrogate): nothing ran";

/// The messages as one JSON object by short name (`closed`,
/// `store_closed`, `stopped`, `busy`, `not_unicode`).
pub fn json() -> String {
    serde_json::json!({
        "closed": CLOSED,
        "store_closed": STORE_CLOSED,
        "stopped": STOPPED,
        "busy": BUSY,
        "not_unicode": NOT_UNICODE,
    })
    .to_string()
}
