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

  test('the limits of a public server: 429 with as many calls waiting for one agent as it takes, 503 with as many under way, 503 after waiting --wait for a busy agent, each with retry-after; a call whose client went away commits whole', async () => {
    // An embedder that answers at once, or holds every request until let go:
    // a remember held in it keeps its agent busy for as long as the test says.
    const { createServer } = await import('node:http');
    let hold = false;
    const held = [];
    const embedder = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        const { input } = JSON.parse(body);
        const answer = () => {
          response.setHeader('content-type', 'application/json');
          response.end(JSON.stringify({ data: input.map((text, index) => ({ index, embedding: [(text.length % 7) + 1, 1, 0.5] })) }));
        };
        if (hold) held.push(answer);
        else answer();
      });
    });
    await new Promise((resolve) => embedder.listen(0, '127.0.0.1', resolve));
    const release = () => {
      hold = false;
      for (const answer of held.splice(0)) answer();
    };
    const until = async (done) => {
      while (!done()) await new Promise((resolve) => setTimeout(resolve, 10));
    };
    try {
      const url = `http://127.0.0.1:${embedder.address().port}/v1`;
      const server = await serve(join(folder, 'limits.db'), ['--embedder-url', url, '--embedder-model', 'lengths', '--max-calls', '3', '--max-waiting', '1', '--wait', '4s']);
      const turn = (n) => ({ message: `I parked on level ${n}, spot ${n * 10}.`, response: 'Noted.', request_id: `turn-${n}` });
      for (const agent of ['alice', 'bob']) assert.equal((await server.post(agentPath(agent, 'remember'), turn(0))).status, 200);
      hold = true;
      // alice busy: one call of hers under way, held in the embedder.
      const busy = server.post(agentPath('alice', 'remember'), turn(1));
      await until(() => held.length === 1);
      // Two more for alice: one waits, the other finds the one place taken (429).
      const waiting = [server.post(agentPath('alice', 'audit'), {}), server.post(agentPath('alice', 'audit'), {})];
      const first = await Promise.race(waiting);
      assert.equal(first.status, 429, JSON.stringify(first.answer));
      assert.match(first.answer.host_error, /1 calls already wait for the agent "alice"/);
      assert.equal(first.headers.get('retry-after'), '1');
      // bob busy too: three calls under way, as many as the server takes (503).
      const bob = server.post(agentPath('bob', 'remember'), turn(1));
      await until(() => held.length === 2);
      const full = await server.post(agentPath('bob', 'audit'), {});
      assert.equal(full.status, 503, JSON.stringify(full.answer));
      assert.match(full.answer.host_error, /3 calls under way/);
      assert.equal(full.headers.get('retry-after'), '1');
      // The one waiting for alice gives up after --wait (503).
      const waited = (await Promise.all(waiting)).find((answer) => answer.status !== 429);
      assert.equal(waited.status, 503, JSON.stringify(waited.answer));
      assert.match(waited.answer.host_error, /the agent "alice" was busy for 4 s/);
      assert.equal(waited.headers.get('retry-after'), '1');
      release();
      assert.equal((await busy).status, 200);
      assert.equal((await bob).status, 200);
      // A client that goes away mid-call: the call runs to its end.
      hold = true;
      const gone = new AbortController();
      const abandoned = server.fetch(agentPath('alice', 'remember'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${SECRETS.admin}` },
        body: JSON.stringify(turn(2)),
        signal: gone.signal,
      });
      await until(() => held.length === 1);
      gone.abort();
      await assert.rejects(abandoned, { name: 'AbortError' });
      release();
      // alice's calls run in order: the audit runs once the abandoned call is over.
      const trail = (await server.post(agentPath('alice', 'audit'), { operation: 'WRITE' })).answer;
      const written = trail.map((entry) => [entry.request_id.split('#')[0], entry.outcome]);
      assert.deepEqual([...new Set(written.map(([id]) => id))], ['turn-0', 'turn-1', 'turn-2'], JSON.stringify(trail));
      assert.ok(written.every(([, outcome]) => outcome === 'ACCEPTED'), JSON.stringify(trail));
      const recalled = await server.post(agentPath('alice', 'recall'), { question: 'Where did I park, spot 20?', embedder: false });
      assert.ok(recalled.answer.memories.some((m) => m.summary.includes('20')), JSON.stringify(recalled.answer));
      await server.stop();
    } finally {
      release();
      embedder.closeAllConnections();
      embedder.close();
    }
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
