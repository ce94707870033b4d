//! The arguments of the lookups — `history`, `as-of`, `list`, `entities`,
//! `relationships` and `traverse` — as JSON objects, and their defaults:
//! the command line's options (the same names, `_` for `-`), the JSON layer
//! of the JavaScript and Python packages and the MCP server take them from
//! here. `request_id` may be left out: the call surface
//! ([`crate`]) then makes a fresh random one, as `remember` and
//! `recall` do; the command line makes one from the clock.

use serde::Deserialize;

/// `history`: how many versions at most.
pub const HISTORY_LIMIT: u32 = 10;
/// `as-of`: how many of a key's newest versions to look at.
pub const AS_OF_LIMIT: u32 = 100;
/// `list`: how many FACTs at most.
pub const LIST_LIMIT: u32 = 100;
/// `entities`: how many at most.
pub const ENTITIES_LIMIT: u32 = 100;
/// `relationships`: how many index entries to examine at most.
pub const RELATIONSHIPS_LIMIT: u32 = 100;
/// `traverse`: how many edges away at most.
pub const MAX_DEPTH: u32 = 2;
/// `traverse`: how many nodes at most.
pub const MAX_NODES: u32 = 100;
/// `traverse`: how many edge-index entries to examine at most.
pub const MAX_EDGES: u32 = 1_000;

/// What every lookup's arguments have: the request id it is audited
/// under, when the caller gave one.
pub trait Lookup {
    /// The request id given.
    fn request_id(&self) -> Option<String>;
}

/// The lookups' arguments: each a JSON object whose fields are the
/// command line's options, with `request_id` first (the request id the call
/// is audited under; a fresh one when none), none other taken.
macro_rules! lookup_args {
    ($($(#[$doc:meta])* $name:ident { $($fields:tt)* })*) => {
        $(
            $(#[$doc])*
            #[derive(Clone, Debug, Deserialize)]
            #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
            #[serde(deny_unknown_fields)]
            pub struct $name {
                /// The request id the call is audited under; a fresh one when none.
                #[serde(default)]
                pub request_id: Option<String>,
                $($fields)*
            }

            impl Lookup for $name {
                fn request_id(&self) -> Option<String> {
                    self.request_id.clone()
                }
            }
        )*
    };
}

lookup_args! {
    /// `history`: `{"request_id","key","limit"}`.
    HistoryArgs {
        /// The FACT key.
        pub key: String,
        /// How many versions at most: 10 by default.
        #[serde(default = "history_limit")]
        pub limit: u32,
    }

    /// `as-of`: `{"request_id","key","limit"}` and `"valid"` or `"known"`.
    AsOfArgs {
        /// The FACT key.
        pub key: String,
        /// A valid time (ms since the epoch).
        #[serde(default)]
        pub valid: Option<i64>,
        /// A transaction time (ms since the epoch).
        #[serde(default)]
        pub known: Option<i64>,
        /// How many of the newest versions to look at: 100 by default.
        #[serde(default = "as_of_limit")]
        pub limit: u32,
    }

    /// `list`: `{"request_id","namespace","limit","after"}`.
    ListArgs {
        /// The namespace's segments; at least one.
        pub namespace: Vec<String>,
        /// How many at most: 100 by default.
        #[serde(default = "list_limit")]
        pub limit: u32,
        /// Only the keys after this one.
        #[serde(default)]
        pub after: Option<String>,
    }

    /// `entities`: `{"request_id","entity_type","limit"}`.
    EntitiesArgs {
        /// `person`, `organization`, `place`, `product` or `event`.
        pub entity_type: engram_model::json::EntityType,
        /// How many at most: 100 by default.
        #[serde(default = "entities_limit")]
        pub limit: u32,
    }

    /// `relationships`: `{"request_id","entity","incoming","types","valid_at",
    /// "limit"}`.
    RelationshipsArgs {
        /// The entity's key (or a pseudo-entity such as `USER`).
        pub entity: String,
        /// Those it is the target of, instead of the source.
        #[serde(default)]
        pub incoming: bool,
        /// Only relationships of these types; every type when empty.
        #[serde(default)]
        pub types: Vec<String>,
        /// Only those valid at this time.
        #[serde(default)]
        pub valid_at: Option<i64>,
        /// How many index entries to examine at most: 100 by default.
        #[serde(default = "relationships_limit")]
        pub limit: u32,
    }

    /// `traverse`: `{"request_id","start","depth_first","incoming","types",
    /// "valid_at","max_depth","max_nodes","max_edges"}`.
    TraverseArgs {
        /// The key of the entity to start from.
        pub start: String,
        /// Depth-first instead of breadth-first.
        #[serde(default)]
        pub depth_first: bool,
        /// Follow relationships from target to source.
        #[serde(default)]
        pub incoming: bool,
        /// Only relationships of these types; every type when empty.
        #[serde(default)]
        pub types: Vec<String>,
        /// Only relationships valid at this time.
        #[serde(default)]
        pub valid_at: Option<i64>,
        /// How many edges away at most: 2 by default.
        #[serde(default = "max_depth")]
        pub max_depth: u32,
        /// How many nodes at most: 100 by default.
        #[serde(default = "max_nodes")]
        pub max_nodes: u32,
        /// How many edge-index entries to examine at most: 1,000 by default.
        #[serde(default = "max_edges")]
        pub max_edges: u32,
    }
}

// The defaults, as serde takes them.
fn history_limit() -> u32 {
    HISTORY_LIMIT
}
fn as_of_limit() -> u32 {
    AS_OF_LIMIT
}
fn list_limit() -> u32 {
    LIST_LIMIT
}
fn entities_limit() -> u32 {
    ENTITIES_LIMIT
}
fn relationships_limit() -> u32 {
    RELATIONSHIPS_LIMIT
}
fn max_depth() -> u32 {
    MAX_DEPTH
}
fn max_nodes() -> u32 {
    MAX_NODES
}
fn max_edges() -> u32 {
    MAX_EDGES
}
