// engram-memory: the Engram engine (a WebAssembly component, transpiled by
// jco) with the JSON model of the `engram` command line, over a store of
// the caller's choice. One component instance per agent domain.
//
// The component holds the engine, the JSON layer and the host layer every
// host shares (host/components/adapter, over engram-store's Scope and
// maintenance): the domain's key prefix, the limits, the maintenance lock
// and the audit entries are all done there. This package hands it a raw
// store (src/store.js), the clock and random bits, and the summarizer,
// ranker and tokenizer when the caller gives them.

import { defaultAlgorithms, algorithmInterfaces } from './algorithms.js';
import { auditLine, auditRowOfLine } from './backend.js';
import { MemoryBackend } from './backends/memory.js';
import { ComponentLoader } from './component.js';
import { componentExport, componentImports } from './imports.js';
import { parse, stringify, toText } from './json.js';
import { bytesOf } from './latin1.js';
import { drive, then } from './maybe.js';
import { rowsOf, storeInterface } from './store.js';

/** Host-layer calls that leave no audit rows behind. */
const UNAUDITED = new Set(['prefix', 'lockKey', 'stoppedRow', 'takeTrail']);

export { MemoryBackend } from './backends/memory.js';
export { DEFAULT_LIMITS } from '../gen/limits.js';
export { componentImports } from './imports.js';
export { parse, stringify } from './json.js';

/**
 * The input of a call is not a valid request: nothing ran. Its message
 * names the input (and the line of a batch) and the problem.
 */
export class EngramInputError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'EngramInputError';
  }
}

/**
 * The contract refused a call: nothing was persisted. `answer` is the
 * line the command line prints for it (`{plan_error}`, `{cycle_error}`,
 * `{error}`), parsed.
 */
export class EngramRefusedError extends Error {
  /** @param {string} line */
  constructor(line) {
    super(line);
    this.name = 'EngramRefusedError';
    /** The refusal, parsed. */
    this.answer = parse(line);
  }
}

/** The JSON layer's `failure`, thrown as one of the errors above. */
function failure(error) {
  const payload = error?.payload;
  if (payload?.tag === 'input') return new EngramInputError(payload.val);
  if (payload?.tag === 'refused') return new EngramRefusedError(payload.val);
  return undefined;
}

/**
 * The components a domain's instance is made from, compiled once: the
 * engine with the default summarizer, ranker and tokenizer inside, or
 * importing them.
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

/**
 * Whether this runtime has JavaScript Promise Integration
 * (`WebAssembly.Suspending`), which `open(agent, {async: true})` needs:
 * Node 24 and later, workerd, Chromium, Firefox (docs/hosts.md).
 * @returns {boolean}
 */
export function hasJspi() {
  return typeof WebAssembly.Suspending === 'function' && typeof WebAssembly.promising === 'function';
}

/** The error of a result of the host layer's calls: its text. */
function domainError(error) {
  return typeof error?.payload === 'string' ? error.payload : undefined;
}

/**
 * Opens a store by path: a SQLite file (node:sqlite), created if absent.
 * @param {string} path
 * @param {import('./backends/sqlite.js').SqliteOptions} [options]
 * @returns {Promise<import('./backend.js').Backend>}
 */
export async function openStore(path, options) {
  // A name built at run time: a bundler (a Worker's) then leaves node:sqlite
  // out, as a Worker opens no file.
  const sqlite = ['.', 'backends', 'sqlite.js'].join('/');
  const { SqliteBackend } = await import(sqlite);
  return new SqliteBackend(path, options);
}

/** Whether `store` names a PostgreSQL database rather than a file. */
function isPostgresUrl(store) {
  return /^postgres(ql)?:\/\//i.test(store);
}

/**
 * A store given as a backend, a path or a PostgreSQL URL, and whether the
 * caller owns it.
 * @param {import('./backend.js').Backend|string|undefined} store
 * @param {{sqlite?: object, postgres?: object, async?: boolean}} options
 */
async function storeOf(store, options) {
  if (store === undefined) return { backend: new MemoryBackend(), owned: true };
  if (typeof store === 'string' && isPostgresUrl(store)) {
    if (options.async !== true) {
      throw new Error('a PostgreSQL store answers promises: open it with {async: true} (JavaScript Promise Integration)');
    }
    const { openPostgres } = await import('./backends/postgres.js');
    return { backend: await openPostgres(store, options.postgres), owned: true };
  }
  if (typeof store === 'string') return { backend: await openStore(store, options.sqlite), owned: true };
  return { backend: store, owned: false };
}

/**
 * How a domain is opened.
 * @typedef {object} OpenOptions
 * @property {import('./backend.js').Backend|string} [store] a backend, or
 *   the path of a SQLite file, or a PostgreSQL URL (`postgres://…`, with
 *   `async`), opened for this domain and closed with it; a fresh
 *   in-memory store when absent
 * @property {'online'|'maintenance'} [mode] `online` (the default): only
 *   COGNITION may write; `maintenance`: only MAINTENANCE may write, the
 *   domain's maintenance lock is taken and held until `close`
 * @property {'public'|'sensitive'|'private'} [tierCeiling] the highest
 *   privacy tier reads may return; `private` by default
 * @property {import('./algorithms.js').Summarizer} [summarizer]
 * @property {import('./algorithms.js').Ranker} [ranker]
 * @property {import('./algorithms.js').Tokenizer} [tokenizer] counts a
 *   prompt's tokens for a plan's token budget; OpenAI's o200k_base by default
 * @property {Partial<Limits>} [limits] those left out have every host's
 *   defaults ({@link DEFAULT_LIMITS})
 * @property {() => number} [clock] ms since the epoch; `Date.now`
 * @property {number} [expireAfterMs] keep what this domain writes for
 *   that many milliseconds only: from then on no read answers it, and
 *   `expire` removes it; kept until removed otherwise when absent
 * @property {import('./backends/sqlite.js').SqliteOptions} [sqlite] for a
 *   store given by path
 * @property {import('./backends/postgres.js').PostgresOptions} [postgres]
 *   for a store given by PostgreSQL URL
 * @property {string} [input] the name of the input in input errors;
 *   `request` by default
 * @property {import('./component.js').CoreModuleLoader} [coreModule] how
 *   a core module is compiled, where gen/ is not reachable by file or fetch
 * @property {boolean} [async] a domain whose store, summarizer, ranker and
 *   tokenizer may answer promises, and whose every method answers one: the
 *   components' JSPI build, where the runtime has it ({@link hasJspi})
 */

/**
 * What the host lets the engine ask of the store, and the limits the
 * engine is told (docs/limits.md); enforced by the host layer inside the
 * component.
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

/**
 * Opens the memory domain of one agent: an instance of the engine of its
 * own whose keys the host scopes to that agent (IO-W6).
 * @param {string} agent
 * @param {OpenOptions} [options]
 * @returns {Promise<Domain>}
 */
export async function open(agent, options = {}) {
  const async = options.async === true;
  if (async && !hasJspi()) {
    throw new Error(
      'open(agent, {async: true}) needs JavaScript Promise Integration (WebAssembly.Suspending), which this runtime lacks: Node 24 or later, workerd, Chromium or Firefox have it',
    );
  }
  let { summarizer, ranker, tokenizer } = options;
  // None given: the engine's own, composed in (no call leaves the
  // component). Some given: the others are the engine's own, called from here.
  const given = [summarizer, ranker, tokenizer].filter((a) => a !== undefined).length;
  const builtin = given === 0;
  if (!builtin && given < 3) {
    const defaults = await defaultAlgorithms(options.coreModule, options.instantiate?.['engram-algorithms']);
    summarizer ??= defaults.summarizer;
    ranker ??= defaults.ranker;
    tokenizer ??= defaults.tokenizer;
  }
  const { backend, owned } = await storeOf(options.store, options);
  try {
    const clock = options.clock ?? Date.now;
    const mode = options.mode ?? 'online';
    const settings = stringify({
      agent,
      mode,
      tier_ceiling: options.tierCeiling ?? 'private',
      pid: Number.isInteger(globalThis.process?.pid) ? globalThis.process.pid : 0,
      expire_after_ms: options.expireAfterMs ?? null,
      ...snakeCase(options.limits ?? {}),
    });
    const imports = componentImports({
      'engram:memory/types': {},
      'engram:adapter/store': storeInterface(backend, settings, clock, async),
      ...(builtin ? {} : algorithmInterfaces(summarizer, ranker, tokenizer, async)),
    });
    const components = loader(builtin ? 'engram-host-builtin' : 'engram-host', options, async);
    const exports = await components.first(imports);
    const domain = new Domain({ components, imports, backend, owned, clock, agent, mode, input: options.input ?? 'request', async });
    await domain._start(exports);
    return domain;
  } catch (error) {
    if (owned) await backend.close();
    throw error;
  }
}

/** The limits as the host layer's settings name them: `max_batch_ops` for `maxBatchOps`. */
function snakeCase(limits) {
  return Object.fromEntries(Object.entries(limits).map(([name, value]) => [name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), value]));
}

/** The request ids the CLI makes for calls that take none. */
const PREFIX = {
  history: 'history',
  asOf: 'as-of',
  list: 'list',
  entities: 'entities',
  relationships: 'relationships',
  traverse: 'traverse',
};

/** The `export` page size. */
const EXPORT_PAGE = 1000;

/**
 * One agent's memory domain. Every call answers plain objects: the lines
 * the `engram` command line prints, parsed (integers beyond 2^53 as
 * BigInt). A call during which the engine trapped throws, and the next
 * call gets a fresh instance.
 */
export class Domain {
  /** @internal */
  constructor({ components, imports, backend, owned, clock, agent, mode, input, async }) {
    this.#components = components;
    this.#imports = imports;
    this.#backend = backend;
    this.#owned = owned;
    this.#clock = clock;
    this.#agent = agent;
    this.#mode = mode;
    this.#input = input;
    this.#async = async;
  }

  /**
   * Opens the domain in its first instance.
   * @internal
   */
  _start(exports) {
    return this.#drive(this.#startSteps(exports));
  }

  *#startSteps(exports) {
    try {
      this.#held = (yield this.#open(exports)) || undefined;
    } catch (error) {
      this.#closed = true;
      throw error;
    }
  }

  #components;
  #imports;
  #backend;
  #owned;
  #clock;
  #agent;
  #mode;
  #input;
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
  /** Counts instances: a cycle of an earlier instance is gone. */
  #generation = 0;
  /** @type {Set<Cycle>} */
  #cycles = new Set();

  /** The agent whose domain this is. */
  get agent() {
    return this.#agent;
  }

  /** How the domain was opened: `online` or `maintenance`. */
  get mode() {
    return this.#mode;
  }

  /** The store the domain lives in. */
  get store() {
    return this.#backend;
  }

  /** Whether every method answers a promise (`open(agent, {async: true})`). */
  get async() {
    return this.#async;
  }

  /** Runs `steps` (see {@link drive}) at once, or awaiting, as this domain's calls answer. */
  #drive(steps) {
    return drive(steps, this.#async);
  }

  /**
   * Opens the domain in a fresh instance: the host layer checks the
   * settings and, in maintenance mode, takes the maintenance lock (or goes
   * on holding the one this domain holds). Answers the lock's value.
   * @returns {string | Promise<string>}
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
      const why = domainError(error);
      if (why === undefined) throw error;
      const [kind, ...rest] = why.split(': ');
      throw kind === 'invalid' ? new TypeError(rest.join(': ')) : new Error(kind === 'locked' ? rest.join(': ') : why);
    }
    this.#instance = instance;
    return held;
  }

  /** The instance, a fresh one after a trap. */
  #live() {
    if (this.#closed) throw new Error('the domain is closed');
    if (this.#instance !== undefined) return this.#instance;
    return then(this.#components.again(this.#imports, this.#async), (exports) =>
      then(this.#open(exports), () => {
        this.#generation += 1;
        return this.#instance;
      }),
    );
  }

  /**
   * A call of the host layer's `engram:adapter/domain`; its error as an Error.
   * @internal
   */
  _control(name, ...args) {
    return this.#drive(this.#controlSteps(name, args));
  }

  *#controlSteps(name, args) {
    const instance = yield this.#live();
    try {
      const answer = yield instance.domain[name](...args);
      if (!UNAUDITED.has(name)) yield this.#appendTrail();
      return answer;
    } catch (error) {
      const why = domainError(error);
      if (why !== undefined && !UNAUDITED.has(name)) yield this.#appendTrail();
      throw why === undefined ? error : new Error(why);
    }
  }

  /**
   * Appends the audit rows of the call just made that no commit carried
   * (the host layer's `take-trail`), before the caller gets the answer: a
   * store that cannot append them fails the call with its own words.
   */
  #appendTrail() {
    const rows = this.#instance.domain.takeTrail();
    return rows === '' ? undefined : this.#backend.appendAudit(rowsOf(rows, this.#clock));
  }

  /**
   * Calls into the instance: the JSON layer's failures become
   * {@link EngramInputError} and {@link EngramRefusedError}; anything else
   * (a trap, a store that failed) drops the instance. A call that
   * `writes` waits for its turn among the domain's writers when the store
   * keeps turns (`lockDomain`).
   * @internal
   */
  _call(f, audited, writes = false) {
    return this.#drive(this.#callSteps(f, audited, writes));
  }

  *#callSteps(f, audited, writes) {
    const { calls } = yield this.#live();
    const turns = writes && typeof this.#backend.lockDomain === 'function';
    if (turns) {
      this.#prefix ??= bytesOf(yield this._control('prefix'));
      this.#lockKey ??= yield this._control('lockKey');
      yield this.#backend.lockDomain(this.#prefix, this.#lockKey);
    }
    try {
      let answer;
      try {
        answer = yield f(calls);
      } catch (error) {
        if (failure(error) !== undefined) yield this.#appendTrail();
        throw error;
      }
      yield this.#appendTrail();
      return answer;
    } catch (error) {
      const known = failure(error);
      if (known !== undefined) throw known;
      this.#instance = undefined;
      for (const cycle of this.#cycles) cycle._lost();
      this.#cycles.clear();
      const stopped = `${error?.message ?? error}; its instance was stopped, and the next call gets a fresh one`;
      if (audited !== undefined) yield this.#auditStopped(audited, stopped);
      throw error;
    } finally {
      if (turns) yield this.#backend.unlockDomain(this.#prefix, this.#lockKey);
    }
  }

  /**
   * Audits a single write or read whose instance stopped before it
   * answered, as FAILED with why (IO-W8), as the Rust host does: the host
   * layer of a fresh instance makes the row. Best effort: the store may be
   * what failed.
   * @param {{operation: string, text: string}} audited
   * @param {string} why
   */
  #auditStopped(audited, why) {
    return this.#drive(this.#auditStoppedSteps(audited, why));
  }

  *#auditStoppedSteps({ operation, text }, why) {
    try {
      const row = yield this._control('stoppedRow', operation, text, why);
      if (row !== '') yield this.#backend.appendAudit([auditRowOfLine(JSON.parse(row), { at: this.#clock() })]);
    } catch {
      // The trail could not take it either; the call's error says why.
    }
  }

  /** The current instance's generation. @internal */
  get _generation() {
    return this.#generation;
  }

  /** Text of a batch: one request a line, or the text as given. */
  #batchText(request, options) {
    if (Array.isArray(request)) return { text: request.map(toText).join('\n'), batch: true };
    return { text: toText(request), batch: options.batch ?? false };
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
    const { text, batch } = this.#batchText(request, options);
    const lines = this._call(
      (calls) => calls.write(options.input ?? this.#input, text, batch),
      batch ? undefined : { operation: 'WRITE', text },
      true,
    );
    return then(lines, (lines) => {
      const answers = lines.map(parse);
      return batch ? answers : answers[0];
    });
  }

  /**
   * Reads a request, or each of a list, as {@link write} takes them.
   * Answers `{"records":[…]}` or `{"error":…}`, or a list of them.
   * @param {object|string|Array<object|string>} request
   * @param {{batch?: boolean, input?: string}} [options]
   */
  read(request, options = {}) {
    const { text, batch } = this.#batchText(request, options);
    const lines = this._call(
      (calls) => calls.read(options.input ?? this.#input, text, batch),
      batch ? undefined : { operation: 'READ', text },
    );
    return then(lines, (lines) => {
      const answers = lines.map(parse);
      return batch ? answers : answers[0];
    });
  }

  /** The arguments of a graph or history call as JSON text. */
  #args(call, args) {
    if (typeof args === 'string') return args;
    // The defaults of what is left out are the JSON layer's (the CLI's).
    const full = { ...args };
    full.request_id ??= `${PREFIX[call]}-${Date.now()}`;
    return stringify(full);
  }

  /**
   * The versions of a FACT key, newest first: `{key, limit?, request_id?}`.
   * @param {object|string} args
   */
  history(args) {
    return then(this._call((calls) => calls.history(this.#args('history', args))), parse);
  }

  /**
   * The version of a FACT key as of a time: `{key, valid?|known?, limit?}`.
   * @param {object|string} args
   */
  asOf(args) {
    return then(this._call((calls) => calls.asOf(this.#args('asOf', args))), parse);
  }

  /**
   * The FACTs of a namespace: `{namespace: [...], limit?, after?}`.
   * @param {object|string} args
   */
  list(args) {
    return then(this._call((calls) => calls.list(this.#args('list', args))), parse);
  }

  /**
   * The entities of a type: `{entity_type, limit?}`.
   * @param {object|string} args
   */
  entities(args) {
    return then(this._call((calls) => calls.entities(this.#args('entities', args))), parse);
  }

  /**
   * The relationships of an entity: `{entity, incoming?, types?, valid_at?, limit?}`.
   * @param {object|string} args
   */
  relationships(args) {
    return then(this._call((calls) => calls.relationships(this.#args('relationships', args))), parse);
  }

  /**
   * A bounded traversal: `{start, depth_first?, incoming?, types?,
   * valid_at?, max_depth?, max_nodes?, max_edges?}`. Answers
   * `{"nodes":[…],"edges":[…]}` or `{"error":…}`.
   * @param {object|string} args
   */
  traverse(args) {
    return then(this._call((calls) => calls.traverse(this.#args('traverse', args))), parse);
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
    return then(this._call((calls) => calls.remember(stringify(args)), undefined, true), parse);
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
    return then(this._call((calls) => calls.recall(stringify(args))), parse);
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
    const session = options.session ?? 'js';
    const requestId = options.request_id ?? `cycle-${Date.now()}`;
    return then(
      this._call((calls) => calls.Turn.begin(toText(plan), session, requestId)),
      (turn) => {
        const cycle = new Cycle(this, turn);
        this.#cycles.add(cycle);
        return cycle;
      },
    );
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
    const session = turn.session ?? 'js';
    const requestId = turn.request_id ?? `cycle-${Date.now()}`;
    const lines = this._call(
      (calls) => calls.runCycle(toText(turn.plan), session, requestId, turn.message ?? undefined, turn.response ?? undefined),
      undefined,
      true,
    );
    return then(lines, (lines) => lines.map(parse));
  }

  /**
   * This domain's audit trail, oldest first, in the `engram audit` line
   * form: `{operation?, outcome?, since?, until?, limit?}` (limit 100).
   * @param {Omit<import('./backend.js').AuditQuery, 'agent'>} [query]
   */
  audit(query = {}) {
    return auditTrail(this.#backend, { ...query, agent: this.agent });
  }

  /**
   * Every item of a domain opened for maintenance, as export lines
   * `{agent_id, item}`.
   * @returns {object[]}
   */
  export() {
    return this.#drive(this.#exportSteps());
  }

  *#exportSteps() {
    const lines = [];
    let start;
    for (;;) {
      const page = yield this._call((calls) => calls.export(start, EXPORT_PAGE));
      for (const item of page.items) lines.push({ agent_id: this.agent, item: parse(item) });
      if (page.next === undefined || page.next === null) return lines;
      start = page.next;
    }
  }

  /**
   * Imports items into a domain opened for maintenance: export lines
   * `{agent_id, item}` of this agent (or bare items, objects or JSON
   * text). Answers `{agent_id, items, new}`. Items held exactly so already
   * are passed over.
   * @param {Array<object|string>} lines
   */
  import(lines) {
    const items = lines.map((line) => {
      if (typeof line === 'string') return line;
      if (line !== null && typeof line === 'object' && 'item' in line && 'agent_id' in line) {
        if (line.agent_id !== this.agent) {
          throw new TypeError(`an export line of ${JSON.stringify(line.agent_id)} given to the domain of ${JSON.stringify(this.agent)}`);
        }
        return stringify(line.item);
      }
      return stringify(line);
    });
    return then(this._call((calls) => calls.import(items), undefined, true), (added) => ({
      agent_id: this.agent,
      items: items.length,
      new: added,
    }));
  }

  /**
   * Removes every record of a domain opened for maintenance whose expiry
   * has passed, from every index, each with an EXPIRE entry in the audit
   * trail. Answers `{agent_id, expired}`.
   */
  expire() {
    return then(this._call((calls) => calls.expire(), undefined, true), (expired) => ({
      agent_id: this.agent,
      expired: Number(expired),
    }));
  }

  /**
   * Forgets this agent: removes every key of its domain under its
   * maintenance lock (this domain's own in maintenance mode, else taken
   * for the purpose) and audits it with the count. Answers
   * `{agent_id, removed}`.
   */
  forget() {
    return then(this._control('forget'), (removed) => ({ agent_id: this.agent, removed: Number(removed) }));
  }

  /**
   * Closes the domain: drops the instance, releases the maintenance lock,
   * and closes a store opened by path.
   */
  close() {
    if (this.#closed) return this.#async ? Promise.resolve() : undefined;
    for (const cycle of this.#cycles) cycle[Symbol.dispose]();
    return this.#drive(this.#closeSteps());
  }

  *#closeSteps() {
    try {
      if (this.#held !== undefined) yield this._control('close'); // lets the maintenance lock go
    } catch {
      // A lock that cannot be released now stays for `unlock`.
    } finally {
      this.#closed = true;
      this.#instance = undefined;
      if (this.#owned) yield this.#backend.close();
    }
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

/** How jco names a resource's destructor. */
const DISPOSE = [Symbol.dispose, Symbol.for('dispose')].filter(Boolean);

/**
 * One execution cycle, stage by stage (`Domain.cycle`). Dropping it
 * without a commit persists nothing.
 */
export class Cycle {
  /** @internal */
  constructor(domain, turn) {
    this.#domain = domain;
    this.#turn = turn;
    this.#generation = domain._generation;
  }

  #domain;
  #turn;
  #generation;

  /** @internal */
  _lost() {
    this.#turn = undefined;
  }

  #live() {
    if (this.#turn === undefined || this.#generation !== this.#domain._generation) {
      throw new Error('the cycle is gone: it was disposed of, or the engine stopped');
    }
    return this.#turn;
  }

  #refusal(f, writes = false) {
    const turn = this.#live();
    return this.#domain._call(() => f(turn), undefined, writes);
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
    return then(this.#refusal((turn) => turn.runStage(stage, input.message ?? undefined, input.response ?? undefined)), parse);
  }

  /**
   * The output of a step that has run, parsed; undefined if none.
   * @param {string} step
   */
  output(step) {
    return then(this.#refusal((turn) => turn.output(step)), (text) =>
      text === undefined || text === null ? undefined : parse(text),
    );
  }

  /**
   * Persists the cycle's memories in one commit: `{committed: [ids]}`;
   * throws {@link EngramRefusedError} with the `{cycle_error}`.
   */
  commit() {
    return then(this.#refusal((turn) => turn.commit(), true), parse);
  }

  /** Drops the cycle; nothing not committed is persisted. */
  [Symbol.dispose]() {
    const turn = this.#turn;
    this.#turn = undefined;
    this.#domain._forgetCycle(this);
    if (turn === undefined || this.#generation !== this.#domain._generation) return;
    for (const symbol of DISPOSE) {
      if (typeof turn[symbol] === 'function') {
        turn[symbol]();
        return;
      }
    }
  }
}

/**
 * The audit trail of a store, oldest first, in the `engram audit` line
 * form: the newest `limit` (100) entries that match
 * `{agent?, operation?, outcome?, since?, until?, limit?}`.
 * @param {import('./backend.js').Backend} store
 * @param {import('./backend.js').AuditQuery} [query]
 * @returns {object[]}
 */
export function auditTrail(store, query = {}) {
  const limit = query.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100000) {
    throw new RangeError('an audit limit must be 1 to 100000');
  }
  return then(store.auditRows({ ...query, limit }), (rows) => rows.map(auditLine));
}

/**
 * Exports domains of a store (every domain when `agents` is absent) as
 * export lines `{agent_id, item}`, each under its maintenance lock.
 * @param {import('./backend.js').Backend|string} store
 * @param {{agents?: string[]} & OpenOptions} [options]
 * @returns {Promise<object[]>}
 */
export async function exportStore(store, options = {}) {
  return (await eachMaintenanceDomain(store, options, (domain) => domain.export())).flat();
}

/**
 * Removes the records whose expiry has passed from domains of a store
 * (every domain when `agents` is absent), each under its maintenance
 * lock: one `{agent_id, expired}` per domain.
 * @param {import('./backend.js').Backend|string} store
 * @param {{agents?: string[]} & OpenOptions} [options]
 * @returns {Promise<object[]>}
 */
export async function expireStore(store, options = {}) {
  return eachMaintenanceDomain(store, options, (domain) => domain.expire());
}

/**
 * Runs `f` with each domain of a store (every domain when `agents` is
 * absent) opened for maintenance, under its maintenance lock, closed
 * after: the answers, in order.
 * @template T
 * @param {import('./backend.js').Backend|string} store
 * @param {{agents?: string[]} & OpenOptions} options
 * @param {(domain: Domain) => T} f
 * @returns {Promise<T[]>}
 */
async function eachMaintenanceDomain(store, options, f) {
  const { backend, owned } = await storeOf(store, options);
  try {
    const answers = [];
    for (const agent of options.agents ?? (await domains(backend, options))) {
      const domain = await open(agent, { ...options, store: backend, mode: 'maintenance' });
      try {
        answers.push(await f(domain));
      } finally {
        await domain.close();
      }
    }
    return answers;
  } finally {
    if (owned) await backend.close();
  }
}

/**
 * Imports export lines into a store, each run of lines of one agent into
 * its domain under its maintenance lock. Answers one `{agent_id, items,
 * new}` per run.
 * @param {import('./backend.js').Backend|string} store
 * @param {object[]} lines
 * @param {OpenOptions} [options]
 * @returns {Promise<object[]>}
 */
export async function importStore(store, lines, options = {}) {
  const { backend, owned } = await storeOf(store, options);
  try {
    const groups = [];
    for (const line of lines) {
      const last = groups.at(-1);
      if (last !== undefined && last.agent === line.agent_id) last.lines.push(line);
      else groups.push({ agent: line.agent_id, lines: [line] });
    }
    const answers = [];
    for (const group of groups) {
      const domain = await open(group.agent, { ...options, store: backend, mode: 'maintenance' });
      try {
        answers.push(await domain.import(group.lines));
      } finally {
        await domain.close();
      }
    }
    return answers;
  } finally {
    if (owned) await backend.close();
  }
}

/**
 * The agents whose domains hold anything in a store, in key order.
 * @param {import('./backend.js').Backend|string} store
 * @param {OpenOptions} [options]
 * @returns {Promise<string[]>}
 */
export async function domains(store, options = {}) {
  // Any domain's instance lists them: the store is one.
  return withDomain(store, 'engram', options, (domain) => domain._control('domains'));
}

/**
 * Forgets an agent of a store (see {@link Domain#forget}): `{agent_id,
 * removed}`.
 * @param {import('./backend.js').Backend|string} store
 * @param {string} agent
 * @param {{clock?: () => number, sqlite?: import('./backends/sqlite.js').SqliteOptions}} [options]
 * @returns {Promise<{agent_id: string, removed: number}>}
 */
export async function forget(store, agent, options = {}) {
  return withDomain(store, agent, options, (domain) => domain.forget());
}

/**
 * Breaks the maintenance lock of an agent, whoever holds it (a lock left
 * behind by a process that died): `{agent_id, unlocked}`.
 * @param {import('./backend.js').Backend|string} store
 * @param {string} agent
 * @returns {Promise<{agent_id: string, unlocked: boolean}>}
 */
export async function unlock(store, agent) {
  return withDomain(store, agent, {}, async (domain) => ({ agent_id: agent, unlocked: await domain._control('breakLock') }));
}

/** Runs `f` with an online domain of `agent` in `store`, closed after. */
async function withDomain(store, agent, options, f) {
  const { backend, owned } = await storeOf(store, options);
  try {
    const { coreModule, instantiate, clock, async } = options;
    const domain = await open(agent, { coreModule, instantiate, clock, async, store: backend });
    try {
      return await f(domain);
    } finally {
      await domain.close();
    }
  } finally {
    if (owned) await backend.close();
  }
}
