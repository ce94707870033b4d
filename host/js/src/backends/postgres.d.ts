// The types of `engram-memory/backends/postgres` (postgres.js).
import type { AsyncBackend, PostgresOptions } from '../../index.js';

export type { PostgresOptions };

/** The schema version this host reads and writes. */
export const SCHEMA_VERSION: number;
/** The advisory lock key under which hosts create and check the tables. */
export const MIGRATION_LOCK: number;
/** How to install node-postgres. */
export const INSTALL: string;

/**
 * A store in one schema of a PostgreSQL database (the class of postgres.js,
 * opened by {@link openPostgres}); every method answers a promise.
 */
export interface PostgresBackend extends Required<AsyncBackend> {
  /** The URL, any password hidden. */
  readonly url: string;
  /** The schema the tables are in. */
  readonly schema: string;
}

/** Opens the store at `url`, creating the schema and its tables if they do not exist. */
export function openPostgres(url: string, options?: PostgresOptions): Promise<PostgresBackend>;
export function checkSchemaName(schema: string): void;
export function redacted(url: string): string;
