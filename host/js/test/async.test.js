// The JSPI build (`open(agent, {async: true})`): a store, a summarizer
// that answer promises, on the Node the package pins (which has
// JavaScript Promise Integration).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemoryBackend, hasJspi, open } from '../src/index.js';
import { SqliteBackend } from '../src/backends/sqlite.js';
import { DeferredBackend } from './deferred-backend.js';
import { modelSummarizer } from '../examples/model-summarizer.js';
import { loadScenarios, runScenario } from './scenarios.js';
import { libraryHost } from './node-host.js';
import { notBuilt } from './built.js';

const folder = fileURLToPath(new URL('../../../tests/scenarios/', import.meta.url));
const scenarios = loadScenarios(folder);
const dir = mkdtempSync(join(tmpdir(), 'engram-async-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

test('this Node has JavaScript Promise Integration', () => {
  assert.ok(hasJspi(), `Node ${process.version} lacks WebAssembly.Suspending: the async domain needs Node 24 or later`);
});

// Every shared scenario through the JSPI build, on stores whose every call answers later.
const BACKENDS = {
  memory: () => new DeferredBackend(new MemoryBackend()),
  sqlite: (name) => new DeferredBackend(new SqliteBackend(join(dir, `${name}.db`))),
};
for (const [backendName, make] of Object.entries(BACKENDS)) {
  for (const scenario of scenarios) {
    test(`async ${backendName}: ${scenario.name}`, { skip: notBuilt }, async () => {
      const backend = make(scenario.name);
      try {
        const { ran } = await runScenario(scenario, libraryHost(backend, { async: true }));
        assert.ok(ran > 0);
      } finally {
        await backend.close();
      }
    });
  }
}

// proves B5-F4 B5-S1: a summarizer that awaits a model (a local server) runs inside a real cycle
test('the example summarizer that calls a model over HTTP summarizes a remembered turn', { skip: notBuilt }, async () => {
  const asked = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      const { message } = JSON.parse(body);
      asked.push(message);
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ summary: `The user booked a hotel in Lisbon.`, keywords: ['hotel', 'lisbon', 'booked'] }));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const summarizer = modelSummarizer(`http://127.0.0.1:${server.address().port}/summarize`);
  const domain = await open('alice', { store: new DeferredBackend(new MemoryBackend()), async: true, summarizer });
  try {
    const remembered = await domain.remember('I booked the Hotel Avenida in Lisbon for May.', 'Lovely, close to the old town.');
    assert.equal(remembered.committed.length, 1);
    assert.deepEqual(asked, ['I booked the Hotel Avenida in Lisbon for May.']);
    const recalled = await domain.recall('Which hotel did I book in Lisbon?');
    assert.deepEqual(recalled.memories.map((m) => [m.id, m.summary]), [[remembered.committed[0], 'The user booked a hotel in Lisbon.']]);
    // A summarizer whose model fails fails the cycle: nothing is stored.
    const failing = await open('bob', { async: true, summarizer: async () => Promise.reject(new Error('the model is down')) });
    await assert.rejects(failing.remember('hello there friend', 'hi'), (error) => JSON.stringify(error.answer).includes('the model is down'));
    const stored = await failing.read({ record_type: 'EVENT', selector: { Latest: { limit: 10 } }, request_id: 'q1' });
    assert.deepEqual(stored, { records: [] });
    await failing.close();
  } finally {
    await domain.close();
    server.close();
  }
});

test('a synchronous domain on a store that answers promises says what to do', { skip: notBuilt }, async () => {
  const domain = await open('alice', { store: new DeferredBackend(new MemoryBackend()) });
  try {
    assert.throws(
      () => domain.write({ request_id: 'w1', source: { agent_id: 'alice', component: 'COGNITION', actor: 'USER' }, record: { record_type: 'STATE', timestamp: 1, payload: { subject: 's', properties: {} } } }),
      /open the domain with \{async: true\}/,
    );
  } finally {
    domain.close();
  }
});

// proves B5-P1 B5-D1: the staged cycle API of an async domain: each stage awaited, one commit
test('a cycle of an async domain runs stage by stage and commits once', { skip: notBuilt }, async () => {
  const domain = await open('alice', { store: new DeferredBackend(new MemoryBackend()), async: true });
  try {
    const plan = {
      metadata: {},
      steps: [
        { name: 'summary', stage: 'SummarizeMemory', kind: { SummarizeMemory: { of: 'turn' } } },
        { name: 'persist', stage: 'PersistMemory', kind: 'PersistMemory', inputs: ['summary'] },
      ],
    };
    const input = { message: 'I booked the Hotel Avenida in Lisbon.', response: 'Lovely.' };
    const cycle = await domain.cycle(plan, { request_id: 'c1' });
    assert.equal((await cycle.runStage('SummarizeMemory', input)).stage, 'SummarizeMemory');
    assert.equal((await cycle.output('summary')).summarized.summary, 'booked Hotel Avenida Lisbon.');
    await cycle.runStage('PersistMemory', input);
    const { committed } = await cycle.commit();
    assert.equal(committed.length, 1);
    cycle[Symbol.dispose]();
    const recalled = await domain.recall('Which hotel in Lisbon?');
    assert.deepEqual(recalled.memories.map((m) => m.id), committed);
  } finally {
    await domain.close();
  }
});
