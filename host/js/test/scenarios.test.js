// The shared scenarios (tests/scenarios/*.jsonl) on the Node host, with
// each store: the Rust host's (the addon) in memory and on a SQLite file,
// and a store written in JavaScript (memory), which runs on the wasm
// driver; a fresh, empty store per scenario.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemoryBackend, openStore } from '../src/index.js';
import { loadScenarios, runScenario } from './scenarios.js';
import { libraryHost } from './node-host.js';
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
    test(`${storeName}: ${scenario.name}`, { skip: notBuilt }, async () => {
      const store = await make(scenario.name);
      try {
        const { ran } = await runScenario(scenario, libraryHost(store));
        assert.ok(ran > 0);
      } finally {
        store.close();
      }
    });
  }
}
