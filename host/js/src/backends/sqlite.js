// A store in one SQLite file through Node's built-in node:sqlite, in the
// format every host shares (docs/store-format.md): application_id
// 0x454E4752, user_version 2, the WAL journal, `engram_kv`,
// `engram_audit` and `engram_trail`, and the `STORE-trail` file of audit
// entries of calls that commit nothing.
//
// Node has no file locks (flock): like the WASI host, a Node process must
// be the only process using its store while it writes it. Nothing
// enforces it (see docs/store-format.md, "Sharing a file").

import { DatabaseSync } from 'node:sqlite';
import fs from 'node:fs';
import { SCHEMA_VERSIONS } from '../../gen/sqlite-schema.js';
import { auditLine, auditRowOfLine, sameBytes } from '../backend.js';

/** Marks a SQLite file as an Engram store (`PRAGMA application_id`). */
export const APPLICATION_ID = 0x454e4752;
/** The schema version this host reads and writes (`PRAGMA user_version`):
 * the last of the schema every host runs. */
export const SCHEMA_VERSION = SCHEMA_VERSIONS[SCHEMA_VERSIONS.length - 1].version;

/**
 * The statements that bring a store of version `from` to the last one.
 * @param {number} from
 */
function schemaAfter(from) {
  return SCHEMA_VERSIONS.filter((v) => v.version > from)
    .flatMap((v) => v.statements)
    .map((statement) => `${statement};`)
    .join('\n');
}

/**
 * Options for opening a SQLite store.
 * @typedef {object} SqliteOptions
 * @property {'FULL'|'NORMAL'} [synchronous] durability of each commit:
 *   `FULL` (the default) survives power loss; `NORMAL` may lose the last
 *   commits on power loss
 * @property {number} [busyTimeout] ms to wait for another connection's
 *   write lock; 5000 by default
 */

/**
 * A {@link import('../backend.js').Backend} in one SQLite file.
 * @implements {import('../backend.js').Backend}
 */
export class SqliteBackend {
  /**
   * Opens the store at `path`, creating it if the file holds no schema
   * yet. A file that is not an Engram store is refused and left untouched.
   * @param {string} path
   * @param {SqliteOptions} [options]
   */
  constructor(path, options = {}) {
    const synchronous = options.synchronous ?? 'FULL';
    if (synchronous !== 'FULL' && synchronous !== 'NORMAL') {
      throw new TypeError(`synchronous must be FULL or NORMAL, not ${synchronous}`);
    }
    /** The file this store lives in. */
    this.path = path;
    /** The file of pending audit entries beside it. */
    this.trailPath = `${path}-trail`;
    this.#settings = { busyTimeout: Math.trunc(options.busyTimeout ?? 5000), synchronous };
    let db;
    try {
      db = openStore(path, this.#settings);
    } catch (error) {
      // A read that failed while opening is tried once more: an I/O error
      // of a moment is not the file's state.
      if (!error.unreadable) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
      db = openStore(path, this.#settings);
    }
    this.db = db;
    this.statements = prepare(db);
  }

  /** How the connection is set up, to open it again. */
  #settings;

  /**
   * A call failed with a SQLite error: the connection is closed and opened
   * again before its next use. An I/O error can leave SQLite's locks of the
   * file (those of the `-shm` file above all) in a state it cannot leave by
   * itself, where every later call waits out the busy timeout and fails;
   * closing the process's last connection to the file resets them.
   */
  #broken = false;

  /**
   * Runs `call` on the connection, opened again first when a call before
   * failed with a SQLite error.
   * @template T
   * @param {() => T} call
   * @returns {T}
   */
  #use(call) {
    if (this.#broken) this.#reopen();
    try {
      return call();
    } catch (error) {
      if (error?.code === 'ERR_SQLITE_ERROR') this.#broken = true;
      throw error;
    }
  }

  /** Closes the connection, then opens it again; until that succeeds,
   * every call tries again. */
  #reopen() {
    try {
      if (this.db.isOpen) this.db.close();
    } catch {
      // Closing a connection whose locks failed may fail too.
    }
    try {
      const db = new DatabaseSync(this.path);
      db.exec(`PRAGMA busy_timeout = ${this.#settings.busyTimeout}; ${durability(this.#settings)}`);
      this.statements = prepare(db);
      this.db = db;
    } catch (error) {
      throw new Error(`${this.path}: cannot open the store again after a failure: ${error.message}`);
    }
    this.#broken = false;
  }

  /** The trail file, open for appending once a read was audited. */
  #trail;

  /** @param {Uint8Array} key */
  get(key) {
    return this.#use(() => this.#get(key));
  }

  /** @param {Uint8Array} key */
  #get(key) {
    const row = this.statements.get.get(key);
    return row === undefined ? undefined : bytes(row.value);
  }

  /** @param {Uint8Array[]} keys */
  getMany(keys) {
    return this.#use(() => {
      this.db.exec('BEGIN');
      try {
        return keys.map((key) => this.#get(key));
      } finally {
        this.db.exec('COMMIT');
      }
    });
  }

  /**
   * @param {Uint8Array} start
   * @param {Uint8Array} end
   * @param {number} limit
   * @param {boolean} descending
   */
  scan(start, end, limit, descending) {
    return this.#use(() => {
      const statement = descending ? this.statements.descending : this.statements.ascending;
      return statement.all(start, end, limit).map((row) => [bytes(row.key), bytes(row.value)]);
    });
  }

  /**
   * One `BEGIN IMMEDIATE` transaction: the trail file's entries past the
   * offset `engram_trail` records into `engram_audit`, the preconditions,
   * the ops and `auditRows`; the file is emptied after `COMMIT`, having
   * recorded offset 0 (this process is alone on its store).
   * @param {import('../backend.js').Precondition[]} preconditions
   * @param {import('../backend.js').Op[]} ops
   * @param {import('../backend.js').AuditRow[]} auditRows
   */
  commit(preconditions, ops, auditRows) {
    return this.#use(() => this.#commit(preconditions, ops, auditRows));
  }

  /**
   * @param {import('../backend.js').Precondition[]} preconditions
   * @param {import('../backend.js').Op[]} ops
   * @param {import('../backend.js').AuditRow[]} auditRows
   */
  #commit(preconditions, ops, auditRows) {
    const text = this.#trailText();
    if (text.length === 0 && preconditions.length === 0 && ops.length === 0 && auditRows.length === 0) {
      return true;
    }
    const { db, statements } = this;
    db.exec('BEGIN IMMEDIATE');
    try {
      if (text.length > 0) {
        const moved = Number(statements.moved.get().moved);
        for (const row of pendingRows(text, moved)) insertAudit(statements.audit, row);
        statements.setMoved.run(0);
      }
      for (const p of preconditions) {
        const held = this.#get(p.key);
        if (p.type === 'absent' ? held !== undefined : !sameBytes(held, p.value)) {
          db.exec('ROLLBACK');
          return false;
        }
      }
      for (const op of ops) {
        if (op.type === 'put') statements.put.run(op.key, op.value);
        else statements.delete.run(op.key);
      }
      for (const row of auditRows) insertAudit(statements.audit, row);
      db.exec('COMMIT');
    } catch (error) {
      if (db.isTransaction) db.exec('ROLLBACK');
      throw error;
    }
    if (text.length > 0) fs.truncateSync(this.trailPath, 0);
    return true;
  }

  /** The trail file's bytes (none when it is absent). */
  #trailText() {
    try {
      return fs.readFileSync(this.trailPath);
    } catch (error) {
      if (error.code === 'ENOENT') return Buffer.alloc(0);
      throw new Error(`${this.trailPath}: cannot read the audit trail: ${error.message}`);
    }
  }

  /**
   * Appends the rows to the trail file, one JSON line each, with one
   * write: they are in the operating system's hands when this returns.
   * @param {import('../backend.js').AuditRow[]} rows
   */
  appendAudit(rows) {
    if (rows.length === 0) return;
    const text = rows.map((row) => `${JSON.stringify(auditLine(row))}\n`).join('');
    try {
      // Opened once, for appending: every host empties the file in place
      // (it is never removed nor replaced), so the descriptor stays the
      // file's, and each write lands at its end.
      this.#trail ??= fs.openSync(this.trailPath, 'a');
      fs.writeSync(this.#trail, text);
    } catch (error) {
      throw new Error(`${this.trailPath}: cannot append to the audit trail: ${error.message}`);
    }
  }

  /**
   * The newest matching rows, oldest first, after moving the trail file's
   * entries into the table.
   * @param {import('../backend.js').AuditQuery} query
   */
  auditRows(query) {
    this.commit([], [], []);
    const rows = this.#use(() =>
      this.statements.trail.all(
        query.agent ?? null,
        query.since ?? null,
        query.until ?? null,
        query.operation ?? null,
        query.outcome ?? null,
        query.limit ?? 100,
      ),
    );
    return rows.reverse().map((row) => ({
      at: Number(row.at),
      agent_id: row.agent_id,
      request_id: row.request_id,
      operation: row.operation,
      source: row.source,
      record_type: row.record_type,
      outcome: row.outcome,
      stored_id: row.stored_id,
      count: row.count === null ? null : Number(row.count),
      reason: row.reason,
    }));
  }

  close() {
    if (this.#trail !== undefined) {
      fs.closeSync(this.#trail);
      this.#trail = undefined;
    }
    if (this.db.isOpen) this.db.close();
  }
}

/**
 * Opens (or creates) the store at `path` and sets its connection up; a
 * file that is not an Engram store is refused and left untouched.
 * @param {string} path
 * @param {{busyTimeout: number, synchronous: string}} settings
 */
function openStore(path, settings) {
  let db;
  try {
    db = new DatabaseSync(path);
  } catch (error) {
    throw opening(path, 'cannot open the store', error);
  }
  try {
    db.exec(`PRAGMA busy_timeout = ${settings.busyTimeout}`);
    let found = identify(db, path);
    if (found.app === 0 && found.version === 0 && found.objects === 0) {
      // Another process may be creating it: look again under the write
      // lock, and create it only if it is still empty.
      db.exec('BEGIN IMMEDIATE');
      try {
        found = identify(db, path);
        if (found.app === 0 && found.version === 0 && found.objects === 0) {
          db.exec(
            `${schemaAfter(0)} PRAGMA application_id = ${APPLICATION_ID}; PRAGMA user_version = ${SCHEMA_VERSION};`,
          );
          found = { app: APPLICATION_ID, version: SCHEMA_VERSION, objects: 1 };
        }
        db.exec('COMMIT');
      } catch (error) {
        if (db.isTransaction) db.exec('ROLLBACK');
        throw opening(path, 'cannot create the store', error);
      }
    }
    if (found.app !== APPLICATION_ID) {
      throw new Error(`${path}: not an Engram store (it is another SQLite database)`);
    }
    const older = (/** @type {{version: number}} */ f) => f.version >= 1 && f.version < SCHEMA_VERSION;
    if (older(found)) {
      // The versions after its own, under the write lock. Version 1 had
      // no `engram_trail`: its trail file is moved from the start.
      db.exec('BEGIN IMMEDIATE');
      try {
        found = identify(db, path);
        if (older(found)) {
          db.exec(`${schemaAfter(found.version)} PRAGMA user_version = ${SCHEMA_VERSION};`);
          found = { ...found, version: SCHEMA_VERSION };
        }
        db.exec('COMMIT');
      } catch (error) {
        if (db.isTransaction) db.exec('ROLLBACK');
        throw opening(path, 'cannot upgrade the store', error);
      }
    }
    if (found.version !== SCHEMA_VERSION) {
      throw new Error(
        `${path}: Engram store of schema version ${found.version}; this host reads version ${SCHEMA_VERSION}`,
      );
    }
    // Run to its end: an error of the switch's commit (a failed fsync)
    // comes with the last step. The file is never read here through a
    // descriptor of our own: closing one lets go of the lock SQLite keeps on
    // the file while a connection is open in WAL mode, and another process
    // closing the store would then delete the WAL under this one's writes.
    let mode;
    try {
      mode = String(db.prepare('PRAGMA journal_mode = WAL').all()[0]?.journal_mode ?? '');
    } catch (error) {
      throw opening(path, 'cannot switch the store to the WAL journal', error);
    }
    if (mode.toLowerCase() !== 'wal') {
      throw Object.assign(
        new Error(`${path}: the switch to the WAL journal did not take (the journal is ${JSON.stringify(mode)}); check the disk`),
        { unreadable: true },
      );
    }
    db.exec(durability(settings));
  } catch (error) {
    try {
      db.close();
    } catch {
      // Closing after a failed read may fail too.
    }
    // A step's own error names the file already; SQLite's, not yet.
    throw error.unreadable === undefined && error.code === 'ERR_SQLITE_ERROR'
      ? opening(path, 'cannot open the store', error)
      : error;
  }
  return db;
}

/**
 * A connection's durability settings, as every host's: `synchronous` as
 * asked, and a checkpoint every 4,096 pages instead of SQLite's 1,000.
 * @param {{synchronous: string}} settings
 */
function durability(settings) {
  return `PRAGMA synchronous = ${settings.synchronous}; PRAGMA wal_autocheckpoint = 4096;`;
}

/**
 * The failure of an opening step, naming the file; marked `unreadable`
 * (worth one more try) when SQLite could not read the file. SQLite's
 * "malformed" or "not a database" is checked against the file's header
 * first: SQLite answers so when a read fails under it too, and a store must
 * not be called damaged for an I/O error (its user might delete it).
 * @param {string} path
 * @param {string} doing
 * @param {any} error
 */
function opening(path, doing, error) {
  const code = (error?.errcode ?? 0) & 0xff;
  let why = error.message;
  if (code === 11 || code === 26) {
    // Only the file's size, from its metadata: a descriptor of our own on
    // the file, once closed, would let go of the locks SQLite holds on it
    // for every connection of this process.
    try {
      why =
        fs.statSync(path).size === 0
          ? `a read of the file failed (SQLite: ${error.message}, on an empty file, which holds nothing to damage)`
          : `SQLite found the file inconsistent, or a read of it failed (SQLite: ${error.message}): a disk I/O error is as likely as damage: check the disk before anything else`;
    } catch (failed) {
      why = `reading the file's metadata failed: ${failed.message}`;
    }
  }
  return Object.assign(new Error(`${path}: ${doing}: ${why}`), { unreadable: code === 10 || code === 11 || code === 26 });
}

/**
 * The statements of a connection.
 * @param {DatabaseSync} db
 */
function prepare(db) {
  return {
      get: db.prepare('SELECT value FROM engram_kv WHERE key = ?'),
      put: db.prepare('INSERT OR REPLACE INTO engram_kv (key, value) VALUES (?, ?)'),
      delete: db.prepare('DELETE FROM engram_kv WHERE key = ?'),
      ascending: db.prepare(
        'SELECT key, value FROM engram_kv WHERE key >= ? AND key < ? ORDER BY key ASC LIMIT ?',
      ),
      descending: db.prepare(
        'SELECT key, value FROM engram_kv WHERE key >= ? AND key < ? ORDER BY key DESC LIMIT ?',
      ),
      audit: db.prepare(
        `INSERT INTO engram_audit (at, agent_id, request_id, operation, source, record_type,
           outcome, stored_id, count, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      moved: db.prepare('SELECT moved FROM engram_trail WHERE id = 1'),
      setMoved: db.prepare('UPDATE engram_trail SET moved = ? WHERE id = 1'),
      trail: db.prepare(
        `SELECT at, agent_id, request_id, operation, source, record_type, outcome,
                stored_id, count, reason
         FROM engram_audit
         WHERE (?1 IS NULL OR agent_id = ?1)
           AND (?2 IS NULL OR at >= ?2)
           AND (?3 IS NULL OR at < ?3)
           AND (?4 IS NULL OR operation = ?4)
           AND (?5 IS NULL OR outcome = ?5)
         ORDER BY seq DESC LIMIT ?6`,
      ),
    };
}

/**
 * The entries of the trail file's lines past byte `moved` (all of them
 * when the file is shorter), parsed: a line a power loss tore is skipped,
 * but an entry appended after the torn part, on the same line, is kept.
 * @param {Buffer} text
 * @param {number} moved
 * @returns {import('../backend.js').AuditRow[]}
 */
function pendingRows(text, moved) {
  const from = moved > text.length ? 0 : moved;
  const rows = [];
  for (const line of text.subarray(from).toString('utf8').split('\n')) {
    if (line.trim() === '') continue;
    for (const candidate of [line, line.slice(Math.max(0, line.lastIndexOf('{"at":')))]) {
      try {
        rows.push(auditRowOfLine(JSON.parse(candidate)));
        break;
      } catch {
        // A line a power loss tore is skipped.
      }
    }
  }
  return rows;
}

/** The marks of the file: application id, schema version, schema objects. */
function identify(db, path) {
  try {
    const row = db
      .prepare(
        `SELECT (SELECT application_id FROM pragma_application_id) AS app,
                (SELECT user_version FROM pragma_user_version) AS version,
                (SELECT count(*) FROM sqlite_schema) AS objects`,
      )
      .get();
    return { app: Number(row.app), version: Number(row.version), objects: Number(row.objects) };
  } catch (error) {
    if (/not a database/i.test(error.message)) {
      throw Object.assign(new Error(`${path}: not an Engram store (not a SQLite database)`), { unreadable: true });
    }
    throw opening(path, 'cannot read the store', error);
  }
}

function insertAudit(statement, row) {
  statement.run(
    row.at,
    row.agent_id,
    row.request_id,
    row.operation,
    row.source ?? null,
    row.record_type ?? null,
    row.outcome,
    row.stored_id ?? null,
    row.count ?? null,
    row.reason ?? null,
  );
}

/** A BLOB as node:sqlite answers it, as a plain Uint8Array. */
function bytes(value) {
  return value instanceof Uint8Array ? new Uint8Array(value.buffer, value.byteOffset, value.byteLength) : new Uint8Array(value);
}
