// The JSON model of the `engram` command line, in JavaScript: requests are
// serialized with BigInt kept exact, answers parsed with integers beyond
// Number.MAX_SAFE_INTEGER kept exact as BigInt.

import { EngramInputError } from './errors.js';

/**
 * Serializes `value` as JSON text, like `JSON.stringify`, except that a
 * BigInt becomes an exact JSON integer (`-9223372036854775808`) instead of
 * a TypeError. `toJSON` methods are honoured; `undefined` and functions are
 * left out of objects and become `null` in arrays. A number that is not
 * finite (NaN, Infinity) is refused ({@link EngramInputError}, naming
 * where it is): JSON has none, and `null` would mean "not given".
 * @param {unknown} value
 * @returns {string}
 */
export function stringify(value) {
  const text = write(value, '');
  if (text === undefined) throw new TypeError('nothing to serialize');
  return text;
}

function write(value, key, path = '') {
  if (value !== null && typeof value === 'object' && typeof value.toJSON === 'function') {
    value = value.toJSON(key);
  }
  switch (typeof value) {
    case 'bigint':
      return value.toString();
    case 'number':
      if (!Number.isFinite(value)) throw new EngramInputError(`${path || 'the value'} is ${value}: a number must be finite`);
      return JSON.stringify(value);
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
    default:
      break;
  }
  if (value === null) return 'null';
  if (Array.isArray(value)) {
    return `[${value.map((item, i) => write(item, String(i), `${path}[${i}]`) ?? 'null').join(',')}]`;
  }
  const fields = [];
  for (const [name, item] of Object.entries(value)) {
    const text = write(item, name, path === '' ? name : `${path}.${name}`);
    if (text !== undefined) fields.push(`${JSON.stringify(name)}:${text}`);
  }
  return `{${fields.join(',')}}`;
}

/** Finds a run of digits as long as the shortest unsafe integer's. */
const LONG_DIGITS = /[0-9]{16}/;

/** Matches the source text of a JSON integer. */
const INTEGER = /^-?(0|[1-9][0-9]*)$/;

/**
 * Parses JSON text, like `JSON.parse`, except that an integer beyond
 * `Number.MAX_SAFE_INTEGER` in magnitude (a timestamp near the ends of the
 * i64 range) comes back as an exact BigInt. Needs a runtime that gives a
 * reviver the source text (Node 21+, current browsers); elsewhere such an
 * integer comes back as a rounded number.
 * @param {string} text
 * @returns {any}
 */
export function parse(text) {
  // Only text with a run of 16 digits or more can hold such an integer;
  // the rest parses without a reviver, several times faster.
  if (!LONG_DIGITS.test(text)) return JSON.parse(text);
  return JSON.parse(text, (_key, value, context) => {
    if (
      typeof value === 'number' &&
      !Number.isSafeInteger(value) &&
      context !== undefined &&
      typeof context.source === 'string' &&
      INTEGER.test(context.source)
    ) {
      return BigInt(context.source);
    }
    return value;
  });
}

/**
 * The JSON text of a request given either as text (passed as is, so its
 * numbers stay exactly as written) or as a value (serialized by
 * {@link stringify}).
 * @param {unknown} request
 * @returns {string}
 */
export function toText(request) {
  return typeof request === 'string' ? request : stringify(request);
}
