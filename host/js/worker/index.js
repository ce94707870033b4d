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
// Bindings: `ENGRAM_AGENT`, the Durable Object namespace of `EngramAgent`
// (a class in a `new_sqlite_classes` migration). Optionally an embedder, for
// recall by meaning: `ENGRAM_EMBEDDER_URL` (an OpenAI-compatible embeddings
// endpoint, up to `/v1`), `ENGRAM_EMBEDDER_MODEL` (the model asked for, the
// name the domains record), `ENGRAM_EMBEDDER_DIMENSION` (learned from the
// endpoint when absent) and the secret `ENGRAM_EMBEDDER_KEY` (a bearer key).
// A domain with an embedder runs on the components' JSPI build.

import { parse, stringify } from '../src/index.js';
import { BadRequest, EngramAgent, errorAnswer } from './agent.js';

export { EngramAgent };

/** The calls a path /agents/{agent}/{op} may make. */
export const AGENT_OPS = Object.freeze([
  'write', 'maintenance_write', 'read', 'history', 'as_of', 'list', 'entities',
  'relationships', 'traverse', 'cycle', 'remember', 'recall', 'audit', 'export', 'import', 'forget', 'expire',
  'reembed', 'vector_model',
]);

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
 * Makes one call in an agent's domain; throws the call's answer as an
 * error when it is not 200, so a fan-out stops at the first failure.
 * @param {object} env
 * @param {string} agent
 * @param {string} op
 * @param {object} body
 * @returns {Promise<any>} the answer, parsed
 */
async function callAgent(env, agent, op, body) {
  const answer = await agentObject(env, agent).call(agent, op, stringify(body));
  if (answer.status !== 200) throw Object.assign(new Error('an agent call failed'), { answer });
  return parse(answer.body);
}

/** The agent id of an export line. */
function lineAgent(line) {
  if (line === null || typeof line !== 'object' || typeof line.agent_id !== 'string' || line.agent_id === '') {
    throw new BadRequest('every import line must be an export line {agent_id, item}');
  }
  return line.agent_id;
}

/** The `embedder` of a body that spans agents, for each agent's call: none when it names none. */
function embedderOf(body) {
  return body.embedder === undefined ? {} : { embedder: body.embedder };
}

/**
 * The calls that span agents: export, import and audit by agent.
 * @param {string} op
 * @param {object} body
 * @param {object} env
 */
async function acrossAgents(op, body, env) {
  switch (op) {
    case 'export': {
      if (!Array.isArray(body.agents) || body.agents.some((a) => typeof a !== 'string' || a === '')) {
        throw new BadRequest('an export names its agents: {"agents": [...]} (a Worker cannot list its Durable Objects)');
      }
      const lines = [];
      for (const agent of body.agents) lines.push(...(await callAgent(env, agent, 'export', embedderOf(body))));
      return lines;
    }
    case 'import': {
      if (!Array.isArray(body.lines)) throw new BadRequest('an import needs lines (a list of export lines)');
      const runs = [];
      for (const line of body.lines) {
        const agent = lineAgent(line);
        const last = runs.at(-1);
        if (last !== undefined && last.agent === agent) last.lines.push(line);
        else runs.push({ agent, lines: [line] });
      }
      const answers = [];
      for (const run of runs) answers.push(await callAgent(env, run.agent, 'import', { lines: run.lines, ...embedderOf(body) }));
      return answers;
    }
    case 'audit': {
      if (typeof body.audit_agent !== 'string' || body.audit_agent === '') {
        throw new BadRequest('an audit names its agent: {"audit_agent": …}');
      }
      const { audit_agent: agent, ...query } = body;
      return callAgent(env, agent, 'audit', query);
    }
    default:
      return undefined;
  }
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
    const url = new URL(request.url);
    let parts;
    try {
      parts = url.pathname.split('/').filter((part) => part !== '').map(decodeURIComponent);
    } catch {
      return respond({ status: 400, body: stringify({ input_error: `not a valid path: ${url.pathname}` }) });
    }
    const known = (parts.length === 3 && parts[0] === 'agents' && AGENT_OPS.includes(parts[2])) ||
      (parts.length === 1 && ['export', 'import', 'audit'].includes(parts[0]));
    if (!known) return respond({ status: 404, body: stringify({ input_error: `no such path: ${url.pathname}` }) });
    if (request.method !== 'POST') {
      return new Response(stringify({ input_error: 'every call is a POST' }), {
        status: 405,
        headers: { 'content-type': 'application/json', allow: 'POST' },
      });
    }
    const text = await request.text();
    if (parts.length === 3) return respond(await agentObject(env, parts[1]).call(parts[1], parts[2], text));
    try {
      let body;
      try {
        body = text === '' ? {} : parse(text);
      } catch (error) {
        throw new BadRequest(`the body is not JSON: ${error.message}`);
      }
      if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new BadRequest('the body must be a JSON object');
      return respond({ status: 200, body: stringify(await acrossAgents(parts[0], body, env)) });
    } catch (error) {
      return respond(error.answer ?? errorAnswer(error));
    }
  },
};
