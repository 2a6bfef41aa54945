#!/usr/bin/env node
// Thin launcher: the CLI is bundled into dist/ocw.mjs by `npm run build` (also run by `npm ci` via prepare).
import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import path from "node:path";

const bundle = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "dist", "ocw.mjs");
if (!existsSync(bundle)) {
  console.error("ocw: dist/ocw.mjs is missing. Run `npm run build` (or `npm ci`) in the opencode-worker checkout.");
  process.exit(2);
}
await import(pathToFileURL(bundle).href);
