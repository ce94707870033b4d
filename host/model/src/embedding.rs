//! How a host reaches an embedding model it does not run itself: an
//! OpenAI-compatible embeddings endpoint (`POST …/v1/embeddings`: Ollama,
//! llama.cpp's server, vLLM, OpenAI), as the `engram` command and `engram
//! mcp` are told it by option or environment (S-VECTOR).

use std::time::Duration;

/// The longest an endpoint may take to answer one request, unless told.
pub const ENDPOINT_TIMEOUT: Duration = Duration::from_secs(30);

/// The most texts one request carries; a larger batch is sent in parts.
pub const ENDPOINT_BATCH: usize = 64;

/// An OpenAI-compatible embeddings endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// Its URL up to the version (`http://127.0.0.1:11434/v1`), or the
    /// whole URL of its embeddings (`…/v1/embeddings`).
    pub url: String,
    /// The model asked for, and the name the domain records.
    pub model: String,
    /// A bearer key, when the endpoint wants one.
    pub key: Option<String>,
    /// How the role of a text is told. Without prefixes, as `input_type`
    /// (`query` or `passage`), which such servers take; with them, as the
    /// prefix in front of the text (e5's `query: ` and `passage: `), and no
    /// `input_type`.
    pub prefixes: Option<(String, String)>,
    /// The longest one request may take.
    pub timeout: Duration,
}

impl Endpoint {
    /// The URL requests go to: `url`, with `/embeddings` added unless it
    /// ends so.
    pub fn embeddings_url(&self) -> String {
        let url = self.url.trim_end_matches('/');
        if url.ends_with("/embeddings") {
            url.to_owned()
        } else {
            format!("{url}/embeddings")
        }
    }
}
