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
//! | `Mvepoch` | a counter (8) every commit that removes a vector moves, so an instance knows its kept vectors ([`Kept`]) are still the store's |
//! | `Q` generation (4), sequence (8) | record id (32 hex digits), scale (f32, 4), the vector as `i8`s |
//!
//! Numbers are big-endian but the scale (little-endian). A vector is
//! scaled to unit length, then to `i8` by its largest magnitude (`scale`
//! = that magnitude / 127), so a cosine is the dot product of two such
//! vectors times their scales. `complete` says every ingested memory of
//! the domain has a vector of this generation.

use crate::bindings::engram::memory::embedder::{self, Model, Role};
use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet};

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

/// Record ids with their similarity: the most similar, then those asked
/// for.
pub type Nearest = (Vec<(String, f32)>, Vec<(String, f32)>);

/// A record id as a vector entry holds it: 32 hex digits.
type Id = [u8; ID];
const ID: usize = 32;

/// What an instance keeps of its domain's vectors of one generation between
/// recalls, so that a recall reads only the vectors written since the last
/// one: every vector as stored (its `i8`s and scale) and its record id,
/// with what tells whether the store still holds exactly these and maybe
/// more: the generation, the `Mvepoch` counter (moved by every commit that
/// removes a vector: expiry), and the first entry (key and id: a domain
/// forgotten and written again starts over with other ids). New vectors
/// have larger keys than every kept one (their sequence numbers are the
/// domain's counter, moved under a precondition by every write), so the
/// entries after the last key read are what is new.
struct Kept {
    generation: u32,
    dimension: usize,
    epoch: Option<Vec<u8>>,
    first: Vec<u8>,
    last: Vec<u8>,
    scales: Vec<f32>,
    /// The vectors' `i8`s, a page of entries a block (no block is moved
    /// when more come), and the number of the first vector of each.
    blocks: Vec<(u32, Vec<i8>)>,
    ids: Vec<Id>,
    index: HashMap<Id, u32>,
}

std::thread_local! {
    static KEPT: RefCell<Option<Kept>> = const { RefCell::new(None) };
}

/// The free memory an instance keeps beside its kept vectors: when the
/// vectors do not fit with this much to spare, a recall reads them from the
/// store instead, each time.
const HEADROOM: usize = 8 << 20;

/// The key of the counter every commit that removes a vector moves.
pub const EPOCH: &[u8] = b"Mvepoch";

/// The epoch counter's next value, from its current one.
pub fn next_epoch(current: Option<&[u8]>) -> Vec<u8> {
    let n = current
        .and_then(|v| <[u8; 8]>::try_from(v).ok())
        .map_or(0, u64::from_be_bytes);
    n.wrapping_add(1).to_be_bytes().to_vec()
}

/// A question's vector as every stored one is compared with: its scale,
/// and its `i8`s widened to `i16` once (each comparison then widens only
/// the stored vector).
pub struct Query {
    scale: f32,
    wide: Vec<i16>,
}

impl Query {
    /// The question's vector, quantized as stored vectors are.
    pub fn of(vector: &[f32]) -> Self {
        let (scale, values) = quantize(vector);
        Query {
            scale,
            wide: values.iter().map(|v| i16::from(*v)).collect(),
        }
    }

    /// The cosine of this vector and a stored one (its scale and `i8`s).
    fn similarity(&self, scale: f32, values: &[i8]) -> f32 {
        dot(&self.wide, values) as f32 * self.scale * scale
    }
}

/// The dot product of a widened vector and a stored one.
#[cfg(not(target_arch = "wasm32"))]
fn dot(a: &[i16], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum()
}

/// The dot product of a widened vector and a stored one, sixteen numbers
/// at a time (the engine's component uses WebAssembly's 128-bit SIMD,
/// which every runtime it targets has).
#[cfg(target_arch = "wasm32")]
#[target_feature(enable = "simd128")]
fn dot(a: &[i16], b: &[i8]) -> i32 {
    use core::arch::wasm32::*;
    let n = a.len().min(b.len());
    let (mut low, mut high) = (i32x4_splat(0), i32x4_splat(0));
    let (mut low2, mut high2) = (i32x4_splat(0), i32x4_splat(0));
    let mut at = 0;
    // Thirty-two numbers a turn, in four independent sums.
    while at + 32 <= n {
        // SAFETY: `b` holds 32 bytes from `at` and `a` 32 `i16`s;
        // v128_load takes unaligned addresses.
        let (x, y, a0, a1, a2, a3) = unsafe {
            (
                v128_load(b.as_ptr().add(at).cast::<v128>()),
                v128_load(b.as_ptr().add(at + 16).cast::<v128>()),
                v128_load(a.as_ptr().add(at).cast::<v128>()),
                v128_load(a.as_ptr().add(at + 8).cast::<v128>()),
                v128_load(a.as_ptr().add(at + 16).cast::<v128>()),
                v128_load(a.as_ptr().add(at + 24).cast::<v128>()),
            )
        };
        // Two i8 × i8 products summed fit an i32 lane many times over.
        low = i32x4_add(low, i32x4_dot_i16x8(i16x8_extend_low_i8x16(x), a0));
        high = i32x4_add(high, i32x4_dot_i16x8(i16x8_extend_high_i8x16(x), a1));
        low2 = i32x4_add(low2, i32x4_dot_i16x8(i16x8_extend_low_i8x16(y), a2));
        high2 = i32x4_add(high2, i32x4_dot_i16x8(i16x8_extend_high_i8x16(y), a3));
        at += 32;
    }
    low = i32x4_add(low, low2);
    high = i32x4_add(high, high2);
    while at + 16 <= n {
        // SAFETY: as above, for 16.
        let (x, a0, a1) = unsafe {
            (
                v128_load(b.as_ptr().add(at).cast::<v128>()),
                v128_load(a.as_ptr().add(at).cast::<v128>()),
                v128_load(a.as_ptr().add(at + 8).cast::<v128>()),
            )
        };
        low = i32x4_add(low, i32x4_dot_i16x8(i16x8_extend_low_i8x16(x), a0));
        high = i32x4_add(high, i32x4_dot_i16x8(i16x8_extend_high_i8x16(x), a1));
        at += 16;
    }
    let both = i32x4_add(low, high);
    let mut sum = i32x4_extract_lane::<0>(both)
        + i32x4_extract_lane::<1>(both)
        + i32x4_extract_lane::<2>(both)
        + i32x4_extract_lane::<3>(both);
    for i in at..n {
        sum += i32::from(a[i]) * i32::from(b[i]);
    }
    sum
}

/// The cosine of a quantized vector and a stored one (its `i8`s as
/// bytes).
#[cfg(test)]
fn cosine(a: (f32, &[i8]), b: (f32, &[u8])) -> f32 {
    let query = Query {
        scale: a.0,
        wide: a.1.iter().map(|v| i16::from(*v)).collect(),
    };
    query.similarity(b.0, bytemuck_i8(b.1))
}

/// Bytes as the `i8`s they hold.
fn bytemuck_i8(bytes: &[u8]) -> &[i8] {
    // SAFETY: u8 and i8 have one size and alignment, every bit pattern
    // valid in both.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<i8>(), bytes.len()) }
}

impl Kept {
    /// Reads the entries of the generation after the last key read (the
    /// generation's prefix when none is kept, which every entry follows),
    /// in pages of `page`: `false` when they do not fit the instance's
    /// memory (nothing more is then kept).
    fn read_new(&mut self, end: &[u8], page: u32) -> Result<bool, String> {
        loop {
            let mut start = self.last.clone();
            start.push(0);
            let entries = crate::persistence::scan(
                &start,
                end,
                page,
                crate::persistence::Direction::Ascending,
            )
            .map_err(crate::storage)?;
            let count = entries.len();
            let mut block: Vec<i8> = Vec::new();
            let fits = block.try_reserve_exact(count * self.dimension).is_ok()
                && self.blocks.try_reserve(1).is_ok()
                && self.scales.try_reserve(count).is_ok()
                && self.ids.try_reserve(count).is_ok()
                && self.index.try_reserve(count).is_ok()
                && Vec::<u8>::new().try_reserve_exact(HEADROOM).is_ok();
            if !fits {
                return Ok(false);
            }
            let first = self.ids.len() as u32;
            for entry in &entries {
                let (id, scale, values) = decode(&entry.value)?;
                if values.len() != self.dimension {
                    return Err("a vector entry has another dimension than the model's".into());
                }
                let id: Id = id
                    .as_bytes()
                    .try_into()
                    .map_err(|_| "a vector entry is damaged")?;
                self.index.insert(id, self.ids.len() as u32);
                self.ids.push(id);
                self.scales.push(scale);
                block.extend_from_slice(bytemuck_i8(values));
            }
            if !block.is_empty() {
                self.blocks.push((first, block));
            }
            if let Some(last) = entries.last() {
                self.last = last.key.clone();
            }
            if count < page as usize {
                return Ok(true);
            }
        }
    }

    /// The `n` kept vectors most similar to `query` and the similarity of
    /// each one `wanted` names.
    fn nearest(&self, query: &Query, n: usize, wanted: &HashSet<String>) -> Nearest {
        let dimension = self.dimension;
        let vector = |i: usize| {
            let block = self
                .blocks
                .partition_point(|(first, _)| *first as usize <= i)
                - 1;
            let (first, values) = &self.blocks[block];
            let at = i - *first as usize;
            &values[at * dimension..(at + 1) * dimension]
        };
        let similarity = |i: usize| query.similarity(self.scales[i], vector(i));
        let mut best = Best::new(n);
        for (first, values) in &self.blocks {
            for (j, v) in values.chunks_exact(dimension).enumerate() {
                let i = *first as usize + j;
                best.offer(query.similarity(self.scales[i], v), &self.ids[i]);
            }
        }
        let known = wanted
            .iter()
            .filter_map(|id| {
                let key: Id = id.as_bytes().try_into().ok()?;
                let i = *self.index.get(&key)? as usize;
                Some((id.clone(), similarity(i)))
            })
            .collect();
        (best.sorted(), known)
    }
}

/// The `n` most similar of the vectors offered: the least similar of them
/// on the heap's top, so it is the one pushed out; among equals, the
/// larger id.
struct Best {
    n: usize,
    heap: BinaryHeap<(std::cmp::Reverse<Total>, Id)>,
}

impl Best {
    fn new(n: usize) -> Self {
        Best {
            n,
            heap: BinaryHeap::with_capacity(n + 1),
        }
    }

    /// Keeps `id` when it is among the `n` most similar so far.
    fn offer(&mut self, similarity: f32, id: &Id) {
        let better = self.heap.len() < self.n
            || self.heap.peek().is_some_and(|(worst, worst_id)| {
                similarity
                    .total_cmp(&worst.0.0)
                    .then_with(|| worst_id.cmp(id))
                    == Ordering::Greater
            });
        if better {
            self.heap.push((std::cmp::Reverse(Total(similarity)), *id));
            if self.heap.len() > self.n {
                self.heap.pop();
            }
        }
    }

    /// The ids kept with their similarity, most similar first.
    fn sorted(self) -> Vec<(String, f32)> {
        let mut best: Vec<(String, f32)> = self
            .heap
            .into_iter()
            .map(|(s, id)| (String::from_utf8_lossy(&id).into_owned(), s.0.0))
            .collect();
        best.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        best
    }
}

/// An `f32` ordered totally.
#[derive(Clone, Copy, PartialEq)]
struct Total(f32);

impl Eq for Total {}

impl PartialOrd for Total {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Total {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The `n` vectors of a generation most similar to `query`, most similar
/// first, and the similarity of every vector whose id `wanted` holds:
/// exact search over every vector of the generation. The instance keeps
/// the vectors it read ([`Kept`]) and reads only those written since;
/// when they do not fit its memory, it reads them all, in pages of `page`
/// entries, each time.
pub fn nearest(
    generation: u32,
    dimension: usize,
    query: &[f32],
    n: usize,
    page: u32,
    wanted: &HashSet<String>,
) -> Result<Nearest, String> {
    let query = Query::of(query);
    let (start, end) = range(generation);
    let epoch = crate::persistence::get(EPOCH).map_err(crate::storage)?;
    let first = crate::persistence::scan(&start, &end, 1, crate::persistence::Direction::Ascending)
        .map_err(crate::storage)?;
    let Some(first) = first.first() else {
        KEPT.with(|kept| kept.borrow_mut().take());
        return Ok((Vec::new(), Vec::new()));
    };
    let mut stamp = first.key.clone();
    stamp.extend_from_slice(&first.value[..ID.min(first.value.len())]);
    KEPT.with(|cell| {
        let mut cell = cell.borrow_mut();
        let same = cell.as_ref().is_some_and(|k| {
            k.generation == generation
                && k.dimension == dimension
                && k.epoch == epoch
                && k.first == stamp
        });
        if !same {
            // What was kept goes before the new is read.
            *cell = None;
        }
        let kept = cell.get_or_insert_with(|| Kept {
            generation,
            dimension,
            epoch,
            first: stamp,
            last: start,
            scales: Vec::new(),
            blocks: Vec::new(),
            ids: Vec::new(),
            index: HashMap::new(),
        });
        if kept.read_new(&end, page)? {
            Ok(kept.nearest(&query, n, wanted))
        } else {
            *cell = None;
            drop(cell);
            streamed(generation, &query, n, page, wanted)
        }
    })
}

/// [`nearest`] reading every vector from the store, in pages of `page`.
fn streamed(
    generation: u32,
    query: &Query,
    n: usize,
    page: u32,
    wanted: &HashSet<String>,
) -> Result<Nearest, String> {
    let (mut start, end) = range(generation);
    let mut best = Best::new(n);
    let mut known = Vec::new();
    loop {
        let entries =
            crate::persistence::scan(&start, &end, page, crate::persistence::Direction::Ascending)
                .map_err(crate::storage)?;
        let full = entries.len() as u32 == page;
        for entry in &entries {
            let (id, their_scale, theirs) = decode(&entry.value)?;
            if theirs.len() != query.wide.len() {
                return Err("a vector entry has another dimension than the model's".into());
            }
            let s = query.similarity(their_scale, bytemuck_i8(theirs));
            if wanted.contains(id) {
                known.push((id.to_owned(), s));
            }
            let id: Id = id
                .as_bytes()
                .try_into()
                .map_err(|_| "a vector entry is damaged")?;
            best.offer(s, &id);
        }
        match entries.last() {
            Some(last) if full => {
                start = last.key.clone();
                start.push(0);
            }
            _ => break,
        }
    }
    Ok((best.sorted(), known))
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
