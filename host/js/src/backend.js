// The one small, synchronous interface every store of the JavaScript host
// implements (SQLite through node:sqlite, memory, a Durable Object's
// storage), and what the backends share: key order, domain prefixes, audit
// rows and their line form.
//
// Keys a backend sees are full keys: the scope (src/scope.js) has already
// put the domain's prefix in front of every key the engine names, and the
// maintenance locks live outside every domain's range. A backend
// interprets nothing: it keeps bytes in bytewise (memcmp) key order.

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
 * @property {string} operation WRITE, READ, EXPORT, IMPORT or FORGET
 * @property {string|null} source the JSON text
 *   `{"agent_id":…,"component":…,"actor":…}`, or null
 * @property {string|null} record_type FACT, EVENT or STATE, or null
 * @property {string} outcome ACCEPTED, REPLAYED, REJECTED, RETURNED,
 *   FAILED or APPLIED
 * @property {string|null} stored_id for ACCEPTED and REPLAYED
 * @property {number|null} count for RETURNED and APPLIED
 * @property {string|null} reason for REJECTED and FAILED, and a
 *   retrieval's words
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
 * @property {() => string[]} domains
 *   The agents whose domains hold any key, in key order
 *   ({@link domainsByScan} does it with `scan`).
 * @property {() => void} close
 *   Lets the store go; no call may follow.
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** The longest agent id a domain may be opened for, in bytes. */
export const MAX_AGENT_ID_BYTES = 256;

/**
 * The prefix of every key of an agent's domain: the id's length in bytes
 * as a 4-byte big-endian integer, then its UTF-8 bytes.
 * @param {string} agentId
 * @returns {Uint8Array}
 */
export function domainPrefix(agentId) {
  const id = encoder.encode(agentId);
  const prefix = new Uint8Array(4 + id.length);
  new DataView(prefix.buffer).setUint32(0, id.length);
  prefix.set(id, 4);
  return prefix;
}

/**
 * The bytes of `parts`, one after the other.
 * @param {...Uint8Array} parts
 * @returns {Uint8Array}
 */
export function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

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
 * The smallest key above every key that starts with `prefix`.
 * @param {Uint8Array} prefix
 * @returns {Uint8Array}
 */
export function successor(prefix) {
  const end = Array.from(prefix);
  while (end.length > 0) {
    const last = end.pop();
    if (last < 0xff) {
      end.push(last + 1);
      return Uint8Array.from(end);
    }
  }
  return new Uint8Array(prefix.length + 1).fill(0xff);
}

/** Where the maintenance locks live: above every domain's keys. */
export const LOCK_AREA = concat(
  Uint8Array.of(0xff),
  encoder.encode('engram-maintenance-lock'),
  Uint8Array.of(0),
);

/**
 * The agents whose domains hold anything, in key order, found with one
 * `scan` of one pair per domain.
 * @param {Backend} backend
 * @returns {string[]}
 */
export function domainsByScan(backend) {
  const agents = [];
  let start = new Uint8Array(4);
  const end = LOCK_AREA.subarray(0, 1);
  for (;;) {
    const [pair] = backend.scan(start, end, 1, false);
    if (pair === undefined) return agents;
    const key = pair[0];
    const length = new DataView(key.buffer, key.byteOffset, key.byteLength).getUint32(0);
    if (key.length < 4 + length) throw new Error('a key shorter than its domain id');
    agents.push(decoder.decode(key.subarray(4, 4 + length)));
    start = successor(key.subarray(0, 4 + length));
  }
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
  return line;
}

/**
 * The audit row of an entry in the `engram audit` line form (as the trail
 * file holds it); `defaults` fills `at` and `agent_id` when the line has
 * none.
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
