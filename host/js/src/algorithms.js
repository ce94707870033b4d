// The summarizer, ranker and tokenizer a domain's engine calls: plain
// JavaScript functions a user may give, or the defaults of every host,
// compiled to WebAssembly (engram-algorithms.wasm, transpiled into gen/).

import { ComponentLoader } from './component.js';
import { componentExport, componentImports } from './imports.js';

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
 * The default summarizer, ranker and tokenizer (OpenAI's o200k_base
 * encoding), from one instance of engram-algorithms shared by the process.
 * @param {import('./component.js').CoreModuleLoader} [coreModule]
 * @returns {Promise<{summarizer: Summarizer, ranker: Ranker, tokenizer: Tokenizer}>}
 */
export async function defaultAlgorithms(coreModule, instantiate) {
  defaults ??= (async () => {
    const loader = new ComponentLoader('engram-algorithms', { coreModule, instantiate });
    const exports = await loader.first(componentImports({ 'engram:memory/types': {} }));
    const summarize = componentExport(exports, 'engram:memory/summarizer');
    const rank = componentExport(exports, 'engram:memory/ranker');
    const count = componentExport(exports, 'engram:memory/tokenizer');
    return {
      summarizer: (userMessage, modelResponse) => summarize.summarize(userMessage, modelResponse),
      ranker: (queryKeywords, candidates, k) => rank.rank(queryKeywords, candidates, k),
      tokenizer: (text) => count.countTokens(text),
    };
  })().catch((error) => {
    defaults = undefined;
    throw error;
  });
  return defaults;
}

/** An error of a user's function as the `err` text of its result. */
function asResultError(error) {
  if (error !== null && typeof error === 'object' && Object.hasOwn(error, 'payload')) {
    return new ResultError(String(error.payload));
  }
  return new ResultError(error instanceof Error ? error.message : String(error));
}

/**
 * The `summarizer`, `ranker` and `tokenizer` interfaces the engine
 * imports, over the given functions: an error thrown becomes the `err` of
 * the result.
 * @param {Summarizer} summarizer
 * @param {Ranker} ranker
 * @param {Tokenizer} tokenizer
 */
export function algorithmInterfaces(summarizer, ranker, tokenizer) {
  return {
    'engram:memory/summarizer': {
      summarize(userMessage, modelResponse) {
        let summary;
        try {
          summary = summarizer(userMessage, modelResponse ?? undefined);
        } catch (error) {
          throw asResultError(error);
        }
        if (summary === null || typeof summary !== 'object' || typeof summary.summary !== 'string') {
          throw new ResultError('the summarizer answered no {summary, keywords}');
        }
        return { summary: summary.summary, keywords: Array.from(summary.keywords ?? [], String) };
      },
    },
    'engram:memory/ranker': {
      rank(queryKeywords, candidates, k) {
        let ids;
        try {
          ids = ranker(queryKeywords, candidates, k);
        } catch (error) {
          throw asResultError(error);
        }
        if (!Array.isArray(ids)) throw new ResultError('the ranker answered no list of ids');
        return ids.map(String);
      },
    },
    'engram:memory/tokenizer': {
      countTokens(text) {
        let count;
        try {
          count = tokenizer(text);
        } catch (error) {
          throw asResultError(error);
        }
        if (!Number.isInteger(count) || count < 0 || count > 0xffffffff) {
          throw new ResultError('the tokenizer answered no count of tokens');
        }
        return count;
      },
    },
  };
}
