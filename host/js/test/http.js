// The HTTP API (docs/http.md) as every server of it answers: a scenario
// host over it, the tests' tokens, and the authentication cases each server
// must pass (S-AUTH). worker.test.js runs them on the Worker in workerd,
// serve.test.js on `engram serve` (test-postgres/ on PostgreSQL).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { dirname } from 'node:path';
import { parse, stringify } from '../src/json.js';

/** Secrets of the tests' tokens (each at least 32 characters). */
export const SECRETS = Object.freeze({
  admin: 'admin-0123456789abcdef0123456789abcdef',
  alice: 'alice-0123456789abcdef0123456789abcdef',
  aliceOps: 'alice-ops-0123456789abcdef0123456789ab',
  bobAudit: 'bob-audit-0123456789abcdef0123456789ab',
});

/** The tests' tokens, as a server takes them (JSON Lines). */
export const TOKENS = [
  { name: 'admin', secret: SECRETS.admin, agents: '*', level: 'cross-agent' },
  { name: 'alice-app', secret: SECRETS.alice, agents: ['alice'], level: 'cognition' },
  { name: 'alice-ops', secret: SECRETS.aliceOps, agents: ['alice'], level: 'maintenance' },
  { name: 'bob-audit', secret: SECRETS.bobAudit, agents: ['bob'], level: 'cross-agent' },
].map((token) => JSON.stringify(token)).join('\n');

/** The path of a call in an agent's domain. */
export const agentPath = (agent, op) => `/agents/${encodeURIComponent(agent)}/${op}`;

/**
 * A POST of a JSON body through `fetch` (a server's, or miniflare's
 * `dispatchFetch` with the origin added): the status and the answer, parsed.
 * @param {(path: string, init: RequestInit) => Promise<Response>} fetch
 * @param {string} path
 * @param {object} body
 * @param {string|null} [secret] the bearer token sent (null: none)
 */
export async function postWith(fetch, path, body = {}, secret = SECRETS.admin) {
  const headers = { 'content-type': 'application/json' };
  if (secret !== null) headers.authorization = `Bearer ${secret}`;
  const response = await fetch(path, { method: 'POST', headers, body: stringify(body) });
  const text = await response.text();
  let answer;
  try {
    answer = parse(text);
  } catch (error) {
    throw new Error(`${path}: HTTP ${response.status}, not JSON (${error.message}): ${text.slice(0, 300)}`);
  }
  return { status: response.status, answer, headers: response.headers };
}

/** A STATE write request of `agent`. */
function stateWrite(agent, requestId) {
  return {
    request_id: requestId,
    source: { agent_id: agent, component: 'COGNITION', actor: 'USER' },
    record: { record_type: 'STATE', timestamp: 1700000000000, payload: { subject: 'city', properties: { city: 'Lisbon' } } },
  };
}

/**
 * The authentication cases every server passes (S-AUTH), on a server
 * started with {@link TOKENS} and nothing in it: no token, a wrong one,
 * another agent's, a cognition token calling forget, a maintenance token
 * calling across agents, a token in the URL; what was refused left no
 * trace; what a token may do, it does; the audit trail names the token
 * that acted, never its secret.
 * @param {(path: string, init: RequestInit) => Promise<Response>} fetch
 */
export async function checkAuthentication(fetch) {
  const post = (path, body, secret) => postWith(fetch, path, body, secret);
  const write = (agent, key) => ({ request: stateWrite(agent, key) });
  const refusedWith = async (status, path, body, secret, words) => {
    const { status: got, answer } = await post(path, body, secret);
    assert.equal(got, status, `${path}: ${stringify(answer)}`);
    assert.match(answer.auth_error, words, stringify(answer));
    for (const value of Object.values(SECRETS)) assert.ok(!stringify(answer).includes(value), 'no secret in an answer');
  };
  await refusedWith(401, agentPath('alice', 'write'), write('alice', 'k0'), null, /needs a token/);
  await refusedWith(401, agentPath('alice', 'write'), write('alice', 'k0'), 'not-a-token-0123456789abcdef0123456789', /not one of this server's/);
  await refusedWith(403, agentPath('bob', 'write'), write('bob', 'k0'), SECRETS.alice, /may not reach the agent "bob"/);
  await refusedWith(403, agentPath('alice', 'forget'), {}, SECRETS.alice, /cognition calls, not maintenance/);
  await refusedWith(403, '/export', { agents: ['alice'] }, SECRETS.aliceOps, /maintenance calls, not cross-agent/);
  await refusedWith(403, '/audit', { audit_agent: 'alice' }, SECRETS.bobAudit, /may not reach the agent "alice"/);
  await refusedWith(403, '/import', { lines: [{ agent_id: 'alice', item: {} }] }, SECRETS.bobAudit, /may not reach the agent "alice"/);
  const challenge = await fetch(agentPath('alice', 'read'), { method: 'POST', body: '{}' });
  assert.equal(challenge.status, 401);
  assert.match(challenge.headers.get('www-authenticate'), /^Bearer realm="engram"/);
  await challenge.text();
  const inQuery = await fetch(`${agentPath('alice', 'read')}?access_token=${SECRETS.alice}`, { method: 'POST', body: '{}' });
  assert.equal(inQuery.status, 400);
  assert.match((await inQuery.json()).input_error, /Authorization header/);
  // What was refused left nothing: the agents' trails hold no entry.
  assert.deepEqual((await post('/audit', { audit_agent: 'alice' })).answer, []);
  assert.deepEqual((await post('/audit', { audit_agent: 'bob' })).answer, []);
  // What a token may do, it does.
  assert.equal((await post(agentPath('alice', 'write'), write('alice', 'k1'), SECRETS.alice)).status, 200);
  assert.equal((await post(agentPath('alice', 'export'), {}, SECRETS.aliceOps)).status, 200);
  assert.equal((await post('/audit', { audit_agent: 'bob' }, SECRETS.bobAudit)).status, 200);
  // The trail keeps which token acted, by its name, never its secret.
  const trail = (await post('/audit', { audit_agent: 'alice' })).answer;
  const acted = trail.map((entry) => [entry.operation, entry.request_id, entry.caller]);
  assert.deepEqual(acted.filter(([operation]) => operation === 'WRITE'), [['WRITE', 'k1', 'alice-app']], stringify(trail));
  assert.deepEqual(acted.filter(([operation]) => operation === 'EXPORT').map(([, , caller]) => caller), ['alice-ops'], stringify(trail));
  for (const value of Object.values(SECRETS)) assert.ok(!stringify(trail).includes(value), 'no secret in the trail');
}

/**
 * A scenario host (test/scenarios.js) over the HTTP API (the Worker, `engram serve`).
 * With `embedder` (the server was started with the tests' model), a line
 * that names none says `"embedder": false`, since a server's domains embed
 * by default.
 * @param {(path: string, body: object) => Promise<{status: number, answer: any}>} post a POST
 *   of a JSON body with a token that reaches every agent: its status and answer
 * @param {{embedder?: boolean}} [options]
 * @returns {import('./scenarios.js').ScenarioHost}
 */
export function httpHost(post, { embedder = false } = {}) {
  const input = 'standard input';
  const answered = async (path, body) => {
    const { status, answer } = await post(path, body);
    if (status === 400 && answer?.input_error !== undefined) throw new Error(answer.input_error);
    if (status !== 200) throw new Error(`${path}: HTTP ${status}: ${stringify(answer)}`);
    return answer;
  };
  const pick = (line, ...names) =>
    Object.fromEntries(names.filter((n) => line[n] !== undefined).map((n) => [n, line[n]]));
  return {
    async call(given) {
      const line = embedder && given.embedder === undefined ? { ...given, embedder: false } : given;
      const { op, agent } = line;
      switch (op) {
        case 'write':
        case 'maintenance_write':
        case 'read': {
          const answer = await answered(agentPath(agent, op), {
            ...pick(line, 'request', 'tier_ceiling', 'expire_after', 'now', 'embedder'),
            input,
          });
          return Array.isArray(line.request) ? answer : [answer];
        }
        case 'history':
        case 'as_of':
        case 'list':
        case 'entities':
        case 'relationships':
        case 'traverse':
        case 'forget':
        case 'expire': {
          const { op: _op, agent: _agent, ...args } = line;
          return [await answered(agentPath(agent, op), args)];
        }
        case 'cycle': {
          const { op: _op, agent: _agent, ...args } = line;
          return answered(agentPath(agent, op), args);
        }
        case 'remember':
        case 'recall':
        case 'reembed': {
          // A refusal is HTTP 409 with the line the command line prints.
          const { op: _op, agent: _agent, ...args } = line;
          const { status, answer } = await post(agentPath(agent, op), args);
          if (status !== 200 && status !== 409) throw new Error(`${op}: HTTP ${status}: ${stringify(answer)}`);
          return [answer];
        }
        case 'audit': {
          // Over HTTP every entry names the token its call came with (the
          // tests' admin token); the scenarios, written for every host,
          // expect entries that name no caller.
          const entries = await answered('/audit', pick(line, 'audit_agent', 'operation', 'outcome', 'limit'));
          return entries.map(({ caller, ...entry }) => {
            if (caller !== 'admin') throw new Error(`an audit entry not of the admin token: ${stringify({ caller, ...entry })}`);
            return entry;
          });
        }
        case 'export':
          return answered('/export', pick(line, 'agents', 'embedder'));
        case 'import':
          return answered('/import', pick(line, 'lines', 'embedder'));
        case 'bad_input': {
          const answer = await answered(agentPath(agent, line.command), {
            text: line.text,
            batch: line.batch ?? false,
            tier_ceiling: line.tier_ceiling,
            embedder: line.embedder,
            input,
          });
          return [answer];
        }
        default:
          throw new Error(`an op the runner does not know: ${op}`);
      }
    },
  };
}


/**
 * A server started as `child` (which `exited` resolves with the exit of),
 * at `base`: `fetch` and `post` on it, what it printed on standard error,
 * and `stop` (SIGTERM, then its exit: `{code, signal}`).
 */
function served(child, exited, base, stderr) {
  const server = {
    base,
    stderr,
    fetch: (path, init) => fetch(`${base}${path}`, init),
    post: (path, body, secret) => postWith(server.fetch, path, body, secret),
    stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
  return server;
}

/**
 * Starts `engram serve` (the binary `bin`) on `store` with the tokens of the
 * file `tokens` and `args`, on a port of its own: once it listens, its
 * address, `fetch` and `post` on it, what it printed on standard error, and
 * `stop` (SIGTERM, then its exit: `{code, signal}`).
 * @param {string} bin
 * @param {string} store a SQLite file or a PostgreSQL URL
 * @param {string} tokens
 * @param {string[]} [args]
 */
export async function startServe(bin, store, tokens, args = []) {
  // Port 0: the system picks a free one, which the server prints.
  const child = spawn(bin, ['--store', store, 'serve', '--addr', '127.0.0.1:0', '--tokens', tokens, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const base = await new Promise((resolve) => {
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      // The whole address, up to the white space after it: a chunk may
      // end inside it, and a part of it is an address too (`http://12`
      // is 0.0.0.12, off this machine).
      const found = /engram serve: (http:\/\/[0-9.:]+)\s/.exec(stderr);
      if (found) resolve(found[1]);
    });
    exited.then(() => resolve(undefined));
  });
  if (base === undefined) throw new Error(`engram serve exited before it listened: ${stderr}`);
  return served(child, exited, base, () => stderr);
}

/**
 * A port for `wasmtime serve`, which prints the address it was given
 * rather than the port the system picked: one of the tests' own, below
 * the system's ephemeral range; a port taken is tried again by the caller.
 */
function testPort() {
  return 20000 + Math.floor(Math.random() * 10000);
}

/**
 * Starts `engram-http.wasm` (`wasm`) under `wasmtime serve` (the CLI
 * `wasmtime`), its store `engram.db` in `folder` (preopened as /data), with
 * the tokens `tokens` (their text) and, with `clock`, the clock taken from
 * requests: as {@link startServe}.
 * @param {string} wasmtime
 * @param {string} wasm
 * @param {string} folder
 * @param {string} tokens
 * @param {{clock?: boolean}} [options]
 */
export async function startWasmtimeServe(wasmtime, wasm, folder, tokens, { clock = false } = {}) {
  // The pinned CLI is built without the pooling allocator; the tokenizer's
  // table lies beside the component (for a token budget).
  const args = ['serve', '-O', 'pooling-allocator=n', '-Scli', '--dir', `${folder}::/data`, '--dir', `${dirname(wasm)}::/engram`];
  args.push('--env', 'ENGRAM_STORE=/data/engram.db', '--env', `ENGRAM_TOKENS=${tokens}`, '--env', 'ENGRAM_TOKENIZER=/engram/o200k_base.ranks');
  if (clock) args.push('--env', 'ENGRAM_CLOCK_FROM_REQUEST=on');
  for (let attempt = 0; ; attempt += 1) {
    const port = testPort();
    const child = spawn(wasmtime, [...args, '--addr', `127.0.0.1:${port}`, wasm], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    const listening = await new Promise((resolve) => {
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (chunk) => {
        stderr += chunk;
        if (/Serving HTTP on/.test(stderr)) resolve(true);
      });
      exited.then(() => resolve(false));
    });
    if (listening) return served(child, exited, `http://127.0.0.1:${port}`, () => stderr);
    if (attempt >= 5 || !/in use/i.test(stderr)) throw new Error(`wasmtime serve exited before it listened: ${stderr}`);
  }
}
