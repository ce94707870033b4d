// engram-memory: the Engram engine with the JSON model of the `engram`
// command line, over a store of the caller's choice. One API over two
// drivers, which answer alike (the same Rust answers every call):
//
// - in Node, the Rust host itself, as a Node-API addon (src/native.js):
//   a SQLite file, a PostgreSQL database or memory, with the Rust stores'
//   locks and trail, so any mix of hosts and processes may share one store;
// - where native code cannot run (a browser, Cloudflare Workers), and for a
//   store written in JavaScript, the engine and the Rust host layer compiled
//   to wasm (src/wasm.js, transpiled by jco).
//
// Either way a domain's calls go by name to the one call surface every
// package reaches a domain through (engram_surface), JSON text in,
// the command line's answer lines out; what is here is the API: arguments
// in, answers parsed, errors thrown.

import { MemoryBackend } from './backends/memory.js';
import { parse, stringify, toText } from './json.js';
import { EngramError, EngramRefusedError, EngramStoreError, closedError, ofFrame, unicode } from './errors.js';
import { then } from './maybe.js';
import { WasmSession, hasJspi } from './wasm.js';

export { MemoryBackend } from './backends/memory.js';
export { DEFAULT_LIMITS, DEFAULT_POSTGRES_OPTIONS } from '../gen/limits.js';
export { componentImports } from './imports.js';
export { endpointEmbedder } from './endpoint.js';
export { parse, stringify } from './json.js';
export { hasJspi } from './wasm.js';

export {
  EngramClosedError,
  EngramError,
  EngramInputError,
  EngramLockError,
  EngramRefusedError,
  EngramStoppedError,
  EngramStoreError,
} from './errors.js';

/**
 * The error a framed answer that is no value says it is: a refusal (`R`,
 * its line parsed), or a failure of the host ({@link ofFrame}).
 */
function failureOf(framed) {
  if (framed.charCodeAt(0) === 0x52) {
    const line = framed.slice(1);
    return new EngramRefusedError(line, parse(line));
  }
  return ofFrame(framed) ?? new EngramError(`the host answered something other than an answer: ${framed.slice(0, 80)}`);
}

/**
 * The value of a framed answer (`V`, then its JSON text; `L` when the text
 * holds a run of 16 digits or more, where integers beyond 2^53 may be,
 * which come back exact as BigInt), parsed; or the error its frame says it
 * is.
 * @param {string} framed
 * @returns {any}
 */
function valueOf(framed) {
  switch (framed.charCodeAt(0)) {
    case 0x56: // V
      return JSON.parse(framed.slice(1));
    case 0x4c: // L
      return parse(framed.slice(1));
    default:
      throw failureOf(framed);
  }
}

/** The lines of a framed answer, each parsed as {@link valueOf} parses a value. */
function linesOf(framed) {
  const kind = framed.charCodeAt(0);
  if (kind !== 0x56 && kind !== 0x4c) throw failureOf(framed);
  const text = framed.slice(1);
  if (text === '') return [];
  return text.split('\n').map(kind === 0x56 ? (line) => JSON.parse(line) : parse);
}

/** The native driver (src/native.js), where this runtime loads the addon; undefined elsewhere. */
let native;

/** The native driver, loaded at its first use: only a Node that asks for it loads the addon. */
async function nativeDriver() {
  if (native === undefined) {
    if (typeof globalThis.process?.versions?.node !== 'string' || globalThis.navigator?.userAgent === 'Cloudflare-Workers') {
      native = null;
    } else {
      // A name built at run time: a bundler (a Worker's, a browser's) then
      // leaves the addon out.
      native = await import(['.', 'native.js'].join('/'));
    }
  }
  return native ?? undefined;
}

/** Whether `store` is a store written in JavaScript (a backend). */
function isBackend(store) {
  return store !== null && typeof store === 'object' && typeof store.commit === 'function' && typeof store.getMany === 'function';
}

/**
 * Opens a store by path or URL in the Rust host: a SQLite file (created if
 * absent) or a PostgreSQL database (`postgres://…`, its tables created if
 * absent), or a fresh store in memory when `spec` is absent; several
 * domains may then share it. Node only.
 * @param {string} [spec]
 * @param {{sqlite?: SqliteOptions, postgres?: PostgresOptions}} [options]
 * @returns {Promise<import('./native.js').NativeStore>}
 */
export async function openStore(spec, options = {}) {
  const driver = await nativeDriver();
  if (driver === undefined) {
    throw new Error(`a store by path or URL is opened by the native addon, in Node: here, give a store written in JavaScript (IndexedDB, a Durable Object's, memory) instead of ${JSON.stringify(spec)}`);
  }
  return driver.openNativeStore(spec, options);
}

/**
 * A store given as a path, a URL, a native store or a backend (none: a
 * fresh one in memory), opened: how a domain is opened over it, and
 * whether the caller owns it.
 * @param {unknown} store
 * @param {object} options
 */
async function storeOf(store, options) {
  if (isBackend(store)) return { kind: 'wasm', store, owned: false };
  const driver = await nativeDriver();
  if (driver !== undefined && store instanceof driver.NativeStore) return { kind: 'native', store, driver, owned: false };
  if (store === undefined) {
    if (driver !== undefined) return { kind: 'native', store: driver.openNativeStore(undefined), driver, owned: true };
    return { kind: 'wasm', store: new MemoryBackend(), owned: true };
  }
  if (typeof store !== 'string') throw new TypeError('a store is a path, a postgres:// URL, a store openStore opened, or a backend');
  return { kind: 'native', store: await openStore(store, options), driver, owned: true };
}

/** Lets a store go that `storeOf` opened for the caller. */
function release({ store, owned }) {
  return owned ? store.close() : undefined;
}

/**
 * How a domain is opened.
 * @typedef {object} OpenOptions
 * @property {import('./backend.js').Backend|import('./native.js').NativeStore|string} [store]
 *   the path of a SQLite file or a PostgreSQL URL (`postgres://…`), opened
 *   for this domain and closed with it (Node); a store {@link openStore}
 *   opened; or a store written in JavaScript (a backend: IndexedDB, a
 *   Durable Object's, memory); a fresh in-memory store when absent
 * @property {'online'|'maintenance'} [mode] `online` (the default): only
 *   COGNITION may write; `maintenance`: only MAINTENANCE may write, the
 *   domain's maintenance lock is taken and held until `close`
 * @property {'public'|'sensitive'|'private'} [tierCeiling] the highest
 *   privacy tier reads may return; `private` by default
 * @property {import('./algorithms.js').Summarizer} [summarizer]
 * @property {import('./algorithms.js').Ranker} [ranker]
 * @property {import('./algorithms.js').Tokenizer} [tokenizer] counts a
 *   prompt's tokens for a plan's token budget; OpenAI's o200k_base by default
 * @property {import('./algorithms.js').Embedder} [embedder] embeds each
 *   memory's summary as it is stored and each question recalled with, for
 *   recall by meaning besides keywords (S-VECTOR); none by default: recall
 *   by keywords alone. A domain whose vectors another model made refuses
 *   it online until maintenance {@link Domain#reembed} makes them again
 * @property {Partial<Limits>} [limits] those left out have every host's
 *   defaults ({@link DEFAULT_LIMITS})
 * @property {() => number} [clock] ms since the epoch, read as each call
 *   begins; `Date.now`
 * @property {number} [expireAfterMs] keep what this domain writes for
 *   that many milliseconds only: from then on no read answers it, and
 *   `expire` removes it; kept until removed otherwise when absent
 * @property {SqliteOptions} [sqlite] for a store given by path
 * @property {PostgresOptions} [postgres] for a store given by PostgreSQL URL
 * @property {string} [input] the name of the input in input errors;
 *   `request` by default
 * @property {import('./component.js').CoreModuleLoader} [coreModule] how
 *   a core module is compiled, where gen/ is not reachable by file or fetch
 * @property {boolean} [async] a domain whose every method answers a
 *   promise, and whose summarizer, ranker, tokenizer and embedder (and a
 *   store written in JavaScript) may answer promises: in Node on a thread
 *   of its own; elsewhere on the components' JSPI build, where the runtime
 *   has it ({@link hasJspi})
 */

/**
 * How a SQLite store is opened (the Rust host's defaults).
 * @typedef {object} SqliteOptions
 * @property {'FULL'|'NORMAL'} [synchronous] `FULL` by default
 * @property {number} [busyTimeout] ms a call waits for another process's
 *   write lock; 5000
 */

/**
 * How a PostgreSQL store is opened, times in ms; what is left out has
 * every host's defaults ({@link DEFAULT_POSTGRES_OPTIONS}).
 * @typedef {object} PostgresOptions
 * @property {string} [schema] the tables' schema, created if absent; the
 *   URL's search path (`public`) by default
 * @property {number} [connectTimeout] how long connecting may take
 * @property {number} [statementTimeout] one statement, lock waits included
 * @property {number} [idleInTransactionTimeout] how long a session may sit
 *   idle inside a transaction
 * @property {number} [keepalivesIdle] silence before TCP keepalive probes
 * @property {number} [tcpUserTimeout] unacknowledged data before the
 *   connection is given up (Linux)
 */

/**
 * What the host lets the engine ask of the store, and the limits the
 * engine is told (docs/limits.md).
 * @typedef {object} Limits
 * @property {number} readLimitCeiling the largest `limit` of a read
 * @property {number} candidateLimit keyword-index entries one retrieval
 *   may read
 * @property {number} maxAnswerBytes bytes of the records of one answer,
 *   before the bound by memory
 * @property {number} maxMemoryBytes the engine's memory, of which an
 *   answer may take a quarter
 * @property {number} maxRecordBytes the largest record a write may carry
 * @property {number} maxBatchOps puts and deletes of one commit
 * @property {number} maxBatchBytes bytes of keys and values of one commit
 */

/** The limits as the settings name them: `max_batch_ops` for `maxBatchOps`. */
function snakeCase(limits) {
  return Object.fromEntries(Object.entries(limits).map(([name, value]) => [name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), value]));
}

/** An embedder's model, `{name, dimension}`, as the hosts take it; undefined without one. */
function modelOf(embedder) {
  return embedder === undefined ? undefined : { name: embedder.name, dimension: embedder.dimension };
}

/**
 * The settings of a domain, as every host takes them (engram_store::settings):
 * with an embedder, its model (`{name, dimension}`), which the host checks.
 */
function settingsOf(agent, options) {
  return stringify({
    agent,
    mode: options.mode,
    tier_ceiling: options.tierCeiling,
    pid: Number.isInteger(globalThis.process?.pid) ? globalThis.process.pid : 0,
    expire_after_ms: options.expireAfterMs ?? null,
    embedder: modelOf(options.embedder),
    ...snakeCase(options.limits ?? {}),
  });
}

/**
 * Opens the memory domain of one agent: an instance of the engine of its
 * own whose keys the host scopes to that agent (IO-W6).
 * @param {string} agent
 * @param {OpenOptions} [options]
 * @returns {Promise<Domain>}
 */
export async function open(agent, options = {}) {
  const opened = await storeOf(options.store, options);
  try {
    const settings = settingsOf(agent, options);
    const session =
      opened.kind === 'native'
        ? opened.driver.NativeSession.open(opened.store, settings, options)
        : await WasmSession.open(opened.store, settings, options);
    const domain = new Domain(session, {
      agent,
      store: opened.store,
      owned: opened.owned,
      input: options.input,
      async: options.async === true,
    });
    const embedder = options.embedder;
    if (opened.kind !== 'native' && embedder !== undefined && domain.mode === 'online') {
      // The addon refuses another model than the domain's as it opens; the
      // wasm driver asks the domain, which refuses it in the same words.
      try {
        await then(domain._call('vector-model', stringify(modelOf(embedder))), valueOf);
      } catch (error) {
        await domain.close();
        throw error;
      }
    }
    return domain;
  } catch (error) {
    await release(opened);
    throw error;
  }
}

/**
 * One agent's memory domain. Every call answers plain objects: the lines
 * the `engram` command line prints, parsed (integers beyond 2^53 as
 * BigInt). A call during which the engine stopped throws, and the next call
 * gets a fresh instance. With `async`, every call answers a promise.
 */
export class Domain {
  #session;
  #agent;
  #store;
  #owned;
  #input;
  #async;
  #closed = false;

  /** @internal */
  constructor(session, { agent, store, owned, input, async }) {
    this.#session = session;
    this.#agent = agent;
    this.#store = store;
    this.#owned = owned;
    this.#input = input;
    this.#async = async;
  }

  /** @type {Set<Cycle>} */
  #cycles = new Set();

  /** The agent whose domain this is. */
  get agent() {
    return this.#agent;
  }

  /** How the domain was opened: `online` or `maintenance`. */
  get mode() {
    return this.#session.mode;
  }

  /** The store the domain lives in. */
  get store() {
    return this.#store;
  }

  /** Whether every method answers a promise (`open(agent, {async: true})`). */
  get async() {
    return this.#async;
  }

  /**
   * Makes the call `name` of the call surface: its framed answer (`V`, `L`,
   * `I` or `R`, then the text), or a promise of it.
   * @internal
   */
  _call(name, args, input = '') {
    try {
      if (this.#closed) throw closedError();
      return this.#session.call(name, unicode(input), unicode(args));
    } catch (error) {
      if (this.#async) return Promise.reject(error);
      throw error;
    }
  }

  /** The instance's generation: a cycle begun in an earlier one is gone. @internal */
  get _generation() {
    return this.#session.generation;
  }

  /** The answers of `write` or `read` (`call`, and `batchCall` for a batch): one, or a list for a batch. */
  #io(call, batchCall, request, options) {
    const list = Array.isArray(request);
    const batch = list || options.batch === true;
    const text = list ? request.map(toText).join('\n') : toText(request);
    // No input named: the call surface names it (`request`).
    const framed = this._call(batch ? batchCall : call, text, options.input ?? this.#input ?? '');
    return then(framed, batch ? linesOf : valueOf);
  }

  /**
   * Writes a request, or each of a list (a batch: nothing runs unless
   * every request parses). A request is an object or JSON text; with
   * `batch`, text holds one request a line (JSON Lines).
   * Answers `{"ACCEPTED":{"stored_id":…}}` or `"REJECTED"`, or a list of
   * them for a batch.
   * @param {object|string|Array<object|string>} request
   * @param {{batch?: boolean, input?: string}} [options]
   */
  write(request, options = {}) {
    return this.#io('write', 'write-batch', request, options);
  }

  /**
   * Reads a request, or each of a list, as {@link write} takes them.
   * Answers `{"records":[…]}` or `{"error":…}`, or a list of them.
   * @param {object|string|Array<object|string>} request
   * @param {{batch?: boolean, input?: string}} [options]
   */
  read(request, options = {}) {
    return this.#io('read', 'read-batch', request, options);
  }

  /** A lookup's answer, parsed; its arguments an object or JSON text (`request_id` a fresh one when absent). */
  #lookup(name, args) {
    return then(this._call(name, toText(args ?? {})), valueOf);
  }

  /**
   * The versions of a FACT key, newest first: `{key, limit?, request_id?}`.
   * @param {object|string} args
   */
  history(args) {
    return this.#lookup('history', args);
  }

  /**
   * The version of a FACT key as of a time: `{key, valid?|known?, limit?}`.
   * @param {object|string} args
   */
  asOf(args) {
    return this.#lookup('as-of', args);
  }

  /**
   * The FACTs of a namespace: `{namespace: [...], limit?, after?}`.
   * @param {object|string} args
   */
  list(args) {
    return this.#lookup('list', args);
  }

  /**
   * The entities of a type: `{entity_type, limit?}`.
   * @param {object|string} args
   */
  entities(args) {
    return this.#lookup('entities', args);
  }

  /**
   * The relationships of an entity: `{entity, incoming?, types?, valid_at?, limit?}`.
   * @param {object|string} args
   */
  relationships(args) {
    return this.#lookup('relationships', args);
  }

  /**
   * A bounded traversal: `{start, depth_first?, incoming?, types?,
   * valid_at?, max_depth?, max_nodes?, max_edges?}`. Answers
   * `{"nodes":[…],"edges":[…]}` or `{"error":…}`.
   * @param {object|string} args
   */
  traverse(args) {
    return this.#lookup('traverse', args);
  }

  /**
   * Remembers one finished turn: the user's `message` and the model's
   * `response` are summarized and the summary stored as one memory, in one
   * commit (the raw text is never stored). `session`: the conversation
   * (`default`); `request_id`: the turn's id, so a retry stores nothing new
   * (a fresh random one when absent, in the answer); `time`: when the turn
   * happened (ms since the epoch, or a Date; now when absent). Answers
   * `{request_id, committed: [ids]}`. Throws {@link EngramRefusedError}
   * with the `{cycle_error}` when the contract refuses it.
   * @param {string} message
   * @param {string} response
   * @param {{session?: string, request_id?: string, time?: number|bigint|Date}} [options]
   * @returns {{request_id: string, committed: string[]}}
   */
  remember(message, response, options = {}) {
    const args = { message, response };
    for (const name of ['session', 'request_id']) if (options[name] != null) args[name] = options[name];
    if (options.time != null) args.time = options.time instanceof Date ? options.time.getTime() : options.time;
    return then(this._call('remember', stringify(args)), valueOf);
  }

  /**
   * The memories that answer `question`, best first, and the prompt
   * assembled from them (each memory's time in ISO 8601, UTC): `top_k` at
   * most (5 when absent), their lines within `token_budget` tokens when
   * given. Persists nothing. Answers `{request_id, memories: [{id,
   * summary, timestamp}], prompt, left_out}`.
   * @param {string} question
   * @param {{top_k?: number, token_budget?: number, request_id?: string}} [options]
   * @returns {{request_id: string, memories: {id: string, summary: string, timestamp: number}[], prompt: string, left_out: number}}
   */
  recall(question, options = {}) {
    const args = { question };
    for (const name of ['top_k', 'token_budget', 'request_id']) if (options[name] != null) args[name] = options[name];
    return then(this._call('recall', stringify(args)), valueOf);
  }

  /**
   * Begins a cycle of `plan`, to run stage by stage; throws
   * {@link EngramRefusedError} with the `{plan_error}` when the plan is
   * refused. Dispose of it (`using`, or `[Symbol.dispose]()`) when done:
   * without a commit nothing is persisted.
   * @param {object|string} plan
   * @param {{session?: string, request_id?: string}} [options]
   * @returns {Cycle}
   */
  cycle(plan, options = {}) {
    const args = { plan, session: options.session, request_id: options.request_id };
    const generation = this._generation;
    return then(this._call('cycle-begin', stringify(args)), (framed) => {
      const cycle = new Cycle(this, valueOf(framed).cycle, generation);
      this.#cycles.add(cycle);
      return cycle;
    });
  }

  /** @internal */
  _forgetCycle(cycle) {
    this.#cycles.delete(cycle);
  }

  /**
   * Runs a turn as `engram cycle` does: `{plan, message?, response?,
   * session?, request_id?}`. Answers the lines the command line prints:
   * one `{stage, steps}` per stage run, then `{committed}`, or a
   * `{plan_error}` or `{cycle_error}` last.
   * @param {{plan: object|string, message?: string, response?: string, session?: string, request_id?: string}} turn
   * @returns {object[]}
   */
  runCycle(turn) {
    const args = {
      plan: turn.plan,
      message: turn.message ?? undefined,
      response: turn.response ?? undefined,
      session: turn.session ?? undefined,
      request_id: turn.request_id ?? undefined,
    };
    return then(this._call('run-cycle', stringify(args)), linesOf);
  }

  /**
   * This domain's audit trail, oldest first, in the `engram audit` line
   * form: `{operation?, outcome?, since?, until?, limit?}` (limit 100, at
   * most 100,000).
   * @param {{operation?: string, outcome?: string, since?: number, until?: number, limit?: number}} [query]
   */
  audit(query = {}) {
    return then(this._call('audit', stringify(query)), valueOf);
  }

  /**
   * Every item of a domain opened for maintenance, as export lines
   * `{agent_id, item}`.
   * @returns {object[]}
   */
  export() {
    return then(this._call('export', stringify({ all: true })), (framed) => valueOf(framed).lines);
  }

  /**
   * Imports items into a domain opened for maintenance: export lines
   * `{agent_id, item}` of this agent (or bare items, objects or JSON
   * text). Answers `{agent_id, items, new}`. Items held exactly so already
   * are passed over.
   * @param {Array<object|string>} lines
   */
  import(lines) {
    return then(this._call('import', stringify(lines)), valueOf);
  }

  /**
   * Removes every record of a domain opened for maintenance whose expiry
   * has passed, from every index, each with an EXPIRE entry in the audit
   * trail. Answers `{agent_id, expired}`.
   */
  expire() {
    return then(this._call('expire', ''), valueOf);
  }

  /**
   * Makes the vectors of a domain opened for maintenance with this
   * domain's embedder, from the memories' stored summaries (S-VECTOR):
   * after a change of model, or for memories stored without an embedder,
   * until every memory has a vector of the embedder's model, which the
   * domain then records (a domain whose vectors are whole already has
   * nothing to make). `batch` memories a commit (256 by default), each
   * commit's in one call of the embedder; a run stopped halfway goes on
   * where it left off. Answers `{agent_id, embedded}`. Throws
   * {@link EngramRefusedError} with the `{error}` when it is refused (no
   * embedder, the embedder failed).
   * @param {{batch?: number}} [options]
   * @returns {{agent_id: string, embedded: number}}
   */
  reembed(options = {}) {
    return then(this._call('reembed', stringify({ batch: options.batch })), valueOf);
  }

  /**
   * The model that made this domain's vectors, `{name, dimension}`, or
   * null while it has none.
   * @returns {{name: string, dimension: number} | null}
   */
  vectorModel() {
    return then(this._call('vector-model', ''), valueOf);
  }

  /**
   * Forgets this agent: removes every key of its domain under its
   * maintenance lock (this domain's own in maintenance mode, else taken
   * for the purpose) and audits it with the count. Answers
   * `{agent_id, removed}`.
   */
  forget() {
    return then(this._call('forget', ''), valueOf);
  }

  /**
   * Closes the domain: drops the instance, releases the maintenance lock,
   * and closes a store opened by path.
   */
  close() {
    if (this.#closed) return this.#async ? Promise.resolve() : undefined;
    for (const cycle of this.#cycles) cycle[Symbol.dispose]();
    this.#closed = true;
    // Closed from a call under way (its own algorithm's), the session closes
    // as that call answers, and lets the store go then.
    return this.#session.close(() => (this.#owned ? this.#store.close() : undefined));
  }

  /** {@link close}, for `using`. */
  [Symbol.dispose]() {
    this.close();
  }

  /** {@link close}, for `await using`. */
  async [Symbol.asyncDispose]() {
    await this.close();
  }
}

/**
 * One execution cycle, stage by stage (`Domain.cycle`). Dropping it
 * without a commit persists nothing.
 */
export class Cycle {
  /** @internal */
  constructor(domain, id, generation) {
    this.#domain = domain;
    this.#id = id;
    this.#generation = generation;
  }

  #domain;
  /** Its number in the domain's session; undefined once disposed of. */
  #id;
  #generation;

  /** The cycle's call `name` with `args`. */
  #call(name, args) {
    if (this.#id === undefined || this.#generation !== this.#domain._generation) {
      throw new Error('the cycle is gone: it was disposed of, or the engine stopped');
    }
    return this.#domain._call(name, stringify({ cycle: this.#id, ...args }));
  }

  /**
   * Runs every step of `stage` (`ContextSelect`, `PromptAssemble`,
   * `SummarizeMemory`, `PersistMemory`), with the turn's inputs. Answers
   * `{stage, steps}`; throws {@link EngramRefusedError} with the
   * `{cycle_error}`.
   * @param {string} stage
   * @param {{message?: string, response?: string}} [input]
   */
  runStage(stage, input = {}) {
    return then(this.#call('cycle-stage', { stage, message: input.message ?? undefined, response: input.response ?? undefined }), valueOf);
  }

  /**
   * The output of a step that has run, parsed; undefined if none.
   * @param {string} step
   */
  output(step) {
    return then(this.#call('cycle-output', { step }), (framed) => valueOf(framed) ?? undefined);
  }

  /**
   * Persists the cycle's memories in one commit: `{committed: [ids]}`;
   * throws {@link EngramRefusedError} with the `{cycle_error}`.
   */
  commit() {
    return then(this.#call('cycle-commit', {}), valueOf);
  }

  /** Drops the cycle; nothing not committed is persisted. */
  [Symbol.dispose]() {
    const id = this.#id;
    this.#id = undefined;
    this.#domain._forgetCycle(this);
    if (id === undefined || this.#generation !== this.#domain._generation) return;
    try {
      const dropped = this.#domain._call('cycle-drop', stringify({ cycle: id }));
      if (dropped instanceof Promise) dropped.catch(() => {});
    } catch {
      // A closed domain or a stopped instance dropped it already.
    }
  }
}

/**
 * The audit trail of a store, oldest first, in the `engram audit` line
 * form: the newest `limit` (100) entries that match
 * `{agent?, operation?, outcome?, since?, until?, limit?}`.
 * An input error when the query is not one (an unknown field or
 * operation, a limit not 1 to 100,000), as every host reads it.
 * @param {import('./backend.js').Backend|import('./native.js').NativeStore|string} store
 * @param {{agent?: string, operation?: string, outcome?: string, since?: number, until?: number, limit?: number}} [query]
 * @param {{async?: boolean, coreModule?: import('./component.js').CoreModuleLoader, instantiate?: object}} [options]
 *   for a store written in JavaScript, how the host layer that reads it is
 *   run: `async` for a store that answers promises (found out by itself
 *   where the runtime has JSPI, when not given)
 * @returns {Promise<object[]>}
 */
export async function auditTrail(store, query = {}, options = {}) {
  const opened = await storeOf(store, {});
  try {
    if (opened.kind === 'native') return valueOf(opened.store._audit(query));
    // A store written in JavaScript: the host layer reads the query and the
    // trail, as the Rust host does, in a domain's instance (any domain's:
    // the store is one).
    const read = (async) =>
      withDomain(opened.store, 'engram', { ...options, async }, (domain) => then(domain._call('store-audit', stringify(query)), valueOf));
    try {
      return await read(options.async === true);
    } catch (error) {
      // A store that answers promises, read without being told so.
      if (!error?.needsAsync || options.async !== undefined || !hasJspi()) throw error;
      return await read(true);
    }
  } finally {
    await release(opened);
  }
}

/**
 * Exports domains of a store (every domain when `agents` is absent) as
 * export lines `{agent_id, item}`, each under its maintenance lock.
 * @param {import('./backend.js').Backend|import('./native.js').NativeStore|string} store
 * @param {{agents?: string[]} & OpenOptions} [options]
 * @returns {Promise<object[]>}
 */
export async function exportStore(store, options = {}) {
  return maintainStore(store, 'export', { agents: options.agents }, options, (domain) => domain.export());
}

/**
 * Removes the records whose expiry has passed from domains of a store
 * (every domain when `agents` is absent), each under its maintenance
 * lock: one `{agent_id, expired}` per domain.
 * @param {import('./backend.js').Backend|import('./native.js').NativeStore|string} store
 * @param {{agents?: string[]} & OpenOptions} [options]
 * @returns {Promise<object[]>}
 */
export async function expireStore(store, options = {}) {
  return maintainStore(store, 'expire', { agents: options.agents }, options, (domain) => domain.expire());
}

/**
 * Imports export lines into a store, each run of lines of one agent into
 * its domain under its maintenance lock. Answers one `{agent_id, items,
 * new}` per run.
 * @param {import('./backend.js').Backend|import('./native.js').NativeStore|string} store
 * @param {object[]} lines
 * @param {OpenOptions} [options]
 * @returns {Promise<object[]>}
 */
export async function importStore(store, lines, options = {}) {
  return maintainStore(store, 'import', { lines }, options, (domain, group) => domain.import(group));
}

/**
 * The store-wide maintenance call `name` with `args`: in the Rust host for
 * a store it opened (engram::surface::maintain, every domain opened for
 * maintenance there); for a store written in JavaScript, where each domain
 * is an instance of the components, the call as the call surface checks
 * and plans it (`store-call`: the agents, or the import's runs, in order),
 * then `each(domain, items)` on each domain opened for maintenance here.
 * Answers what each domain answered, flat.
 */
async function maintainStore(store, name, args, options, each) {
  const opened = await storeOf(store, options);
  try {
    if (opened.kind === 'native') {
      const settings = settingsOf(undefined, { ...options, mode: 'maintenance' });
      return valueOf(await opened.store._maintain(name, stringify(args), settings, options));
    }
    // Parsed as lines are, integers past 2^53 in the items exact.
    const exact = (framed) => (framed.charCodeAt(0) === 0x56 ? parse(framed.slice(1)) : valueOf(framed));
    const call = await withDomain(opened.store, 'engram', options, (domain) =>
      then(domain._call('store-call', stringify({ call: name, args })), exact),
    );
    const runs = call.runs ?? (call.agents ?? (await domains(opened.store, options))).map((agent_id) => ({ agent_id }));
    const answers = [];
    for (const run of runs) {
      const domain = await open(run.agent_id, { ...options, store: opened.store, mode: 'maintenance' });
      try {
        const answer = await each(domain, run.items);
        if (name === 'export') answers.push(...answer);
        else answers.push(answer);
      } finally {
        await domain.close();
      }
    }
    return answers;
  } finally {
    await release(opened);
  }
}

/**
 * The agents whose domains hold anything in a store, in key order.
 * @param {import('./backend.js').Backend|import('./native.js').NativeStore|string} store
 * @param {OpenOptions} [options]
 * @returns {Promise<string[]>}
 */
export async function domains(store, options = {}) {
  const opened = await storeOf(store, options);
  try {
    if (opened.kind === 'native') return opened.store._domains();
    // A store written in JavaScript: the host layer lists them, and it runs
    // in a domain's instance (any domain's: the store is one).
    return await withDomain(opened.store, 'engram', options, (domain) => then(domain._call('domains', ''), valueOf));
  } finally {
    await release(opened);
  }
}

/**
 * Forgets an agent of a store (see {@link Domain#forget}): `{agent_id,
 * removed}`.
 * @param {import('./backend.js').Backend|import('./native.js').NativeStore|string} store
 * @param {string} agent
 * @param {{clock?: () => number, sqlite?: SqliteOptions, postgres?: PostgresOptions}} [options]
 * @returns {Promise<{agent_id: string, removed: number}>}
 */
export async function forget(store, agent, options = {}) {
  return withDomain(store, agent, options, (domain) => domain.forget());
}

/**
 * Breaks the maintenance lock of an agent, whoever holds it (a lock left
 * behind by a process that died): `{agent_id, unlocked}`.
 * @param {import('./backend.js').Backend|import('./native.js').NativeStore|string} store
 * @param {string} agent
 * @returns {Promise<{agent_id: string, unlocked: boolean}>}
 */
export async function unlock(store, agent) {
  return withDomain(store, agent, {}, (domain) => then(domain._call('unlock', ''), valueOf));
}

/** Runs `f` with an online domain of `agent` in `store`, closed after. */
async function withDomain(store, agent, options, f) {
  const opened = await storeOf(store, options);
  try {
    const { coreModule, instantiate, clock, async } = options;
    const domain = await open(agent, { coreModule, instantiate, clock, async, store: opened.store });
    try {
      return await f(domain);
    } finally {
      await domain.close();
    }
  } finally {
    await release(opened);
  }
}
