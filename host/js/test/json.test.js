import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse, stringify, toText } from '../src/json.js';

test('BigInt is serialized as an exact JSON integer', () => {
  const text = stringify({ a: -9223372036854775808n, b: [9223372036854775807n, 1.5, null], c: undefined, d: 'x' });
  assert.equal(text, '{"a":-9223372036854775808,"b":[9223372036854775807,1.5,null],"d":"x"}');
});

test('integers beyond 2^53 parse as BigInt, others as numbers', () => {
  const value = parse('{"min":-9223372036854775808,"max":9223372036854775807,"safe":1767225600000,"f":1e20,"x":1.0}');
  assert.equal(value.min, -9223372036854775808n);
  assert.equal(value.max, 9223372036854775807n);
  assert.equal(value.safe, 1767225600000);
  assert.equal(value.f, 1e20);
  assert.equal(value.x, 1);
});

test('text is passed as given, so its numbers stay as written', () => {
  assert.equal(toText('{"n":1e5}'), '{"n":1e5}');
  assert.equal(toText({ n: 1e5 }), '{"n":100000}');
});
