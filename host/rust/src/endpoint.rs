//! [`EndpointEmbedder`]: an [`Embedder`] over an OpenAI-compatible
//! embeddings endpoint ([`Endpoint`]), the `engram` command's and `engram
//! mcp`'s (S-VECTOR).

use crate::{Embedder, Model, Role};
use anyhow::{Context, Result, anyhow, bail};
use engram_model::embedding::{ENDPOINT_BATCH, Endpoint};
use serde_json::{Value, json};

/// The most bytes an endpoint's answer may take.
const MAX_ANSWER_BYTES: u64 = 256 << 20;

/// An embedder that asks an OpenAI-compatible endpoint: at most
/// [`ENDPOINT_BATCH`] texts a request, each request bounded by the
/// endpoint's timeout, every failure an error that names the endpoint.
pub struct EndpointEmbedder {
    endpoint: Endpoint,
    url: String,
    agent: ureq::Agent,
    model: Model,
}

impl EndpointEmbedder {
    /// Reaches `endpoint` and learns its model's dimension from one text
    /// embedded; an endpoint that does not answer is an error now, not at
    /// the first memory.
    pub fn new(endpoint: Endpoint) -> Result<Self> {
        if endpoint.model.is_empty() || endpoint.model.len() > 256 {
            bail!("an embedding model's name must be 1 to 256 bytes");
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(endpoint.timeout))
            .http_status_as_error(false)
            .build()
            .into();
        let url = endpoint.embeddings_url();
        let mut embedder = EndpointEmbedder {
            model: Model {
                name: endpoint.model.clone(),
                dimension: 0,
            },
            endpoint,
            url,
            agent,
        };
        let probe = embedder
            .request(&["dimension".to_owned()], Role::Query)
            .map_err(|why| anyhow!(why))?;
        let dimension = probe.first().map_or(0, Vec::len);
        if dimension == 0 || dimension > 4096 {
            bail!(
                "{}: the model {:?} answered vectors of {dimension} numbers (1 to 4,096)",
                embedder.url,
                embedder.model.name
            );
        }
        embedder.model.dimension = dimension as u32;
        Ok(embedder)
    }

    /// One request: the vectors of `texts`, in order.
    fn request(&self, texts: &[String], role: Role) -> Result<Vec<Vec<f32>>, String> {
        let at = |why: String| format!("{}: {why}", self.url);
        let mut body = json!({"model": self.endpoint.model, "encoding_format": "float"});
        match &self.endpoint.prefixes {
            Some((query, passage)) => {
                let prefix = if role == Role::Query { query } else { passage };
                body["input"] = json!(
                    texts
                        .iter()
                        .map(|t| format!("{prefix}{t}"))
                        .collect::<Vec<_>>()
                );
            }
            None => {
                body["input"] = json!(texts);
                body["input_type"] = json!(if role == Role::Query {
                    "query"
                } else {
                    "passage"
                });
            }
        }
        let mut request = self.agent.post(&self.url);
        if let Some(key) = &self.endpoint.key {
            request = request.header("Authorization", &format!("Bearer {key}"));
        }
        let mut response = request
            .send_json(&body)
            .map_err(|e| at(format!("no answer: {e}")))?;
        let status = response.status();
        let answer: Value = response
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER_BYTES)
            .read_json()
            .map_err(|e| at(format!("HTTP {status}, an answer that is not JSON: {e}")))?;
        if !status.is_success() {
            let message = answer["error"]["message"]
                .as_str()
                .map_or_else(|| answer.to_string(), str::to_owned);
            return Err(at(format!("HTTP {status}: {message}")));
        }
        let data = answer["data"]
            .as_array()
            .ok_or_else(|| at("the answer has no `data` list".into()))?;
        if data.len() != texts.len() {
            return Err(at(format!(
                "{} vectors answered for {} texts",
                data.len(),
                texts.len()
            )));
        }
        let mut vectors = vec![Vec::new(); texts.len()];
        for (i, item) in data.iter().enumerate() {
            let index = item["index"].as_u64().map_or(i, |n| n as usize);
            let numbers = item["embedding"]
                .as_array()
                .ok_or_else(|| at(format!("item {i} has no `embedding` list of numbers")))?;
            let vector: Option<Vec<f32>> = numbers
                .iter()
                .map(|n| n.as_f64().map(|x| x as f32))
                .collect();
            let slot = vectors
                .get_mut(index)
                .ok_or_else(|| at(format!("item {i} has index {index}, past the texts")))?;
            *slot =
                vector.ok_or_else(|| at(format!("item {i} holds a value that is no number")))?;
        }
        Ok(vectors)
    }
}

impl Embedder for EndpointEmbedder {
    fn model(&self) -> Model {
        self.model.clone()
    }

    fn embed(&self, texts: &[String], role: Role) -> Result<Vec<Vec<f32>>, String> {
        let mut vectors = Vec::with_capacity(texts.len());
        for part in texts.chunks(ENDPOINT_BATCH) {
            vectors.extend(self.request(part, role)?);
        }
        Ok(vectors)
    }
}

/// An [`EndpointEmbedder`] for `endpoint`, or none.
pub fn endpoint_embedder(
    endpoint: Option<&Endpoint>,
) -> Result<Option<std::sync::Arc<dyn Embedder>>> {
    endpoint
        .map(|e| {
            EndpointEmbedder::new(e.clone())
                .map(|e| std::sync::Arc::new(e) as std::sync::Arc<dyn Embedder>)
                .with_context(|| format!("the embedder at {}", e.url))
        })
        .transpose()
}
