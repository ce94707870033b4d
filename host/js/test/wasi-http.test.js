// `engram-http.wasm` (the HTTP API as a `wasi:http` proxy component) under
// `wasmtime serve`: `ENGRAM_HTTP_WASM` names the component and
// `ENGRAM_WASMTIME` the wasmtime CLI (`cargo test` sets both; without them
// these tests skip). The shared scenarios over HTTP (those that recall by
// meaning aside: a WASI build reaches no embedder), the authentication
// cases, two agents apart, hostile requests; and one writer per store: 8
// clients writing 2 agents' domains at once, an instance per request, every
// acknowledged write there once with its audit entry, and the file then
// read by the native `engram` (`ENGRAM_BIN`).

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';

import { SECRETS, TOKENS, agentPath, checkAuthentication, httpHost, startWasmtimeServe } from './http.js';
import { loadScenarios, runScenario, usesEmbedder } from './scenarios.js';

const wasm = process.env.ENGRAM_HTTP_WASM;
const wasmtime = process.env.ENGRAM_WASMTIME;
const bin = process.env.ENGRAM_BIN;
const skip = wasm && wasmtime && bin ? undefined : 'ENGRAM_HTTP_WASM, ENGRAM_WASMTIME and ENGRAM_BIN name the component, the wasmtime CLI and the engram binary (cargo test sets them)';
const scenarioFolder = fileURLToPath(new URL('../../../tests/scenarios/', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'engram-wasi-http-'));
const servers = new Set();

after(async () => {
  for (const server of servers) await server.stop();
  rmSync(root, { recursive: true, force: true });
});

/** `engram-http.wasm` under `wasmtime serve` on a store of its own (`name`). */
async function serve(name, options) {
  const folder = join(root, name);
  mkdirSync(folder, { recursive: true });
  const server = await startWasmtimeServe(wasmtime, wasm, folder, TOKENS, options);
  server.folder = folder;
  servers.add(server);
  return server;
}

/** A STATE write of `agent`. */
function write(agent, requestId) {
  return {
    request: {
      request_id: requestId,
      source: { agent_id: agent, component: 'COGNITION', actor: 'USER' },
      record: { record_type: 'STATE', timestamp: 1700000000000, payload: { subject: requestId, properties: {} } },
    },
  };
}

describe('engram-http.wasm under wasmtime serve', { skip }, () => {
  // proves S-AUTH
  test('S-AUTH: every call needs a bearer token that reaches its agent at its level; a refused call leaves no trace', async () => {
    const server = await serve('auth');
    await checkAuthentication(server.fetch);
    await server.stop();
  });

  // proves IO-W2 IO-W6
  test('two agents are kept apart, a replay is answered the same; hostile requests get a clear status', async () => {
    const server = await serve('apart');
    const turn = { message: 'I booked the Hotel Avenida in Lisbon.', response: 'Lovely!', request_id: 'turn-1' };
    const first = await server.post(agentPath('alice', 'remember'), turn);
    assert.equal(first.status, 200, JSON.stringify(first.answer));
    assert.deepEqual((await server.post(agentPath('alice', 'remember'), turn)).answer, first.answer);
    const bob = await server.post(agentPath('bob', 'recall'), { question: 'Which hotel did I book?' });
    assert.deepEqual(bob.answer.memories, []);
    const malformed = await server.fetch(agentPath('alice', 'recall'), {
      method: 'POST',
      headers: { authorization: `Bearer ${SECRETS.admin}` },
      body: '{"question":',
    });
    assert.equal(malformed.status, 400);
    assert.match((await malformed.json()).input_error, /not JSON/);
    const huge = await server.post(agentPath('alice', 'recall'), { question: 'x'.repeat(9 << 20) });
    assert.equal(huge.status, 413, JSON.stringify(huge.answer));
    const unknown = await server.post('/agents/alice/drop', {});
    assert.equal(unknown.status, 404);
    const embedder = await server.post(agentPath('alice', 'recall'), { question: 'q', embedder: 'e5-small' });
    assert.equal(embedder.status, 400);
    assert.match(embedder.answer.input_error, /no embedder/);
    await server.stop();
  });

  // proves IO-W2 S-AUDIT
  test('one writer per store: 8 clients writing 2 agents at once, every acknowledged write there once with its audit entry, the file read by the native engram', async () => {
    const server = await serve('writers');
    const acknowledged = { alice: new Map(), bob: new Map() };
    await Promise.all(
      Array.from({ length: 8 }, async (_, client) => {
        const agent = client % 2 === 0 ? 'alice' : 'bob';
        for (let n = 0; n < 12; n += 1) {
          const id = `c${client}-${n}`;
          const { status, answer } = await server.post(agentPath(agent, 'write'), write(agent, id));
          assert.equal(status, 200, JSON.stringify(answer));
          acknowledged[agent].set(id, answer.ACCEPTED.stored_id);
        }
      }),
    );
    await server.stop();
    // The native engram reads the file the component wrote.
    const store = join(server.folder, 'engram.db');
    for (const [agent, writes] of Object.entries(acknowledged)) {
      const lines = execFileSync(bin, ['--store', store, 'maintenance', 'export', '--agent', agent], { encoding: 'utf8' })
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      const records = lines.filter((line) => line.item.kind === 'record').map((line) => line.item.id);
      assert.equal(new Set(records).size, records.length, `${agent}: a record stored twice`);
      assert.deepEqual(new Set(records), new Set(writes.values()), `${agent}: what was acknowledged is what is stored`);
      const trail = execFileSync(bin, ['--store', store, 'audit', '--agent', agent, '--operation', 'WRITE', '--limit', '1000'], { encoding: 'utf8' })
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      assert.deepEqual(trail.map((entry) => entry.request_id).sort(), [...writes.keys()].sort());
    }
  });

  for (const scenario of loadScenarios(scenarioFolder).filter((s) => !usesEmbedder(s))) {
    test(`scenario ${scenario.name} over HTTP`, async () => {
      const server = await serve(`scenario-${scenario.name}`, { clock: true });
      try {
        const { ran } = await runScenario(scenario, httpHost(server.post));
        assert.ok(ran > 0);
      } finally {
        await server.stop();
      }
    });
  }
});
