// Engram on Cloudflare Workers: a Worker in front of one Durable Object per
// agent (worker/agent.js), whose domain lives in that object's SQLite
// storage. Two agents are two objects: neither can reach the other's data.
//
// The HTTP API is docs/http.md's (its OpenAPI description docs/openapi.json),
// the same as `engram serve`'s: every call a POST of a JSON object,
// `/agents/{agent}/{op}` in one agent's domain, `/export`, `/import` and
// `/audit` across agents. What is decided before a call reaches a domain
// (its route, its token, its body's fields, its answer's status) is Rust's
// `engram-http`, loaded as a component (gen/engram-http-api); the front
// routes and authenticates, each agent's Durable Object prepares and makes
// its calls.
//
// Every call carries `Authorization: Bearer <token>` (S-AUTH): the Worker's tokens
// are the secret `ENGRAM_TOKENS` (JSON Lines, one token an object `{name,
// secret, agents, level}`: docs/http.md), each allowed some agents (or all,
// "*") and a level: `cognition` (an agent's own calls, its audit trail),
// `maintenance` (also maintenance_write, export, import, forget, expire,
// reembed) or `cross-agent` (also /export, /import and /audit, for its
// agents). 401 `{"auth_error": …}` without a token or with a wrong one, 403
// for an agent or a call the token may not reach; a Worker with no tokens
// answers every call 500 (it serves nobody). Routes, tokens and refusals
// are decided by the HTTP API every server of it shares (engram-http-api).
//
// Bindings: `ENGRAM_TOKENS` (a secret: `wrangler secret put ENGRAM_TOKENS <
// tokens.jsonl`), `ENGRAM_AGENT`, the Durable Object namespace of `EngramAgent`
// (a class in a `new_sqlite_classes` migration). Optionally an embedder, for
// recall by meaning: `ENGRAM_EMBEDDER_URL` (an OpenAI-compatible embeddings
// endpoint, up to `/v1`), `ENGRAM_EMBEDDER_MODEL` (the model asked for, the
// name the domains record), `ENGRAM_EMBEDDER_DIMENSION` (learned from the
// endpoint when absent) and the secret `ENGRAM_EMBEDDER_KEY` (a bearer key).
// A domain with an embedder runs on the components' JSPI build.

import { EngramAgent, decisions, errorAnswer, refusalOf } from './agent.js';

export { EngramAgent };

/** The secret binding of the Worker's tokens (JSON Lines; docs/http.md). */
const TOKENS = 'ENGRAM_TOKENS';

/**
 * Answers a refusal of the HTTP API's decisions (thrown as its payload), or
 * throws what is not one.
 * @param {unknown} error
 * @returns {Response}
 */
function refused(error) {
  const refusal = refusalOf(error);
  if (refusal === undefined) throw error;
  return new Response(refusal.body, {
    status: refusal.status,
    headers: [['content-type', 'application/json'], ...refusal.headers],
  });
}

/**
 * A JSON response.
 * @param {{status: number, body: string}} answer
 * @returns {Response}
 */
function respond({ status, body }) {
  return new Response(body, { status, headers: { 'content-type': 'application/json' } });
}

/**
 * The stub of an agent's Durable Object.
 * @param {object} env
 * @param {string} agent
 */
function agentObject(env, agent) {
  return env.ENGRAM_AGENT.get(env.ENGRAM_AGENT.idFromName(agent));
}

/**
 * The Worker: routes each call to its agent's Durable Object.
 */
export default {
  /**
   * @param {Request} request
   * @param {object} env
   * @returns {Promise<Response>}
   */
  async fetch(request, env) {
    const http = await decisions();
    const url = new URL(request.url);
    const tokens = typeof env[TOKENS] === 'string' ? env[TOKENS] : '';
    const authorization = request.headers.get('authorization') ?? undefined;
    try {
      const target = http.route(request.method, url.pathname, url.search === '' ? undefined : url.search.slice(1));
      // The token's name: the audit trail keeps who made each call.
      const caller = http.authorize(TOKENS, tokens, authorization, target.level, target.agent === undefined ? [] : [target.agent]);
      const text = await request.text();
      if (target.agent !== undefined) return respond(await agentObject(env, target.agent).call(target.agent, target.op, text, caller));
      const spread = http.across(target.op, text);
      http.authorize(TOKENS, tokens, authorization, target.level, spread.agents);
      const answers = [];
      for (const [agent, op, body] of spread.calls) {
        const answer = await agentObject(env, agent).call(agent, op, body, caller);
        if (answer.status !== 200) return respond(answer);
        answers.push(answer.body);
      }
      return respond({ status: 200, body: http.join(spread.joined, answers) });
    } catch (error) {
      try {
        return refused(error);
      } catch {
        return respond(errorAnswer(error));
      }
    }
  },
};
