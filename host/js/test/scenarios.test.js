// The shared scenarios (tests/scenarios/*.jsonl) on the Node host, with
// each backend: a fresh, empty store per scenario.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemoryBackend } from '../src/backends/memory.js';
import { SqliteBackend } from '../src/backends/sqlite.js';
import { loadScenarios, runScenario } from './scenarios.js';
import { libraryHost } from './node-host.js';
import { notBuilt } from './built.js';

const folder = fileURLToPath(new URL('../../../tests/scenarios/', import.meta.url));
const scenarios = loadScenarios(folder);
const dir = mkdtempSync(join(tmpdir(), 'engram-scenarios-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

test('the scenarios are there', () => assert.ok(scenarios.length >= 8, `${scenarios.length} in ${folder}`));

const BACKENDS = {
  memory: () => new MemoryBackend(),
  sqlite: (name) => new SqliteBackend(join(dir, `${name}.db`)),
};

for (const [backendName, make] of Object.entries(BACKENDS)) {
  for (const scenario of scenarios) {
    test(`${backendName}: ${scenario.name}`, { skip: notBuilt }, async () => {
      const backend = make(scenario.name);
      try {
        const { ran } = await runScenario(scenario, libraryHost(backend));
        assert.ok(ran > 0);
      } finally {
        backend.close();
      }
    });
  }
}
