//! `engram:memory/persistence`, `audit` and `domain`, and `engram:js/host`,
//! over `engram:py/store` (`host/python/wit`): every byte string becomes a
//! string of one character per byte, every list of them one packed string,
//! every audit entry a JSON object, and back; a domain's fixed settings are
//! asked for once, random bits a batch at a time; nothing else changes.

wit_bindgen::generate!({
    path: ["../../../wit", "../../js/wit", "../wit"],
    world: "engram:py/adapter",
    generate_all,
});

use engram::memory::types::{PrivacyTier, RecordType, SourceActor, SourceComponent};
use engram::py::store;
use exports::engram::js::host;
use exports::engram::memory::audit::{self, Operation, Outcome};
use exports::engram::memory::domain::{self, AccessMode};
use exports::engram::memory::persistence::{
    Direction, Entry, Guest, Key, Op, Precondition, StorageError, Value,
};
use serde_json::{Map, Value as Json, json};
use std::cell::RefCell;
use std::sync::OnceLock;

/// The length that stands for no value in a packed list of options.
const NONE: u32 = u32::MAX;

/// Bytes as a string of one character per byte.
fn text(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// A string of one character per byte, as the bytes.
fn bytes(text: &str) -> Result<Vec<u8>, StorageError> {
    text.chars()
        .map(|c| u8::try_from(c).ok())
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| broken("a byte string holds a character above U+00FF"))
}

/// What an answer of the store says: its value (`V…`; none for `N`), or
/// the storage error (`C`, `U…`).
fn answer(text: String) -> Result<Option<String>, StorageError> {
    let mut chars = text.chars();
    match chars.next() {
        Some('V') => Ok(Some(chars.as_str().to_owned())),
        Some('N') if chars.as_str().is_empty() => Ok(None),
        Some('C') if chars.as_str().is_empty() => Err(StorageError::Conflict),
        Some('U') => Err(StorageError::Unavailable(chars.as_str().to_owned())),
        _ => Err(broken("an answer that starts with none of V, N, C, U")),
    }
}

/// An answer that must have a value.
fn value(text: String) -> Result<String, StorageError> {
    answer(text)?.ok_or_else(|| broken("N where a value was due"))
}

fn broken(why: &str) -> StorageError {
    StorageError::Unavailable(format!(
        "the Python host answered a malformed packing: {why}"
    ))
}

/// Writes the packings.
#[derive(Default)]
struct Packer(Vec<u8>);

impl Packer {
    fn tag(&mut self, tag: u8) {
        self.0.push(tag);
    }

    fn item(&mut self, item: &[u8]) {
        // A key or value is far below 4 GiB: the host's bounds see to it.
        self.0.extend_from_slice(&(item.len() as u32).to_be_bytes());
        self.0.extend_from_slice(item);
    }

    fn done(self) -> String {
        text(&self.0)
    }
}

/// Reads the packings.
struct Unpacker {
    bytes: Vec<u8>,
    at: usize,
}

impl Unpacker {
    fn new(packed: &str) -> Result<Self, StorageError> {
        Ok(Self {
            bytes: bytes(packed)?,
            at: 0,
        })
    }

    fn more(&self) -> bool {
        self.at < self.bytes.len()
    }

    fn take(&mut self, n: usize) -> Result<&[u8], StorageError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| broken("it ends inside an item"))?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn length(&mut self) -> Result<u32, StorageError> {
        let raw = self.take(4)?;
        Ok(u32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]))
    }

    fn item(&mut self) -> Result<Vec<u8>, StorageError> {
        let n = self.length()?;
        Ok(self.take(n as usize)?.to_vec())
    }

    fn option(&mut self) -> Result<Option<Vec<u8>>, StorageError> {
        match self.length()? {
            NONE => Ok(None),
            n => Ok(Some(self.take(n as usize)?.to_vec())),
        }
    }
}

struct Adapter;

impl Guest for Adapter {
    fn get(key: Key) -> Result<Option<Value>, StorageError> {
        answer(store::get(&text(&key)))?
            .map(|value| bytes(&value))
            .transpose()
    }

    fn get_many(keys: Vec<Key>) -> Result<Vec<Option<Value>>, StorageError> {
        let mut packed = Packer::default();
        for key in &keys {
            packed.item(key);
        }
        let mut found = Unpacker::new(&value(store::get_many(&packed.done()))?)?;
        let mut values = Vec::with_capacity(keys.len());
        while found.more() {
            values.push(found.option()?);
        }
        if values.len() > keys.len() {
            return Err(broken("more values than keys"));
        }
        Ok(values)
    }

    fn scan(
        start: Key,
        end: Key,
        limit: u32,
        order: Direction,
    ) -> Result<Vec<Entry>, StorageError> {
        let descending = matches!(order, Direction::Descending);
        let found = value(store::scan(&text(&start), &text(&end), limit, descending))?;
        let mut found = Unpacker::new(&found)?;
        let mut entries = Vec::new();
        while found.more() {
            let key = found.item()?;
            let value = found.item()?;
            entries.push(Entry { key, value });
        }
        Ok(entries)
    }

    fn commit(
        preconditions: Vec<Precondition>,
        ops: Vec<Op>,
        trail: Vec<audit::Entry>,
    ) -> Result<(), StorageError> {
        let mut conditions = Packer::default();
        for precondition in &preconditions {
            match precondition {
                Precondition::Absent(key) => {
                    conditions.tag(0);
                    conditions.item(key);
                }
                Precondition::Holds(entry) => {
                    conditions.tag(1);
                    conditions.item(&entry.key);
                    conditions.item(&entry.value);
                }
            }
        }
        let mut changes = Packer::default();
        for op in &ops {
            match op {
                Op::Delete(key) => {
                    changes.tag(0);
                    changes.item(key);
                }
                Op::Put(entry) => {
                    changes.tag(1);
                    changes.item(&entry.key);
                    changes.item(&entry.value);
                }
            }
        }
        let lines: Vec<String> = trail.iter().map(entry_json).collect();
        match value(store::commit(
            &conditions.done(),
            &changes.done(),
            &lines.join("\n"),
        ))? {
            rest if rest.is_empty() => Ok(()),
            _ => Err(broken("a commit answered a value")),
        }
    }
}

impl audit::Guest for Adapter {
    fn append(entry: audit::Entry) {
        store::append(&entry_json(&entry));
    }
}

/// An audit entry as `engram:py/store` carries it.
fn entry_json(entry: &audit::Entry) -> String {
    let mut object = Map::new();
    object.insert("request_id".into(), json!(entry.request_id));
    let operation = match entry.operation {
        Operation::Write => "write",
        Operation::Read => "read",
        Operation::Export => "export",
        Operation::Import => "import",
    };
    object.insert("operation".into(), json!(operation));
    if let Some(source) = &entry.source {
        let component = match source.component {
            SourceComponent::Cognition => "COGNITION",
            SourceComponent::Maintenance => "MAINTENANCE",
        };
        let actor = match source.actor {
            SourceActor::System => "SYSTEM",
            SourceActor::User => "USER",
            SourceActor::External => "EXTERNAL",
        };
        object.insert(
            "source".into(),
            json!({"agent_id": source.agent_id, "component": component, "actor": actor}),
        );
    }
    if let Some(record_type) = entry.record_type {
        let name = match record_type {
            RecordType::Fact => "FACT",
            RecordType::Event => "EVENT",
            RecordType::State => "STATE",
        };
        object.insert("record_type".into(), json!(name));
    }
    let outcome = match &entry.outcome {
        Outcome::Accepted(id) => json!({"accepted": id}),
        Outcome::Replayed(id) => json!({"replayed": id}),
        Outcome::Rejected(why) => json!({"rejected": why}),
        Outcome::Returned(n) => json!({"returned": n}),
        Outcome::Failed(why) => json!({"failed": why}),
        Outcome::Applied(n) => json!({"applied": n}),
        Outcome::Retrieved(r) => json!({"retrieved": {
            "returned": r.returned,
            "entries_read": r.entries_read,
            "candidates": r.candidates,
            "bound_reached": r.bound_reached,
        }}),
    };
    object.insert("outcome".into(), outcome);
    Json::Object(object).to_string()
}

/// A domain's settings (`store.settings`).
struct Settings {
    agent: String,
    mode: AccessMode,
    tier_ceiling: PrivacyTier,
    read_limit_ceiling: u32,
    candidate_limit: u32,
    answer_byte_limit: u64,
    max_record_bytes: u64,
}

/// The settings, asked for at the first need. A host that answers no valid
/// settings stops the instance: nothing can be done without them.
fn settings() -> &'static Settings {
    static SETTINGS: OnceLock<Settings> = OnceLock::new();
    SETTINGS.get_or_init(|| {
        let text = store::settings();
        let json: Json = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("the Python host's settings are not JSON: {e}"));
        let number = |name: &str| {
            json[name]
                .as_u64()
                .unwrap_or_else(|| panic!("the Python host's settings have no number `{name}`"))
        };
        let word = |name: &str| {
            json[name]
                .as_str()
                .unwrap_or_else(|| panic!("the Python host's settings have no string `{name}`"))
        };
        let small = |name: &str| {
            u32::try_from(number(name))
                .unwrap_or_else(|_| panic!("the Python host's `{name}` is above 2^32"))
        };
        Settings {
            agent: word("agent").to_owned(),
            mode: match word("mode") {
                "online" => AccessMode::Online,
                "maintenance" => AccessMode::Maintenance,
                other => panic!("the Python host's mode `{other}` is none of online, maintenance"),
            },
            tier_ceiling: match word("tier_ceiling") {
                "public" => PrivacyTier::Public,
                "sensitive" => PrivacyTier::Sensitive,
                "private" => PrivacyTier::Private,
                other => panic!("the Python host's tier ceiling `{other}` is no privacy tier"),
            },
            read_limit_ceiling: small("read_limit_ceiling"),
            candidate_limit: small("candidate_limit"),
            answer_byte_limit: number("answer_byte_limit"),
            max_record_bytes: number("max_record_bytes"),
        }
    })
}

impl domain::Guest for Adapter {
    fn agent() -> String {
        settings().agent.clone()
    }

    fn mode() -> AccessMode {
        settings().mode
    }

    fn now() -> i64 {
        store::now()
    }

    fn read_limit_ceiling() -> u32 {
        settings().read_limit_ceiling
    }

    fn candidate_limit() -> u32 {
        settings().candidate_limit
    }

    fn answer_byte_limit() -> u64 {
        settings().answer_byte_limit
    }

    fn tier_ceiling() -> PrivacyTier {
        settings().tier_ceiling
    }

    fn id_entropy() -> (u64, u64) {
        thread_local! {
            static BITS: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
        }
        BITS.with_borrow_mut(|bits| {
            if bits.len() < 16 {
                let fresh = bytes(&store::entropy())
                    .unwrap_or_else(|_| panic!("the Python host's entropy is no byte string"));
                assert!(
                    !fresh.is_empty() && fresh.len().is_multiple_of(16),
                    "the Python host's entropy is not a positive multiple of 16 bytes"
                );
                *bits = fresh;
            }
            let rest = bits.split_off(16);
            let taken = std::mem::replace(bits, rest);
            let half =
                |at: usize| u64::from_be_bytes(taken[at..at + 8].try_into().expect("8 bytes"));
            (half(0), half(8))
        })
    }
}

impl host::Guest for Adapter {
    fn max_record_bytes() -> u64 {
        settings().max_record_bytes
    }

    fn append_audit(entry: String) {
        store::append_line(&entry);
    }
}

export!(Adapter);
