// The summarizer, ranker and tokenizer a domain's engine calls: plain
// JavaScript functions a user may give, or the defaults of every host,
// compiled to WebAssembly and transpiled into gen/: the summarizer and
// ranker (engram-algorithms.wasm), and the tokenizer (engram-tokenizer.wasm,
// OpenAI's o200k_base with its table of tokens), which is loaded when a
// token budget first needs it.

import { ComponentLoader } from './component.js';
import { componentExport, componentImports } from './imports.js';
import { atOnce, settle } from './maybe.js';

/**
 * An error whose `payload` jco hands to the component as the `err` of a
 * `result` an import returns.
 */
export class ResultError extends Error {
  /** @param {unknown} payload */
  constructor(payload) {
    super(typeof payload === 'string' ? payload : JSON.stringify(payload));
    Object.defineProperty(this, 'payload', { value: payload, enumerable: true });
  }
}

/**
 * Summarizes a turn: the user's message, and the model's response once
 * there is one. Throwing fails the cycle (B5-F1).
 * @callback Summarizer
 * @param {string} userMessage
 * @param {string|undefined} modelResponse
 * @returns {{summary: string, keywords: string[]}}
 */

/**
 * Orders the candidates for the query and keeps at most `k`: their ids,
 * each at most once, best first. Throwing fails the cycle.
 * @callback Ranker
 * @param {string[]} queryKeywords
 * @param {Array<{id: string, summary: string, keywords: string[], timestamp: bigint}>} candidates
 * @param {number} k
 * @returns {string[]}
 */

/**
 * Counts the tokens of a text: a prompt's memory lines, for a plan's
 * token budget. Throwing fails the cycle.
 * @callback Tokenizer
 * @param {string} text
 * @returns {number}
 */

let defaults;

/**
 * The default summarizer and ranker, from one instance of engram-algorithms
 * shared by the process.
 * @param {import('./component.js').CoreModuleLoader} [coreModule]
 * @returns {Promise<{summarizer: Summarizer, ranker: Ranker}>}
 */
export async function defaultAlgorithms(coreModule, instantiate) {
  defaults ??= (async () => {
    const loader = new ComponentLoader('engram-algorithms', { coreModule, instantiate });
    const exports = await loader.first(componentImports({ 'engram:memory/types': {} }));
    const summarize = componentExport(exports, 'engram:memory/summarizer');
    const rank = componentExport(exports, 'engram:memory/ranker');
    return {
      summarizer: (userMessage, modelResponse) => summarize.summarize(userMessage, modelResponse),
      ranker: (queryKeywords, candidates, k) => rank.rank(queryKeywords, candidates, k),
    };
  })().catch((error) => {
    defaults = undefined;
    throw error;
  });
  return defaults;
}

/** The process's engram-tokenizer, once loaded; its loader before. */
let tokenizerLoader;
let tokenizerExport;

/**
 * The default tokenizer (OpenAI's o200k_base, engram-tokenizer): nothing
 * of it is fetched or compiled until it first counts, which is when a plan
 * with a token budget assembles a prompt. An asynchronous domain (`async`,
 * JSPI) loads it then, from gen/ or through `coreModule`; a synchronous one
 * compiles its core module at once then (its generated code is imported
 * here, beforehand), so its `coreModule` must answer a module, not a
 * promise (the default one does under Node, a Worker's does).
 * @param {import('./component.js').CoreModuleLoader} [coreModule]
 * @param {Function} [instantiate]
 * @param {boolean} [async]
 * @returns {Promise<Tokenizer>}
 */
export async function defaultTokenizer(coreModule, instantiate, async = false) {
  tokenizerLoader ??= new ComponentLoader('engram-tokenizer', { coreModule, instantiate });
  const loader = tokenizerLoader;
  const imports = componentImports({ 'engram:memory/types': {} });
  const count = (exports) => componentExport(exports, 'engram:memory/tokenizer');
  if (async) {
    return async (text) => {
      tokenizerExport ??= loader.first(imports).then(count);
      return (await tokenizerExport).countTokens(text);
    };
  }
  await loader.prepare();
  return (text) => {
    tokenizerExport ??= count(loader.now(imports));
    return tokenizerExport.countTokens(text);
  };
}

/**
 * Whether the process has loaded the default tokenizer (its core module
 * compiled and instantiated, or under way).
 * @returns {boolean}
 */
export function defaultTokenizerLoaded() {
  return tokenizerExport !== undefined;
}

/** An error of a user's function as the `err` text of its result. */
function asResultError(error) {
  if (error !== null && typeof error === 'object' && Object.hasOwn(error, 'payload')) {
    return new ResultError(String(error.payload));
  }
  return new ResultError(error instanceof Error ? error.message : String(error));
}

/**
 * Runs a user's function for an import: `f()` settled, then `check`ed;
 * what is thrown is the result's `err`. With `async` (the JSPI build) `f`
 * may answer a promise; without it, a promise is an error saying so.
 * @param {boolean} async
 */
function checkedRun(async) {
  return (what, f, check) =>
    settle(
      () =>
        atOnce(
          f(),
          async,
          () => new ResultError(`the ${what} answered a promise: open the domain with {async: true} (JavaScript Promise Integration)`),
        ),
      check,
      (error) => {
        throw asResultError(error);
      },
    );
}

/**
 * The `tokenizer` interface the engine imports, over `tokenizer`: an error
 * thrown becomes the `err` of the result.
 * @param {Tokenizer} tokenizer
 * @param {boolean} [async]
 */
export function tokenizerInterface(tokenizer, async = false) {
  const run = checkedRun(async);
  return {
    ...noEmbedder(),
    'engram:memory/tokenizer': {
      countTokens(text) {
        return run(
          'tokenizer',
          () => tokenizer(text),
          (count) => {
            if (!Number.isInteger(count) || count < 0 || count > 0xffffffff) {
              throw new ResultError('the tokenizer answered no count of tokens');
            }
            return count;
          },
        );
      },
    },
  };
}

/**
 * The engine's `embedder` import of a host with none: recall is by
 * keywords alone, and the engine never asks for a vector.
 */
function noEmbedder() {
  return {
    'engram:memory/embedder': {
      identity() {
        return undefined;
      },
      embed() {
        throw new ResultError('the host has no embedder');
      },
    },
  };
}

/**
 * The `summarizer`, `ranker` and `tokenizer` interfaces the engine
 * imports, over the given functions: an error thrown becomes the `err` of
 * the result. With `async` (the JSPI build) a function may answer a
 * promise (a model's call), and a rejection is an error thrown; without
 * it, a promise is an error saying so.
 * @param {Summarizer} summarizer
 * @param {Ranker} ranker
 * @param {Tokenizer} tokenizer
 * @param {boolean} [async]
 */
export function algorithmInterfaces(summarizer, ranker, tokenizer, async = false) {
  const run = checkedRun(async);
  return {
    'engram:memory/summarizer': {
      summarize(userMessage, modelResponse) {
        return run(
          'summarizer',
          () => summarizer(userMessage, modelResponse ?? undefined),
          (summary) => {
            if (summary === null || typeof summary !== 'object' || typeof summary.summary !== 'string') {
              throw new ResultError('the summarizer answered no {summary, keywords}');
            }
            return { summary: summary.summary, keywords: Array.from(summary.keywords ?? [], String) };
          },
        );
      },
    },
    'engram:memory/ranker': {
      rank(queryKeywords, candidates, k) {
        return run(
          'ranker',
          () => ranker(queryKeywords, candidates, k),
          (ids) => {
            if (!Array.isArray(ids)) throw new ResultError('the ranker answered no list of ids');
            return ids.map(String);
          },
        );
      },
    },
    ...tokenizerInterface(tokenizer, async),
  };
}
