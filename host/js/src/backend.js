// The one small, synchronous interface every store of the JavaScript host
// written in JavaScript implements (memory, IndexedDB, a Durable Object's
// storage), and what the backends share: key order, audit rows and their
// line form.
//
// Keys a backend sees are whole keys: the host layer inside the component
// (host/components/adapter, over engram-store's Scope) has already put the
// domain's prefix in front of every key the engine names, and keeps the
// maintenance locks outside every domain's range. A backend interprets
// nothing: it keeps bytes in bytewise (memcmp) key order.

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
 * One row of the audit trail: the columns of `engram_audit` (see
 * docs/store-format.md) but `seq`, which the store gives in append order.
 * @typedef {object} AuditRow
 * @property {number} at ms since the Unix epoch, the host's clock
 * @property {string} agent_id
 * @property {string} request_id
 * @property {string} operation WRITE, READ, EXPORT, IMPORT, FORGET or EXPIRE
 * @property {string|null} source the JSON text
 *   `{"agent_id":…,"component":…,"actor":…}`, or null
 * @property {string|null} record_type FACT, EVENT or STATE, or null
 * @property {string} outcome ACCEPTED, REPLAYED, REJECTED, RETURNED,
 *   FAILED or APPLIED
 * @property {string|null} stored_id for ACCEPTED and REPLAYED
 * @property {number|null} count for RETURNED and APPLIED
 * @property {string|null} reason for REJECTED and FAILED, and a
 *   retrieval's words
 * @property {string|null} [caller] who made the call, where a server names
 *   its callers (a token's name)
 */

/**
 * Which rows of the audit trail to read; every filter that is set must hold.
 * @typedef {object} AuditQuery
 * @property {string} [agent] only rows of this agent's domain
 * @property {number} [since] only rows with `at >= since`
 * @property {number} [until] only rows with `at < until`
 * @property {string} [operation] only rows of this operation (upper case)
 * @property {string} [outcome] only rows with this outcome (upper case)
 * @property {number} [limit] how many of the newest matching rows; 100 by
 *   default
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
 * @property {(query: AuditQuery) => AuditRow[]} auditRows
 *   The newest `query.limit` rows that match `query`, oldest first.
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

/**
 * An audit row in the `engram audit` line form: its columns by name, the
 * source parsed, empty columns left out.
 * @param {AuditRow} row
 * @returns {object}
 */
export function auditLine(row) {
  const line = {
    at: row.at,
    agent_id: row.agent_id,
    request_id: row.request_id,
    operation: row.operation,
  };
  if (row.source != null) line.source = JSON.parse(row.source);
  if (row.record_type != null) line.record_type = row.record_type;
  line.outcome = row.outcome;
  if (row.stored_id != null) line.stored_id = row.stored_id;
  if (row.count != null) line.count = Number(row.count);
  if (row.reason != null) line.reason = row.reason;
  if (row.caller != null) line.caller = row.caller;
  return line;
}

/**
 * The audit row of an entry in the `engram audit` line form (as the trail
 * file holds it, and as the host layer hands a commit's rows over);
 * `defaults` fills `at` and `agent_id` when the line has none.
 * @param {object} line
 * @param {{at?: number, agent_id?: string}} [defaults]
 * @returns {AuditRow}
 */
export function auditRowOfLine(line, defaults = {}) {
  const text = (v) => (v === undefined || v === null ? null : String(v));
  return {
    at: Number(line.at ?? defaults.at),
    agent_id: String(line.agent_id ?? defaults.agent_id),
    request_id: String(line.request_id),
    operation: String(line.operation),
    source: line.source == null ? null : sourceText(line.source),
    record_type: text(line.record_type),
    outcome: String(line.outcome),
    stored_id: text(line.stored_id),
    count: line.count == null ? null : Number(line.count),
    reason: text(line.reason),
    caller: text(line.caller),
  };
}

/**
 * The JSON text of a write's source, its fields in the order every host
 * writes them.
 * @param {{agent_id: string, component: string, actor: string}} source
 * @returns {string}
 */
export function sourceText(source) {
  return JSON.stringify({
    agent_id: source.agent_id,
    component: source.component,
    actor: source.actor,
  });
}

/**
 * Whether `row` passes every filter of `query` (the limit aside).
 * @param {AuditRow} row
 * @param {AuditQuery} query
 * @returns {boolean}
 */
export function auditMatches(row, query) {
  return (
    (query.agent == null || row.agent_id === query.agent) &&
    (query.since == null || row.at >= Number(query.since)) &&
    (query.until == null || row.at < Number(query.until)) &&
    (query.operation == null || row.operation === query.operation) &&
    (query.outcome == null || row.outcome === query.outcome)
  );
}
