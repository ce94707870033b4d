// A store in the browser that survives a reload: IndexedDB, one database
// per agent domain, for a domain opened with `{async: true}` (every call
// here answers a promise).
//
// Why IndexedDB and not the Origin Private File System (OPFS):
//
// - A commit must be atomic across keys: check its preconditions, then put
//   and delete many keys and append audit rows, all or nothing. An
//   IndexedDB transaction over the `kv` and `audit` object stores is
//   exactly that (it aborts as a whole, and a `strict` one is on disk when
//   it completes). OPFS gives bytes in files, with no transactions: a store
//   over it would need a journal or a log of its own written with care.
// - The engine scans keys in bytewise order. IndexedDB orders binary keys
//   (ArrayBuffer and typed-array keys) by comparing their bytes, unsigned,
//   as the store format does (memcmp), and `IDBKeyRange` bounds and
//   `prev` cursors give ranges either way. OPFS has no ordered index.
// - IndexedDB works on the main thread of a page, in workers, and in
//   every current browser. OPFS's synchronous access handles
//   (`createSyncAccessHandle`), the fast way to write it, exist in
//   dedicated workers only; a page's main thread gets whole-file
//   writables (`createWritable`), atomic per file at best.
//
// One database per agent domain (`engram:<agent>` by default): the
// database is origin-scoped as all browser storage is, so no other site
// sees it, an agent's memory is deleted with its database
// (`deleteIndexedDb`), and one agent's writes never wait on another's.
//
// Two tabs of one origin may write the same domain at once: `lockDomain`
// takes a Web Lock (`navigator.locks`, shared by every tab and worker of
// the origin and let go by the browser when the tab goes away) for the
// domain's lock key and holds it until `unlockDomain`, so writers take
// turns, and each commit still checks its preconditions in its own
// transaction. Where there is no `navigator.locks` the two are no-ops.
//
// Keys are whole keys (the host layer has put the domain's prefix in front
// of them); values are kept as Uint8Array. The audit trail is an object
// store with an auto-increment key, its append order.

import { compareBytes } from '../backend.js';

/** The schema version of the database: the object stores below. */
const VERSION = 1;
/** key (binary) → value (Uint8Array). */
const KV = 'kv';
/** auto-increment seq → audit row. */
const AUDIT = 'audit';

/** The database name of an agent's domain by default. */
export function databaseName(agent, prefix = 'engram') {
  if (typeof agent !== 'string' || agent === '') throw new TypeError('an agent is a non-empty string');
  return `${prefix}:${agent}`;
}

/** The IndexedDB of this realm, or a clear error. */
function factoryOf(factory) {
  const found = factory ?? globalThis.indexedDB;
  if (found === undefined || found === null) {
    throw new Error('IndexedDB is not available here (no globalThis.indexedDB): a browser page or worker has it');
  }
  return found;
}

/** An Error for a failed request or transaction: what was done and the DOMException's name and words. */
function failure(what, name, error) {
  const kind = error?.name ?? 'Error';
  const words = error?.message ? `: ${error.message}` : '';
  if (kind === 'QuotaExceededError') {
    return new Error(`IndexedDB ${name}: ${what} failed: the origin's storage quota is used up (QuotaExceededError${words})`);
  }
  return new Error(`IndexedDB ${name}: ${what} failed (${kind}${words})`);
}

/** Bytes as IndexedDB keeps them: a copy of exactly the view's bytes. */
function own(bytes) {
  return bytes.slice();
}

/** A key or value IndexedDB answered (ArrayBuffer or a view) as a Uint8Array. */
function bytes(value) {
  if (value instanceof Uint8Array) return value;
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  return new Uint8Array(value);
}

/**
 * Opens (creating it when new) the IndexedDB database `name`.
 * @param {string} name
 * @param {IDBFactory} [factory]
 * @returns {Promise<IDBDatabase>}
 */
function openDatabase(name, factory) {
  const idb = factoryOf(factory);
  return new Promise((resolve, reject) => {
    let settled = false;
    let request;
    try {
      request = idb.open(name, VERSION);
    } catch (error) {
      reject(failure('open', name, error));
      return;
    }
    request.onupgradeneeded = (event) => {
      const db = request.result;
      if (event.oldVersion < 1) {
        db.createObjectStore(KV);
        db.createObjectStore(AUDIT, { autoIncrement: true });
      }
    };
    request.onsuccess = () => {
      if (settled) {
        // Given up on while blocked: let it go.
        request.result.close();
        return;
      }
      settled = true;
      resolve(request.result);
    };
    request.onerror = (event) => {
      event.preventDefault();
      if (settled) return;
      settled = true;
      reject(failure('open', name, request.error));
    };
    request.onblocked = () => {
      if (settled) return;
      settled = true;
      reject(
        new Error(
          `IndexedDB ${name}: open is blocked: another tab holds the database open at an older version; close it and reload`,
        ),
      );
    };
  });
}

/**
 * A {@link import('../backend.js').Backend} over one IndexedDB database,
 * answering promises: for `open(agent, {async: true, store})`.
 * @implements {import('../../index.d.ts').AsyncBackend}
 */
export class IndexedDbBackend {
  /**
   * Opens the database `name` (created when new) as a store.
   * @param {string} name the database's name
   * @param {{indexedDB?: IDBFactory, locks?: LockManager|null}} [options]
   *   `indexedDB`: the factory (`globalThis.indexedDB`); `locks`: the
   *   Web Locks manager writers take turns by (`navigator.locks`; `null`:
   *   none)
   * @returns {Promise<IndexedDbBackend>}
   */
  static async open(name, options = {}) {
    const db = await openDatabase(name, options.indexedDB);
    const locks = options.locks === undefined ? (globalThis.navigator?.locks ?? null) : options.locks;
    return new IndexedDbBackend(db, name, locks);
  }

  /** @internal Use {@link IndexedDbBackend.open}. */
  constructor(db, name, locks) {
    this.#db = db;
    this.name = name;
    this.#locks = locks;
    db.onversionchange = () => {
      // Another tab deletes or upgrades the database: let it.
      this.#gone = 'another tab deleted or upgraded the database';
      db.close();
    };
    db.onclose = () => {
      this.#gone ??= 'the browser closed the database (its storage was cleared, or the disk failed)';
    };
  }

  /** @type {IDBDatabase} */
  #db;
  /** @type {LockManager|null} */
  #locks;
  /** Why the database can no longer be used, once it cannot. */
  #gone;
  /** The release of each Web Lock this store holds, by name. */
  #held = new Map();

  /** A transaction over `stores`, or an Error saying why there is none. */
  #transaction(stores, mode, what) {
    if (this.#gone !== undefined) throw new Error(`IndexedDB ${this.name}: ${what}: the store is closed (${this.#gone})`);
    try {
      return this.#db.transaction(stores, mode, mode === 'readwrite' ? { durability: 'strict' } : undefined);
    } catch (error) {
      throw failure(what, this.name, error);
    }
  }

  /**
   * Runs `body(tx)` in a transaction; settles with what `body` left in
   * `result.value` when the transaction completes, or with an Error when
   * it aborts (unless `result.aborted` says the abort was meant).
   */
  #run(stores, mode, what, body) {
    return new Promise((resolve, reject) => {
      const tx = this.#transaction(stores, mode, what);
      const result = { value: undefined, aborted: false, error: undefined };
      tx.oncomplete = () => resolve(result.value);
      tx.onabort = () => {
        if (result.aborted) resolve(result.value);
        else reject(result.error ?? failure(what, this.name, tx.error));
      };
      try {
        body(tx, result);
      } catch (error) {
        result.error = error instanceof Error && error.message.startsWith('IndexedDB') ? error : failure(what, this.name, error);
        try {
          tx.abort();
        } catch {
          // Already finished.
        }
      }
    });
  }

  /** @param {Uint8Array} key */
  async get(key) {
    const [value] = await this.getMany([key]);
    return value;
  }

  /**
   * Every key's value, read in one transaction.
   * @param {Uint8Array[]} keys
   */
  getMany(keys) {
    return this.#run([KV], 'readonly', 'getMany', (tx, result) => {
      const kv = tx.objectStore(KV);
      result.value = new Array(keys.length).fill(undefined);
      keys.forEach((key, i) => {
        const request = kv.get(own(key));
        request.onsuccess = () => {
          if (request.result !== undefined) result.value[i] = bytes(request.result);
        };
      });
    });
  }

  /**
   * @param {Uint8Array} start
   * @param {Uint8Array} end
   * @param {number} limit
   * @param {boolean} descending
   * @returns {Promise<Array<[Uint8Array, Uint8Array]>>}
   */
  scan(start, end, limit, descending) {
    const max = Number(limit);
    // An empty range is no IDBKeyRange (`bound` refuses lower >= upper).
    if (!(max > 0) || compareBytes(start, end) >= 0) {
      return this.#run([KV], 'readonly', 'scan', () => {}).then(() => []);
    }
    const range = IDBKeyRange.bound(own(start), own(end), false, true);
    return this.#run([KV], 'readonly', 'scan', (tx, result) => {
      const kv = tx.objectStore(KV);
      result.value = [];
      if (!descending && max < 2 ** 32) {
        // Keys and values of one range, in one transaction: the same pairs.
        const keys = kv.getAllKeys(range, max);
        const values = kv.getAll(range, max);
        values.onsuccess = () => {
          result.value = keys.result.map((k, i) => [bytes(k), bytes(values.result[i])]);
        };
        return;
      }
      const cursor = kv.openCursor(range, descending ? 'prev' : 'next');
      cursor.onsuccess = () => {
        const at = cursor.result;
        if (at === null) return;
        result.value.push([bytes(at.key), bytes(at.value)]);
        if (result.value.length < max) at.continue();
      };
    });
  }

  /**
   * In one readwrite transaction over the keys and the trail: checks the
   * preconditions, then applies the ops and appends the rows; `false`
   * (the transaction aborted, nothing changed) when a precondition fails.
   * Settles once the transaction is on disk (`durability: 'strict'`).
   * @param {import('../backend.js').Precondition[]} preconditions
   * @param {import('../backend.js').Op[]} ops
   * @param {import('../backend.js').AuditRow[]} auditRows
   * @returns {Promise<boolean>}
   */
  commit(preconditions, ops, auditRows) {
    return this.#run([KV, AUDIT], 'readwrite', 'commit', (tx, result) => {
      const kv = tx.objectStore(KV);
      result.value = true;
      const apply = () => {
        for (const op of ops) {
          if (op.type === 'put') kv.put(own(op.value), own(op.key));
          else kv.delete(own(op.key));
        }
        const audit = tx.objectStore(AUDIT);
        for (const row of auditRows) audit.add({ ...row });
      };
      let pending = preconditions.length;
      if (pending === 0) {
        apply();
        return;
      }
      for (const p of preconditions) {
        const request = kv.get(own(p.key));
        request.onsuccess = () => {
          if (!result.value) return;
          const held = request.result === undefined ? undefined : bytes(request.result);
          const holds = p.type === 'absent' ? held === undefined : held !== undefined && compareBytes(held, p.value) === 0;
          if (!holds) {
            result.value = false;
            result.aborted = true;
            tx.abort();
            return;
          }
          pending -= 1;
          if (pending === 0) {
            try {
              apply();
            } catch (error) {
              result.error = failure('commit', this.name, error);
              tx.abort();
            }
          }
        };
      }
    });
  }

  /** @param {import('../backend.js').AuditRow[]} rows */
  appendAudit(rows) {
    if (rows.length === 0) return Promise.resolve();
    return this.#run([AUDIT], 'readwrite', 'appendAudit', (tx) => {
      const audit = tx.objectStore(AUDIT);
      for (const row of rows) audit.add({ ...row });
    });
  }

  /**
   * A page of the trail, newest first: a row's `seq` is its auto-increment
   * key.
   * @param {number|undefined} before
   * @param {number} limit
   * @returns {Promise<import('../backend.js').StoredAuditRow[]>}
   */
  auditPage(before, limit) {
    return this.#run([AUDIT], 'readonly', 'auditPage', (tx, result) => {
      result.value = [];
      if (!(limit > 0)) return;
      const range = before === undefined ? null : IDBKeyRange.upperBound(before, true);
      const cursor = tx.objectStore(AUDIT).openCursor(range, 'prev');
      cursor.onsuccess = () => {
        const at = cursor.result;
        if (at === null) return;
        result.value.push({ ...at.value, seq: at.primaryKey });
        if (result.value.length < limit) at.continue();
      };
    });
  }

  /** The Web Lock's name of a domain: the database's name and the domain's lock key. */
  #lockName(key) {
    return `engram:${this.name}:${key}`;
  }

  /**
   * Waits for the domain's turn among every tab and worker of the origin
   * (a Web Lock), and holds it until {@link unlockDomain}.
   * @param {Uint8Array} prefix
   * @param {bigint} key
   * @returns {Promise<void>}
   */
  async lockDomain(prefix, key) {
    if (this.#locks === null) return;
    const name = this.#lockName(key);
    await new Promise((acquired, failed) => {
      this.#locks
        .request(name, { mode: 'exclusive' }, () => new Promise((release) => {
          this.#held.set(name, release);
          acquired();
        }))
        .catch((error) => failed(new Error(`IndexedDB ${this.name}: the domain's Web Lock failed (${error?.name ?? error}: ${error?.message ?? ''})`)));
    });
  }

  /**
   * Lets the domain's next writer in.
   * @param {Uint8Array} prefix
   * @param {bigint} key
   */
  unlockDomain(prefix, key) {
    const name = this.#lockName(key);
    const release = this.#held.get(name);
    this.#held.delete(name);
    release?.();
  }

  /** Closes the database connection; no call may follow. */
  close() {
    for (const release of this.#held.values()) release();
    this.#held.clear();
    this.#gone ??= 'it was closed';
    this.#db.close();
  }
}

/**
 * The store of one agent's domain: the IndexedDB database
 * `<prefix>:<agent>` (`engram:alice`) of this origin, created when new.
 * @param {string} agent
 * @param {{prefix?: string, indexedDB?: IDBFactory, locks?: LockManager|null}} [options]
 * @returns {Promise<IndexedDbBackend>}
 */
export function openIndexedDb(agent, options = {}) {
  return IndexedDbBackend.open(databaseName(agent, options.prefix), options);
}

/**
 * Deletes the database of an agent's domain (its memory and its audit
 * trail); open connections of other tabs are closed for it.
 * @param {string} agent
 * @param {{prefix?: string, indexedDB?: IDBFactory}} [options]
 * @returns {Promise<void>}
 */
export function deleteIndexedDb(agent, options = {}) {
  const name = databaseName(agent, options.prefix);
  const idb = factoryOf(options.indexedDB);
  return new Promise((resolve, reject) => {
    const request = idb.deleteDatabase(name);
    request.onsuccess = () => resolve();
    request.onerror = () => reject(failure('deleteDatabase', name, request.error));
    request.onblocked = () => {
      // Fires while another connection stays open; `onsuccess` follows once it closes.
    };
  });
}
