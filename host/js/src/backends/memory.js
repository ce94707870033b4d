// A store in memory: a sorted map with bytewise key order and an audit
// trail in an array. For tests, the browser, and hosts that keep nothing.

import { compareBytes, sameBytes } from '../backend.js';

/**
 * A {@link import('../backend.js').Backend} kept in memory: nothing
 * survives the process.
 * @implements {import('../backend.js').Backend}
 */
export class MemoryBackend {
  /** An empty store. */
  constructor() {
    /** @type {Array<[Uint8Array, Uint8Array]>} pairs in key order */
    this.pairs = [];
    /** @type {import('../backend.js').AuditRow[]} oldest first */
    this.audit = [];
    this.closed = false;
  }

  /** Index of the first pair whose key is not below `key`. */
  #lowerBound(key) {
    let lo = 0;
    let hi = this.pairs.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareBytes(this.pairs[mid][0], key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #open() {
    if (this.closed) throw new Error('the store is closed');
  }

  /** @param {Uint8Array} key */
  get(key) {
    this.#open();
    const i = this.#lowerBound(key);
    const pair = this.pairs[i];
    return pair !== undefined && sameBytes(pair[0], key) ? pair[1].slice() : undefined;
  }

  /** @param {Uint8Array[]} keys */
  getMany(keys) {
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
    const from = this.#lowerBound(start);
    const to = Math.max(from, this.#lowerBound(end));
    let pairs = this.pairs.slice(from, to);
    if (descending) pairs.reverse();
    pairs = pairs.slice(0, limit);
    return pairs.map(([k, v]) => [k.slice(), v.slice()]);
  }

  /**
   * @param {import('../backend.js').Precondition[]} preconditions
   * @param {import('../backend.js').Op[]} ops
   * @param {import('../backend.js').AuditRow[]} auditRows
   */
  commit(preconditions, ops, auditRows) {
    this.#open();
    for (const p of preconditions) {
      const held = this.get(p.key);
      if (p.type === 'absent' ? held !== undefined : !sameBytes(held, p.value)) return false;
    }
    for (const op of ops) {
      const i = this.#lowerBound(op.key);
      const found = this.pairs[i] !== undefined && sameBytes(this.pairs[i][0], op.key);
      if (op.type === 'put') {
        const pair = [op.key.slice(), op.value.slice()];
        if (found) this.pairs[i] = pair;
        else this.pairs.splice(i, 0, pair);
      } else if (found) {
        this.pairs.splice(i, 1);
      }
    }
    this.audit.push(...auditRows.map((row) => ({ ...row })));
    return true;
  }

  /** @param {import('../backend.js').AuditRow[]} rows */
  appendAudit(rows) {
    this.#open();
    this.audit.push(...rows.map((row) => ({ ...row })));
  }

  /**
   * A page of the trail, newest first: a row's `seq` is its place in
   * `audit`, from 1.
   * @param {number|undefined} before
   * @param {number} limit
   */
  auditPage(before, limit) {
    this.#open();
    const page = [];
    for (let i = Math.min(before ?? Infinity, this.audit.length + 1) - 2; i >= 0 && page.length < limit; i--) {
      page.push({ ...this.audit[i], seq: i + 1 });
    }
    return page;
  }

  close() {
    this.closed = true;
  }
}
