#!/usr/bin/env node
// `npx engram-memory …` (or `engram …` once installed): the `engram` command
// line, the same Rust `main` as the native binary, run in this process by
// the addon: `npx engram-memory --store memory.db mcp --agent me` serves
// MCP over stdio, with no Rust toolchain.

import { addon } from '../src/addon.js';

process.exitCode = addon().main(['engram', ...process.argv.slice(2)]);
