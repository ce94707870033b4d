// The summarizer, ranker and tokenizer a domain's engine calls: plain
// JavaScript functions a user may give, or the defaults of every host,
// compiled to WebAssembly and transpiled into gen/: the summarizer and
// ranker (engram-algorithms.wasm), and the tokenizer (engram-tokenizer.wasm,
// OpenAI's o200k_base with its table of tokens), which is loaded when a
// token budget first needs it. And the embedder (recall by meaning), which
// only a user gives: without one, recall is by keywords alone.

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

/**
 * Embeds texts as vectors, for recall by meaning (S-VECTOR): `embed`
 * answers one vector of `dimension` finite numbers (an array, or a typed
 * array such as a Float32Array) for each text, in order. The domain
 * records the model (`name`, `dimension`) of its vectors and refuses
 * another until maintenance `reembed` has made them again; the engine
 * checks the model's bounds and every vector. Throwing, or any other
 * answer, fails the call that needed it (B5-F1): nothing is stored.
 * @typedef {object} Embedder
 * @property {string} name the model's name, as its host calls it
 *   (`e5-small-v2`)
 * @property {number} dimension how many numbers a vector has
 * @property {(texts: string[], role: 'passage'|'query') => Array<number[]|ArrayLike<number>>} embed
 *   `passage`: memories' summaries, to be found; `query`: a question, to
 *   find with (e5's `passage: ` and `query: `, an endpoint's `input_type`)
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

/** The words of an embedder's answer that is no list of vectors. */
const NO_VECTORS = 'the embedder answered no list of vectors (lists of numbers)';

/**
 * An embedder's answer as the component takes it: each vector a
 * Float32Array (what jco copies at once). What is no list of vectors of
 * numbers is the result's `err`; their lengths and values are the
 * engine's to check, as for every host.
 * @param {unknown} vectors
 * @returns {Float32Array[]}
 */
function float32Vectors(vectors) {
  if (!Array.isArray(vectors)) throw new ResultError(NO_VECTORS);
  return vectors.map((vector) => {
    const numbers = Array.isArray(vector) || (ArrayBuffer.isView(vector) && !(vector instanceof DataView));
    if (!numbers || !Array.prototype.every.call(vector, (x) => typeof x === 'number')) throw new ResultError(NO_VECTORS);
    return Float32Array.from(vector);
  });
}

/**
 * The `embedder` interface the engine imports: over `embedder` (its model,
 * as it was when the domain opened, and its `embed`, an error thrown
 * becoming the `err` of the result; with `async`, the JSPI build, `embed`
 * may answer a promise), or, without one, a host with none: recall is by
 * keywords alone, and the engine never asks for a vector.
 * @param {Embedder} [embedder]
 * @param {boolean} [async]
 */
export function embedderInterface(embedder, async = false) {
  if (embedder === undefined) {
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
  const run = checkedRun(async);
  const model = { name: embedder.name, dimension: embedder.dimension };
  return {
    'engram:memory/embedder': {
      identity() {
        return model;
      },
      embed(texts, role) {
        return run('embedder', () => embedder.embed(texts, role), float32Vectors);
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
