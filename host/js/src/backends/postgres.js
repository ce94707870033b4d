// A store in PostgreSQL that many hosts share, through node-postgres (`pg`):
// the tables, migration, commits and writers' turns of the Rust host's
// PostgresBackend (docs/hosts.md, "PostgreSQL: many hosts, one store"), so
// the `engram` command line, Rust and Python hosts and Node processes may
// use one schema at once.
//
// - The tables are those of postgres-schema.sql (host/store/src, the text
//   every host runs), created in the schema the store opens in under the
//   advisory transaction lock 0x454E4752, so hosts starting together create
//   them once; a schema of another version, or one with Engram's table names
//   and no engram_schema, is refused and left untouched.
// - A commit is one SERIALIZABLE transaction: the conditions read and
//   checked, the changes applied and the audit rows inserted, or nothing. A
//   serialization failure (another host committed from the same reads) is a
//   failed condition: `commit` answers false and the engine retries from
//   fresh reads, after a random few milliseconds, longer after each loss in
//   a row.
// - Audit rows of calls that commit nothing are inserted with
//   synchronous_commit = off, so a read costs no flush; records are
//   committed with the server's own setting (on by default).
// - Writers of one domain take turns: the domains of this process in a
//   queue, then a session advisory lock on the domain's lock key (the same
//   key in every host), so the command line, Rust and Python hosts wait for
//   a Node writer of the same domain and the other way round.
// - One connection serves the store, one call at a time; a connection that
//   was lost is dropped and the next call connects again.
//
// Every call answers a promise: a domain over this store is opened with
// `{async: true}` (JavaScript Promise Integration, Node 24 or later).

import { SCHEMA_VERSIONS } from '../../gen/postgres-schema.js';

/** The schema version this host reads and writes (`engram_schema.version`). */
export const SCHEMA_VERSION = SCHEMA_VERSIONS[SCHEMA_VERSIONS.length - 1].version;

/** The key of the advisory lock under which hosts create and check the tables ("ENGR"). */
export const MIGRATION_LOCK = 0x454e4752;

/** How to install what this store needs. */
export const INSTALL = 'npm install pg';

/**
 * SQLSTATEs of another transaction getting in the way (serialization
 * failure, deadlock, a unique key taken meanwhile): retrying from fresh
 * reads may succeed.
 */
const CONFLICTS = new Set(['40001', '40P01', '23505']);

/** SQLSTATEs after which the session is gone: the server shutting down or not taking connections. */
const GONE = new Set(['57P01', '57P02', '57P03']);

const READ_KEYS = 'SELECT key, value FROM engram_kv WHERE key = ANY($1::bytea[])';
const SCAN = (order) => `SELECT key, value FROM engram_kv WHERE key >= $1 AND key < $2 ORDER BY key ${order} LIMIT $3`;
const DELETE_KEYS = 'DELETE FROM engram_kv WHERE key = ANY($1::bytea[])';
const PUT_PAIRS = `INSERT INTO engram_kv (key, value) SELECT * FROM unnest($1::bytea[], $2::bytea[])
  ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`;
const INSERT_AUDIT = `INSERT INTO engram_audit (at, agent_id, request_id, operation, source, record_type,
    outcome, stored_id, count, reason)
  SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::bytea[], $4::text[], $5::text[], $6::text[],
    $7::text[], $8::text[], $9::bigint[], $10::bytea[])`;
const SELECT_AUDIT = `SELECT at, agent_id, request_id, operation, source, record_type, outcome,
    stored_id, count, reason FROM engram_audit
  WHERE ($1::bytea IS NULL OR agent_id = $1)
    AND ($2::bigint IS NULL OR at >= $2)
    AND ($3::bigint IS NULL OR at < $3)
    AND ($4::text IS NULL OR operation = $4)
    AND ($5::text IS NULL OR outcome = $5)
  ORDER BY seq DESC LIMIT $6`;

/**
 * Options for opening a PostgreSQL store; the times are in milliseconds,
 * their defaults the Rust host's.
 * @typedef {object} PostgresOptions
 * @property {string} [schema] the schema holding the tables, created if
 *   absent (1 to 63 of a-z, 0-9 and _, not starting with a digit); by
 *   default the first schema on the search path, which the URL may set
 *   (`?options=-csearch_path%3Dname`), `public` if it does not
 * @property {number} [connectTimeout] connecting; 5000
 * @property {number} [statementTimeout] one statement, lock waits
 *   included; 30000
 * @property {number} [idleInTransactionTimeout] a session idle inside a
 *   transaction, so a host that vanished mid-commit releases its locks;
 *   60000
 * @property {number} [keepalivesIdle] silence before TCP keepalive probes
 *   start; 15000
 */

/** A commit that lost to another transaction. */
class Conflict extends Error {}

/**
 * Opens the store at `url` (`postgres://user[:password]@host[:port]/database[?…]`),
 * creating the schema and its tables if they do not exist.
 * @param {string} url
 * @param {PostgresOptions} [options]
 * @returns {Promise<PostgresBackend>}
 */
export async function openPostgres(url, options = {}) {
  const store = new PostgresBackend(url, options, await loadPg(redacted(url)));
  await store._open();
  return store;
}

/** node-postgres, or an error that says how to install it. */
async function loadPg(shown) {
  try {
    const pg = await import('pg');
    return pg.default ?? pg;
  } catch (error) {
    if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new Error(`${shown}: a PostgreSQL store needs node-postgres: ${INSTALL}`);
  }
}

/**
 * A {@link import('../backend.js').Backend} in one schema of a PostgreSQL
 * database, whose every method answers a promise. Open it with
 * {@link openPostgres}.
 */
export class PostgresBackend {
  /** The URL, any password hidden. */
  url;
  /** The schema the tables are in. */
  schema;
  #pg;
  #config;
  /** @type {any} the live connection, if any */
  #client;
  /** The calls on the connection, one after another. */
  #queue = Promise.resolve();
  #closed = false;
  /** The server's `synchronous_commit`, for record commits. */
  #commitSync = 'on';
  /** The lock keys of the domains this process is writing, and who waits. */
  #writing = new Map();
  /** Commits lost in a row. */
  #losses = 0;

  /** @internal: use {@link openPostgres}. */
  constructor(url, options, pg) {
    this.url = redacted(url);
    this.#pg = pg;
    if (options.schema !== undefined) checkSchemaName(options.schema);
    let parsed;
    try {
      parsed = new URL(url);
    } catch {
      throw new Error(`${this.url}: not a valid PostgreSQL URL`);
    }
    if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
      throw new Error(`${this.url}: not a PostgreSQL URL (postgres:// or postgresql://)`);
    }
    const given = parsed.searchParams.get('options');
    parsed.searchParams.delete('options');
    const millis = (value, fallback) => Math.max(1, Math.round(value ?? fallback));
    const startup = [
      given ?? '',
      `-c statement_timeout=${millis(options.statementTimeout, 30000)}`,
      `-c idle_in_transaction_session_timeout=${millis(options.idleInTransactionTimeout, 60000)}`,
      options.schema === undefined ? '' : `-c search_path=${options.schema}`,
    ];
    this.#config = {
      connectionString: parsed.href,
      options: startup.filter((part) => part !== '').join(' '),
      connectionTimeoutMillis: millis(options.connectTimeout, 5000),
      keepAlive: true,
      keepAliveInitialDelayMillis: millis(options.keepalivesIdle, 15000),
      application_name: parsed.searchParams.get('application_name') ?? 'engram',
    };
    this.schema = options.schema;
  }

  /** @internal: connects, creates or checks the tables. */
  async _open() {
    const client = await this.#connect(`${this.url}: cannot connect`);
    try {
      this.schema = await this.#migrate(client, this.schema);
      await this.#prepare(client);
    } catch (error) {
      await client.end().catch(() => {});
      if (error instanceof StoreError) throw error;
      throw new Error(`${this.url}: cannot open the Engram store: ${describe(error)}`);
    }
    this.#client = client;
  }

  // -- the connection ------------------------------------------------------

  async #connect(doing) {
    const client = new this.#pg.Client(this.#config);
    // A connection lost while idle is noticed by the next call.
    client.on('error', () => {
      if (this.#client === client) this.#client = undefined;
    });
    try {
      await client.connect();
    } catch (error) {
      await client.end().catch(() => {});
      throw new Error(`${doing}: ${describe(error)}`);
    }
    return client;
  }

  /** Notes the server's synchronous_commit for record commits, then turns it off for the session (audit rows). */
  async #prepare(client) {
    const { rows } = await client.query("SELECT current_setting('synchronous_commit') AS setting");
    const setting = String(rows[0]?.setting ?? '');
    // A setting's value as the server reports it is one lower-case word;
    // anything else falls back to the safe default.
    this.#commitSync = /^[a-z_]+$/.test(setting) ? setting : 'on';
    await client.query('SET synchronous_commit = off');
  }

  /** Creates the schema and tables, or checks the version of those there, under the advisory lock; the schema they are in. */
  async #migrate(client, schema) {
    const refused = (name, why) => new StoreError(`${this.url}: cannot open the Engram store: schema ${name}: ${why}`);
    await client.query('BEGIN');
    try {
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      if (schema === undefined) {
        const { rows } = await client.query("SELECT current_schema() AS schema, current_setting('search_path') AS path");
        if (rows[0].schema !== null) {
          schema = rows[0].schema;
        } else {
          // The search path names a schema that does not exist yet.
          const first = String(rows[0].path).split(',')[0].trim();
          try {
            checkSchemaName(first);
          } catch (error) {
            throw new StoreError(
              `${this.url}: cannot open the Engram store: the search_path ${JSON.stringify(rows[0].path)} names no schema Engram can create: ${error.message}`,
            );
          }
          schema = first;
        }
      }
      const quoted = quoteIdent(schema);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoted}`);
      const exists = async (table) =>
        (await client.query('SELECT to_regclass($1) IS NOT NULL AS found', [`${quoted}.${table}`])).rows[0].found;
      if (await exists('engram_schema')) {
        const { rows } = await client.query(`SELECT version FROM ${quoted}.engram_schema`);
        if (rows.length !== 1) throw refused(schema, 'engram_schema does not hold exactly one version');
        if (rows[0].version !== SCHEMA_VERSION) {
          throw refused(schema, `Engram store of schema version ${rows[0].version}; this host reads version ${SCHEMA_VERSION}`);
        }
      } else if ((await exists('engram_kv')) || (await exists('engram_audit'))) {
        throw refused(schema, "not an Engram store (it has Engram's table names without engram_schema)");
      } else {
        await client.query(`SET LOCAL search_path TO ${quoted}`);
        for (const { text } of SCHEMA_VERSIONS) await client.query(text);
        await client.query('INSERT INTO engram_schema (version) VALUES ($1)', [SCHEMA_VERSION]);
      }
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
    // The connection must resolve the tables in this schema from now on.
    const { rows } = await client.query('SELECT current_schema() AS schema');
    if (rows[0].schema !== schema) {
      throw refused(schema, `not first on the search_path (tables would resolve to ${JSON.stringify(rows[0].schema)})`);
    }
    return schema;
  }

  /**
   * Runs `f` on the connection after the calls before it, connecting first
   * if there is none. A failure that lost the connection drops it, so the
   * next call connects again; another transaction getting in the way
   * throws {@link Conflict}; any other failure an Error naming it.
   * @template T
   * @param {(client: any) => Promise<T>} f
   * @returns {Promise<T>}
   */
  #call(f) {
    const run = this.#queue.then(() => this.#run(f));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #run(f) {
    if (this.#closed) throw new Error(`${this.url}: the store is closed`);
    if (this.#client === undefined) {
      const client = await this.#connect('PostgreSQL: cannot connect');
      try {
        await this.#prepare(client);
      } catch (error) {
        await client.end().catch(() => {});
        throw new Error(`PostgreSQL: cannot prepare the connection: ${describe(error)}`);
      }
      this.#client = client;
    }
    const client = this.#client;
    try {
      return await f(client);
    } catch (error) {
      if (error instanceof Conflict) throw error;
      if (lost(error)) {
        if (this.#client === client) this.#client = undefined;
        await client.end().catch(() => {});
      }
      if (CONFLICTS.has(error?.code)) throw new Conflict();
      throw new Error(`PostgreSQL: ${describe(error)}`);
    }
  }

  // -- the backend -----------------------------------------------------------

  /** @param {Uint8Array} key */
  async get(key) {
    const { rows } = await this.#call((c) => c.query('SELECT value FROM engram_kv WHERE key = $1', [key]));
    return rows.length === 0 ? undefined : bytes(rows[0].value);
  }

  /** One statement: the values at one point in time. @param {Uint8Array[]} keys */
  async getMany(keys) {
    if (keys.length === 0) return [];
    const { rows } = await this.#call((c) => c.query(READ_KEYS, [keys]));
    const found = new Map(rows.map((row) => [hex(row.key), bytes(row.value)]));
    // A key asked for twice gets its value twice.
    return keys.map((key) => found.get(hex(key)));
  }

  async scan(start, end, limit, descending) {
    if (limit <= 0 || Buffer.compare(start, end) >= 0) return [];
    const { rows } = await this.#call((c) => c.query(SCAN(descending ? 'DESC' : 'ASC'), [start, end, limit]));
    return rows.map((row) => [bytes(row.key), bytes(row.value)]);
  }

  /**
   * One SERIALIZABLE transaction: the conditions read and checked, the
   * changes applied, `auditRows` inserted. False when a condition did not
   * hold or another transaction got in the way (nothing changed).
   */
  async commit(preconditions, ops, auditRows) {
    if (preconditions.length === 0 && ops.length === 0 && auditRows.length === 0) return true;
    // The last change of a key decides what it holds; changes of different
    // keys commute, so a batch becomes one delete and one upsert.
    const last = new Map();
    for (const op of ops) last.set(hex(op.key), op);
    const deletes = [...last.values()].filter((op) => op.type === 'delete').map((op) => op.key);
    const puts = [...last.values()].filter((op) => op.type === 'put');
    const columns = auditColumns(auditRows);
    let done;
    try {
      done = await this.#call(async (c) => {
        await c.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
        try {
          await c.query(`SET LOCAL synchronous_commit = ${this.#commitSync}`);
          if (preconditions.length > 0) {
            const { rows } = await c.query(
              READ_KEYS,
              [preconditions.map((p) => p.key)],
            );
            const found = new Map(rows.map((row) => [hex(row.key), row.value]));
            const holds = (p) => {
              const value = found.get(hex(p.key));
              return p.type === 'absent' ? value === undefined : value !== undefined && Buffer.compare(value, p.value) === 0;
            };
            if (!preconditions.every(holds)) {
              await c.query('ROLLBACK');
              return false;
            }
          }
          if (deletes.length > 0) await c.query(DELETE_KEYS, [deletes]);
          if (puts.length > 0) await c.query(PUT_PAIRS, [puts.map((op) => op.key), puts.map((op) => op.value)]);
          if (columns !== undefined) await c.query(INSERT_AUDIT, columns);
        } catch (error) {
          // The connection may be gone; then the server rolls back.
          await c.query('ROLLBACK').catch(() => {});
          throw error;
        }
        // A failed COMMIT ends the transaction too.
        await c.query('COMMIT');
        return true;
      });
    } catch (error) {
      if (!(error instanceof Conflict)) throw error;
      done = false;
    }
    await this.#backOff(!done);
    return done;
  }

  /**
   * Inserts the rows in one statement, with the session's
   * synchronous_commit = off: kept across a crash of this process, flushed
   * with the next record commit or within a fraction of a second.
   */
  async appendAudit(rows) {
    const columns = auditColumns(rows);
    if (columns === undefined) return;
    try {
      await this.#call((c) => c.query(INSERT_AUDIT, columns));
    } catch (error) {
      // An insert of new rows conflicts with nothing; said plainly if it does.
      if (error instanceof Conflict) throw new Error('PostgreSQL: the audit rows could not be inserted; try again');
      throw error;
    }
  }

  /** The newest matching rows, oldest first. @param {import('../backend.js').AuditQuery} query */
  async auditRows(query = {}) {
    const { rows } = await this.#call((c) =>
      c.query(SELECT_AUDIT, [
        query.agent == null ? null : Buffer.from(query.agent, 'utf8'),
        query.since ?? null,
        query.until ?? null,
        query.operation ?? null,
        query.outcome ?? null,
        query.limit ?? 100,
      ]),
    );
    return rows.reverse().map((r) => ({
      at: Number(r.at),
      agent_id: r.agent_id.toString('utf8'),
      request_id: r.request_id.toString('utf8'),
      operation: r.operation,
      source: r.source,
      record_type: r.record_type,
      outcome: r.outcome,
      stored_id: r.stored_id,
      count: r.count === null ? null : Number(r.count),
      reason: r.reason === null ? null : r.reason.toString('utf8'),
    }));
  }

  /**
   * The domains of this process writing the domain take turns; other
   * processes and hosts are kept out by a session advisory lock on its
   * lock key, waited for at most the statement timeout. A lost connection
   * lets it go.
   * @param {Uint8Array} _prefix
   * @param {bigint} key the domain's lock key
   */
  async lockDomain(_prefix, key) {
    if (typeof key !== 'bigint') throw new TypeError('lockDomain needs the domain lock key (a bigint)');
    for (let held = this.#writing.get(key); held !== undefined; held = this.#writing.get(key)) await held.promise;
    let give;
    const promise = new Promise((resolve) => (give = resolve));
    this.#writing.set(key, { promise, give });
    try {
      await this.#call((c) => c.query('SELECT pg_advisory_lock($1)', [key.toString()]));
    } catch (error) {
      this.#give(key);
      if (error instanceof Conflict) throw new Error("PostgreSQL: waiting for the domain's writer ended in a deadlock; try again");
      throw error;
    }
  }

  /** @param {Uint8Array} _prefix @param {bigint} key */
  async unlockDomain(_prefix, key) {
    try {
      await this.#call((c) => c.query('SELECT pg_advisory_unlock($1)', [key.toString()]));
    } catch {
      // A lost connection let the lock go with it.
    } finally {
      this.#give(key);
    }
  }

  #give(key) {
    const held = this.#writing.get(key);
    this.#writing.delete(key);
    held?.give();
  }

  /** Lets the store go, after the calls under way. */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    await this.#queue;
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }

  /**
   * After a lost commit, waits a random while that doubles with each loss
   * in a row (up to 32 ms), outside the connection's queue, before the
   * engine reads again and retries: writers racing over the network could
   * otherwise keep beating the same loser until it gives up.
   */
  async #backOff(lostOne) {
    this.#losses = lostOne ? this.#losses + 1 : 0;
    if (this.#losses === 0) return;
    const ms = Math.random() * (1 << Math.min(this.#losses, 5));
    await new Promise((resolve) => setTimeout(resolve, ms));
  }
}

/** An error of opening the store whose message is whole. */
class StoreError extends Error {}

/** A row's columns as arrays, for one INSERT … unnest; undefined for no rows. */
function auditColumns(rows) {
  if (rows.length === 0) return undefined;
  const utf8 = (text) => (text == null ? null : Buffer.from(text, 'utf8'));
  return [
    rows.map((r) => String(r.at)),
    rows.map((r) => utf8(r.agent_id)),
    rows.map((r) => utf8(r.request_id)),
    rows.map((r) => r.operation),
    rows.map((r) => r.source),
    rows.map((r) => r.record_type),
    rows.map((r) => r.outcome),
    rows.map((r) => r.stored_id),
    rows.map((r) => (r.count == null ? null : String(r.count))),
    rows.map((r) => utf8(r.reason)),
  ];
}

/** A bytea column's value as a Uint8Array of its own. */
function bytes(buffer) {
  return new Uint8Array(buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength));
}

/** A key as a map key. */
function hex(key) {
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('hex');
}

/** An identifier quoted for SQL. */
function quoteIdent(name) {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Schema names Engram accepts: no quoting needed anywhere. */
export function checkSchemaName(schema) {
  if (typeof schema !== 'string' || !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new Error(`${JSON.stringify(schema)} is not a schema name Engram uses: 1 to 63 of a-z, 0-9 and _, not starting with a digit`);
  }
}

/** The URL with any password hidden, for messages. */
export function redacted(url) {
  const at = url.indexOf('://');
  if (at < 0) return url;
  const rest = url.slice(at + 3);
  const end = [rest.indexOf('/'), rest.indexOf('?')].filter((i) => i >= 0).reduce((a, b) => Math.min(a, b), rest.length);
  const authority = rest.slice(0, end);
  const sign = authority.lastIndexOf('@');
  const userinfo = authority.slice(0, Math.max(sign, 0));
  if (sign < 0 || !userinfo.includes(':')) return url;
  return `${url.slice(0, at)}://${userinfo.split(':', 1)[0]}:***@${authority.slice(sign + 1)}${rest.slice(end)}`;
}

/** Whether the connection cannot be used after `error`. */
function lost(error) {
  const code = error?.code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true;
  return error.severity === 'FATAL' || error.severity === 'PANIC' || code.startsWith('08') || GONE.has(code);
}

/** A PostgreSQL error as every host tells it: severity, message and SQLSTATE; a failure of the connection as its message. */
function describe(error) {
  const message = String(error?.message ?? error).split('\n').map((line) => line.trim()).filter(Boolean).join(' ');
  if (typeof error?.code === 'string' && /^[0-9A-Z]{5}$/.test(error.code) && error.severity) {
    return `${error.severity}: ${message} (${error.code})`;
  }
  return message || String(error?.code ?? 'unknown error');
}
