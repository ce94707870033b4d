// `engram serve` (the native `engram` that `ENGRAM_BIN` names; `cargo test`
// sets it) as an HTTP client sees it: every shared scenario over HTTP, each
// on a server of its own over a fresh SQLite file; the authentication cases
// every server passes; hostile requests answered with a clear status while
// the server goes on serving. Without ENGRAM_BIN these tests skip.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';

import { SECRETS, TOKENS, agentPath, checkAuthentication, httpHost, startServe } from './http.js';
import { NO_EMBEDDER, embedderUrl, loadScenarios, runScenario, usesEmbedder } from './scenarios.js';
import { TEST_MODEL } from './node-host.js';
import { open } from '../src/index.js';

const bin = process.env.ENGRAM_BIN;
const skip = bin ? undefined : 'ENGRAM_BIN does not name the `engram` binary';
const scenarioFolder = fileURLToPath(new URL('../../../tests/scenarios/', import.meta.url));
const folder = mkdtempSync(join(tmpdir(), 'engram-serve-'));
const tokens = join(folder, 'tokens.jsonl');
writeFileSync(tokens, `${TOKENS}\n`);
const servers = new Set();

after(async () => {
  for (const server of servers) await server.stop();
  servers.clear();
  rmSync(folder, { recursive: true, force: true });
});

/** `engram serve` on `store` with the tests' tokens and `args`, stopped after the tests. */
async function serve(store, args = []) {
  const server = await startServe(bin, store, tokens, args);
  servers.add(server);
  return server;
}

describe('engram serve', { skip }, () => {
  // proves S-AUTH
  test('S-AUTH: every call needs a bearer token that reaches its agent at its level; a refused call leaves no trace', async () => {
    const server = await serve(join(folder, 'auth.db'));
    await checkAuthentication(server.fetch);
    assert.ok(!server.stderr().includes(SECRETS.alice), 'no secret on standard error');
    await server.stop();
  });

  test('hostile requests (malformed JSON, a huge body, a slow client, unknown routes and methods, a misspelled field) get a clear status and the server goes on serving; SIGTERM ends it', async () => {
    const server = await serve(join(folder, 'hostile.db'), ['--max-body-bytes', '4096', '--wait', '1s']);
    const raw = (path, init) => server.fetch(path, { headers: { authorization: `Bearer ${SECRETS.admin}` }, ...init });
    const malformed = await raw(agentPath('alice', 'recall'), { method: 'POST', headers: { authorization: `Bearer ${SECRETS.admin}` }, body: '{"question":' });
    assert.equal(malformed.status, 400);
    assert.match((await malformed.json()).input_error, /not JSON/);
    const huge = await raw(agentPath('alice', 'recall'), {
      method: 'POST',
      headers: { authorization: `Bearer ${SECRETS.admin}` },
      body: JSON.stringify({ question: 'x'.repeat(10_000) }),
    });
    assert.equal(huge.status, 413);
    assert.match((await huge.json()).input_error, /larger than 4096 bytes/);
    const unknown = await raw('/agents/alice/drop', { method: 'POST', body: '{}' });
    assert.equal(unknown.status, 404);
    await unknown.text();
    const get = await raw(agentPath('alice', 'recall'), { method: 'GET' });
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'POST');
    await get.text();
    const misspelled = await server.post(agentPath('alice', 'recall'), { question: 'q', top_n: 3 });
    assert.equal(misspelled.status, 400);
    assert.match(misspelled.answer.input_error, /top_n/);
    const clock = await server.post(agentPath('alice', 'recall'), { question: 'q', now: 5 });
    assert.equal(clock.status, 400, 'a server not started to take the clock from requests refuses now');
    // A client that sends part of its body and stalls is answered 408 once
    // the wait has passed; the server serves others meanwhile.
    const slow = await new Promise((resolve, reject) => {
      const { hostname, port } = new URL(server.base);
      const socket = connect({ host: hostname, port: Number(port) }, () => {
        socket.write(`POST ${agentPath('alice', 'recall')} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${SECRETS.admin}\r\ncontent-length: 100\r\n\r\n{"quest`);
      });
      let answer = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk) => {
        answer += chunk;
        if (answer.includes('\r\n\r\n')) {
          socket.destroy();
          resolve(answer);
        }
      });
      socket.on('error', reject);
    });
    assert.match(slow, /^HTTP\/1\.1 408/, slow);
    const recall = await server.post(agentPath('alice', 'recall'), { question: 'Which hotel?' });
    assert.equal(recall.status, 200, JSON.stringify(recall.answer));
    // SIGTERM ends it: gracefully (exit 0) where the process leaves the
    // signal to it; in Node, whose own handler owns SIGTERM, by the signal.
    const { code, signal } = await server.stop();
    assert.ok(code === 0 || signal === 'SIGTERM', `engram serve ended with ${code ?? signal}: ${server.stderr()}`);
  });

  // proves IO-W2 IO-W6
  test('two agents are kept apart, and a request id replayed is answered the same', async () => {
    const server = await serve(join(folder, 'apart.db'));
    const turn = { message: 'I booked the Hotel Avenida in Lisbon.', response: 'Lovely!', request_id: 'turn-1' };
    const first = await server.post(agentPath('alice', 'remember'), turn);
    assert.equal(first.status, 200, JSON.stringify(first.answer));
    assert.deepEqual((await server.post(agentPath('alice', 'remember'), turn)).answer, first.answer);
    const alice = await server.post(agentPath('alice', 'recall'), { question: 'Which hotel did I book?' });
    assert.deepEqual(alice.answer.memories.map((m) => m.id), first.answer.committed);
    const bob = await server.post(agentPath('bob', 'recall'), { question: 'Which hotel did I book?' });
    assert.deepEqual(bob.answer.memories, []);
    const trail = await server.post('/audit', { audit_agent: 'alice', operation: 'WRITE' });
    assert.deepEqual(trail.answer.map((entry) => entry.outcome), ['ACCEPTED', 'REPLAYED']);
    await server.stop();
  });

  // proves IO-W7
  test("while another host holds a domain's maintenance lock, a maintenance call is answered 503 with retry-after and an online write is REJECTED; both go through once it is released", async () => {
    const store = join(folder, 'locked.db');
    const server = await serve(store);
    const write = (id) => ({ request: { request_id: id, source: { agent_id: 'alice', component: 'COGNITION', actor: 'USER' }, record: { record_type: 'STATE', timestamp: 1700000000000, payload: { subject: 's', properties: {} } } } });
    assert.equal((await server.post(agentPath('alice', 'write'), write('w1'))).status, 200);
    const maintenance = await open('alice', { store, mode: 'maintenance' });
    try {
      const refused = await server.post(agentPath('alice', 'export'), {});
      assert.equal(refused.status, 503, JSON.stringify(refused.answer));
      assert.match(refused.answer.host_error, /maintenance/);
      assert.equal(refused.headers.get('retry-after'), '1');
      const rejected = await server.post(agentPath('alice', 'write'), write('w2'));
      assert.deepEqual([rejected.status, rejected.answer], [200, 'REJECTED']);
    } finally {
      await maintenance.close();
    }
    assert.equal((await server.post(agentPath('alice', 'export'), {})).status, 200);
    assert.ok((await server.post(agentPath('alice', 'write'), write('w3'))).answer.ACCEPTED);
    await server.stop();
  });

  for (const scenario of loadScenarios(scenarioFolder)) {
    test(`scenario ${scenario.name} over HTTP`, async (t) => {
      const embedder = usesEmbedder(scenario);
      const url = embedderUrl();
      if (embedder && url === undefined) return t.skip(NO_EMBEDDER);
      const args = ['--clock-from-request', ...(embedder ? ['--embedder-url', url, '--embedder-model', TEST_MODEL.name] : [])];
      const server = await serve(join(folder, `${scenario.name}.db`), args);
      try {
        const { ran } = await runScenario(scenario, httpHost(server.post, { embedder }));
        assert.ok(ran > 0);
      } finally {
        await server.stop();
      }
    });
  }
});
