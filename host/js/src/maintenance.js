// Offline maintenance of a domain (IO-W7): the lock that keeps online
// writers out, forgetting an agent, and breaking a stale lock. The lock is
// one pair outside every domain's range, so it works alike on every
// backend and across hosts sharing one store (host/store/src/maintenance.rs).

import { LOCK_AREA, concat, domainPrefix, sameBytes, successor } from './backend.js';

const encoder = new TextEncoder();

/**
 * The key of an agent's maintenance lock: the lock area, then the
 * domain's prefix.
 * @param {string} agentId
 * @returns {Uint8Array}
 */
export function lockKey(agentId) {
  return concat(LOCK_AREA, domainPrefix(agentId));
}

/** This process's id as a lock tells it; 0 where there is none. */
function processId() {
  return typeof process !== 'undefined' && Number.isInteger(process.pid) ? process.pid : 0;
}

/** 128 random bits as 32 hex digits. */
function token() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * A held maintenance lock.
 */
export class LockGuard {
  /**
   * Takes the lock of `agentId`, or throws saying who holds it.
   * @param {import('./backend.js').Backend} backend
   * @param {string} agentId
   * @param {number} now ms since the epoch
   * @returns {LockGuard}
   */
  static acquire(backend, agentId, now) {
    const key = lockKey(agentId);
    const value = encoder.encode(JSON.stringify({ pid: processId(), since: now, token: token() }));
    if (backend.commit([{ type: 'absent', key }], [{ type: 'put', key, value }], [])) {
      return new LockGuard(backend, key, value);
    }
    let holder;
    try {
      holder = JSON.parse(new TextDecoder().decode(backend.get(key)));
    } catch {
      throw new Error(`the domain of ${JSON.stringify(agentId)} is locked for maintenance`);
    }
    const who = holder.pid === 0 ? 'a process under WASI' : `process ${holder.pid}`;
    throw new Error(
      `the domain of ${JSON.stringify(agentId)} is locked for maintenance by ${who} since ${holder.since} ` +
        '(`unlock` breaks a stale lock)',
    );
  }

  /**
   * @param {import('./backend.js').Backend} backend
   * @param {Uint8Array} key
   * @param {Uint8Array} value
   */
  constructor(backend, key, value) {
    /** The store it is held in. */
    this.backend = backend;
    /** The lock's key. */
    this.key = key;
    /** The value it holds while this guard has it. */
    this.value = value;
    this.released = false;
  }

  /**
   * The condition every commit made under this lock carries.
   * @returns {import('./backend.js').Precondition}
   */
  held() {
    return { type: 'holds', key: this.key, value: this.value };
  }

  /** Lets the lock go; a lock that was broken meanwhile stays as it is. */
  release() {
    if (this.released) return;
    this.released = true;
    try {
      this.backend.commit([this.held()], [{ type: 'delete', key: this.key }], []);
    } catch {
      // A lock that cannot be released now stays for `unlock`.
    }
  }
}

/**
 * Why a commit did not go through, when the lock is the reason: an online
 * commit (`ours` undefined) while the lock is held, or a maintenance
 * commit whose lock is no longer its own. Undefined otherwise.
 * @param {import('./backend.js').Backend} backend
 * @param {Uint8Array} key
 * @param {Uint8Array|undefined} ours
 * @returns {string|undefined}
 */
export function lockRefusal(backend, key, ours) {
  let held;
  try {
    held = backend.get(key);
  } catch {
    return undefined;
  }
  if (ours === undefined) {
    return held !== undefined ? 'the domain is locked for maintenance (IO-W7)' : undefined;
  }
  return sameBytes(held, ours) ? undefined : 'the maintenance lock of the domain was broken';
}

/**
 * Breaks the maintenance lock of `agentId`, whoever holds it; `true` when
 * there was one. For a lock left behind by a process that died.
 * @param {import('./backend.js').Backend} backend
 * @param {string} agentId
 * @returns {boolean}
 */
export function breakLock(backend, agentId) {
  const key = lockKey(agentId);
  const held = backend.get(key);
  if (held === undefined) return false;
  if (!backend.commit([{ type: 'holds', key, value: held }], [{ type: 'delete', key }], [])) {
    throw new Error('the lock changed while it was being broken; try again');
  }
  return true;
}

/** How many pairs one commit of a forget removes. */
const FORGET_PAGE = 1000;

/**
 * Forgets an agent: removes every key of its domain under its maintenance
 * lock (`lock`, or one taken for the purpose), then records in the audit
 * trail that it happened and how many entries went, nothing of what they
 * held. A forget cut short can be run again to finish.
 * @param {import('./backend.js').Backend} backend
 * @param {string} agentId
 * @param {number} now ms since the epoch
 * @param {LockGuard} [lock] the lock, when the caller holds it
 * @returns {number} how many entries were removed
 */
export function forget(backend, agentId, now, lock) {
  const guard = lock ?? LockGuard.acquire(backend, agentId, now);
  try {
    const prefix = domainPrefix(agentId);
    const end = successor(prefix);
    let removed = 0;
    for (;;) {
      const page = backend.scan(prefix, end, FORGET_PAGE, false);
      if (page.length === 0) break;
      const ops = page.map(([key]) => ({ type: 'delete', key }));
      if (!backend.commit([guard.held()], ops, [])) {
        throw new Error(`the maintenance lock of ${JSON.stringify(agentId)} was broken during the forget`);
      }
      removed += ops.length;
    }
    backend.appendAudit([
      {
        at: now,
        agent_id: agentId,
        request_id: 'maintenance-forget',
        operation: 'FORGET',
        source: JSON.stringify({ agent_id: agentId, component: 'MAINTENANCE', actor: 'SYSTEM' }),
        record_type: null,
        outcome: 'APPLIED',
        stored_id: null,
        count: Math.min(removed, 0xffffffff),
        reason: null,
      },
    ]);
    return removed;
  } finally {
    if (lock === undefined) guard.release();
  }
}
