// Engram on Cloudflare Workers: a Worker in front of one Durable Object per
// agent (worker/agent.js), whose domain lives in that object's SQLite
// storage. Two agents are two objects: neither can reach the other's data.
//
// The HTTP API (every call a POST with a JSON object as its body; every
// answer JSON, integers beyond 2^53 exact):
//
//   POST /agents/{agent}/{op}   a call in the agent's domain, `op` one of
//       write, maintenance_write, read          {request} (one or a list),
//                                               or {text, batch?}; input?
//       history, as_of, list, entities,         the call's arguments, in
//       relationships, traverse, cycle,         the CLI's JSON names
//       remember, recall                        ({message, response, session?,
//                                               request_id?, time?}, {question,
//                                               top_k?, token_budget?,
//                                               request_id?})
//       audit                                   {operation?, outcome?,
//                                               since?, until?, limit?}
//       export                                  {} -> export lines
//       import                                  {lines} (this agent's)
//       forget, expire                          {}
//       reembed                                 {batch?}: the vectors of
//                                               every memory made again
//                                               with the embedder
//       vector_model                            {} -> {name, dimension}
//                                               of the domain's vectors,
//                                               or null
//     and every call but audit, export, import, forget, expire and reembed
//     takes `tier_ceiling` (public, sensitive, private: the default); write,
//     cycle and remember take `expire_after` (ms: what the call stores is kept that
//     long, and `expire` removes it once it has passed). With an embedder
//     (the bindings below), every call but audit takes `embedder`: false
//     for none (recall by keywords alone, nothing embedded), or the name
//     of the Worker's model; the Worker's by default. With the binding
//     `ENGRAM_CLOCK_FROM_REQUEST` = "on" (tests; never a deployment) every
//     call takes `now` too: the time it runs at, as `engram --now`.
//   POST /export   {agents: [...]}   the export lines of each agent in turn
//   POST /import   {lines: [...]}    each run of lines of one agent into
//                                    its domain: one {agent_id, items, new}
//                                    per run
//     (both take `embedder` too, for each agent's call)
//   POST /audit    {audit_agent, operation?, outcome?, since?, until?, limit?}
//
// The answer of a call is the JSON the `engram` command line prints for it
// (a list of lines for batches, cycles, audits, exports, imports). Errors:
// 400 `{"input_error": message}` (an invalid request: nothing ran), 404 for
// no such path, 405 for a method other than POST, 409 with the refusal's
// line (`{"plan_error":…}`, `{"cycle_error":…}`, `{"error":…}`), 500
// `{"host_error": message}`.
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
      http.authorize(TOKENS, tokens, authorization, target.level, target.agent === undefined ? [] : [target.agent]);
      const text = await request.text();
      if (target.agent !== undefined) return respond(await agentObject(env, target.agent).call(target.agent, target.op, text));
      const spread = http.across(target.op, text);
      http.authorize(TOKENS, tokens, authorization, target.level, spread.agents);
      const answers = [];
      for (const [agent, op, body] of spread.calls) {
        const answer = await agentObject(env, agent).call(agent, op, body);
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
