// The shared scenarios (tests/scenarios/*.jsonl) on the Node host, with
// each store: the Rust host's (the addon) in memory and on a SQLite file,
// and a store written in JavaScript (memory), which runs on the wasm
// driver; a fresh, empty store per scenario. A scenario whose lines name
// the tests' embedder (meaning.jsonl) runs against the real model at
// ENGRAM_TEST_EMBEDDER_URL, and is skipped, counted so, without it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemoryBackend, openStore } from '../src/index.js';
import { NO_EMBEDDER, embedderUrl, loadScenarios, runScenario, usesEmbedder } from './scenarios.js';
import { libraryHost, testEmbedders } from './node-host.js';
import { notBuilt } from './built.js';

const folder = fileURLToPath(new URL('../../../tests/scenarios/', import.meta.url));
const scenarios = loadScenarios(folder);
const dir = mkdtempSync(join(tmpdir(), 'engram-scenarios-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

test('the scenarios are there', () => assert.ok(scenarios.length >= 8, `${scenarios.length} in ${folder}`));

/** The stores every scenario runs on, each made fresh. */
export const STORES = {
  'native memory': () => openStore(),
  'native sqlite': (name) => openStore(join(dir, `${name}.db`)),
  'wasm memory': () => new MemoryBackend(),
};

for (const [storeName, make] of Object.entries(STORES)) {
  for (const scenario of scenarios) {
    test(`${storeName}: ${scenario.name}`, { skip: notBuilt }, async (t) => {
      const url = embedderUrl();
      if (usesEmbedder(scenario) && url === undefined) return t.skip(NO_EMBEDDER);
      const embedders = url === undefined ? {} : await testEmbedders(url);
      const store = await make(scenario.name);
      try {
        const { ran } = await runScenario(scenario, libraryHost(store, { embedders }));
        assert.ok(ran > 0);
      } finally {
        store.close();
      }
    });
  }
}
