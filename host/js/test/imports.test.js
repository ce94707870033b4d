// jco's import-name quirk: the generated code reads the imports under the
// interface name without version, its types declare them with it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { componentImports, componentExport } from '../src/imports.js';
import { storeInterface } from '../src/store.js';
import { algorithmInterfaces, embedderInterface } from '../src/algorithms.js';
import { MemoryBackend } from '../src/backends/memory.js';
import { notBuilt } from './built.js';

test('every interface is offered under both names, the same object', () => {
  const audit = { append() {} };
  const imports = componentImports({ 'engram:memory/audit': audit, 'engram:js/host@0.1.0': {} });
  assert.equal(imports['engram:memory/audit'], audit);
  assert.equal(imports['engram:memory/audit@0.2.0'], audit);
  assert.ok(imports['engram:js/host']);
  assert.equal(imports['engram:js/host'], imports['engram:js/host@0.1.0']);
});

test('an export is found under its versioned, full or short name', () => {
  const calls = {};
  assert.equal(componentExport({ 'engram:js/calls@0.1.0': calls }, 'engram:js/calls'), calls);
  assert.equal(componentExport({ calls }, 'engram:js/calls'), calls);
  assert.throws(() => componentExport({ other: {} }, 'engram:js/calls'), /exports no engram:js\/calls/);
});

for (const name of ['engram-host', 'engram-host-builtin', 'engram-algorithms', 'engram-tokenizer', 'engram-http-api']) {
  test(`${name}: every name the generated code reads or declares is in the import object`, { skip: notBuilt }, () => {
    const code = readFileSync(new URL(`../gen/${name}/${name}.js`, import.meta.url), 'utf8');
    const types = readFileSync(new URL(`../gen/${name}/${name}.d.ts`, import.meta.url), 'utf8');
    const read = [...code.matchAll(/imports\['([^']+)'\]/g)].map((m) => m[1]);
    const declared = [...(types.match(/interface ImportObject \{([^}]*)\}/)?.[1] ?? '').matchAll(/'([^']+)'/g)].map((m) => m[1]);
    const imports = componentImports({
      'engram:memory/types': {},
      'engram:adapter/store': storeInterface(new MemoryBackend(), '{}', Date.now),
      ...algorithmInterfaces(() => ({}), () => []),
      ...embedderInterface(),
    });
    for (const wanted of [...read, ...declared]) assert.ok(wanted in imports, `${wanted} is missing`);
  });
}
