//! A PostgreSQL store that many hosts share: the key-value pairs of every
//! domain and the audit trail, in tables of one schema.
//!
//! Every commit is one `SERIALIZABLE` transaction that reads its
//! preconditions and applies its ops, so two commits whose preconditions
//! conflict (two hosts writing the same domain from the same reads) can never
//! both succeed: PostgreSQL aborts one with a serialization failure, which
//! this backend answers as [`StoreError::Conflict`] and the engine retries.

use super::{Backend, Op, Order, Pair, Precondition, StoreError, name_of};
use crate::postgres_defaults as defaults;
use anyhow::{Context, Result, anyhow, bail};
use engram_model::audit::{AuditEntry, AuditQuery, AuditSink};
use postgres::error::SqlState;
use postgres::{Client, Config, NoTls, Statement};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// The schema version this build reads and writes (`engram_schema.version`).
pub const SCHEMA_VERSION: i32 = 2;

/// The key of the advisory lock that serializes creating and migrating the
/// tables across hosts ("ENGR").
const MIGRATION_LOCK: i64 = 0x454e_4752;

/// The tables, version by version (`postgres-schema.sql`, which the Python
/// package runs too).
const SCHEMA: &str = include_str!("postgres-schema.sql");

/// Options for opening a PostgreSQL store.
#[derive(Clone, Debug)]
pub struct PostgresOptions {
    /// The schema holding the tables, created if absent: lower-case ASCII
    /// letters, digits and `_`, not starting with a digit. When `None`, the
    /// first schema on the connection's `search_path` (which the URL may
    /// set: `?options=-csearch_path%3Dname`), `public` by default.
    pub schema: Option<String>,
    /// How long connecting may take; 5 seconds by default.
    pub connect_timeout: Duration,
    /// How long the server lets one statement run, lock waits included
    /// (`statement_timeout`); 30 seconds by default.
    pub statement_timeout: Duration,
    /// How long the server keeps a session that sits idle inside a
    /// transaction, so a host that vanished mid-commit releases its locks
    /// (`idle_in_transaction_session_timeout`); 60 seconds by default.
    pub idle_in_transaction_timeout: Duration,
    /// How long the connection may stay silent before TCP keepalive probes
    /// start (then 5 probes 5 seconds apart); 15 seconds by default.
    pub keepalives_idle: Duration,
    /// How long data sent may stay unacknowledged before the connection is
    /// given up (`TCP_USER_TIMEOUT`, Linux); 30 seconds by default.
    pub tcp_user_timeout: Duration,
}

/// Every host's defaults ([`crate::postgres_defaults`]).
impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            schema: None,
            connect_timeout: defaults::CONNECT_TIMEOUT,
            statement_timeout: defaults::STATEMENT_TIMEOUT,
            idle_in_transaction_timeout: defaults::IDLE_IN_TRANSACTION_TIMEOUT,
            keepalives_idle: defaults::KEEPALIVES_IDLE,
            tcp_user_timeout: defaults::TCP_USER_TIMEOUT,
        }
    }
}

/// A store in PostgreSQL, shared safely by any number of hosts. It serves as
/// both the persistence backend and the audit sink.
///
/// It holds one connection, opened on first use and again after it was lost:
/// a call that finds the connection gone answers
/// [`StoreError::Unavailable`] and the next call reconnects. A commit whose
/// connection was lost while `COMMIT` was under way may or may not have been
/// applied (all of it or none of it); the engine's idempotency makes the
/// retry of a write with the same request id safe either way (IO-W2).
///
/// Records are committed with the server's `synchronous_commit` setting (on,
/// by default: durable when the commit returns). Audit entries are written
/// with `synchronous_commit = off`: they survive a crash of the host at once
/// and reach the disk with the next commit of records or within a fraction
/// of a second, so a read costs no disk flush of its own.
pub struct PostgresBackend {
    config: Config,
    schema: String,
    conn: Mutex<Option<Conn>>,
    /// The threads of this process writing a domain take turns before
    /// they take its advisory lock (which a session holds once, however
    /// many of its threads ask).
    writers: crate::turns::Turns,
}

/// One live connection and the statements prepared on it.
struct Conn {
    client: Client,
    /// The server's `synchronous_commit` for record commits.
    commit_sync: String,
    get: Statement,
    scan_ascending: Statement,
    scan_descending: Statement,
    read_keys: Statement,
    delete_keys: Statement,
    put_pairs: Statement,
    append: Statement,
    trail: Statement,
}

impl PostgresBackend {
    /// Opens the store at `url` (`postgres://user@host:port/database?…`)
    /// with default options, creating its tables if they do not exist.
    pub fn open(url: &str) -> Result<Self> {
        Self::open_with(url, &PostgresOptions::default())
    }

    /// Opens the store at `url`, creating the schema and its tables if they
    /// do not exist. A schema that holds tables of another program, or an
    /// Engram schema of a newer version, is refused and left untouched.
    pub fn open_with(url: &str, options: &PostgresOptions) -> Result<Self> {
        let shown = redacted(url);
        let mut config: Config = url.parse().map_err(|e: postgres::Error| {
            let detail = std::error::Error::source(&e)
                .map(|cause| format!(" ({cause})"))
                .unwrap_or_default();
            anyhow!("{shown}: not a valid PostgreSQL URL: {e}{detail}")
        })?;
        if let Some(schema) = &options.schema {
            check_schema_name(schema)?;
        }
        let millis = |d: Duration| d.as_millis().max(1);
        let mut startup = config.get_options().unwrap_or_default().to_owned();
        startup.push_str(&format!(
            " -c statement_timeout={} -c idle_in_transaction_session_timeout={}",
            millis(options.statement_timeout),
            millis(options.idle_in_transaction_timeout)
        ));
        if let Some(schema) = &options.schema {
            startup.push_str(&format!(" -c search_path={schema}"));
        }
        config
            .options(startup.trim_start())
            .connect_timeout(options.connect_timeout)
            .keepalives(true)
            .keepalives_idle(options.keepalives_idle)
            .keepalives_interval(Duration::from_secs(5))
            .keepalives_retries(5)
            .tcp_user_timeout(options.tcp_user_timeout);
        if config.get_application_name().is_none() {
            config.application_name("engram");
        }
        let mut client = config
            .connect(NoTls)
            .with_context(|| format!("{shown}: cannot connect"))?;
        let schema = migrate(&mut client, options.schema.as_deref())
            .with_context(|| format!("{shown}: cannot open the Engram store"))?;
        let conn = Conn::prepare(client).with_context(|| format!("{shown}: cannot open"))?;
        Ok(PostgresBackend {
            config,
            schema,
            conn: Mutex::new(Some(conn)),
            writers: Default::default(),
        })
    }

    /// The schema the tables live in.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The connection slot. A call that panicked while holding it may have
    /// left its connection mid-transaction: it is dropped, not reused.
    fn lock(&self) -> MutexGuard<'_, Option<Conn>> {
        self.conn.lock().unwrap_or_else(|poisoned| {
            self.conn.clear_poison();
            let mut slot = poisoned.into_inner();
            *slot = None;
            slot
        })
    }

    /// Runs `call` on the connection, connecting first if there is none.
    /// A call that fails because the connection is gone drops it, so the
    /// next call connects again.
    fn with_conn<T>(
        &self,
        call: impl FnOnce(&mut Conn) -> Result<T, Failure>,
    ) -> Result<T, StoreError> {
        let mut slot = self.lock();
        if slot.is_none() {
            let client = self
                .config
                .connect(NoTls)
                .map_err(|e| StoreError::Unavailable(format!("cannot connect: {e}")))?;
            let conn = Conn::prepare(client).map_err(|e| {
                StoreError::Unavailable(format!("cannot prepare the statements: {e}"))
            })?;
            *slot = Some(conn);
        }
        let conn = slot.as_mut().expect("connected above");
        match call(conn) {
            Ok(value) => Ok(value),
            Err(Failure::Conflict) => Err(StoreError::Conflict),
            Err(Failure::Postgres(error)) => {
                if connection_lost(&error) || conn.client.is_closed() {
                    *slot = None;
                }
                if is_conflict(&error) {
                    Err(StoreError::Conflict)
                } else {
                    Err(StoreError::Unavailable(describe(&error)))
                }
            }
        }
    }
}

/// Why a call on the connection failed.
enum Failure {
    /// A precondition did not hold.
    Conflict,
    /// PostgreSQL or the connection failed.
    Postgres(postgres::Error),
}

impl From<postgres::Error> for Failure {
    fn from(error: postgres::Error) -> Self {
        Failure::Postgres(error)
    }
}

impl Conn {
    fn prepare(mut client: Client) -> Result<Conn, postgres::Error> {
        let commit_sync: String = client
            .query_one("SELECT current_setting('synchronous_commit')", &[])?
            .get(0);
        // A setting's value as the server reports it is one lower-case word;
        // anything else falls back to the safe default.
        let commit_sync = if commit_sync
            .chars()
            .all(|c| c.is_ascii_lowercase() || c == '_')
            && !commit_sync.is_empty()
        {
            commit_sync
        } else {
            "on".to_owned()
        };
        client.batch_execute("SET synchronous_commit = off")?;
        let mut prepare = |sql: &str| client.prepare(sql);
        let get = prepare("SELECT value FROM engram_kv WHERE key = $1")?;
        let scan_ascending = prepare(
            "SELECT key, value FROM engram_kv WHERE key >= $1 AND key < $2 ORDER BY key ASC LIMIT $3",
        )?;
        let scan_descending = prepare(
            "SELECT key, value FROM engram_kv WHERE key >= $1 AND key < $2 ORDER BY key DESC LIMIT $3",
        )?;
        let read_keys = prepare("SELECT key, value FROM engram_kv WHERE key = ANY($1)")?;
        let delete_keys = prepare("DELETE FROM engram_kv WHERE key = ANY($1)")?;
        let put_pairs = prepare(
            "INSERT INTO engram_kv (key, value) SELECT * FROM unnest($1::bytea[], $2::bytea[])
             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
        )?;
        let append = prepare(
            "INSERT INTO engram_audit (at, agent_id, request_id, operation, source, record_type,
                                       outcome, stored_id, count, reason, caller)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        )?;
        let trail = prepare(
            "SELECT at, agent_id, request_id, operation, source, record_type, outcome,
                    stored_id, count, reason, caller
             FROM engram_audit
             WHERE ($1::bytea IS NULL OR agent_id = $1)
               AND ($2::bigint IS NULL OR at >= $2)
               AND ($3::bigint IS NULL OR at < $3)
               AND ($4::text IS NULL OR operation = $4)
               AND ($5::text IS NULL OR outcome = $5)
             ORDER BY seq DESC LIMIT $6",
        )?;
        Ok(Conn {
            client,
            commit_sync,
            get,
            scan_ascending,
            scan_descending,
            read_keys,
            delete_keys,
            put_pairs,
            append,
            trail,
        })
    }

    /// One transaction: the preconditions are read and checked, then the
    /// ops applied. Any error leaves the transaction to be rolled back.
    fn commit(
        &mut self,
        preconditions: &[Precondition],
        ops: &[Op],
        trail: &[AuditRow],
    ) -> Result<(), Failure> {
        // The last op on a key decides what it holds; ops on different keys
        // commute, so a batch becomes one delete and one upsert.
        let mut last: BTreeMap<&[u8], Option<&[u8]>> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Put(key, value) => last.insert(key, Some(value)),
                Op::Delete(key) => last.insert(key, None),
            };
        }
        let deletes: Vec<&[u8]> = last
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| *k)
            .collect();
        let (keys, values): (Vec<&[u8]>, Vec<&[u8]>) =
            last.iter().filter_map(|(k, v)| Some((*k, (*v)?))).unzip();

        let applied = (|| -> Result<(), Failure> {
            self.client.batch_execute(&format!(
                "BEGIN ISOLATION LEVEL SERIALIZABLE; SET LOCAL synchronous_commit = {}",
                self.commit_sync
            ))?;
            if !preconditions.is_empty() {
                let wanted: Vec<&[u8]> = preconditions
                    .iter()
                    .map(|p| match p {
                        Precondition::Absent(key) | Precondition::Holds(key, _) => key.as_slice(),
                    })
                    .collect();
                let found: HashMap<Vec<u8>, Vec<u8>> = self
                    .client
                    .query(&self.read_keys, &[&wanted])?
                    .into_iter()
                    .map(|row| (row.get(0), row.get(1)))
                    .collect();
                for precondition in preconditions {
                    let holds = match precondition {
                        Precondition::Absent(key) => !found.contains_key(key),
                        Precondition::Holds(key, value) => found.get(key) == Some(value),
                    };
                    if !holds {
                        return Err(Failure::Conflict);
                    }
                }
            }
            if !deletes.is_empty() {
                self.client.execute(&self.delete_keys, &[&deletes])?;
            }
            if !keys.is_empty() {
                self.client.execute(&self.put_pairs, &[&keys, &values])?;
            }
            for row in trail {
                self.insert_audit(row)?;
            }
            Ok(())
        })();
        match applied {
            // A failed COMMIT ends the transaction too.
            Ok(()) => Ok(self.client.batch_execute("COMMIT")?),
            Err(failure) => {
                // The connection may be gone; then the server rolls back.
                // Outside a transaction this is a harmless warning.
                let _ = self.client.batch_execute("ROLLBACK");
                Err(failure)
            }
        }
    }
}

/// An audit entry in the form of its table's row.
struct AuditRow<'a> {
    entry: &'a AuditEntry,
    operation: String,
    source: Option<String>,
    record_type: Option<String>,
    outcome: String,
}

impl<'a> AuditRow<'a> {
    fn new(entry: &'a AuditEntry) -> Result<Self> {
        Ok(AuditRow {
            entry,
            operation: name_of(entry.operation)?,
            source: entry
                .source
                .as_ref()
                .map(serde_json::to_string)
                .transpose()?,
            record_type: entry.record_type.map(name_of).transpose()?,
            outcome: name_of(entry.outcome)?,
        })
    }
}

impl Conn {
    fn insert_audit(&mut self, row: &AuditRow<'_>) -> Result<(), Failure> {
        let entry = row.entry;
        let count = entry.count.map(i64::from);
        let reason = entry.reason.as_deref().map(str::as_bytes);
        let caller = entry.caller.as_deref().map(str::as_bytes);
        self.client.execute(
            &self.append,
            &[
                &entry.at,
                &entry.agent_id.as_bytes(),
                &entry.request_id.as_bytes(),
                &row.operation,
                &row.source,
                &row.record_type,
                &row.outcome,
                &entry.stored_id,
                &count,
                &reason,
                &caller,
            ],
        )?;
        Ok(())
    }
}

/// Creates the schema and tables, or checks the version of those there,
/// under an advisory lock so hosts starting together do it once. Answers the
/// schema the tables are in.
fn migrate(client: &mut Client, schema: Option<&str>) -> Result<String> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    let schema = match schema {
        Some(schema) => schema.to_owned(),
        None => {
            let row = tx.query_one(
                "SELECT current_schema(), current_setting('search_path')",
                &[],
            )?;
            match row.get::<_, Option<String>>(0) {
                Some(schema) => schema,
                None => {
                    // The search path names a schema that does not exist yet.
                    let path: String = row.get(1);
                    let first = path.split(',').next().unwrap_or("").trim();
                    check_schema_name(first).with_context(|| {
                        format!("the search_path {path:?} names no schema Engram can create")
                    })?;
                    first.to_owned()
                }
            }
        }
    };
    let quoted = quote_ident(&schema);
    tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {quoted}"))?;
    let qualified = |table: &str| format!("{quoted}.{table}");
    let exists = |tx: &mut postgres::Transaction<'_>, table: &str| -> Result<bool> {
        let row = tx.query_one("SELECT to_regclass($1) IS NOT NULL", &[&qualified(table)])?;
        Ok(row.get(0))
    };
    if exists(&mut tx, "engram_schema")? {
        let rows = tx.query(
            &format!("SELECT version FROM {}", qualified("engram_schema")),
            &[],
        )?;
        match rows.as_slice() {
            [row] => {
                let version: i32 = row.get(0);
                if (1..SCHEMA_VERSION).contains(&version) {
                    // An older version: the versions after its own.
                    let versions = crate::schema::versions(SCHEMA);
                    tx.batch_execute(&format!(
                        "SET LOCAL search_path TO {quoted}; {} UPDATE engram_schema SET version = {SCHEMA_VERSION};",
                        crate::schema::after(&versions, version)
                    ))?;
                } else if version != SCHEMA_VERSION {
                    bail!(
                        "schema {schema}: Engram store of schema version {version}; this build reads version {SCHEMA_VERSION}"
                    );
                }
            }
            _ => bail!("schema {schema}: engram_schema does not hold exactly one version"),
        }
    } else if exists(&mut tx, "engram_kv")? || exists(&mut tx, "engram_audit")? {
        bail!(
            "schema {schema}: not an Engram store (it has Engram's table names without engram_schema)"
        );
    } else {
        tx.batch_execute(&format!("SET LOCAL search_path TO {quoted}; {SCHEMA}"))?;
        tx.execute(
            "INSERT INTO engram_schema (version) VALUES ($1)",
            &[&SCHEMA_VERSION],
        )?;
    }
    tx.commit()?;
    // The connection must resolve the tables in this schema from now on.
    let current: Option<String> = client.query_one("SELECT current_schema()", &[])?.get(0);
    if current.as_deref() != Some(schema.as_str()) {
        bail!(
            "schema {schema} is not first on the search_path (tables would resolve to {current:?})"
        );
    }
    Ok(schema)
}

/// An identifier quoted for SQL.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Schema names Engram accepts: no quoting needed anywhere.
fn check_schema_name(schema: &str) -> Result<()> {
    let mut chars = schema.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if first_ok && rest_ok && schema.len() <= 63 {
        Ok(())
    } else {
        bail!(
            "{schema:?} is not a schema name Engram uses: 1 to 63 of a-z, 0-9 and _, not starting with a digit"
        )
    }
}

/// The URL with any password hidden, for messages.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

/// Whether the connection cannot be used after `error`.
fn connection_lost(error: &postgres::Error) -> bool {
    match error.as_db_error() {
        None => true,
        Some(db) => {
            matches!(db.severity(), "FATAL" | "PANIC")
                || db.code().code().starts_with("08")
                || matches!(
                    db.code(),
                    &SqlState::ADMIN_SHUTDOWN
                        | &SqlState::CRASH_SHUTDOWN
                        | &SqlState::CANNOT_CONNECT_NOW
                )
        }
    }
}

/// Whether `error` means another transaction got in the way: retrying from
/// fresh reads may succeed.
fn is_conflict(error: &postgres::Error) -> bool {
    matches!(
        error.code(),
        Some(&SqlState::T_R_SERIALIZATION_FAILURE)
            | Some(&SqlState::T_R_DEADLOCK_DETECTED)
            | Some(&SqlState::UNIQUE_VIOLATION)
    )
}

fn describe(error: &postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{}: {} ({})", db.severity(), db.message(), db.code().code()),
        None => error.to_string(),
    }
}

fn into_pairs(rows: Vec<postgres::Row>) -> Vec<Pair> {
    rows.into_iter().map(|r| (r.get(0), r.get(1))).collect()
}

impl Backend for PostgresBackend {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.with_conn(|conn| {
            let row = conn.client.query_opt(&conn.get, &[&key])?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    /// A session advisory lock on a hash of the domain's prefix: the
    /// writers of one domain, on every host, take turns. The wait is bounded
    /// by the statement timeout; a lost connection releases the lock.
    fn lock_domain(&self, prefix: &[u8]) -> Result<bool, StoreError> {
        let key = crate::domain_lock_key(prefix);
        self.writers.take(key)?;
        let locked = self.with_conn(|conn| {
            conn.client
                .execute("SELECT pg_advisory_lock($1)", &[&key])
                .map(|_| true)
                .map_err(Failure::from)
        });
        if locked.is_err() {
            self.writers.give(key);
        }
        locked
    }

    fn unlock_domain(&self, prefix: &[u8]) {
        let key = crate::domain_lock_key(prefix);
        let _ = self.with_conn(|conn| {
            conn.client
                .execute("SELECT pg_advisory_unlock($1)", &[&key])
                .map(drop)
                .map_err(Failure::from)
        });
        self.writers.give(key);
    }

    fn get_many(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        let wanted: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let found: HashMap<Vec<u8>, Vec<u8>> = self.with_conn(|conn| {
            Ok(conn
                .client
                .query(&conn.read_keys, &[&wanted])?
                .into_iter()
                .map(|row| (row.get(0), row.get(1)))
                .collect())
        })?;
        // A key asked for twice gets its value twice.
        Ok(keys.iter().map(|key| found.get(key).cloned()).collect())
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: u32,
        order: Order,
    ) -> Result<Vec<Pair>, StoreError> {
        if start >= end || limit == 0 {
            return Ok(Vec::new());
        }
        self.with_conn(|conn| {
            let statement = match order {
                Order::Ascending => &conn.scan_ascending,
                Order::Descending => &conn.scan_descending,
            };
            let rows = conn
                .client
                .query(statement, &[&start, &end, &i64::from(limit)])?;
            Ok(into_pairs(rows))
        })
    }

    fn commit(&self, preconditions: &[Precondition], ops: &[Op]) -> Result<(), StoreError> {
        let result = self.with_conn(|conn| conn.commit(preconditions, ops, &[]));
        back_off(result == Err(StoreError::Conflict));
        result
    }

    fn commit_audited(
        &self,
        preconditions: &[Precondition],
        ops: &[Op],
        trail: &[AuditEntry],
        sink: &dyn AuditSink,
    ) -> Result<bool, StoreError> {
        if !super::same_object(self, sink) {
            return self.commit(preconditions, ops).map(|()| false);
        }
        let rows = trail
            .iter()
            .map(AuditRow::new)
            .collect::<Result<Vec<_>>>()
            .map_err(|e| StoreError::Unavailable(format!("{e:#}")))?;
        let result = self.with_conn(|conn| conn.commit(preconditions, ops, &rows));
        back_off(result == Err(StoreError::Conflict));
        result.map(|()| true)
    }
}

thread_local! {
    /// How many commits in a row this thread lost to another writer.
    static LOST: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// After a lost commit, waits a random while that doubles with each loss in
/// a row (up to 32 ms), outside the connection lock, before the engine
/// reads again and retries. Without it, writers racing for one domain over
/// the network can keep beating the same loser until the engine gives up
/// on its write.
fn back_off(lost: bool) {
    use std::hash::{BuildHasher, Hasher};
    let losses = LOST.with(|n| {
        n.set(if lost { n.get().saturating_add(1) } else { 0 });
        n.get()
    });
    if losses == 0 {
        return;
    }
    let ceiling_us = 1_000u64 << losses.min(5);
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    std::thread::sleep(Duration::from_micros(random % ceiling_us));
}

/// The upper-case JSON name of an enum value (`WRITE`, `ACCEPTED`, `FACT`).
fn from_name<T: serde::de::DeserializeOwned>(name: String) -> Result<T> {
    Ok(serde_json::from_value(serde_json::Value::String(name))?)
}

fn store_error(error: StoreError) -> anyhow::Error {
    anyhow!("{error}")
}

impl AuditSink for PostgresBackend {
    fn append(&self, entry: &AuditEntry) -> Result<()> {
        let row = AuditRow::new(entry)?;
        self.with_conn(|conn| conn.insert_audit(&row))
            .map_err(store_error)
            .context("appending to the audit trail")
    }

    fn trail(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
        let operation = query.operation.map(name_of).transpose()?;
        let outcome = query.outcome.map(name_of).transpose()?;
        let rows = self
            .with_conn(|conn| {
                Ok(conn.client.query(
                    &conn.trail,
                    &[
                        &query.agent.as_deref().map(str::as_bytes),
                        &query.since,
                        &query.until,
                        &operation,
                        &outcome,
                        &i64::from(query.limit),
                    ],
                )?)
            })
            .map_err(store_error)
            .context("reading the audit trail")?;
        let mut entries = rows
            .into_iter()
            .map(|row| {
                Ok(AuditEntry {
                    at: row.get(0),
                    agent_id: String::from_utf8(row.get(1))?,
                    request_id: String::from_utf8(row.get(2))?,
                    operation: from_name(row.get(3))?,
                    source: row
                        .get::<_, Option<String>>(4)
                        .map(|s| serde_json::from_str(&s))
                        .transpose()?,
                    record_type: row.get::<_, Option<String>>(5).map(from_name).transpose()?,
                    outcome: from_name(row.get(6))?,
                    stored_id: row.get(7),
                    count: row
                        .get::<_, Option<i64>>(8)
                        .map(u32::try_from)
                        .transpose()?,
                    reason: row
                        .get::<_, Option<Vec<u8>>>(9)
                        .map(String::from_utf8)
                        .transpose()?,
                    caller: row
                        .get::<_, Option<Vec<u8>>>(10)
                        .map(String::from_utf8)
                        .transpose()?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        entries.reverse();
        Ok(entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(
            redacted("postgres://u:secret@h:5432/db?x=1"),
            "postgres://u:***@h:5432/db?x=1"
        );
        assert_eq!(redacted("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redacted("postgres://h/db"), "postgres://h/db");
    }

    #[test]
    fn the_schema_text_ends_at_this_builds_version() {
        let versions: Vec<i32> = crate::schema::versions(SCHEMA)
            .iter()
            .map(|(version, _)| *version)
            .collect();
        assert_eq!(versions, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
    }

    #[test]
    fn schema_names_need_no_quoting() {
        assert!(check_schema_name("engram_test_1").is_ok());
        assert!(check_schema_name("_x").is_ok());
        for bad in ["", "1x", "Upper", "a-b", "a\"b", "a b", &"x".repeat(64)] {
            assert!(check_schema_name(bad).is_err(), "{bad:?}");
        }
    }
}
