// The raw store the host layer composed into the engine's component stores
// through: `engram:adapter/store` (host/js-components/adapter/wit/adapter.wit) over a backend. The
// host layer (host/js-components/adapter, in the Rust every host shares:
// engram-store's Scope and maintenance) does everything a host adds around
// the engine — the domain's key prefix, the limits, the maintenance lock,
// the audit entries; what is here is the packing. Keys are whole keys, byte
// strings are strings of one character per byte, and lists of them are
// packed into one string:
//
// - a key list: each key as its length (4 bytes, big-endian), then its bytes;
// - a list of optional values: each as its length then its bytes, or the
//   length FF FF FF FF for none;
// - a list of entries: each key, then its value;
// - conditions and changes: a byte 0 (absent, delete) then the key, or 1
//   (holds, put) then the key and the value.
//
// An answer's first character says what it is: `V` then the value, `C` when
// a commit's condition did not hold, `U` then why the store could not do it.
// Audit rows go over as JSON objects, one a line, in the columns of the store
// format's trail, stamped with their time by the host layer: a backend keeps
// them as they come and hands them back so (`auditPage`), reading none of
// their fields; the host layer filters them and forms the `engram audit`
// lines (its `domain.audit`).

import { bytesOf, textOf } from './latin1.js';
import { atOnce, settle } from './maybe.js';

/** The length that stands for no value. */
const NONE = 0xffffffff;
/** The code of `V`, which starts an answer with a value. */
const VALUE = 0x56;

/** Reads a packing. */
class Unpacker {
  /** @param {string} text */
  constructor(text) {
    this.bytes = bytesOf(text);
    this.view = new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
    this.at = 0;
  }

  more() {
    return this.at < this.bytes.length;
  }

  tag() {
    return this.bytes[this.at++];
  }

  /** The next item: a view of its bytes. */
  item() {
    const n = this.view.getUint32(this.at);
    const start = this.at + 4;
    this.at = start + n;
    if (this.at > this.bytes.length) throw new Error('a packed list cut short');
    return this.bytes.subarray(start, this.at);
  }
}

/**
 * `V` then the packing of `items` (byte strings, or undefined for none).
 * @param {Array<Uint8Array|undefined|null>} items
 * @returns {string}
 */
function packed(items) {
  let size = 1;
  for (const item of items) size += 4 + (item == null ? 0 : item.length);
  const bytes = new Uint8Array(size);
  const view = new DataView(bytes.buffer);
  bytes[0] = VALUE;
  let at = 1;
  for (const item of items) {
    view.setUint32(at, item == null ? NONE : item.length);
    at += 4;
    if (item != null) {
      bytes.set(item, at);
      at += item.length;
    }
  }
  return textOf(bytes);
}

/** `U` and why, for a store that could not do it. */
function unavailable(error) {
  return `U${error instanceof Error ? error.message || error.name : String(error)}`;
}

/**
 * Audit rows as the host layer hands them over (a JSON object a line) as
 * the objects a backend keeps.
 * @param {string} text
 * @returns {import('./backend.js').AuditRow[]}
 */
export function rowsOf(text) {
  return text === '' ? [] : text.split('\n').map((line) => JSON.parse(line));
}

/** Why a synchronous domain cannot use a store that answers promises. */
export const NEEDS_ASYNC =
  'the store answered a promise: open the domain with {async: true} (JavaScript Promise Integration) to use an asynchronous store';

/**
 * The `engram:adapter/store` interface of one domain over `backend`. With
 * `async` (the JSPI build) a backend's `getMany`, `scan` and `commit` may
 * answer promises, and so does the interface; without it a promise is a
 * failure of the store, saying so.
 * @param {import('./backend.js').Backend} backend
 * @param {string} settings the domain's settings, JSON (`store.settings`)
 * @param {() => number} clock ms since the epoch
 * @param {boolean} [async]
 */
export function storeInterface(backend, settings, clock, async = false) {
  /** `backend[method](...args)`, refused when a synchronous domain gets a promise. */
  const call = (method, ...args) =>
    atOnce(backend[method](...args), async, () => Object.assign(new Error(NEEDS_ASYNC), { needsAsync: true }));
  /** A store that failed is `U` and why; one a synchronous domain cannot wait on stops the call. */
  const failed = (error) => {
    if (error?.needsAsync) throw error;
    return unavailable(error);
  };
  return {
    getMany(keys, budget) {
      const unpacker = new Unpacker(keys);
      const wanted = [];
      while (unpacker.more()) wanted.push(unpacker.item());
      return settle(
        () => call('getMany', wanted),
        (values) => {
          // Up to the value that reaches the budget.
          const limit = budget === undefined ? Infinity : Number(budget);
          let held = 0;
          const reached = values.findIndex((value) => (held += value == null ? 0 : value.length) >= limit);
          return packed(reached === -1 ? values : values.slice(0, reached + 1));
        },
        failed,
      );
    },

    scan(start, end, limit, descending) {
      return settle(
        () => call('scan', bytesOf(start), bytesOf(end), limit, descending),
        (pairs) => packed(pairs.flat()),
        failed,
      );
    },

    commit(conditions, changes, rows) {
      const trail = rowsOf(rows);
      return settle(
        () => {
          const preconditions = [];
          const when = new Unpacker(conditions);
          while (when.more()) {
            preconditions.push(
              when.tag() === 0 ? { type: 'absent', key: when.item() } : { type: 'holds', key: when.item(), value: when.item() },
            );
          }
          const ops = [];
          const what = new Unpacker(changes);
          while (what.more()) {
            ops.push(what.tag() === 0 ? { type: 'delete', key: what.item() } : { type: 'put', key: what.item(), value: what.item() });
          }
          return call('commit', preconditions, ops, trail);
        },
        (committed) => (committed ? 'V' : 'C'),
        failed,
      );
    },

    auditRows(before, limit) {
      return settle(
        () => call('auditPage', before === undefined ? undefined : Number(before), limit),
        (rows) => `V${rows.map((row) => JSON.stringify(row)).join('\n')}`,
        failed,
      );
    },

    settings: () => settings,

    now: () => BigInt(clock()),

    entropy() {
      // Bits for 16 record ids at a time.
      return textOf(crypto.getRandomValues(new Uint8Array(16 * 16)));
    },
  };
}
