// The types of `engram-memory/backends/indexeddb` (indexeddb.js): a store in
// the browser over IndexedDB, one database per agent domain (`engram:<agent>`),
// for `open(agent, {async: true, store})`.
import type { AsyncBackend } from '../../index.js';

/** How an IndexedDB store is opened. */
export interface IndexedDbOptions {
  /** The database's name is `<prefix>:<agent>`; `engram` by default. */
  prefix?: string;
  /** The IndexedDB factory; `globalThis.indexedDB` by default. */
  indexedDB?: object;
  /** The Web Locks manager two tabs' writers take turns by; `navigator.locks` by default, `null` for none. */
  locks?: { request(name: string, options: object, callback: (lock: unknown) => Promise<unknown>): Promise<unknown> } | null;
}

/**
 * A store over one IndexedDB database: every call answers a promise; a
 * commit is one readwrite transaction (`durability: 'strict'`) over the keys
 * and the audit trail; writers of a domain take turns by a Web Lock.
 */
export interface IndexedDbBackend extends Required<AsyncBackend> {
  /** The database's name. */
  readonly name: string;
}
export const IndexedDbBackend: {
  /** Opens (creating it when new) the database `name` as a store. */
  open(name: string, options?: Omit<IndexedDbOptions, 'prefix'>): Promise<IndexedDbBackend>;
};

/** The store of one agent's domain: the database `<prefix>:<agent>` of this origin. */
export function openIndexedDb(agent: string, options?: IndexedDbOptions): Promise<IndexedDbBackend>;
/** Deletes the database of an agent's domain: its memory and its audit trail. */
export function deleteIndexedDb(agent: string, options?: Omit<IndexedDbOptions, 'locks'>): Promise<void>;
/** The database name of an agent's domain: `<prefix>:<agent>`. */
export function databaseName(agent: string, prefix?: string): string;
