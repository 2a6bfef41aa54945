// Bundles the `ocw` CLI (engine, API, MCP bridge) into one ESM file: dist/ocw.mjs, and builds the browser UI it serves
// when there is no checkout's out/renderer: dist/ui (scripts/ui.mjs).
// One file is what the Claude Code plugin points at through ${CLAUDE_PLUGIN_ROOT}.
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import path from "node:path";

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
await build({
  entryPoints: [path.join(root, "engine/cli.ts")],
  outfile: path.join(root, "dist/ocw.mjs"),
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  sourcemap: "linked",
  legalComments: "none",
  logLevel: "warning",
  // opencode-ai ships a native binary; it is located at run time, never bundled.
  external: ["opencode-ai", "@napi-rs/keyring"],
  banner: {
    js: "import { createRequire as __ocwCreateRequire } from 'node:module'; const require = __ocwCreateRequire(import.meta.url);",
  },
});

// The browser UI next to the bundle (dist/ui; skipped when its sources did not change): the plugin ships it.
await (await import("./ui.mjs")).buildUi(root);

// The Claude Code plugin (plugin/) ships this bundle: keep its copy in sync (see scripts/plugin.mjs).
(await import("./plugin.mjs")).syncPlugin(root);
