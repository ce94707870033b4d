// Domains whose calls answer promises (`open(agent, {async: true})`): on
// the Rust host (the addon runs the engine on a thread of the domain's own,
// a caller's summarizer answering promises through a thread-safe function),
// and on the wasm driver's JSPI build over a store that answers promises,
// on the Node the package pins (which has JavaScript Promise Integration).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemoryBackend, hasJspi, open, openStore } from '../src/index.js';
import { DeferredBackend } from './deferred-backend.js';
import { modelSummarizer } from '../examples/model-summarizer.js';
import { NO_EMBEDDER, embedderUrl, loadScenarios, runScenario, usesEmbedder } from './scenarios.js';
import { libraryHost, testEmbedders } from './node-host.js';
import { notBuilt } from './built.js';

const folder = fileURLToPath(new URL('../../../tests/scenarios/', import.meta.url));
const scenarios = loadScenarios(folder);
const dir = mkdtempSync(join(tmpdir(), 'engram-async-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

test('this Node has JavaScript Promise Integration', () => {
  assert.ok(hasJspi(), `Node ${process.version} lacks WebAssembly.Suspending: the async domain needs Node 24 or later`);
});

// Every shared scenario on async domains: the Rust host's, and the JSPI
// build's on a store whose every call answers later.
const BACKENDS = {
  'native memory': () => openStore(),
  'native sqlite': (name) => openStore(join(dir, `${name}.db`)),
  'wasm memory answering later': () => new DeferredBackend(new MemoryBackend()),
};
for (const [backendName, make] of Object.entries(BACKENDS)) {
  for (const scenario of scenarios) {
    test(`async ${backendName}: ${scenario.name}`, { skip: notBuilt }, async (t) => {
      const url = embedderUrl();
      if (usesEmbedder(scenario) && url === undefined) return t.skip(NO_EMBEDDER);
      const embedders = url === undefined ? {} : await testEmbedders(url);
      const backend = await make(scenario.name);
      try {
        const { ran } = await runScenario(scenario, libraryHost(backend, { async: true, embedders }));
        assert.ok(ran > 0);
      } finally {
        await backend.close();
      }
    });
  }
}

/** A local model: answers every summary request with a summary of a hotel booking, and counts what it was asked. */
async function model() {
  const asked = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      const { message } = JSON.parse(body);
      asked.push(message);
      // Answered on a later turn: the engine's thread waits, the event loop does not.
      setTimeout(() => {
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify({ summary: `The user booked a hotel in Lisbon.`, keywords: ['hotel', 'lisbon', 'booked'] }));
      }, 5);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { asked, server, url: `http://127.0.0.1:${server.address().port}/summarize` };
}

/** The stores the model test runs on: the Rust host's, and one answering later on the JSPI build. */
const MODEL_STORES = {
  native: () => openStore(),
  wasm: () => new DeferredBackend(new MemoryBackend()),
};

for (const [driver, makeStore] of Object.entries(MODEL_STORES)) {
  // proves B5-F4 B5-S1: a summarizer that awaits a model (a local server) runs inside a real cycle
  test(`${driver}: the example summarizer that calls a model over HTTP summarizes a remembered turn`, { skip: notBuilt }, async () => {
    const { asked, server, url } = await model();
    const summarizer = modelSummarizer(url);
    const store = await makeStore();
    const domain = await open('alice', { store, async: true, summarizer });
    try {
      const remembered = await domain.remember('I booked the Hotel Avenida in Lisbon for May.', 'Lovely, close to the old town.');
      assert.equal(remembered.committed.length, 1);
      assert.deepEqual(asked, ['I booked the Hotel Avenida in Lisbon for May.']);
      const recalled = await domain.recall('Which hotel did I book in Lisbon?');
      assert.deepEqual(recalled.memories.map((m) => [m.id, m.summary]), [[remembered.committed[0], 'The user booked a hotel in Lisbon.']]);
      // Calls made together are answered each, in turn: in the order they
      // were made (each promise settles after the one before), and each
      // summarized once, in that order too.
      asked.length = 0;
      const settled = [];
      const many = await Promise.all(
        ['Rome', 'Oslo', 'Lima'].map((city, i) =>
          domain.remember(`I flew to ${city}.`, 'Nice.', { request_id: `t${i}` }).then((m) => {
            settled.push(m.request_id);
            return m;
          }),
        ),
      );
      assert.deepEqual(settled, ['t0', 't1', 't2']);
      assert.deepEqual(asked, ['I flew to Rome.', 'I flew to Oslo.', 'I flew to Lima.']);
      assert.equal(new Set(many.flatMap((m) => m.committed)).size, 3);
      // A summarizer whose model fails fails the cycle: nothing is stored.
      const failing = await open('bob', { store, async: true, summarizer: async () => Promise.reject(new Error('the model is down')) });
      await assert.rejects(failing.remember('hello there friend', 'hi'), (error) => JSON.stringify(error.answer).includes('the model is down'));
      const stored = await failing.read({ record_type: 'EVENT', selector: { Latest: { limit: 10 } }, request_id: 'q1' });
      assert.deepEqual(stored, { records: [] });
      await failing.close();
    } finally {
      await domain.close();
      server.close();
    }
  });
}

test('a synchronous domain whose summarizer answers a promise says what to do', { skip: notBuilt }, async () => {
  const domain = await open('alice', { summarizer: async () => ({ summary: 'later', keywords: [] }) });
  try {
    assert.throws(() => domain.remember('I booked the Hotel Avenida.', 'Lovely.'), (error) =>
      /answered a promise: open the domain with \{async: true\}/.test(JSON.stringify(error.answer)));
  } finally {
    domain.close();
  }
});

test('a summarizer may not call its own synchronous domain; a closed domain says it is closed', { skip: notBuilt }, async () => {
  let domain;
  domain = await open('alice', {
    summarizer: () => {
      domain.read({ record_type: 'EVENT', selector: { Latest: { limit: 1 } }, request_id: 'inner' });
      return { summary: 'never', keywords: [] };
    },
  });
  assert.throws(() => domain.remember('I booked the Hotel Avenida.', 'Lovely.'), (error) =>
    /a call of this domain is under way/.test(JSON.stringify(error.answer)));
  domain.close();
  assert.throws(() => domain.recall('anything'), /the domain is closed/);
  const async = await open('bob', { async: true });
  await async.close();
  await assert.rejects(async.recall('anything'), /the domain is closed/);
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

for (const [driver, makeStore] of Object.entries(MODEL_STORES)) {
  // proves B5-P1 B5-D1: the staged cycle API of an async domain: each stage awaited, one commit
  test(`${driver}: a cycle of an async domain runs stage by stage and commits once`, { skip: notBuilt }, async () => {
    const domain = await open('alice', { store: await makeStore(), async: true });
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
      assert.equal((await cycle.output('summary')).summarized.summary, 'User booked Hotel Avenida in Lisbon.');
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
}
