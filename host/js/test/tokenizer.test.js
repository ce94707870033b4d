// The default tokenizer (engram-tokenizer, o200k_base with its table of
// tokens) is loaded when a token budget first needs it: a domain of the wasm
// driver that is never given a budget never fetches or compiles it. Its own
// file: the tokenizer, once loaded, is the process's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { MemoryBackend, open } from '../src/index.js';
import { defaultTokenizerLoaded } from '../src/algorithms.js';
import { notBuilt } from './built.js';

/** Compiles a core module of gen/, and notes which component asked. */
const loaded = [];
function coreModule(component, file) {
  loaded.push(component);
  return new WebAssembly.Module(readFileSync(new URL(`../gen/${component}/${file}`, import.meta.url)));
}

const source = { agent_id: 'alice', component: 'COGNITION', actor: 'USER' };
const remembered = (i, summary) => ({
  request_id: `m${i}`, source, record: { record_type: 'EVENT', timestamp: 1767225600000 + 60000 * i,
    payload: { ingested: { session_ref: 's', summary, keywords: ['flight', 'pari'] } } },
});

// proves B5-F3: the tokenizer counts only for a budget, and is loaded only then
test('a domain loads the tokenizer at its first token budget, never before', { skip: notBuilt }, async () => {
  using alice = await open('alice', { store: new MemoryBackend(), coreModule });
  ['Flight to Paris booked for 14 May.', 'Sarah wants a window seat on every flight to Paris.', 'Return flight from Paris on the 17th.']
    .forEach((summary, i) => assert.ok(alice.write(remembered(i, summary)).ACCEPTED));
  alice.remember('I moved the Paris flight to June.', 'Noted: June.');
  const all = alice.recall('My flight to Paris?');
  assert.ok(all.memories.length >= 3, JSON.stringify(all));
  assert.equal(all.left_out, 0);
  assert.ok(!loaded.includes('engram-tokenizer'), `loaded without a budget: ${loaded}`);
  assert.ok(!defaultTokenizerLoaded());

  // 20 tokens hold one memory line at most: the rest are left out.
  const cut = alice.recall('My flight to Paris?', { token_budget: 20 });
  assert.ok(loaded.includes('engram-tokenizer'), `not loaded for a budget: ${loaded}`);
  assert.ok(defaultTokenizerLoaded());
  assert.equal(cut.memories.length + cut.left_out, all.memories.length);
  assert.ok(cut.left_out >= all.memories.length - 1, JSON.stringify(cut));
});
