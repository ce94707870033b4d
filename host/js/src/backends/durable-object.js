// A store in the SQLite database of one Cloudflare Durable Object
// (`ctx.storage.sql`, a class declared in a `new_sqlite_classes`
// migration), in the tables of the store format (docs/store-format.md):
//
// - `engram_kv (key BLOB PRIMARY KEY, value BLOB) WITHOUT ROWID`, the
//   ordered map of bytes (full keys: the domain prefix is already there);
// - `engram_audit`, the audit rows, with the store format's columns;
// - `engram_schema (version)` holding `2`, as in PostgreSQL: a Durable
//   Object's SQL refuses every PRAGMA (`application_id`, `user_version`,
//   `journal_mode`), the runtime owns the file and its journal. Version 2
//   added the audit rows' `caller`; a database of version 1 is brought to
//   it when opened.
//
// A commit is one `ctx.storage.transactionSync`: preconditions checked,
// puts and deletes applied, audit rows inserted, all or nothing. A Durable
// Object has no file beside its database for a trail, so the audit entries
// of calls that commit nothing go straight into `engram_audit`, as the
// store format allows. Every call is synchronous, as the Durable Object's
// SQL API is.

import { sameBytes } from '../backend.js';
import { SCHEMA_VERSIONS } from '../../gen/sqlite-schema.js';

/** The statements of a version of the SQLite schema every host runs. */
const statementsOf = (version) => SCHEMA_VERSIONS.find((v) => v.version === version).statements;

/**
 * The versions of this backend's schema (`engram_schema`), oldest first:
 * those of the schema every host runs but its trail (version 2 there: a
 * Durable Object appends every audit row in its own transaction).
 */
const VERSIONS = [
  ['CREATE TABLE engram_schema (version INTEGER NOT NULL)', ...statementsOf(1)],
  statementsOf(3),
];

/** The schema version this backend writes and reads (`engram_schema`). */
export const SCHEMA_VERSION = VERSIONS.length;

/** The columns of an audit row, in the store format's order (`seq` aside). */
export const AUDIT_COLUMNS = Object.freeze([
  'at', 'agent_id', 'request_id', 'operation', 'source', 'record_type',
  'outcome', 'stored_id', 'count', 'reason', 'caller',
]);

const INSERT_AUDIT = `INSERT INTO engram_audit (${AUDIT_COLUMNS.join(', ')})
  VALUES (${AUDIT_COLUMNS.map(() => '?').join(', ')})`;

/** Thrown inside a transaction to roll it back on a failed precondition. */
class Conflict extends Error {}

/**
 * A BLOB column as the runtime answers it (an ArrayBuffer) as bytes.
 * @param {ArrayBuffer|Uint8Array|null|undefined} value
 * @returns {Uint8Array|undefined}
 */
function bytes(value) {
  if (value === null || value === undefined) return undefined;
  return value instanceof Uint8Array ? value : new Uint8Array(value);
}

/**
 * Bytes as a BLOB binding: a view of exactly these bytes (a view into a
 * larger buffer, such as a `subarray`, is copied so no neighbouring byte
 * is bound).
 * @param {Uint8Array} view
 * @returns {Uint8Array}
 */
function blob(view) {
  return view.byteOffset === 0 && view.byteLength === view.buffer.byteLength ? view : view.slice();
}

/**
 * A {@link import('../backend.js').Backend} in a Durable Object's SQLite
 * storage. Make it in the Durable Object (`new DurableObjectBackend(
 * ctx.storage)`): it creates its tables the first time, in one
 * transaction, and refuses a database of a newer schema.
 * @implements {import('../backend.js').Backend}
 */
export class DurableObjectBackend {
  /**
   * @param {object} storage the Durable Object's `ctx.storage`; it must be
   *   SQLite-backed (have `sql` and `transactionSync`)
   */
  constructor(storage) {
    if (!storage || !storage.sql || typeof storage.transactionSync !== 'function') {
      throw new Error('the Durable Object has no SQLite storage: declare its class in a new_sqlite_classes migration');
    }
    this.storage = storage;
    this.sql = storage.sql;
    this.closed = false;
    /**
     * Who makes the calls now, when a server names them (its token's
     * name, never the secret): kept in the audit rows that name nobody.
     * @type {string|undefined}
     */
    this.caller = undefined;
    this.storage.transactionSync(() => {
      const found = this.sql
        .exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'engram_schema'")
        .toArray();
      const version = found.length === 0 ? 0 : this.sql.exec('SELECT max(version) AS version FROM engram_schema').one().version;
      if (version > SCHEMA_VERSION) {
        throw new Error(`the store's schema version ${version} is newer than this host's ${SCHEMA_VERSION}`);
      }
      if (version === SCHEMA_VERSION) return;
      // A new database, or one of an older version: the versions after its own.
      for (const statement of VERSIONS.slice(version).flat()) this.sql.exec(statement);
      if (version === 0) this.sql.exec('INSERT INTO engram_schema (version) VALUES (?)', SCHEMA_VERSION);
      else this.sql.exec('UPDATE engram_schema SET version = ?', SCHEMA_VERSION);
    });
  }

  #open() {
    if (this.closed) throw new Error('the store is closed');
  }

  /** @param {Uint8Array} key */
  get(key) {
    this.#open();
    const rows = this.sql.exec('SELECT value FROM engram_kv WHERE key = ?', blob(key)).toArray();
    return rows.length === 0 ? undefined : bytes(rows[0].value);
  }

  /** @param {Uint8Array[]} keys */
  getMany(keys) {
    // One synchronous call: no other request of the Durable Object runs in
    // between, so the values are read at one point in time.
    return keys.map((key) => this.get(key));
  }

  /**
   * @param {Uint8Array} start
   * @param {Uint8Array} end
   * @param {number} limit
   * @param {boolean} descending
   */
  scan(start, end, limit, descending) {
    this.#open();
    const order = descending ? 'DESC' : 'ASC';
    return this.sql
      .exec(
        `SELECT key, value FROM engram_kv WHERE key >= ? AND key < ? ORDER BY key ${order} LIMIT ?`,
        blob(start), blob(end), limit,
      )
      .toArray()
      .map((row) => [bytes(row.key), bytes(row.value)]);
  }

  /**
   * @param {import('../backend.js').Precondition[]} preconditions
   * @param {import('../backend.js').Op[]} ops
   * @param {import('../backend.js').AuditRow[]} auditRows
   */
  commit(preconditions, ops, auditRows) {
    this.#open();
    try {
      this.storage.transactionSync(() => {
        for (const p of preconditions) {
          const held = this.get(p.key);
          if (p.type === 'absent' ? held !== undefined : !sameBytes(held, p.value)) throw new Conflict();
        }
        for (const op of ops) {
          if (op.type === 'put') {
            this.sql.exec('INSERT OR REPLACE INTO engram_kv (key, value) VALUES (?, ?)', blob(op.key), blob(op.value));
          } else {
            this.sql.exec('DELETE FROM engram_kv WHERE key = ?', blob(op.key));
          }
        }
        this.#insertAudit(auditRows);
      });
    } catch (error) {
      if (error instanceof Conflict) return false;
      throw error;
    }
    return true;
  }

  #insertAudit(rows) {
    for (const row of rows) {
      const named = { ...row, caller: row.caller ?? this.caller };
      this.sql.exec(INSERT_AUDIT, ...AUDIT_COLUMNS.map((column) => named[column] ?? null));
    }
  }

  /** @param {import('../backend.js').AuditRow[]} rows */
  appendAudit(rows) {
    this.#open();
    if (rows.length === 0) return;
    this.storage.transactionSync(() => this.#insertAudit(rows));
  }

  /**
   * A page of the trail, newest first, by `seq`.
   * @param {number|undefined} before
   * @param {number} limit
   */
  auditPage(before, limit) {
    this.#open();
    return this.sql
      .exec(
        `SELECT seq, ${AUDIT_COLUMNS.join(', ')} FROM engram_audit
         WHERE seq < ? ORDER BY seq DESC LIMIT ?`,
        before ?? Number.MAX_SAFE_INTEGER, limit,
      )
      .toArray()
      .map((row) => ({ ...row }));
  }

  close() {
    this.closed = true;
  }
}
