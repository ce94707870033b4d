// The wasm driver: where native code cannot run (a browser, Cloudflare
// Workers), a domain is an instance of the components jco transpiled at
// build time (gen/): the engine composed with the JSON layer (the call
// surface every package reaches a domain through) and the host layer
// (host/js-components/adapter: engram-store's Scope and maintenance, the
// domain prefix, the limits, the maintenance lock, the audit entries), over
// a store written in JavaScript (src/store.js packs its calls). It is also
// what a store written in JavaScript runs on under Node.

import { defaultAlgorithms, defaultTokenizer, algorithmInterfaces, embedderInterface, tokenizerInterface } from './algorithms.js';
import { ComponentLoader } from './component.js';
import { componentExport, componentImports } from './imports.js';
import { bytesOf } from './latin1.js';
import { drive, then } from './maybe.js';
import { rowsOf, storeInterface } from './store.js';
import { stringify } from './json.js';
import { EngramInputError, EngramLockError, EngramStoppedError, EngramStoreError, closedError } from './errors.js';
import { MESSAGES } from '../gen/limits.js';

/** Host-layer calls that leave no audit rows behind. */
const UNAUDITED = new Set(['prefix', 'lockKey', 'stoppedRow', 'takeTrail', 'audit']);

/** The calls that write, and so take the domain's writers' turn on a store that keeps turns. */
const WRITES = new Set(['write', 'write-batch', 'remember', 'run-cycle', 'cycle-commit', 'import', 'expire', 'reembed']);

/** The calls whose stopped instance is audited FAILED (a single write or read), by operation. */
const AUDITED = { write: 'WRITE', read: 'READ' };

/** The calls whose framing names their input (`name`, NUL, input, NUL, text). */
const NAMED_INPUT = new Set(['write', 'write-batch', 'read', 'read-batch']);


/**
 * Whether this runtime has JavaScript Promise Integration
 * (`WebAssembly.Suspending`), which an asynchronous domain of this driver
 * needs: Node 24 and later, workerd, Chromium, Firefox (docs/hosts.md).
 * @returns {boolean}
 */
export function hasJspi() {
  return typeof WebAssembly.Suspending === 'function' && typeof WebAssembly.promising === 'function';
}

/**
 * The components a domain's instance is made from, compiled once: the
 * engine with the default summarizer and ranker inside, or importing them;
 * both import the tokenizer, which is loaded when a budget first needs it.
 * @type {Record<string, ComponentLoader>}
 */
const loaders = {};

/** The loader of a component of gen/ (its JSPI build with `async`), made at its first use. */
function loader(name, options, async = false) {
  const key = async ? `${name}.jspi` : name;
  loaders[key] ??= new ComponentLoader(name, {
    coreModule: options.coreModule,
    instantiate: options.instantiate?.[key],
    jspi: async,
  });
  return loaders[key];
}

/** The error class of each case of the host layer's `domain-error`. */
const DOMAIN_ERRORS = { invalid: EngramInputError, locked: EngramLockError, store: EngramStoreError };

/**
 * The error of a result of the host layer's calls (`engram:adapter/domain`,
 * its `domain-error`: `invalid`, `locked` or `store`, and the words) as the
 * error of this package it is; undefined for an error that is not one (a
 * trap).
 */
function domainError(error) {
  const kind = DOMAIN_ERRORS[error?.payload?.tag];
  return kind === undefined ? undefined : new kind(error.payload.val);
}

/** A framed answer of a value. */
const value = (text) => `V${text}`;

/**
 * A domain's calls on an instance of the components over a store written
 * in JavaScript: `call(name, input, args)` answers the framed answer (a
 * promise of it when `async`); a failure of the host (a trap, a store that
 * failed) throws, and the next call gets a fresh instance.
 */
export class WasmSession {
  /**
   * Opens the domain `settings` (JSON) name over `backend`.
   * @param {import('./backend.js').Backend} backend
   * @param {string} settings
   * @param {object} options the caller's algorithms (and embedder), clock,
   *   `async`, and where the components come from (`coreModule`,
   *   `instantiate`)
   * @returns {Promise<WasmSession>}
   */
  static async open(backend, settings, options) {
    const async = options.async === true;
    if (async && !hasJspi()) {
      throw new Error(
        'an asynchronous domain over a store written in JavaScript needs JavaScript Promise Integration (WebAssembly.Suspending), which this runtime lacks: Node 24 or later, workerd, Chromium or Firefox have it',
      );
    }
    let { summarizer, ranker, tokenizer } = options;
    // Neither given: the engine's own summarizer and ranker, composed in (no
    // call leaves the component). One given: the other is the engine's own,
    // called from here. The tokenizer is never composed in: the default one
    // is loaded at its first count (a token budget), not before.
    const given = [summarizer, ranker].filter((a) => a !== undefined).length;
    const builtin = given === 0;
    if (!builtin && given < 2) {
      const defaults = await defaultAlgorithms(options.coreModule, options.instantiate?.['engram-algorithms']);
      summarizer ??= defaults.summarizer;
      ranker ??= defaults.ranker;
    }
    tokenizer ??= await defaultTokenizer(options.coreModule, options.instantiate?.['engram-tokenizer'], async);
    const clock = options.clock ?? Date.now;
    const imports = componentImports({
      'engram:memory/types': {},
      'engram:adapter/store': storeInterface(backend, settings, clock, async),
      ...(builtin ? tokenizerInterface(tokenizer, async) : algorithmInterfaces(summarizer, ranker, tokenizer, async)),
      ...embedderInterface(options.embedder, async),
    });
    const components = loader(builtin ? 'engram-host-builtin' : 'engram-host', options, async);
    const exports = await components.first(imports);
    const session = new WasmSession({ components, imports, backend, async });
    await session.#drive(session.#startSteps(exports));
    return session;
  }

  /** @internal */
  constructor({ components, imports, backend, async }) {
    this.#components = components;
    this.#imports = imports;
    this.#backend = backend;
    this.#async = async;
  }

  #components;
  #imports;
  #backend;
  /** Whether the calls answer promises (the JSPI build). */
  #async;
  /** The instance's `engram:js/calls` and `engram:adapter/domain`; undefined after a trap. */
  #instance;
  /** The value of the maintenance lock while this domain holds it. */
  #held;
  /** The prefix of the domain's keys and its lock key, for a store's writers' turns. */
  #prefix;
  #lockKey;
  #closed = false;
  /** How many of the domain's calls are under way (one inside another: from its own algorithm or store). */
  #running = 0;
  /**
   * Set when the domain was closed while a call of it was under way (from
   * the call's own summarizer, ranker, tokenizer, embedder or store): what
   * runs once that call answers, the close done.
   * @type {(() => unknown) | undefined}
   */
  #closing;
  /** Counts instances: a cycle of an earlier instance is gone. */
  #generation = 0;

  /** The instance's generation: a cycle begun in an earlier one is gone. */
  get generation() {
    return this.#generation;
  }

  /** How the domain is open: `maintenance` while it holds its maintenance lock, else `online`. */
  get mode() {
    return this.#held === undefined ? 'online' : 'maintenance';
  }

  /** Runs `steps` (see {@link drive}) at once, or awaiting, as this domain's calls answer. */
  #drive(steps) {
    return drive(steps, this.#async);
  }

  *#startSteps(exports) {
    try {
      this.#held = (yield this.#open(exports)) || undefined;
    } catch (error) {
      this.#closed = true;
      throw error;
    }
  }

  /**
   * Opens the domain in a fresh instance: the host layer checks the
   * settings and, in maintenance mode, takes the maintenance lock (or goes
   * on holding the one this domain holds). Answers the lock's value.
   */
  #open(exports) {
    return this.#drive(this.#openSteps(exports));
  }

  *#openSteps(exports) {
    const instance = {
      calls: componentExport(exports, 'engram:js/calls'),
      domain: componentExport(exports, 'engram:adapter/domain'),
    };
    let held;
    try {
      held = yield instance.domain.open(this.#held);
    } catch (error) {
      throw domainError(error) ?? error;
    }
    this.#instance = instance;
    return held;
  }

  /** The instance, a fresh one after a trap; `closing` lets a closed domain's close have one. */
  #live(closing = false) {
    if (this.#closed && !closing) throw closedError();
    if (this.#instance !== undefined) return this.#instance;
    return then(this.#components.again(this.#imports, this.#async), (exports) =>
      then(this.#open(exports), () => {
        this.#generation += 1;
        return this.#instance;
      }),
    );
  }

  /** A call of the host layer's `engram:adapter/domain`; its error as an Error. */
  #control(name, ...args) {
    return this.#drive(this.#counted(this.#controlSteps(name, args)));
  }

  /**
   * Runs `steps`, a call of the domain, counted as under way: a close made
   * meanwhile (from the call's own algorithm or store) takes effect as the
   * last call under way answers, as the addon's does.
   */
  *#counted(steps) {
    this.#running += 1;
    try {
      return yield* steps;
    } finally {
      this.#running -= 1;
      if (this.#running === 0 && this.#closing !== undefined) {
        const afterwards = this.#closing;
        this.#closing = undefined;
        yield* this.#closeSteps();
        yield afterwards();
      }
    }
  }

  *#controlSteps(name, args) {
    const instance = yield this.#live();
    try {
      const answer = yield instance.domain[name](...args);
      if (!UNAUDITED.has(name)) yield this.#appendRows(instance.domain.takeTrail());
      return answer;
    } catch (error) {
      const failure = domainError(error);
      if (failure !== undefined && !UNAUDITED.has(name)) yield this.#appendRows(instance.domain.takeTrail());
      throw failure ?? error;
    }
  }

  /**
   * Appends audit rows of the call just made that no commit carried, before
   * the caller gets the answer: a store that cannot append them fails the
   * call with its own words.
   */
  #appendRows(rows) {
    return rows === '' ? undefined : this.#backend.appendAudit(rowsOf(rows));
  }

  /**
   * Makes the call `name` with `args` (`input` names the input of `write`
   * and `read`): the framed answer.
   * @param {string} name
   * @param {string} input
   * @param {string} args
   * @returns {string | Promise<string>}
   */
  call(name, input, args) {
    if (this.#running > 0 && !this.#async) {
      // Only the call's own algorithm or store can call while it runs here.
      throw new EngramLockError(MESSAGES.busy);
    }
    switch (name) {
      case 'audit':
        return then(this.#control('audit', args, true), value);
      case 'store-audit':
        return then(this.#control('audit', args, false), value);
      case 'forget':
        return then(this.#control('forget'), (removed) => value(stringify({ agent_id: this.#agent(), removed: Number(removed) })));
      case 'domains':
        return then(this.#control('domains'), (agents) => value(stringify(agents)));
      case 'unlock':
        return then(this.#control('breakLock'), (unlocked) => value(stringify({ agent_id: this.#agent(), unlocked })));
      default:
        return this.#drive(this.#counted(this.#callSteps(name, input, args)));
    }
  }

  /** The agent of the domain, from its settings. */
  #agent() {
    return JSON.parse(this.#imports['engram:adapter/store'].settings()).agent;
  }

  *#callSteps(name, input, args) {
    const { calls } = yield this.#live();
    const turns = WRITES.has(name) && typeof this.#backend.lockDomain === 'function';
    if (turns) {
      this.#prefix ??= bytesOf(yield this.#control('prefix'));
      this.#lockKey ??= yield this.#control('lockKey');
      yield this.#backend.lockDomain(this.#prefix, this.#lockKey);
    }
    try {
      const request = NAMED_INPUT.has(name) ? `${name}\0${input}\0${args}` : `${name}\0${args}`;
      const answer = yield calls.call(request);
      const cut = answer.indexOf('\0');
      yield this.#appendRows(cut === -1 ? '' : answer.slice(cut + 1));
      return cut === -1 ? answer : answer.slice(0, cut);
    } catch (error) {
      // A trap, or a trail the store could not append to: the instance goes.
      this.#instance = undefined;
      const stopped = new EngramStoppedError(`${error?.message ?? error}; ${MESSAGES.stopped}`);
      const operation = AUDITED[name];
      if (operation !== undefined) {
        yield this.#auditStopped(operation, args, stopped.message);
      }
      throw stopped;
    } finally {
      if (turns) yield this.#backend.unlockDomain(this.#prefix, this.#lockKey);
    }
  }

  /**
   * Audits a single write or read whose instance stopped before it
   * answered, as FAILED with why (IO-W8), as the Rust host does: the host
   * layer of a fresh instance makes the row. Best effort: the store may be
   * what failed.
   */
  #auditStopped(operation, text, why) {
    return this.#drive(this.#auditStoppedSteps(operation, text, why));
  }

  *#auditStoppedSteps(operation, text, why) {
    try {
      const row = yield this.#control('stoppedRow', operation, text, why);
      if (row !== '') yield this.#backend.appendAudit(rowsOf(row));
    } catch {
      // The trail could not take it either; the call's error says why.
    }
  }

  /**
   * Closes the domain: drops the instance and releases the maintenance
   * lock, then runs `afterwards` (what the caller lets go with the domain).
   * Closed while a call of it is under way (from the call's own algorithm
   * or store), the domain closes as that call answers: no call after this
   * one runs, the lock goes and `afterwards` runs then, and what this
   * answers settles at once (an algorithm that awaits it does not stall
   * the call that awaits the algorithm).
   * @param {() => unknown} [afterwards]
   */
  close(afterwards = () => undefined) {
    if (this.#closed) return this.#async ? Promise.resolve() : undefined;
    this.#closed = true;
    if (this.#running > 0) {
      this.#closing = afterwards;
      return this.#async ? Promise.resolve() : undefined;
    }
    return this.#drive(this.#closeAndThen(afterwards));
  }

  *#closeAndThen(afterwards) {
    yield* this.#closeSteps();
    return yield afterwards();
  }

  *#closeSteps() {
    try {
      if (this.#held !== undefined) {
        // Lets the maintenance lock go (a fresh instance's, after a trap).
        const instance = yield this.#live(true);
        yield instance.domain.close();
      }
    } catch {
      // A lock that cannot be released now stays for `unlock`.
    } finally {
      this.#instance = undefined;
    }
  }
}
