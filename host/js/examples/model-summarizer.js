// A summarizer that asks a model: each turn's message and response go to
// an HTTP endpoint that answers `{summary, keywords}`, awaited inside the
// cycle. It needs a domain opened with `{async: true}`: in Node the addon runs
// the domain on a thread of its own and awaits the summarizer's promise on
// the JavaScript thread (any Node from 20 up); in a browser or a Worker, the
// JSPI build (workerd, Chromium, Firefox):
//
//   import { open } from 'engram-memory';
//   import { modelSummarizer } from './model-summarizer.js';
//   await using alice = await open('alice', { store, async: true,
//     summarizer: modelSummarizer('http://127.0.0.1:8080/summarize') });
//   await alice.remember('I booked the Hotel Avenida in Lisbon.', 'Lovely.');
//
// A model that fails, or answers no summary, fails the cycle: nothing is
// stored (B5-F2).

/**
 * @param {string | URL} url the model's endpoint: POST `{message, response}`
 *   as JSON, answered `{summary, keywords}`
 * @returns {(message: string, response: string | undefined) => Promise<{summary: string, keywords: string[]}>}
 */
export function modelSummarizer(url) {
  return async (message, response) => {
    const answer = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message, response: response ?? null }),
    });
    if (!answer.ok) throw new Error(`the model answered HTTP ${answer.status}`);
    const { summary, keywords } = await answer.json();
    return { summary, keywords: keywords ?? [] };
  };
}
