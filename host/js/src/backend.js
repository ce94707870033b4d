// The one small, synchronous interface every store of the JavaScript host
// written in JavaScript implements (memory, IndexedDB, a Durable Object's
// storage), and what the backends share: key order.
//
// Keys a backend sees are whole keys: the host layer inside the component
// (host/js-components/adapter, over engram-store's Scope) has already put the
// domain's prefix in front of every key the engine names, and keeps the
// maintenance locks outside every domain's range. A backend interprets
// nothing: it keeps bytes in bytewise (memcmp) key order, and audit rows as
// they come, in append order, handed back a page at a time. Which rows an
// audit query asks for, and the `engram audit` lines of them, are the host
// layer's (engram_model::audit, as every host answers them).

/**
 * A condition a commit checks before it changes anything.
 * `absent`: the key holds no value. `holds`: the key holds exactly `value`.
 * @typedef {{type: 'absent', key: Uint8Array} | {type: 'holds', key: Uint8Array, value: Uint8Array}} Precondition
 */

/**
 * One change of a commit: store `value` under `key` (replacing any), or
 * remove `key` if present.
 * @typedef {{type: 'put', key: Uint8Array, value: Uint8Array} | {type: 'delete', key: Uint8Array}} Op
 */

/**
 * One row of the audit trail, as the host layer hands it over and a store
 * keeps it: the columns of `engram_audit` (see docs/store-format.md) but
 * `seq`. A store reads none of its fields (one that names its callers may
 * fill in a null `caller`) and hands it back as it was given.
 * @typedef {object} AuditRow
 * @property {number} at ms since the Unix epoch, the host's clock
 * @property {string} agent_id
 * @property {string} request_id
 * @property {string} operation WRITE, READ, EXPORT, IMPORT, FORGET or EXPIRE
 * @property {string|null} [source] the JSON text
 *   `{"agent_id":…,"component":…,"actor":…}`, or null
 * @property {string|null} [record_type] FACT, EVENT or STATE, or null
 * @property {string} outcome ACCEPTED, REPLAYED, REJECTED, RETURNED,
 *   FAILED, APPLIED or EXPIRED
 * @property {string|null} [stored_id] for ACCEPTED and REPLAYED
 * @property {number|null} [count] for RETURNED and APPLIED
 * @property {string|null} [reason] for REJECTED and FAILED, and a
 *   retrieval's words
 * @property {string|null} [caller] who made the call, where a server names
 *   its callers (a token's name)
 */

/**
 * An audit row as a store hands it back: with `seq`, its number in append
 * order (rising, not necessarily by one).
 * @typedef {AuditRow & {seq: number}} StoredAuditRow
 */

/**
 * A store: an ordered, transactional map of bytes and the audit trail.
 * Every method is synchronous. A method that cannot do its work (I/O, a
 * lost connection) throws an Error whose message is for the audit trail;
 * nothing is changed then.
 *
 * @typedef {object} Backend
 * @property {(key: Uint8Array) => Uint8Array|undefined} get
 *   The value under `key`, if any.
 * @property {(keys: Uint8Array[]) => Array<Uint8Array|undefined>} getMany
 *   The value under each key, if any, in order, read at one point in time.
 * @property {(start: Uint8Array, end: Uint8Array, limit: number, descending: boolean) => Array<[Uint8Array, Uint8Array]>} scan
 *   At most `limit` pairs `[key, value]` with `start <= key < end`
 *   (bytewise), smallest key first, or largest first when `descending`.
 * @property {(preconditions: Precondition[], ops: Op[], auditRows: AuditRow[]) => boolean} commit
 *   Atomically: checks every precondition, then applies every op in order
 *   and appends every audit row; durable when it returns. `true` when
 *   committed; `false` when a precondition did not hold (a conflict:
 *   nothing was changed). Throws when the store is unavailable (nothing
 *   was changed). A store that keeps audit entries of reads apart (the
 *   SQLite trail file) moves them into the trail ahead of these rows.
 * @property {(rows: AuditRow[]) => void} appendAudit
 *   Appends the rows of calls that commit nothing (reads, refusals).
 * @property {(before: number|undefined, limit: number) => StoredAuditRow[]} auditPage
 *   A page of the trail, newest first: at most `limit` rows appended
 *   before the row numbered `before` (from the newest when undefined),
 *   each with its `seq`. Fewer than `limit`: the oldest row is among them.
 * @property {() => void} close
 *   Lets the store go; no call may follow.
 * @property {(prefix: Uint8Array, key: bigint) => void} [lockDomain]
 *   Optional, for a store several writers share at once: waits until no
 *   other writer writes the domain whose keys start with `prefix`;
 *   `unlockDomain` follows. `key` is the domain's lock key, the same in
 *   every host (a signed 64-bit number; docs/store-format.md, "Sharing a
 *   file"): a PostgreSQL store takes it as its advisory lock. A writer reads, then commits on the condition
 *   that nothing it read changed: writers that do not take turns keep
 *   undoing each other's work. (JavaScript runs one call at a time; the
 *   package's stores need none.)
 * @property {(prefix: Uint8Array, key: bigint) => void} [unlockDomain]
 *   Lets the next writer of the domain in.
 */

/**
 * Bytewise (memcmp) order: negative, zero or positive.
 * @param {Uint8Array} a
 * @param {Uint8Array} b
 * @returns {number}
 */
export function compareBytes(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[i]) return a[i] - b[i];
  }
  return a.length - b.length;
}

/**
 * Whether two byte strings are equal.
 * @param {Uint8Array|undefined} a
 * @param {Uint8Array|undefined} b
 * @returns {boolean}
 */
export function sameBytes(a, b) {
  if (a === undefined || b === undefined) return a === b;
  return a.length === b.length && compareBytes(a, b) === 0;
}
