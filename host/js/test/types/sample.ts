// A caller of the package, in TypeScript: `test/types.test.js` checks it with
// `tsc --strict` against index.d.ts (and the IndexedDB store's types), so a
// type that no longer fits the API fails the tests.
import {
  EngramInputError,
  EngramRefusedError,
  MemoryBackend,
  auditTrail,
  domains,
  endpointEmbedder,
  exportStore,
  hasJspi,
  importStore,
  open,
  openStore,
  type AsyncDomain,
  type AsyncEmbedder,
  type Domain,
  type Embedder,
  type NativeStore,
  type Recalled,
  type Remembered,
  type VectorModel,
  type WriteAnswer,
} from 'engram-memory';
import { openIndexedDb, type IndexedDbBackend } from 'engram-memory/backends/indexeddb';

export async function synchronous(): Promise<string> {
  const store: NativeStore = await openStore('engram.db', { sqlite: { synchronous: 'NORMAL', busyTimeout: 1000 } });
  using alice: Domain = await open('alice', { store, tierCeiling: 'sensitive', limits: { readLimitCeiling: 100 } });
  const remembered: Remembered = alice.remember('I booked the Hotel Avenida in Lisbon.', 'Lovely!', { time: new Date() });
  const recalled: Recalled = alice.recall('Which hotel did I book?', { top_k: 3, token_budget: 200 });
  const written: WriteAnswer | WriteAnswer[] = alice.write('{"request_id":"w"}');
  const batch: WriteAnswer[] = alice.write([{ request_id: 'a' }, '{"request_id":"b"}']);
  alice.history({ key: 'user.diet' });
  alice.traverse({ start: 'person.sarah', max_depth: 2 });
  using cycle = alice.cycle({ metadata: {}, steps: [] }, { request_id: 'c1' });
  cycle.runStage('SummarizeMemory', { message: 'm', response: 'r' });
  const committed: string[] = cycle.commit().committed;
  try {
    alice.read('not json');
  } catch (error) {
    if (error instanceof EngramInputError) return error.message;
    if (error instanceof EngramRefusedError) return JSON.stringify(error.answer);
  }
  const letters: Embedder = {
    name: 'letters',
    dimension: 2,
    embed: (texts, role) => texts.map((text) => (role === 'query' ? [text.length, 1] : Float32Array.of(text.length, 2))),
  };
  using carol = await open('carol', { store, embedder: letters });
  const model: VectorModel | null = carol.vectorModel();
  using maintenance = await open('carol', { store, embedder: letters, mode: 'maintenance' });
  const embedded: number = maintenance.reembed({ batch: 10 }).embedded;
  await auditTrail(store, { agent: 'alice', limit: 10 });
  await domains(store);
  const lines = await exportStore(store, { agents: ['alice'] });
  await importStore('other.db', lines);
  store.close();
  return `${remembered.request_id} ${recalled.prompt} ${JSON.stringify([written, batch, committed, model, embedded])}`;
}

export async function asynchronous(): Promise<number> {
  const bob: AsyncDomain = await open('bob', {
    store: 'postgres://localhost/test',
    async: true,
    postgres: { schema: 'engram', connectTimeout: 2000 },
    summarizer: async (message, response) => ({ summary: `${message} ${response ?? ''}`, keywords: [] }),
  });
  const recalled: Recalled = await bob.recall('anything');
  const endpoint: AsyncEmbedder = await endpointEmbedder({ url: 'http://127.0.0.1:11434/v1', model: 'nomic-embed-text', timeoutMs: 5000 });
  await using dave = await open('dave', { async: true, embedder: endpoint });
  const reembedded: { agent_id: string; embedded: number } = await dave.reembed();
  const model: VectorModel | null = await dave.vectorModel();
  const cycle = await bob.cycle({ metadata: {}, steps: [] });
  await cycle.runStage('PersistMemory');
  await bob.close();
  const memory = await open('carol', { store: new MemoryBackend(), clock: () => Date.now() });
  memory.close();
  if (hasJspi()) {
    const tab: IndexedDbBackend = await openIndexedDb('carol');
    const carol: AsyncDomain = await open('carol', { store: tab, async: true });
    await carol.remember('hello', 'hi');
  }
  return recalled.memories.length + reembedded.embedded + (model?.dimension ?? 0);
}
