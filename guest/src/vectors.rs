//! Summary vectors (S-VECTOR): with a host's embedder, each ingested
//! memory's summary has a vector, kept as a derived index entry of the
//! memory (like its keyword entries: made from the stored summary alone,
//! written and removed with it), and the domain records the model that made
//! them. The engine knows no model (B5-F3): it checks what the embedder
//! answers, keeps the vectors compact and compares them exactly.
//!
//! | key | value |
//! |-----|-------|
//! | `Mvec` | the domain's model: generation (4), dimension (4), complete (1), name |
//! | `Mreembed` | a re-embedding under way: its generation (4), dimension (4), phase (1), cursor length (2), cursor, name |
//! | `Q` generation (4), sequence (8) | record id (32 hex digits), scale (f32, 4), the vector as `i8`s |
//!
//! Numbers are big-endian but the scale (little-endian). A vector is
//! scaled to unit length, then to `i8` by its largest magnitude (`scale`
//! = that magnitude / 127), so a cosine is the dot product of two such
//! vectors times their scales. `complete` says every ingested memory of
//! the domain has a vector of this generation.

use crate::bindings::engram::memory::embedder::{self, Model, Role};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// The key of the domain's model record.
pub const MODEL: &[u8] = b"Mvec";
/// The key of a re-embedding under way.
pub const REEMBED: &[u8] = b"Mreembed";
const VECTOR: u8 = b'Q';
const MAX_NAME: usize = 256;
const MAX_DIMENSION: u32 = 4096;

/// The model a domain's vectors are of.
#[derive(Clone, Debug, PartialEq)]
pub struct DomainModel {
    pub generation: u32,
    pub model: Model,
    /// Every ingested memory has a vector of this generation.
    pub complete: bool,
}

/// A re-embedding under way: its generation and model, and whether it is
/// embedding (from `cursor`, a time-index key) or dropping the old
/// generation's vectors.
#[derive(Clone, Debug, PartialEq)]
pub struct Reembed {
    pub generation: u32,
    pub model: Model,
    pub dropping: bool,
    pub cursor: Vec<u8>,
}

/// The host's embedder's model, checked; `None` when it has none.
pub fn host_model() -> Result<Option<Model>, String> {
    let Some(model) = embedder::identity() else {
        return Ok(None);
    };
    if model.name.is_empty() || model.name.len() > MAX_NAME {
        return Err(format!(
            "the embedder's model name is {} bytes; 1 to {MAX_NAME}",
            model.name.len()
        ));
    }
    if model.dimension == 0 || model.dimension > MAX_DIMENSION {
        return Err(format!(
            "the embedder's dimension is {}; 1 to {MAX_DIMENSION}",
            model.dimension
        ));
    }
    Ok(Some(model))
}

/// Embeds `texts` and checks the answer: one vector of the model's
/// dimension of finite numbers, not all zero, for each text.
pub fn embed(model: &Model, texts: &[String], role: Role) -> Result<Vec<Vec<f32>>, String> {
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    let vectors = embedder::embed(texts, role)?;
    if vectors.len() != texts.len() {
        return Err(format!(
            "the embedder answered {} vectors for {} texts",
            vectors.len(),
            texts.len()
        ));
    }
    for (i, vector) in vectors.iter().enumerate() {
        if vector.len() != model.dimension as usize {
            return Err(format!(
                "vector {i} has {} numbers; the model {:?} has {}",
                vector.len(),
                model.name,
                model.dimension
            ));
        }
        if vector.iter().any(|x| !x.is_finite()) {
            return Err(format!("vector {i} holds a number that is not finite"));
        }
        if vector.iter().all(|x| *x == 0.0) {
            return Err(format!("vector {i} is all zeros: it has no direction"));
        }
    }
    Ok(vectors)
}

/// A vector at unit length in `i8`s, and its scale.
pub fn quantize(vector: &[f32]) -> (f32, Vec<i8>) {
    let norm = vector
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    let unit: Vec<f64> = vector.iter().map(|x| f64::from(*x) / norm).collect();
    let largest = unit.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if largest == 0.0 || !largest.is_finite() {
        return (0.0, vec![0; vector.len()]);
    }
    let scale = largest / 127.0;
    let values = unit
        .iter()
        .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8)
        .collect();
    (scale as f32, values)
}

/// The cosine of a quantized vector and a stored one (its `i8`s as
/// bytes).
pub fn cosine(a: (f32, &[i8]), b: (f32, &[u8])) -> f32 {
    let dot: i32 =
        a.1.iter()
            .zip(b.1)
            .map(|(x, y)| i32::from(*x) * i32::from(*y as i8))
            .sum();
    dot as f32 * a.0 * b.0
}

/// The key of a memory's vector of a generation.
pub fn key(generation: u32, seq: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(13);
    key.push(VECTOR);
    key.extend_from_slice(&generation.to_be_bytes());
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

/// The range of every vector of a generation.
pub fn range(generation: u32) -> (Vec<u8>, Vec<u8>) {
    let mut start = vec![VECTOR];
    start.extend_from_slice(&generation.to_be_bytes());
    let end = engram_keyspace::successor(&start);
    (start, end)
}

/// The range of every vector of every generation.
pub fn all() -> (Vec<u8>, Vec<u8>) {
    (vec![VECTOR], vec![VECTOR + 1])
}

/// The value of a memory's vector entry.
pub fn value(id: &str, vector: &[f32]) -> Vec<u8> {
    let (scale, values) = quantize(vector);
    let mut value = Vec::with_capacity(id.len() + 4 + values.len());
    value.extend_from_slice(id.as_bytes());
    value.extend_from_slice(&scale.to_le_bytes());
    value.extend(values.iter().map(|v| *v as u8));
    value
}

/// A vector entry's record id, scale and values (`i8`s as bytes).
pub fn decode(value: &[u8]) -> Result<(&str, f32, &[u8]), String> {
    const ID: usize = 32;
    if value.len() < ID + 4 {
        return Err("a vector entry is damaged".into());
    }
    let id = std::str::from_utf8(&value[..ID]).map_err(|_| "a vector entry is damaged")?;
    let scale = f32::from_le_bytes(value[ID..ID + 4].try_into().unwrap_or_default());
    Ok((id, scale, &value[ID + 4..]))
}

fn model_bytes(out: &mut Vec<u8>, model: &Model) {
    out.extend_from_slice(&model.dimension.to_be_bytes());
}

/// The value of the domain's model record.
pub fn encode_model(model: &DomainModel) -> Vec<u8> {
    let mut value = Vec::with_capacity(9 + model.model.name.len());
    value.extend_from_slice(&model.generation.to_be_bytes());
    model_bytes(&mut value, &model.model);
    value.push(u8::from(model.complete));
    value.extend_from_slice(model.model.name.as_bytes());
    value
}

/// Reads the domain's model record.
pub fn decode_model(value: &[u8]) -> Result<DomainModel, String> {
    let damaged = || "the domain's model record is damaged".to_string();
    if value.len() < 9 {
        return Err(damaged());
    }
    let number = |at: usize| u32::from_be_bytes(value[at..at + 4].try_into().unwrap_or_default());
    Ok(DomainModel {
        generation: number(0),
        model: Model {
            dimension: number(4),
            name: String::from_utf8(value[9..].to_vec()).map_err(|_| damaged())?,
        },
        complete: value[8] == 1,
    })
}

/// The value of a re-embedding's record.
pub fn encode_reembed(reembed: &Reembed) -> Vec<u8> {
    let mut value = Vec::new();
    value.extend_from_slice(&reembed.generation.to_be_bytes());
    model_bytes(&mut value, &reembed.model);
    value.push(u8::from(reembed.dropping));
    value.extend_from_slice(&(reembed.cursor.len() as u16).to_be_bytes());
    value.extend_from_slice(&reembed.cursor);
    value.extend_from_slice(reembed.model.name.as_bytes());
    value
}

/// Reads a re-embedding's record.
pub fn decode_reembed(value: &[u8]) -> Result<Reembed, String> {
    let damaged = || "the domain's re-embedding record is damaged".to_string();
    if value.len() < 11 {
        return Err(damaged());
    }
    let number = |at: usize| u32::from_be_bytes(value[at..at + 4].try_into().unwrap_or_default());
    let cursor_len = usize::from(u16::from_be_bytes([value[9], value[10]]));
    let name_at = 11 + cursor_len;
    if value.len() < name_at {
        return Err(damaged());
    }
    Ok(Reembed {
        generation: number(0),
        model: Model {
            dimension: number(4),
            name: String::from_utf8(value[name_at..].to_vec()).map_err(|_| damaged())?,
        },
        dropping: value[8] == 1,
        cursor: value[11..name_at].to_vec(),
    })
}

/// The domain's model record, through `get`.
pub fn domain_model(
    get: impl Fn(&[u8]) -> Result<Option<Vec<u8>>, String>,
) -> Result<Option<DomainModel>, String> {
    get(MODEL)?.map(|v| decode_model(&v)).transpose()
}

/// A re-embedding under way, through `get`.
pub fn reembedding(
    get: impl Fn(&[u8]) -> Result<Option<Vec<u8>>, String>,
) -> Result<Option<Reembed>, String> {
    get(REEMBED)?.map(|v| decode_reembed(&v)).transpose()
}

/// Every generation whose vectors may exist: the domain's, and a
/// re-embedding's new one and the old one it drops.
pub fn generations(
    get: impl Fn(&[u8]) -> Result<Option<Vec<u8>>, String>,
) -> Result<Vec<u32>, String> {
    let mut found = Vec::new();
    if let Some(model) = domain_model(&get)? {
        found.push(model.generation);
    }
    if let Some(reembed) = reembedding(&get)? {
        found.push(reembed.generation);
        found.push(reembed.generation.wrapping_sub(1));
    }
    found.sort_unstable();
    found.dedup();
    Ok(found)
}

/// One scored vector: its similarity and record id.
#[derive(PartialEq)]
struct Scored(f32, String);

impl Eq for Scored {}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scored {
    // The smallest similarity is the heap's top, so it is the one pushed
    // out; among equals, the larger id.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .0
            .total_cmp(&self.0)
            .then_with(|| self.1.cmp(&other.1))
    }
}

/// Record ids with their similarity: the most similar, then those asked
/// for.
pub type Nearest = (Vec<(String, f32)>, Vec<(String, f32)>);

/// The `n` vectors of a generation most similar to `query`, most similar
/// first, and the similarity of every vector whose id `wanted` holds:
/// every vector is read, in pages of `page` entries (exact search).
pub fn nearest(
    generation: u32,
    query: &[f32],
    n: usize,
    page: u32,
    wanted: &std::collections::HashSet<String>,
) -> Result<Nearest, String> {
    let (scale, values) = quantize(query);
    let (mut start, end) = range(generation);
    let mut heap: BinaryHeap<Scored> = BinaryHeap::with_capacity(n + 1);
    let mut known = Vec::new();
    loop {
        let entries =
            crate::persistence::scan(&start, &end, page, crate::persistence::Direction::Ascending)
                .map_err(crate::storage)?;
        let full = entries.len() as u32 == page;
        for entry in &entries {
            let (id, their_scale, theirs) = decode(&entry.value)?;
            if theirs.len() != values.len() {
                return Err("a vector entry has another dimension than the model's".into());
            }
            let similarity = cosine((scale, &values), (their_scale, theirs));
            if wanted.contains(id) {
                known.push((id.to_owned(), similarity));
            }
            if n > 0 {
                let worst = heap.peek().map(|s| s.0);
                if heap.len() < n || worst.is_some_and(|w| similarity > w) {
                    heap.push(Scored(similarity, id.to_owned()));
                    if heap.len() > n {
                        heap.pop();
                    }
                }
            }
        }
        match entries.last() {
            Some(last) if full => {
                start = last.key.clone();
                start.push(0);
            }
            _ => break,
        }
    }
    let mut best: Vec<(String, f32)> = heap.into_iter().map(|s| (s.1, s.0)).collect();
    best.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok((best, known))
}

/// Why a model is not the domain's, in the words of an error.
pub fn changed(domain: &Model, host: &Model) -> String {
    format!(
        "the domain's vectors were made by {} ({} dimensions), the host's embedder is {} ({} \
         dimensions): run maintenance reembed",
        domain.name, domain.dimension, host.name, host.dimension
    )
}

/// The role a text is embedded in, for a write's memories.
pub const PASSAGE: Role = Role::Passage;
/// The role of a question.
pub const QUERY: Role = Role::Query;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s_vector_a_quantized_cosine_is_within_a_hundredth_of_the_exact_one() {
        let a: Vec<f32> = (0..384).map(|i| ((i * 7919) % 113) as f32 - 56.0).collect();
        let b: Vec<f32> = (0..384)
            .map(|i| ((i * 104_729) % 97) as f32 - 40.0)
            .collect();
        let exact = {
            let dot: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(*x * *y)).sum();
            let na: f64 = a.iter().map(|x| f64::from(*x * *x)).sum::<f64>().sqrt();
            let nb: f64 = b.iter().map(|x| f64::from(*x * *x)).sum::<f64>().sqrt();
            dot / na / nb
        };
        let bytes = |q: &[i8]| q.iter().map(|v| *v as u8).collect::<Vec<u8>>();
        let (sa, qa) = quantize(&a);
        let (sb, qb) = quantize(&b);
        let close = cosine((sa, &qa), (sb, &bytes(&qb)));
        assert!(
            (f64::from(close) - exact).abs() < 0.01,
            "{close} vs {exact}"
        );
        assert!((cosine((sa, &qa), (sa, &bytes(&qa))) - 1.0).abs() < 0.01);
    }

    #[test]
    fn s_vector_records_read_back_as_written() {
        let model = DomainModel {
            generation: 3,
            model: Model {
                name: "e5-small".into(),
                dimension: 384,
            },
            complete: true,
        };
        assert_eq!(decode_model(&encode_model(&model)).unwrap(), model);
        let reembed = Reembed {
            generation: 4,
            model: model.model.clone(),
            dropping: false,
            cursor: vec![1, 2, 3],
        };
        assert_eq!(decode_reembed(&encode_reembed(&reembed)).unwrap(), reembed);
        let id = "0123456789abcdef0123456789abcdef";
        let value = value(id, &[1.0, 0.0, -1.0]);
        let (got, _, values) = decode(&value).unwrap();
        assert_eq!((got, values), (id, &[127u8, 0, 129][..]));
    }
}
