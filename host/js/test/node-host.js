// A scenario host (test/scenarios.js) over the library itself, on one
// store shared by every domain of the scenario: one the Rust host opened
// (`openStore`) or one written in JavaScript (a backend). It runs in Node
// and, imported by the page, in a browser tab.

import {
  EngramRefusedError,
  auditTrail,
  endpointEmbedder,
  expireStore,
  exportStore,
  forget,
  importStore,
  open,
} from '../src/index.js';

/** The tests' real embedding model, as the scenarios name it (`"embedder": "e5-small"`). */
export const TEST_MODEL = { name: 'e5-small', dimension: 384 };

/**
 * The embedders a scenario line may name, by name: the tests' model
 * (multilingual e5-small) at the OpenAI-compatible server `url` (up to
 * `/v1`), each text's role as its `input_type`.
 * @param {string} url
 * @returns {Promise<Record<string, import('../src/algorithms.js').Embedder>>}
 */
export async function testEmbedders(url) {
  return { [TEST_MODEL.name]: await endpointEmbedder({ url, model: TEST_MODEL.name, dimension: TEST_MODEL.dimension }) };
}

/**
 * The host of one scenario run over `backend`: every call opens the
 * domain it needs and closes it after. With `async`, the domains answer
 * promises (`open(agent, {async: true})`), every call awaited. A line
 * that names an embedder (`"embedder": "e5-small"`) opens its domain with
 * that one of `embedders`, asynchronously (it awaits its model's
 * endpoint).
 * @param {import('../src/backend.js').Backend|import('../src/native.js').NativeStore} backend
 * @param {{async?: boolean, embedders?: Record<string, import('../src/algorithms.js').Embedder>}} [options]
 * @returns {import('./scenarios.js').ScenarioHost}
 */
export function libraryHost(backend, { async = false, embedders = {} } = {}) {
  const input = 'standard input';
  // A line's `now` is the host's clock for its call (the CLI's --now).
  let now;
  const clock = () => now ?? Date.now();
  const embedderOf = (line) => {
    if (line.embedder === undefined) return undefined;
    const embedder = embedders[line.embedder];
    if (embedder === undefined) throw new Error(`the runner was given no embedder ${JSON.stringify(line.embedder)}`);
    return embedder;
  };
  const withDomain = async (line, mode, f) => {
    const embedder = embedderOf(line);
    const domain = await open(line.agent, {
      store: backend,
      mode,
      tierCeiling: line.tier_ceiling ?? 'private',
      expireAfterMs: line.expire_after,
      input,
      clock,
      embedder,
      async: async || embedder !== undefined,
    });
    try {
      return await f(domain);
    } finally {
      await domain.close();
    }
  };
  // The options of the calls on a whole store: the line's embedder, if any.
  const maintenance = (line) => {
    const embedder = embedderOf(line);
    return { clock, embedder, async: async || embedder !== undefined };
  };
  const list = (answer) => (Array.isArray(answer) ? answer : [answer]);
  const pick = (line, ...names) =>
    Object.fromEntries(names.filter((n) => line[n] !== undefined).map((n) => [n, line[n]]));
  // A refusal's line is the answer, as the command line prints it.
  const answerOf = async (f) => {
    try {
      return await f();
    } catch (error) {
      if (error instanceof EngramRefusedError) return error.answer;
      throw error;
    }
  };
  return {
    async call(line) {
      now = line.now;
      switch (line.op) {
        case 'write':
          return withDomain(line, 'online', async (d) => list(await d.write(line.request)));
        case 'maintenance_write':
          return withDomain(line, 'maintenance', async (d) => list(await d.write(line.request)));
        case 'read':
          return withDomain(line, 'online', async (d) => list(await d.read(line.request)));
        case 'history':
          return withDomain(line, 'online', async (d) => [await d.history(pick(line, 'key', 'limit'))]);
        case 'as_of':
          return withDomain(line, 'online', async (d) => [await d.asOf(pick(line, 'key', 'valid', 'known', 'limit'))]);
        case 'list':
          return withDomain(line, 'online', async (d) => [await d.list(pick(line, 'namespace', 'limit', 'after'))]);
        case 'entities':
          return withDomain(line, 'online', async (d) => [await d.entities(pick(line, 'entity_type', 'limit'))]);
        case 'relationships':
          return withDomain(line, 'online', async (d) => [
            await d.relationships(pick(line, 'entity', 'incoming', 'types', 'valid_at', 'limit')),
          ]);
        case 'traverse':
          return withDomain(line, 'online', async (d) => [
            await d.traverse(
              pick(line, 'start', 'depth_first', 'incoming', 'types', 'valid_at', 'max_depth', 'max_nodes', 'max_edges'),
            ),
          ]);
        case 'cycle':
          return withDomain(line, 'online', (d) =>
            d.runCycle(pick(line, 'plan', 'message', 'response', 'session', 'request_id')),
          );
        case 'remember':
          return withDomain(line, 'online', async (d) => [
            await answerOf(() => d.remember(line.message, line.response, pick(line, 'session', 'request_id', 'time'))),
          ]);
        case 'recall':
          return withDomain(line, 'online', async (d) => [
            await answerOf(() => d.recall(line.question, pick(line, 'top_k', 'token_budget', 'request_id'))),
          ]);
        case 'audit':
          return await auditTrail(backend, {
            agent: line.audit_agent,
            operation: line.operation,
            outcome: line.outcome,
            limit: line.limit,
          });
        case 'export':
          return exportStore(backend, { agents: line.agents, ...maintenance(line) });
        case 'import':
          return importStore(backend, line.lines, maintenance(line));
        case 'forget':
          return [await forget(backend, line.agent, { clock, async })];
        case 'expire':
          return expireStore(backend, { agents: [line.agent], ...maintenance(line) });
        case 'reembed':
          return withDomain(line, 'maintenance', async (d) => [await answerOf(() => d.reembed(pick(line, 'batch')))]);
        case 'bad_input':
          return withDomain(line, 'online', (d) =>
            line.command === 'write'
              ? d.write(line.text, { batch: line.batch ?? false })
              : d.read(line.text, { batch: line.batch ?? false }),
          );
        default:
          throw new Error(`an op the runner does not know: ${line.op}`);
      }
    },
  };
}
