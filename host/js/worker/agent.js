// The Durable Object of one agent: its memory domain, in the Durable
// Object's own SQLite storage (src/backends/durable-object.js). The Worker
// (worker/index.js) reaches it by the agent's name (`idFromName(agent)`)
// and calls `call(agent, op, body)` over RPC; the answer is the HTTP
// status and JSON text the Worker hands back.
//
// The online domains (one per privacy-tier ceiling and expiry asked for)
// are opened on the first call and kept for the Durable Object's lifetime;
// a call that needs maintenance mode (`maintenance_write`, `export`,
// `import`, `forget`, `expire`, `reembed`) opens a maintenance domain, which takes the domain's
// maintenance lock, and closes it before it answers, so online writes go on
// afterwards. Calls run one at a time, in the order they came.
//
// With an embedder (the bindings `ENGRAM_EMBEDDER_URL`, `ENGRAM_EMBEDDER_MODEL`,
// optionally `ENGRAM_EMBEDDER_DIMENSION` and the secret `ENGRAM_EMBEDDER_KEY`:
// an OpenAI-compatible embeddings endpoint), a call's domain embeds what it
// stores and recalls by meaning too, unless its body says `"embedder":
// false`; such a domain is asynchronous (it awaits the endpoint), on the
// components' JSPI build, which workerd has.

import { DurableObject } from 'cloudflare:workers';
import { EngramInputError, EngramRefusedError, endpointEmbedder, open, stringify } from '../src/index.js';
import { DurableObjectBackend } from '../src/backends/durable-object.js';
import { coreModule, instantiate } from './modules.js';

/**
 * How `open` gets the components in a Worker: their core modules as
 * compiled modules, and the generated code as imported here (an `open`
 * that does not take `instantiate` imports it by `import.meta.url`, which
 * only workerd's new module registry gives).
 */
const COMPONENTS = { coreModule, instantiate };

/** The HTTP API's decisions (`engram-http-api`), instantiated once an isolate. */
let httpApi;

/**
 * The HTTP API's decisions: the routes, the tokens, the bodies and the
 * answers every server of the API makes (Rust's `engram-http`, as a
 * component).
 * @returns {Promise<typeof import('../gen/engram-http-api/interfaces/engram-js-http.js')>}
 */
export function decisions() {
  httpApi ??= Promise.resolve(instantiate['engram-http-api']((file) => coreModule('engram-http-api', file), {})).then((root) => root.http);
  return httpApi;
}

/**
 * The answer of a refusal of the HTTP API's decisions (thrown as its
 * payload), or undefined for an error that is not one.
 * @param {unknown} error
 * @returns {(Answer & {headers: Array<[string, string]>}) | undefined}
 */
export function refusalOf(error) {
  const refusal = error?.payload;
  if (refusal === undefined || typeof refusal.status !== 'number') return undefined;
  return { status: refusal.status, body: refusal.body, headers: refusal.headers };
}

/**
 * An error of the caller's making: answered 400 with `{"input_error":…}`.
 */
export class BadRequest extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'BadRequest';
  }
}

/**
 * The HTTP answer of a call: its status and its JSON text.
 * @typedef {{status: number, body: string}} Answer
 */

/**
 * The answer of a call that threw: 400 for input errors (the JSON layer's
 * and the HTTP API's), 409 with the refusal's line for a refusal, 500 with
 * the message for anything else.
 * @param {unknown} error
 * @returns {Answer}
 */
export function errorAnswer(error) {
  if (error instanceof EngramInputError || error instanceof BadRequest) {
    return { status: 400, body: stringify({ input_error: error.message }) };
  }
  if (error instanceof EngramRefusedError) return { status: 409, body: stringify(error.answer) };
  const message = error instanceof Error ? error.message : String(error);
  return { status: 500, body: stringify({ host_error: message }) };
}


/**
 * The endpoint of the Worker's embedder, as its bindings name it; undefined
 * when it has none.
 * @param {object} [env]
 * @returns {import('../src/endpoint.js').EndpointOptions | undefined}
 */
function embedderEndpoint(env) {
  if (typeof env?.ENGRAM_EMBEDDER_URL !== 'string' || env.ENGRAM_EMBEDDER_URL === '') return undefined;
  const dimension = env.ENGRAM_EMBEDDER_DIMENSION;
  return {
    url: env.ENGRAM_EMBEDDER_URL,
    model: env.ENGRAM_EMBEDDER_MODEL,
    key: env.ENGRAM_EMBEDDER_KEY,
    dimension: dimension === undefined ? undefined : Number(dimension),
  };
}

/**
 * The Durable Object class of an agent (bind it as `ENGRAM_AGENT`, declare
 * it in a `new_sqlite_classes` migration).
 */
export class EngramAgent extends DurableObject {
  /**
   * @param {DurableObjectState} ctx
   * @param {object} env
   */
  constructor(ctx, env) {
    super(ctx, env);
    /** The store: this Durable Object's SQLite database. */
    this.store = new DurableObjectBackend(ctx.storage);
    /** The agent this object serves, known from its first call. */
    this.agent = undefined;
    /** @type {Map<string, Promise<import('../src/index.js').Domain>>} online domains by tier ceiling and expiry */
    this.domains = new Map();
    /** The tail of the queue of calls. */
    this.queue = Promise.resolve();
    /**
     * Whether a call's body may say the time it runs at (`now`, ms since
     * the epoch), as the command line's `--now` does: only with the binding
     * `ENGRAM_CLOCK_FROM_REQUEST` set to `on`, which tests set and a
     * deployment does not (a caller who moved the clock back would be
     * answered records that have expired).
     */
    this.clockFromRequest = env?.ENGRAM_CLOCK_FROM_REQUEST === 'on';
    /** The time the call running now was given, if any. */
    this.now = undefined;
    /** The domains' clock. */
    this.clock = () => this.now ?? Date.now();
    /** The endpoint of the Worker's embedder, if it has one. */
    this.endpoint = embedderEndpoint(env);
    /** @type {Promise<import('../src/algorithms.js').Embedder> | undefined} the embedder, made at its first use */
    this.embedder = undefined;
  }

  /**
   * Makes one call in the agent's domain, after every call that came
   * before it.
   * @param {string} agent the agent's id (the name the object was found by)
   * @param {string} op write, maintenance_write, read, history, as_of,
   *   list, entities, relationships, traverse, cycle, remember, recall,
   *   audit, export, import, forget, expire, reembed or vector_model
   * @param {string} body the call's arguments, JSON text of an object
   * @param {string} [caller] who makes it: the name of the token the
   *   Worker authenticated it by, kept in its audit entries
   * @returns {Promise<Answer>}
   */
  call(agent, op, body, caller) {
    const run = this.queue.then(() => this.#call(agent, op, body, caller));
    this.queue = run.catch(() => {});
    return run;
  }

  async #call(agent, op, text, caller) {
    this.store.caller = caller;
    try {
      if (this.agent === undefined) this.agent = agent;
      else if (this.agent !== agent) throw new BadRequest(`this object serves ${JSON.stringify(this.agent)}, not ${JSON.stringify(agent)}`);
      const http = await decisions();
      let call;
      let withEmbedder;
      try {
        call = http.prepare(agent, op, text, this.clockFromRequest);
        withEmbedder = http.resolveEmbedder(call.embedder, this.endpoint?.model);
      } catch (error) {
        const refused = refusalOf(error);
        if (refused === undefined) throw error;
        return refused;
      }
      const embedder = withEmbedder ? await this.#embedder() : undefined;
      this.now = call.now === undefined ? undefined : Number(call.now);
      if (call.mode.tag === 'maintenance') return await this.#maintenance(embedder, (domain) => this.#run(http, domain, call));
      const [tierCeiling, expireAfter] = call.mode.val;
      const domain = await this.#online(embedder, tierCeiling, expireAfter === undefined ? undefined : Number(expireAfter));
      return await this.#run(http, domain, call);
    } catch (error) {
      return errorAnswer(error);
    } finally {
      this.now = undefined;
      this.store.caller = undefined;
    }
  }

  /**
   * Makes `call` in `domain`: its HTTP answer.
   * @returns {Promise<Answer>}
   */
  async #run(http, domain, call) {
    if (call.shape === 'pages') {
      const lines = [];
      let start;
      for (;;) {
        const [status, body] = http.answer('value', await domain._call('export', http.exportArgs(start)));
        if (status !== 200) return { status, body };
        const [page, next] = http.exportPage(body);
        lines.push(...page);
        if (next === undefined) break;
        start = next;
      }
      return { status: 200, body: `[${lines.join(',')}]` };
    }
    const [status, body] = http.answer(call.shape, await domain._call(call.name, call.args, call.input));
    return { status, body };
  }

  /** The Worker's embedder, made at its first use. */
  #embedder() {
    if (this.embedder === undefined) {
      // An endpoint that could not be reached is tried again by the next call.
      this.embedder = endpointEmbedder(this.endpoint);
      this.embedder.catch(() => {
        this.embedder = undefined;
      });
    }
    return this.embedder;
  }

  /**
   * The online domain of a tier ceiling that keeps what it writes for
   * `expireAfter` ms (none: until removed otherwise), with `embedder`,
   * opened once.
   */
  async #online(embedder, tierCeiling, expireAfter) {
    const name = `${tierCeiling} ${expireAfter ?? ''} ${embedder === undefined ? '' : embedder.name}`;
    let domain = this.domains.get(name);
    if (domain === undefined) {
      // Settings it refuses (an agent id too long, a tier ceiling that is
      // none) throw EngramInputError: the caller's error.
      domain = open(this.agent, {
        ...COMPONENTS,
        store: this.store,
        tierCeiling,
        expireAfterMs: expireAfter,
        clock: this.clock,
        embedder,
        async: embedder !== undefined,
      });
      domain.catch(() => this.domains.delete(name));
      this.domains.set(name, domain);
    }
    return domain;
  }

  /** Runs `f` with a maintenance domain (with `embedder`), closed when it is done. */
  async #maintenance(embedder, f) {
    const domain = await open(this.agent, { ...COMPONENTS, store: this.store, mode: 'maintenance', clock: this.clock, embedder, async: embedder !== undefined });
    try {
      return await f(domain);
    } finally {
      await domain.close();
    }
  }
}
