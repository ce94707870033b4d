// The native driver: a domain run by the Rust host in this process (the
// Node-API addon, host/node, over engram-binding), on the Rust stores with
// their locks and trail. What is here is the crossing: the settings and the
// calls go over as JSON text, the answers come back framed (`V`, `I`, `R`
// then the text), and the summarizer, ranker, tokenizer and embedder a
// caller gives are called back here.

import { addon } from './addon.js';
import { EngramClosedError, EngramInputError, ofFrame } from './errors.js';
import { MESSAGES } from '../gen/limits.js';
import { isPromise, then } from './maybe.js';
import { stringify } from './json.js';

/**
 * A store the Rust host opened: a SQLite file, a PostgreSQL database or
 * memory. Domains opened in it share it; it is let go when the last of
 * them closes and it is closed.
 */
export class NativeStore {
  /** @internal */
  constructor(inner) {
    this.#inner = inner;
  }

  #inner;

  /** @internal */
  get _inner() {
    if (this.#inner === undefined) throw new EngramClosedError(MESSAGES.store_closed);
    return this.#inner;
  }

  /**
   * The trail's newest entries that match `query`, oldest first: a framed
   * answer.
   * @internal
   */
  _audit(query) {
    return crossing(() => this._inner.audit(stringify(query)));
  }

  /**
   * The agents whose domains hold anything, in key order.
   * @internal
   */
  _domains() {
    return JSON.parse(crossing(() => this._inner.domains()));
  }

  /**
   * The store-wide maintenance call `name` (`export`, `import` or
   * `expire`) with `args` (JSON), each domain opened for maintenance with
   * `settings` (JSON) and the caller's algorithms and clock in `options`:
   * a framed answer (a promise of it with `async`).
   * @internal
   */
  _maintain(name, args, settings, options) {
    const { async, algorithms, given, clock } = plugins(options);
    const time = timeOf(clock);
    return crossing(() =>
      async
        ? this._inner.maintainAsync(name, args, settings, algorithms, given, clock !== undefined, time)
        : this._inner.maintain(name, args, settings, algorithms, given, clock !== undefined, time),
    );
  }

  /** Lets the store go: domains opened in it keep it until they close. */
  close() {
    this.#inner?.close();
    this.#inner = undefined;
  }
}

/**
 * Opens the store `spec` names (a SQLite file path or a `postgres://` URL)
 * with `options` (`{sqlite: {synchronous, busyTimeout}, postgres: {schema,
 * connectTimeout, …}}`), or a fresh store in memory when `spec` is absent.
 * @param {string|undefined} spec
 * @param {object} [options]
 * @returns {NativeStore}
 */
export function openNativeStore(spec, options = {}) {
  const given = {};
  if (options.sqlite !== undefined) given.sqlite = options.sqlite;
  if (options.postgres !== undefined) given.postgres = options.postgres;
  return new NativeStore(crossing(() => addon().NativeStore.open(spec, stringify(given))));
}

/**
 * Runs `f`, a call of the addon: what the addon threw with a frame (`I`,
 * `K`, `F`, `C`, then the words) thrown as the error of this package it
 * is, anything else as it is.
 */
function crossing(f) {
  try {
    return f();
  } catch (error) {
    throw (error instanceof Error && ofFrame(error.message)) || error;
  }
}

/** The names of the algorithms a caller may give, as the addon takes them. */
const ALGORITHMS = ['summarizer', 'ranker', 'tokenizer', 'embedder'];

/**
 * What the addon takes of a caller's options: whether calls answer
 * promises, the dispatcher of the algorithms given and their names, and
 * the caller's clock.
 */
function plugins(options) {
  const async = options.async === true;
  const given = ALGORITHMS.filter((name) => options[name] !== undefined);
  const algorithms = given.length === 0 ? undefined : dispatcher(options, async);
  const clock = typeof options.clock === 'function' ? options.clock : undefined;
  return { async, algorithms, given, clock };
}

/** The time of the caller's `clock` for a call, when it has one; a time that is no number refused. */
function timeOf(clock) {
  const time = clock === undefined ? undefined : Number(clock());
  if (time !== undefined && !Number.isFinite(time)) {
    throw new EngramInputError(`the clock answered ${time}: a time is a number of ms since the epoch`);
  }
  return time;
}

/** What each algorithm's call is named in the dispatcher. */
const KINDS = { summarize: 'summarizer', rank: 'ranker', 'count-tokens': 'tokenizer', embed: 'embedder' };

/**
 * An embedder's vectors as JSON takes them: a typed array (a Float32Array)
 * as a plain array. The binding checks the answer's shape, the engine its
 * vectors.
 * @param {unknown} vectors
 */
function plainVectors(vectors) {
  return Array.isArray(vectors) ? vectors.map((vector) => (ArrayBuffer.isView(vector) ? Array.from(vector) : vector)) : vectors;
}

/** A thrown value's words. */
function words(error) {
  return error instanceof Error ? error.message || error.name : String(error);
}

/**
 * The one function the addon calls the caller's algorithms through:
 * `(kind, args) => answer`, `args` and the answer JSON text, the answer
 * framed `V…` or `E<why>`; a promise of it when `async`.
 * @param {{summarizer?: Function, ranker?: Function, tokenizer?: Function, embedder?: import('./algorithms.js').Embedder}} given
 * @param {boolean} async
 */
function dispatcher(given, async) {
  const call = (kind, text) => {
    const args = JSON.parse(text);
    switch (kind) {
      case 'summarize':
        return given.summarizer(args[0], args[1] ?? undefined);
      case 'rank':
        return given.ranker(
          args[0],
          args[1].map((c) => ({ ...c, timestamp: BigInt(c.timestamp) })),
          args[2],
        );
      case 'embed':
        return then(given.embedder.embed(args[0], args[1]), plainVectors);
      default:
        return given.tokenizer(args[0]);
    }
  };
  if (async) {
    return async (kind, text) => {
      try {
        return `V${stringify(await call(kind, text))}`;
      } catch (error) {
        return `E${words(error)}`;
      }
    };
  }
  return (kind, text) => {
    try {
      const answer = call(kind, text);
      if (isPromise(answer)) {
        Promise.resolve(answer).catch(() => {});
        return `Ethe ${KINDS[kind]} answered a promise: open the domain with {async: true} to use one that waits`;
      }
      return `V${stringify(answer)}`;
    } catch (error) {
      return `E${words(error)}`;
    }
  };
}

/**
 * A domain's calls on the Rust host: `call(name, input, args)` answers the
 * framed answer (a promise of it when `async`); a failure of the host
 * throws (rejects) with its words.
 */
export class NativeSession {
  /**
   * Opens the domain `settings` (JSON) name in `store`.
   * @param {NativeStore} store
   * @param {string} settings
   * @param {{summarizer?: Function, ranker?: Function, tokenizer?: Function, embedder?: import('./algorithms.js').Embedder, clock?: () => number, async?: boolean}} options
   * @returns {NativeSession}
   */
  static open(store, settings, options) {
    const { async, algorithms, given, clock } = plugins(options);
    const { NativeDomain } = addon();
    const inner = crossing(() =>
      async
        ? NativeDomain.openAsync(store._inner, settings, algorithms, given, clock !== undefined)
        : NativeDomain.open(store._inner, settings, algorithms, given, clock !== undefined),
    );
    return new NativeSession(inner, async, clock);
  }

  /** @internal */
  constructor(inner, async, clock) {
    this.#inner = inner;
    this.#async = async;
    this.#clock = clock;
  }

  #inner;
  #async;
  #clock;

  /** Cycles never outlive a stopped instance here: the host ends them itself. */
  get generation() {
    return 0;
  }

  /** How the domain is open, as the host says: `online` or `maintenance`. */
  get mode() {
    return this.#inner.mode;
  }

  /**
   * @param {string} name
   * @param {string} input
   * @param {string} args
   * @returns {string | Promise<string>}
   */
  call(name, input, args) {
    const time = timeOf(this.#clock);
    if (this.#async) return this.#inner.callAsync(name, input, args, time);
    return this.#inner.call(name, input, args, time);
  }

  /**
   * Closes the domain, then runs `afterwards` (what the caller lets go with
   * it); closed from the call under way's own algorithm, the addon closes
   * it as that call answers.
   * @param {() => unknown} [afterwards]
   */
  close(afterwards = () => undefined) {
    if (this.#async) return this.#inner.closeAsync().then(afterwards);
    this.#inner.close();
    return afterwards();
  }
}
