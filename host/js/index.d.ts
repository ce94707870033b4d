// Types of engram-memory (hand-written; see src/ for the documentation of
// each item).

/** A JSON value as the library answers it: integers beyond 2^53 are BigInt. */
export type Json = null | boolean | number | bigint | string | Json[] | { [key: string]: Json };

/** A request: an object (BigInt allowed) or JSON text (kept as written). */
export type Request = object | string;

/** A condition a commit checks before it changes anything. */
export type Precondition =
  | { type: 'absent'; key: Uint8Array }
  | { type: 'holds'; key: Uint8Array; value: Uint8Array };

/** One change of a commit. */
export type Op = { type: 'put'; key: Uint8Array; value: Uint8Array } | { type: 'delete'; key: Uint8Array };

/**
 * One row of the audit trail, as the host layer hands it to a store: the
 * columns of `engram_audit` but `seq`. A store keeps it as given and hands
 * it back so (`auditPage`); it reads none of its fields.
 */
export interface AuditRow {
  at: number;
  agent_id: string;
  request_id: string;
  operation: 'WRITE' | 'READ' | 'EXPORT' | 'IMPORT' | 'FORGET' | 'EXPIRE' | string;
  /** JSON text `{"agent_id","component","actor"}`, or null. */
  source?: string | null;
  record_type?: 'FACT' | 'EVENT' | 'STATE' | null;
  outcome: 'ACCEPTED' | 'REPLAYED' | 'REJECTED' | 'RETURNED' | 'FAILED' | 'APPLIED' | 'EXPIRED' | string;
  stored_id?: string | null;
  count?: number | null;
  reason?: string | null;
  caller?: string | null;
}

/** An audit row as a store hands it back: with `seq`, its number in append order (rising). */
export type StoredAuditRow = AuditRow & { seq: number };

/**
 * Which entries of the audit trail to read (`auditTrail`, `Domain.audit`);
 * every filter that is set must hold. Read by the host layer, as every
 * host reads it: an unknown field or operation is an input error.
 */
export interface AuditQuery {
  agent?: string;
  since?: number;
  until?: number;
  operation?: string;
  outcome?: string;
  /** How many of the newest matching rows; 100 by default. */
  limit?: number;
}

/**
 * A store: an ordered, transactional map of bytes (bytewise key order) and
 * the audit trail. Synchronous; keys are whole keys (domain prefix
 * included). A method that cannot do its work throws.
 */
export interface Backend {
  get(key: Uint8Array): Uint8Array | undefined;
  getMany(keys: Uint8Array[]): Array<Uint8Array | undefined>;
  scan(start: Uint8Array, end: Uint8Array, limit: number, descending: boolean): Array<[Uint8Array, Uint8Array]>;
  /** `true` when committed, `false` on a conflict (nothing changed). */
  commit(preconditions: Precondition[], ops: Op[], auditRows: AuditRow[]): boolean;
  appendAudit(rows: AuditRow[]): void;
  /**
   * A page of the trail, newest first: at most `limit` rows appended before
   * the row numbered `before` (from the newest when undefined), each with
   * its `seq`. Fewer than `limit`: the oldest row is among them.
   */
  auditPage(before: number | undefined, limit: number): StoredAuditRow[];
  close(): void;
  /**
   * For a store several writers share at once: waits for the domain's turn
   * (keys starting with `prefix`; `key` is its lock key, the same in every host).
   */
  lockDomain?(prefix: Uint8Array, key: bigint): void;
  /** Lets the next writer of the domain in. */
  unlockDomain?(prefix: Uint8Array, key: bigint): void;
}

/** A value, or a promise of it. */
export type MaybePromise<T> = T | Promise<T>;

/**
 * A store whose calls may answer promises (a network database, IndexedDB):
 * for a domain opened with `{async: true}`.
 */
export interface AsyncBackend {
  get(key: Uint8Array): MaybePromise<Uint8Array | undefined>;
  getMany(keys: Uint8Array[]): MaybePromise<Array<Uint8Array | undefined>>;
  scan(start: Uint8Array, end: Uint8Array, limit: number, descending: boolean): MaybePromise<Array<[Uint8Array, Uint8Array]>>;
  commit(preconditions: Precondition[], ops: Op[], auditRows: AuditRow[]): MaybePromise<boolean>;
  appendAudit(rows: AuditRow[]): MaybePromise<void>;
  auditPage(before: number | undefined, limit: number): MaybePromise<StoredAuditRow[]>;
  close(): MaybePromise<void>;
  lockDomain?(prefix: Uint8Array, key: bigint): MaybePromise<void>;
  unlockDomain?(prefix: Uint8Array, key: bigint): MaybePromise<void>;
}

/** A store in memory. */
export class MemoryBackend implements Backend {
  constructor();
  get(key: Uint8Array): Uint8Array | undefined;
  getMany(keys: Uint8Array[]): Array<Uint8Array | undefined>;
  scan(start: Uint8Array, end: Uint8Array, limit: number, descending: boolean): Array<[Uint8Array, Uint8Array]>;
  commit(preconditions: Precondition[], ops: Op[], auditRows: AuditRow[]): boolean;
  appendAudit(rows: AuditRow[]): void;
  auditPage(before: number | undefined, limit: number): StoredAuditRow[];
  close(): void;
}

/** How a PostgreSQL store is opened, times in ms; what is left out has every host's defaults ({@link DEFAULT_POSTGRES_OPTIONS}). */
export interface PostgresOptions {
  /** The schema of the tables, created if absent; the URL's search path (`public`) by default. */
  schema?: string;
  /** How long connecting may take. */
  connectTimeout?: number;
  /** One statement, lock waits included. */
  statementTimeout?: number;
  /** A session idle inside a transaction. */
  idleInTransactionTimeout?: number;
  /** Silence before TCP keepalive probes. */
  keepalivesIdle?: number;
  /** Unacknowledged data before the connection is given up (Linux). */
  tcpUserTimeout?: number;
}
/** Every host's PostgreSQL connection defaults, in ms. */
export const DEFAULT_POSTGRES_OPTIONS: Readonly<Required<Omit<PostgresOptions, 'schema'>>>;

/** How a SQLite store is opened (the Rust host's defaults). */
export interface SqliteOptions {
  /** `FULL` by default. */
  synchronous?: 'FULL' | 'NORMAL';
  /** ms a call waits for another process's write lock; 5000 */
  busyTimeout?: number;
}

/**
 * A store the Rust host opened in Node ({@link openStore}): a SQLite file,
 * a PostgreSQL database or memory. Domains opened in it share it.
 */
export interface NativeStore {
  /** Lets the store go; domains opened in it keep it until they close. */
  close(): void;
}

/** The limits of a domain; the defaults are every host's. */
export interface Limits {
  readLimitCeiling: number;
  candidateLimit: number;
  maxAnswerBytes: number;
  maxMemoryBytes: number;
  maxRecordBytes: number;
  maxBatchOps: number;
  maxBatchBytes: number;
}
export const DEFAULT_LIMITS: Readonly<Limits>;

/** Summarizes a turn; throwing fails the cycle. */
export type Summarizer = (userMessage: string, modelResponse: string | undefined) => { summary: string; keywords: string[] };

/** A retrieval candidate. */
export interface Candidate {
  id: string;
  summary: string;
  keywords: string[];
  timestamp: bigint;
}

/** Orders candidates and keeps at most `k` ids, best first; throwing fails the cycle. */
export type Ranker = (queryKeywords: string[], candidates: Candidate[], k: number) => string[];

/** Counts the tokens of a text (a prompt's memory lines, for a plan's token budget); throwing fails the cycle. OpenAI's o200k_base by default. */
export type Tokenizer = (text: string) => number;

/** What a text is to an embedder: a memory's summary, to be found (`passage`), or a question, to find with (`query`). */
export type EmbedRole = 'passage' | 'query';

/** The model that makes a domain's vectors. */
export interface VectorModel {
  /** The model's name, as its host calls it (`e5-small-v2`); 1 to 256 bytes. */
  name: string;
  /** How many numbers a vector has; 1 to 4,096. */
  dimension: number;
}

/**
 * Embeds texts as vectors, for recall by meaning besides keywords (S-VECTOR): each memory's
 * summary as it is stored (one call per remember or cycle, role `passage`), each question
 * recalled with (one call, role `query`). `embed` answers one vector of `dimension` finite
 * numbers for each text, in order; anything else, or an error thrown, fails the call that
 * needed it and nothing is stored (B5-F1). A domain records the model of its vectors and
 * refuses another online until {@link Domain.reembed} has made them again.
 */
export interface Embedder extends VectorModel {
  embed(texts: string[], role: EmbedRole): Array<number[] | Float32Array | Float64Array>;
}

/** An {@link Embedder} whose `embed` may answer a promise (a model's endpoint): for a domain opened with `{async: true}`. */
export interface AsyncEmbedder extends VectorModel {
  embed(texts: string[], role: EmbedRole): MaybePromise<Array<number[] | Float32Array | Float64Array>>;
}

/**
 * Compiles the core module `file` of the transpiled component `component` (`engram-host`,
 * `engram-host-builtin`, `engram-algorithms`, `engram-tokenizer`). `engram-tokenizer` is asked
 * for only when a token budget first counts; in a domain without `async: true` it must then
 * answer a module at once, not a promise.
 */
export type CoreModuleLoader = (component: string, file: string) => WebAssembly.Module | Promise<WebAssembly.Module>;

export interface OpenOptions {
  /**
   * The path of a SQLite file or a PostgreSQL URL (`postgres://…`), opened
   * for this domain and closed with it (Node); a store {@link openStore}
   * opened; or a store written in JavaScript; a fresh store in memory when
   * absent.
   */
  store?: Backend | NativeStore | string;
  mode?: 'online' | 'maintenance';
  tierCeiling?: 'public' | 'sensitive' | 'private';
  summarizer?: Summarizer;
  ranker?: Ranker;
  tokenizer?: Tokenizer;
  /** Recall by meaning too: embeds memories and questions; none by default (recall by keywords alone). */
  embedder?: Embedder;
  limits?: Partial<Limits>;
  /** ms since the epoch, read as each call begins; `Date.now` by default. */
  clock?: () => number;
  /** Keep what this domain writes for this many ms only; kept until removed otherwise when absent. */
  expireAfterMs?: number;
  /** For a store given by path. */
  sqlite?: SqliteOptions;
  /** For a store given by PostgreSQL URL. */
  postgres?: PostgresOptions;
  /** The input's name in input errors; `request` by default. */
  input?: string;
  coreModule?: CoreModuleLoader;
  /** A domain whose every method answers a promise: see {@link AsyncOpenOptions}. */
  async?: false;
}

/**
 * A domain whose every method answers a promise, and whose summarizer,
 * ranker, tokenizer and embedder (and a store written in JavaScript) may
 * answer promises: in Node on a thread of its own; elsewhere on the
 * components' JSPI build (Chromium, Firefox, workerd; {@link hasJspi}).
 */
export interface AsyncOpenOptions extends Omit<OpenOptions, 'async' | 'store' | 'summarizer' | 'ranker' | 'tokenizer' | 'embedder'> {
  async: true;
  /** As {@link OpenOptions.store}, or a store written in JavaScript that answers promises. */
  store?: AsyncBackend | NativeStore | string;
  summarizer?: (...args: Parameters<Summarizer>) => MaybePromise<ReturnType<Summarizer>>;
  ranker?: (...args: Parameters<Ranker>) => MaybePromise<ReturnType<Ranker>>;
  tokenizer?: (...args: Parameters<Tokenizer>) => MaybePromise<ReturnType<Tokenizer>>;
  /** As {@link OpenOptions.embedder}, its `embed` maybe answering a promise. */
  embedder?: AsyncEmbedder;
}

export interface BatchOptions {
  batch?: boolean;
  input?: string;
}

/** A write's answer: `{"ACCEPTED":{"stored_id":…}}` or `"REJECTED"`. */
export type WriteAnswer = { ACCEPTED: { stored_id: string } } | 'REJECTED';

/** One agent's memory domain. */
/** A memory `recall` selected (B5-D2); `timestamp` in ms since the epoch. */
export interface Memory {
  id: string;
  summary: string;
  timestamp: number | bigint;
}

/** What `remember` answers: the turn's request id (as given or made up) and the ids it stored. */
export interface Remembered {
  request_id: string;
  committed: string[];
}

/** What `recall` answers: the memories, best first, the assembled prompt, and how many the token budget left out. */
export interface Recalled {
  request_id: string;
  memories: Memory[];
  prompt: string;
  left_out: number;
}

export interface RememberOptions {
  /** The conversation the turn belongs to (`default`). */
  session?: string;
  /** The turn's id: the same id again stores nothing new (a fresh random one when absent). */
  request_id?: string;
  /** When the turn happened: ms since the epoch, or a Date (now when absent). */
  time?: number | bigint | Date;
}

export interface RecallOptions {
  /** How many memories at most (5). */
  top_k?: number;
  /** The most tokens the prompt's memory lines may take. */
  token_budget?: number;
  /** The call's id in the audit trail (a fresh random one when absent). */
  request_id?: string;
}

export class Domain implements Disposable {
  readonly agent: string;
  readonly mode: 'online' | 'maintenance';
  readonly store: Backend | NativeStore;
  /** `false`: every method answers at once. */
  readonly async: false;
  write(request: Request[], options?: BatchOptions): WriteAnswer[];
  write(request: Request, options?: BatchOptions): WriteAnswer | WriteAnswer[];
  read(request: Request[], options?: BatchOptions): Json[];
  read(request: Request, options?: BatchOptions): Json;
  history(args: { key: string; limit?: number; request_id?: string } | string): Json;
  asOf(args: { key: string; valid?: number | bigint; known?: number | bigint; limit?: number; request_id?: string } | string): Json;
  list(args: { namespace: string[]; limit?: number; after?: string; request_id?: string } | string): Json;
  entities(args: { entity_type: 'person' | 'organization' | 'place' | 'product' | 'event'; limit?: number; request_id?: string } | string): Json;
  relationships(
    args: { entity: string; incoming?: boolean; types?: string[]; valid_at?: number | bigint; limit?: number; request_id?: string } | string,
  ): Json;
  traverse(
    args:
      | {
          start: string;
          depth_first?: boolean;
          incoming?: boolean;
          types?: string[];
          valid_at?: number | bigint;
          max_depth?: number;
          max_nodes?: number;
          max_edges?: number;
          request_id?: string;
        }
      | string,
  ): Json;
  remember(message: string, response: string, options?: RememberOptions): Remembered;
  recall(question: string, options?: RecallOptions): Recalled;
  cycle(plan: Request, options?: { session?: string; request_id?: string }): Cycle;
  runCycle(turn: { plan: Request; message?: string; response?: string; session?: string; request_id?: string }): Json[];
  audit(query?: Omit<AuditQuery, 'agent'>): Json[];
  export(): Array<{ agent_id: string; item: Json }>;
  import(lines: Array<{ agent_id: string; item: Json } | object | string>): { agent_id: string; items: number; new: number };
  expire(): { agent_id: string; expired: number };
  /**
   * Maintenance: makes the domain's vectors with this domain's embedder from the memories'
   * stored summaries, `batch` memories a commit (256), until every memory has one of its
   * model (after a change of model, or for memories stored without an embedder). Resumes
   * where a stopped run left off.
   */
  reembed(options?: { batch?: number }): { agent_id: string; embedded: number };
  /** The model that made this domain's vectors, or null while it has none. */
  vectorModel(): VectorModel | null;
  forget(): { agent_id: string; removed: number };
  close(): void;
  [Symbol.dispose](): void;
}

/** Each method of `T`, answering a promise of what it answered. */
type Promised<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : T[K];
};

/** A domain opened with `{async: true}`: every method answers a promise. */
export interface AsyncDomain
  extends Omit<Promised<Omit<Domain, 'cycle' | typeof Symbol.dispose>>, 'async' | 'store' | 'agent' | 'mode'>,
    AsyncDisposable {
  readonly agent: string;
  readonly mode: 'online' | 'maintenance';
  readonly store: AsyncBackend | NativeStore;
  readonly async: true;
  cycle(plan: Request, options?: { session?: string; request_id?: string }): Promise<AsyncCycle>;
}

/** A cycle of an {@link AsyncDomain}: each stage answers a promise. */
export type AsyncCycle = Promised<Omit<Cycle, typeof Symbol.dispose>> & Disposable;

/** One execution cycle, stage by stage. */
export class Cycle implements Disposable {
  runStage(
    stage: 'ContextSelect' | 'PromptAssemble' | 'SummarizeMemory' | 'PersistMemory',
    input?: { message?: string; response?: string },
  ): Json;
  output(step: string): Json | undefined;
  commit(): { committed: string[] };
  [Symbol.dispose](): void;
}

/** Every error of a call of this package; `kind` names its kind as every package names it. */
export class EngramError extends Error {
  readonly kind: 'engram' | 'input' | 'refused' | 'stopped' | 'locked' | 'store' | 'closed';
}

/** The input is not a valid request (or a domain's settings, or a store's options); nothing ran. */
export class EngramInputError extends EngramError {
  readonly kind: 'input';
}

/** The contract refused the call; `answer` is its line, parsed. */
export class EngramRefusedError extends EngramError {
  readonly kind: 'refused';
  readonly answer: Json;
}

/** The engine's instance stopped during the call; the next call gets a fresh one. */
export class EngramStoppedError extends EngramError {
  readonly kind: 'stopped';
}

/** The maintenance lock is held by someone else, or a call of the domain is under way on this thread. */
export class EngramLockError extends EngramError {
  readonly kind: 'locked';
}

/** A store that cannot be opened or used. */
export class EngramStoreError extends EngramError {
  readonly kind: 'store';
}

/** The domain (or the store) was closed; nothing ran. */
export class EngramClosedError extends EngramError {
  readonly kind: 'closed';
}

/** How an OpenAI-compatible embeddings endpoint is reached ({@link endpointEmbedder}). */
export interface EndpointOptions {
  /** Its URL up to the version (`https://api.openai.com/v1`), or the whole URL of its embeddings (`…/v1/embeddings`). */
  url: string;
  /** The model asked for, and the name the domain records for its vectors. */
  model: string;
  /** Sent as `Authorization: Bearer <key>`. */
  key?: string;
  /** How many numbers the model's vectors have; learned from one text embedded when absent. */
  dimension?: number;
  /** How long one request may take, in ms: every host's 30 s when absent. */
  timeoutMs?: number;
}

/**
 * An embedder over an OpenAI-compatible embeddings endpoint (`POST {model, input, input_type}`,
 * `input_type` the role): at most 64 texts a request (every host's bound), answering promises (a domain
 * opened with `{async: true}`); a failure throws naming the endpoint.
 */
export function endpointEmbedder(options: EndpointOptions): Promise<AsyncEmbedder>;

export function open(agent: string, options: AsyncOpenOptions): Promise<AsyncDomain>;
export function open(agent: string, options?: OpenOptions): Promise<Domain>;
/** Whether this runtime has JavaScript Promise Integration, which an async domain over a store written in JavaScript needs outside Node. */
export function hasJspi(): boolean;
/** A store in the Rust host (Node): a SQLite file or a PostgreSQL URL, or memory when `spec` is absent. */
export function openStore(spec?: string, options?: { sqlite?: SqliteOptions; postgres?: PostgresOptions }): Promise<NativeStore>;
/** A store given by path or URL, a store {@link openStore} opened, or a store written in JavaScript. */
export type AnyStore = Backend | AsyncBackend | NativeStore | string;
export function auditTrail(
  store: AnyStore,
  query?: AuditQuery,
  options?: Pick<OpenOptions, 'async' | 'coreModule'>,
): Promise<Json[]>;
export function exportStore(store: AnyStore, options?: { agents?: string[] } & OpenOptions): Promise<Array<{ agent_id: string; item: Json }>>;
export function importStore(
  store: AnyStore,
  lines: Array<{ agent_id: string; item: Json }>,
  options?: OpenOptions,
): Promise<Array<{ agent_id: string; items: number; new: number }>>;
export function expireStore(
  store: AnyStore,
  options?: { agents?: string[] } & OpenOptions,
): Promise<Array<{ agent_id: string; expired: number }>>;
export function domains(store: AnyStore, options?: OpenOptions): Promise<string[]>;
export function forget(
  store: AnyStore,
  agent: string,
  options?: { clock?: () => number; sqlite?: SqliteOptions; postgres?: PostgresOptions },
): Promise<{ agent_id: string; removed: number }>;
export function unlock(store: AnyStore, agent: string): Promise<{ agent_id: string; unlocked: boolean }>;

/** The import object of a jco-transpiled component, each interface under both names. */
export function componentImports(interfaces: Record<string, object>, version?: string): Record<string, object>;
/** JSON text with BigInt as exact integers. */
export function stringify(value: unknown): string;
/** JSON with integers beyond 2^53 as BigInt. */
export function parse(text: string): any;
