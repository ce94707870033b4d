// The raw store the host layer inside the component stores through
// (src/store.js, `engram:adapter/store` of host/js-components/adapter/wit/adapter.wit): byte strings
// as strings of one character per byte, in Node and without Node's Buffer
// (as in a Worker), lists packed, answers tagged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bytesOf, portable, textOf } from '../src/latin1.js';
import { storeInterface } from '../src/store.js';
import { MemoryBackend } from '../src/backends/memory.js';

const every = Uint8Array.from({ length: 256 }, (_, i) => i);
const text = String.fromCharCode(...every);

test('every byte is one character, both ways, with and without Buffer', () => {
  for (const way of [{ bytesOf, textOf }, portable]) {
    assert.equal(way.textOf(every), text);
    assert.equal(way.textOf(every.subarray(250)), text.slice(250));
    assert.deepEqual(Array.from(way.bytesOf(text)), Array.from(every));
    assert.equal(way.textOf(new Uint8Array()), '');
  }
});

/** Packs byte strings as the host layer does: each its length (4 bytes, big-endian) then its bytes. */
const item = (bytes) => String.fromCharCode(0, 0, bytes.length >> 8, bytes.length & 0xff, ...bytes);
const NONE = '\xff\xff\xff\xff';

test('reads, scans and commits are packed; a failed condition is C, a failing store U', () => {
  const backend = new MemoryBackend();
  const store = storeInterface(backend, '{"agent":"a"}', () => 7);
  const put = (key, value) => `\x01${item(key)}${item(value)}`;
  const row = '{"at":5,"agent_id":"a","request_id":"w","operation":"WRITE","outcome":"ACCEPTED"}';
  assert.equal(store.commit(`\x00${item([1])}`, put([1], [0xff, 0]) + put([2], []), row), 'V');
  assert.equal(store.getMany(item([2]) + item([3]) + item([1])), `V${item([])}${NONE}${item([0xff, 0])}`);
  // A budget of bytes ends the answer at the value that reaches it.
  assert.equal(store.getMany(item([1]) + item([2]), 1n), `V${item([0xff, 0])}`);
  assert.equal(store.getMany(item([2]) + item([1]) + item([2]), 2n), `V${item([])}${item([0xff, 0])}`);
  assert.equal(store.scan('', '\x03', 10, true), `V${item([2])}${item([])}${item([1])}${item([0xff, 0])}`);
  assert.equal(store.commit(`\x00${item([1])}`, `\x00${item([2])}`, ''), 'C');
  assert.equal(store.commit(`\x01${item([1])}${item([0xff, 0])}`, `\x00${item([2])}`, ''), 'V');
  assert.equal(store.getMany(item([2])), `V${NONE}`);
  assert.deepEqual(backend.auditPage(undefined, 10), [{ ...JSON.parse(row), seq: 1 }], 'a row is kept as it came');
  assert.equal(store.auditRows(undefined, 10), `V${row.slice(0, -1)},"seq":1}`, 'and handed back so, with its seq');
  assert.equal(store.auditRows(1n, 10), 'V', 'nothing before the first');
  assert.equal(store.settings(), '{"agent":"a"}');
  assert.equal(store.now(), 7n);
  assert.equal(store.entropy().length % 16, 0);
  backend.close();
  assert.equal(store.getMany(item([1])), 'Uthe store is closed');
});
