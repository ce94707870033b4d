import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cachedMemoryViews, debugLogOnce, lazyInlineModules } from '../scripts/lazy-modules.js';

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

test('one view per memory, made again when the memory grew; a jco of another form is refused', () => {
  const code = [
    'export function instantiate(exports0) {',
    '  return {',
    "    load: (ptr) => new DataView(exports0.memory.buffer).getUint8(ptr, true),",
    "    store: (ptr, val) => { new DataView(exports0.memory.buffer).setInt8(ptr, val, true); },",
    '  };',
    '}',
  ].join('\n');
  const cached = cachedMemoryViews(code);
  assert.doesNotMatch(cached, /new DataView\(exports0/);
  let views = 0;
  const Counting = class extends DataView { constructor(buffer) { super(buffer); views += 1; } };
  const memory = new WebAssembly.Memory({ initial: 1 });
  const run = new Function('DataView', `${cached.replace('export function', 'function')}\nreturn instantiate;`);
  const calls = run(Counting)({ memory });
  calls.store(3, 7);
  assert.equal(calls.load(3), 7);
  assert.equal(views, 1);
  memory.grow(1);
  calls.store(65536, 9);
  assert.equal(calls.load(65536), 9);
  assert.equal(views, 2);
  assert.throws(() => cachedMemoryViews('function other() {}'), /instantiate/);
});
