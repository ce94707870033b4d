// One agent's domain over a backend, as the engine's imports reach it
// (host/store/src/scope.rs): every key the engine names gets the domain's
// prefix, and loses it in answers; reads and commits are bounded; every
// commit carries the maintenance lock's precondition; audit entries become
// rows, in the commit's transaction or appended to the trail.

import { concat, domainPrefix, sourceText } from './backend.js';
import { lockKey, lockRefusal } from './maintenance.js';

/**
 * What the host lets the engine ask of the store, and the limits the
 * engine is told; the defaults of every host.
 * @typedef {object} Limits
 * @property {number} readLimitCeiling the largest `limit` of a read (1000)
 * @property {number} candidateLimit keyword-index entries one retrieval
 *   may read (256)
 * @property {number} maxAnswerBytes bytes of the records of one answer,
 *   before the bound by memory (16 MiB)
 * @property {number} maxMemoryBytes the engine's memory, of which an
 *   answer may take a quarter (64 MiB)
 * @property {number} maxRecordBytes the largest record a write may carry
 *   (1 MiB)
 * @property {number} maxBatchOps puts and deletes of one commit (10,000)
 * @property {number} maxBatchBytes bytes of keys and values of one commit
 *   (16 MiB)
 */

/** @type {Readonly<Limits>} */
export const DEFAULT_LIMITS = Object.freeze({
  readLimitCeiling: 1000,
  candidateLimit: 256,
  maxAnswerBytes: 16 * 2 ** 20,
  maxMemoryBytes: 64 * 2 ** 20,
  maxRecordBytes: 2 ** 20,
  maxBatchOps: 10000,
  maxBatchBytes: 16 * 2 ** 20,
});

/**
 * An error whose `payload` jco hands to the component as the `err` of a
 * `result` an import returns.
 */
export class ResultError extends Error {
  /** @param {unknown} payload */
  constructor(payload) {
    super(typeof payload === 'string' ? payload : JSON.stringify(payload));
    Object.defineProperty(this, 'payload', { value: payload, enumerable: true });
  }
}

/** A `storage-error.unavailable` for the engine. */
function unavailable(why) {
  return new ResultError({ tag: 'unavailable', val: why });
}

const upper = (text) => text.toUpperCase();

/**
 * One agent's domain over a store.
 */
export class Scope {
  /**
   * @param {object} options
   * @param {string} options.agentId
   * @param {import('./backend.js').Backend} options.backend
   * @param {'online'|'maintenance'} options.mode
   * @param {'public'|'sensitive'|'private'} options.tierCeiling
   * @param {Limits} options.limits
   * @param {() => number} options.clock ms since the epoch
   * @param {Uint8Array} [options.lockValue] the maintenance lock's value
   *   while this domain holds it
   */
  constructor({ agentId, backend, mode, tierCeiling, limits, clock, lockValue }) {
    /** The agent whose domain this is. */
    this.agentId = agentId;
    /** The prefix of every key of the domain. */
    this.prefix = domainPrefix(agentId);
    /** The store. */
    this.backend = backend;
    /** How the domain was opened. */
    this.mode = mode;
    /** The highest privacy tier the reader may see. */
    this.tierCeiling = tierCeiling;
    /** The limits calls are held to. */
    this.limits = limits;
    /** The clock. */
    this.clock = clock;
    this.lockKey = lockKey(agentId);
    this.lockValue = lockValue;
  }

  /** `domain.answer-byte-limit`: at most a quarter of memory, at least 1. */
  answerByteLimit() {
    return Math.max(1, Math.min(this.limits.maxAnswerBytes, Math.floor(this.limits.maxMemoryBytes / 4)));
  }

  /** The most keys of a get-many and the largest limit of a scan. */
  scanCeiling() {
    return Math.max(this.limits.readLimitCeiling, this.limits.candidateLimit);
  }

  /** @param {Uint8Array} key */
  scoped(key) {
    return concat(this.prefix, key);
  }

  /** Runs a backend call; its failure becomes `unavailable`. */
  #store(f) {
    try {
      return f();
    } catch (error) {
      if (error instanceof ResultError) throw error;
      throw unavailable(error instanceof Error ? error.message : String(error));
    }
  }

  /** `persistence.get` */
  get(key) {
    return this.#store(() => this.backend.get(this.scoped(key)));
  }

  /** `persistence.get-many`: stops after the value that reaches a quarter of the answer bound. */
  getMany(keys) {
    const ceiling = this.scanCeiling();
    if (keys.length > ceiling) {
      throw unavailable(`a read of ${keys.length} keys is above the ceiling of ${ceiling}`);
    }
    const budget = Math.floor(this.answerByteLimit() / 4);
    const values = [];
    let bytes = 0;
    for (let i = 0; i < keys.length; i += 16) {
      const chunk = keys.slice(i, i + 16).map((key) => this.scoped(key));
      for (const value of this.#store(() => this.backend.getMany(chunk))) {
        bytes += value === undefined ? 0 : value.length;
        values.push(value);
        if (bytes >= budget) return values;
      }
    }
    return values;
  }

  /** `persistence.scan`: keys answered as the engine named them. */
  scan(start, end, limit, order) {
    const ceiling = this.scanCeiling();
    if (limit > ceiling) {
      throw unavailable(`a scan of ${limit} entries is above the ceiling of ${ceiling}`);
    }
    const pairs = this.#store(() =>
      this.backend.scan(this.scoped(start), this.scoped(end), limit, order === 'descending'),
    );
    const n = this.prefix.length;
    return pairs.map(([key, value]) => ({ key: key.subarray(n), value }));
  }

  /** `persistence.commit`, with the lock's precondition and the trail's rows. */
  commit(preconditions, ops, trail) {
    if (ops.length > this.limits.maxBatchOps) {
      throw unavailable(
        `a batch of ${ops.length} puts and deletes is above the host's limit of ${this.limits.maxBatchOps} (max_batch_ops)`,
      );
    }
    let bytes = 0;
    for (const op of ops) bytes += op.tag === 'put' ? op.val.key.length + op.val.value.length : op.val.length;
    if (bytes > this.limits.maxBatchBytes) {
      throw unavailable(
        `a batch of ${bytes} bytes is above the host's limit of ${this.limits.maxBatchBytes} (max_batch_bytes)`,
      );
    }
    const conditions = preconditions.map((p) =>
      p.tag === 'absent'
        ? { type: 'absent', key: this.scoped(p.val) }
        : { type: 'holds', key: this.scoped(p.val.key), value: p.val.value },
    );
    // Online writers keep out of a domain under maintenance; a
    // maintenance domain writes only while it still holds the lock.
    conditions.push(
      this.lockValue === undefined
        ? { type: 'absent', key: this.lockKey }
        : { type: 'holds', key: this.lockKey, value: this.lockValue },
    );
    const changes = ops.map((op) =>
      op.tag === 'put'
        ? { type: 'put', key: this.scoped(op.val.key), value: op.val.value }
        : { type: 'delete', key: this.scoped(op.val) },
    );
    const rows = trail.map((entry) => this.auditRow(entry));
    if (!this.#store(() => this.backend.commit(conditions, changes, rows))) {
      const why = lockRefusal(this.backend, this.lockKey, this.lockValue);
      throw why === undefined ? new ResultError({ tag: 'conflict' }) : unavailable(why);
    }
  }

  /** `audit.append`: an entry of a call that commits nothing. A failure fails the call. */
  append(entry) {
    this.backend.appendAudit([this.auditRow(entry)]);
  }

  /**
   * The row of an entry the engine made (`audit.entry` as jco gives it),
   * stamped with the clock's time and this domain's agent. A retrieval is
   * a read: what it read is told in words.
   * @returns {import('./backend.js').AuditRow}
   */
  auditRow(entry) {
    let outcome;
    let storedId = null;
    let count = null;
    let reason = null;
    const { tag, val } = entry.outcome;
    switch (tag) {
      case 'accepted':
      case 'replayed':
        outcome = upper(tag);
        storedId = val;
        break;
      case 'rejected':
      case 'failed':
        outcome = upper(tag);
        reason = val;
        break;
      case 'returned':
      case 'applied':
        outcome = upper(tag);
        count = val;
        break;
      case 'retrieved':
        outcome = 'RETURNED';
        count = val.returned;
        reason =
          `${val.entriesRead} keyword-index entries read, ${val.candidates} candidates, ` +
          (val.boundReached ? 'the candidate limit was reached' : "every entry of the query's keywords read");
        break;
      default:
        throw new Error(`an audit outcome this host does not know: ${tag}`);
    }
    return {
      at: this.clock(),
      agent_id: this.agentId,
      request_id: entry.requestId,
      operation: upper(entry.operation),
      source:
        entry.source === undefined
          ? null
          : sourceText({
              agent_id: entry.source.agentId,
              component: upper(entry.source.component),
              actor: upper(entry.source.actor),
            }),
      record_type: entry.recordType === undefined ? null : upper(entry.recordType),
      outcome,
      stored_id: storedId,
      count,
      reason,
    };
  }

  /**
   * The interfaces the engine imports for this domain (`persistence`,
   * `audit`, `domain`) and the JSON layer's `host`, by interface name
   * without version.
   */
  interfaces() {
    return {
      'engram:memory/persistence': {
        get: (key) => this.get(key),
        getMany: (keys) => this.getMany(keys),
        scan: (start, end, limit, order) => this.scan(start, end, limit, order),
        commit: (preconditions, ops, trail) => this.commit(preconditions, ops, trail),
      },
      'engram:memory/audit': {
        append: (entry) => this.append(entry),
      },
      'engram:memory/domain': {
        agent: () => this.agentId,
        mode: () => this.mode,
        now: () => BigInt(this.clock()),
        readLimitCeiling: () => this.limits.readLimitCeiling,
        candidateLimit: () => this.limits.candidateLimit,
        answerByteLimit: () => BigInt(this.answerByteLimit()),
        tierCeiling: () => this.tierCeiling,
        idEntropy: () => {
          const bits = crypto.getRandomValues(new BigUint64Array(2));
          return [bits[0], bits[1]];
        },
      },
      'engram:memory/types': {},
      'engram:js/host': {
        maxRecordBytes: () => BigInt(this.limits.maxRecordBytes),
        appendAudit: (entry) => {
          const line = JSON.parse(entry);
          this.backend.appendAudit([
            {
              at: this.clock(),
              agent_id: this.agentId,
              request_id: String(line.request_id),
              operation: String(line.operation),
              source: line.source == null ? null : sourceText(line.source),
              record_type: line.record_type ?? null,
              outcome: String(line.outcome),
              stored_id: line.stored_id ?? null,
              count: line.count ?? null,
              reason: line.reason ?? null,
            },
          ]);
        },
      },
    };
  }
}
