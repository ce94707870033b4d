import { test } from 'node:test';
import assert from 'node:assert/strict';
import { debugLogOnce, lazyInlineModules } from '../scripts/lazy-modules.js';

test('an inline helper module is compiled when first used, not at instantiation', () => {
  const code = [
    'const _helperModule = new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]));',
    'function helper() { return new WebAssembly.Instance(_helperModule, {}); }',
  ].join('\n');
  const lazy = lazyInlineModules(code);
  let compiled = 0;
  const run = new Function('WebAssembly', `${lazy}\nreturn helper;`);
  const counting = { Module: class { constructor() { compiled += 1; } }, Instance: class { constructor(m) { this.m = m; } } };
  const helper = run(counting);
  assert.equal(compiled, 0);
  helper();
  helper();
  assert.equal(compiled, 1);
});

test('the debug switch is read once, when the module loads; a jco of another form is refused', () => {
  const code = [
    '  const _debugLog = (...args) => {',
    '    if (!globalThis?.process?.env?.JCO_DEBUG) { return; }',
    '    console.debug(...args);',
    '  };',
  ].join('\n');
  const once = debugLogOnce(code);
  let reads = 0;
  const env = new Proxy({}, { get: () => { reads += 1; return undefined; } });
  const run = new Function('globalThis', `${once}\nreturn _debugLog;`);
  const log = run({ process: { env } });
  log('a');
  log('b');
  assert.equal(reads, 1);
  assert.throws(() => debugLogOnce('const _debugLog = () => {};'), /_debugLog/);
});
