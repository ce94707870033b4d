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
import { EngramInputError, EngramRefusedError, auditTrail, endpointEmbedder, open, parse, stringify } from '../src/index.js';
import { DurableObjectBackend } from '../src/backends/durable-object.js';
import { coreModule, instantiate } from './modules.js';

/**
 * How `open` gets the components in a Worker: their core modules as
 * compiled modules, and the generated code as imported here (an `open`
 * that does not take `instantiate` imports it by `import.meta.url`, which
 * only workerd's new module registry gives).
 */
const COMPONENTS = { coreModule, instantiate };

/** The name input errors give the input when the body names none. */
const DEFAULT_INPUT = 'request';

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
 * A domain being opened: settings it refuses (an agent id too long, a
 * tier ceiling that is none) are the caller's error.
 * @param {Promise<import('../src/index.js').Domain>} domain
 */
function opened(domain) {
  return domain.catch((error) => {
    throw error instanceof TypeError ? new BadRequest(error.message) : error;
  });
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

/** The fields of `body` that are set, among `names`. */
function pick(body, ...names) {
  return Object.fromEntries(names.filter((name) => body[name] !== undefined).map((name) => [name, body[name]]));
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
   * @returns {Promise<Answer>}
   */
  call(agent, op, body) {
    const run = this.queue.then(() => this.#call(agent, op, body));
    this.queue = run.catch(() => {});
    return run;
  }

  async #call(agent, op, text) {
    try {
      if (typeof agent !== 'string' || agent === '') throw new BadRequest('an agent id must be a string, not empty');
      if (this.agent === undefined) this.agent = agent;
      else if (this.agent !== agent) throw new BadRequest(`this object serves ${JSON.stringify(this.agent)}, not ${JSON.stringify(agent)}`);
      let body;
      try {
        body = text === '' ? {} : parse(text);
      } catch (error) {
        throw new BadRequest(`the body is not JSON: ${error.message}`);
      }
      if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new BadRequest('the body must be a JSON object');
      if (body.now !== undefined) {
        if (!this.clockFromRequest) throw new BadRequest('now: this Worker runs by its own clock');
        if (!Number.isSafeInteger(body.now)) throw new BadRequest('now must be a whole number of milliseconds');
      }
      this.now = body.now;
      const answer = await this.#answer(op, body);
      return { status: 200, body: stringify(answer) };
    } catch (error) {
      return errorAnswer(error);
    } finally {
      this.now = undefined;
    }
  }

  /**
   * The embedder of a call (`body.embedder`): the Worker's, unless the
   * body says `false`; a model named must be the Worker's. Undefined for
   * none.
   * @param {object} body
   * @returns {Promise<import('../src/algorithms.js').Embedder | undefined>}
   */
  async #embedderOf(body) {
    const asked = body.embedder;
    if (asked === false) return undefined;
    if (asked !== undefined && typeof asked !== 'string') throw new BadRequest('embedder must be the name of the Worker\'s model, or false');
    if (this.endpoint === undefined) {
      if (asked === undefined) return undefined;
      throw new BadRequest(`embedder: this Worker has no embedder (ENGRAM_EMBEDDER_URL), not ${JSON.stringify(asked)}`);
    }
    if (asked !== undefined && asked !== this.endpoint.model) {
      throw new BadRequest(`embedder: this Worker's model is ${JSON.stringify(this.endpoint.model)}, not ${JSON.stringify(asked)}`);
    }
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
   * `expireAfter` ms (none: until removed otherwise), with the call's
   * embedder (see {@link #embedderOf}), opened once.
   */
  async #online(body, tierCeiling = 'private', expireAfter = undefined) {
    if (expireAfter !== undefined && !(Number.isSafeInteger(expireAfter) && expireAfter > 0)) {
      throw new BadRequest('expire_after must be a whole number of milliseconds, more than 0');
    }
    const embedder = await this.#embedderOf(body);
    const name = `${tierCeiling} ${expireAfter ?? ''} ${embedder === undefined ? '' : embedder.name}`;
    let domain = this.domains.get(name);
    if (domain === undefined) {
      domain = opened(
        open(this.agent, {
          ...COMPONENTS,
          store: this.store,
          tierCeiling,
          expireAfterMs: expireAfter,
          clock: this.clock,
          embedder,
          async: embedder !== undefined,
        }),
      );
      domain.catch(() => this.domains.delete(name));
      this.domains.set(name, domain);
    }
    return domain;
  }

  /** Runs `f` with a maintenance domain (with the call's embedder), closed when it is done. */
  async #maintenance(body, f) {
    const embedder = await this.#embedderOf(body);
    const domain = await opened(
      open(this.agent, { ...COMPONENTS, store: this.store, mode: 'maintenance', clock: this.clock, embedder, async: embedder !== undefined }),
    );
    try {
      return await f(domain);
    } finally {
      await domain.close();
    }
  }

  /** A write or read request of the body: `request` (one or a list) or `text`. */
  static #requests(body) {
    const options = { input: typeof body.input === 'string' ? body.input : DEFAULT_INPUT };
    if (body.text !== undefined) {
      if (typeof body.text !== 'string') throw new BadRequest('text must be a string');
      return [body.text, { ...options, batch: body.batch === true }];
    }
    if (body.request === undefined) throw new BadRequest('the body has no request (or text)');
    return [body.request, options];
  }

  async #answer(op, body) {
    switch (op) {
      case 'write':
        return (await this.#online(body, body.tier_ceiling, body.expire_after)).write(...EngramAgent.#requests(body));
      case 'read':
        return (await this.#online(body, body.tier_ceiling)).read(...EngramAgent.#requests(body));
      case 'maintenance_write':
        return this.#maintenance(body, (domain) => domain.write(...EngramAgent.#requests(body)));
      case 'history':
        return (await this.#online(body, body.tier_ceiling)).history(pick(body, 'request_id', 'key', 'limit'));
      case 'as_of':
        return (await this.#online(body, body.tier_ceiling)).asOf(pick(body, 'request_id', 'key', 'valid', 'known', 'limit'));
      case 'list':
        return (await this.#online(body, body.tier_ceiling)).list(pick(body, 'request_id', 'namespace', 'limit', 'after'));
      case 'entities':
        return (await this.#online(body, body.tier_ceiling)).entities(pick(body, 'request_id', 'entity_type', 'limit'));
      case 'relationships':
        return (await this.#online(body, body.tier_ceiling)).relationships(
          pick(body, 'request_id', 'entity', 'incoming', 'types', 'valid_at', 'limit'),
        );
      case 'traverse':
        return (await this.#online(body, body.tier_ceiling)).traverse(
          pick(body, 'request_id', 'start', 'depth_first', 'incoming', 'types', 'valid_at', 'max_depth', 'max_nodes', 'max_edges'),
        );
      case 'cycle':
        if (body.plan === undefined) throw new BadRequest('a cycle needs a plan');
        return (await this.#online(body, body.tier_ceiling, body.expire_after)).runCycle(pick(body, 'plan', 'message', 'response', 'session', 'request_id'));
      case 'remember':
        if (typeof body.message !== 'string' || typeof body.response !== 'string') {
          throw new BadRequest('remember needs message and response (strings)');
        }
        return (await this.#online(body, body.tier_ceiling, body.expire_after)).remember(
          body.message,
          body.response,
          pick(body, 'session', 'request_id', 'time'),
        );
      case 'recall':
        if (typeof body.question !== 'string') throw new BadRequest('recall needs a question (a string)');
        return (await this.#online(body, body.tier_ceiling)).recall(body.question, pick(body, 'top_k', 'token_budget', 'request_id'));
      case 'audit':
        return auditTrail(this.store, { ...pick(body, 'operation', 'outcome', 'since', 'until', 'limit'), agent: this.agent });
      case 'export':
        return this.#maintenance(body, (domain) => domain.export());
      case 'import':
        if (!Array.isArray(body.lines)) throw new BadRequest('an import needs lines (a list of export lines)');
        for (const line of body.lines) {
          if (line === null || typeof line !== 'object' || line.agent_id !== this.agent || line.item === undefined) {
            throw new BadRequest(`every line of an import into ${JSON.stringify(this.agent)} must be an export line {agent_id, item} of that agent`);
          }
        }
        return this.#maintenance(body, (domain) => domain.import(body.lines));
      case 'forget':
        return this.#maintenance(body, (domain) => domain.forget());
      case 'expire':
        return this.#maintenance(body, (domain) => domain.expire());
      case 'reembed':
        return this.#maintenance(body, (domain) => domain.reembed(pick(body, 'batch')));
      case 'vector_model':
        return (await this.#online(body)).vectorModel();
      default:
        throw new BadRequest(`no such call: ${op}`);
    }
  }
}
