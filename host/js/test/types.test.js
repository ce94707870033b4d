// The package's TypeScript types (index.d.ts, src/backends/indexeddb.d.ts),
// checked with `tsc --strict` (the pinned TypeScript) on a caller of the API
// (test/types/sample.ts) that imports the package by its name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));
const project = fileURLToPath(new URL('./types/tsconfig.json', import.meta.url));

test('the types check under tsc --strict for a caller of the package', () => {
  const run = spawnSync(process.execPath, [tsc, '--project', project], { encoding: 'utf8' });
  assert.equal(run.status, 0, `tsc --strict:\n${run.stdout}${run.stderr}`);
});
