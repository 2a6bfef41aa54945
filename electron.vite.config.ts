// electron-vite: main + preload (CJS, Node) and the renderer (the same React UI the engine serves to browsers).
// Output: out/main/main.js, out/preload/preload.js, out/renderer/index.html (served by `ocw serve` at /).
import { resolve } from "node:path";
import react from "@vitejs/plugin-react";
import { defineConfig } from "electron-vite";
import type { Plugin } from "vite";

const root = __dirname;

/**
 * The renderer's entry paints a static shell, then imports the app chunk (renderer/src/main.tsx): the page names that
 * chunk and the chunks it imports as modulepreloads, so they download while the shell paints instead of after.
 */
const preloadApp = (): Plugin => ({
  name: "ocw-preload-app",
  transformIndexHtml: {
    order: "post",
    handler(html, ctx) {
      const chunks = new Map<string, { fileName: string; imports: string[] }>();
      for (const c of Object.values(ctx.bundle ?? {})) if (c.type === "chunk") chunks.set(c.fileName, c);
      const app = [...chunks.values()].find((c) => "name" in c && c.name === "boot");
      if (!app) return html;
      const files = new Set<string>();
      const add = (f: string) => {
        if (files.has(f)) return;
        files.add(f);
        for (const i of chunks.get(f)?.imports ?? []) add(i);
      };
      add(app.fileName);
      const links = [...files].filter((f) => !html.includes(`/${f}"`)).map((f) => `<link rel="modulepreload" crossorigin href="./${f}">\n  `);
      return html.replace("</head>", `${links.join("")}</head>`);
    },
  },
});

export default defineConfig({
  main: {
    build: {
      // env-paths is ESM-only; the main process is CommonJS: bundle it rather than require() it.
      externalizeDeps: { exclude: ["env-paths"] },
      outDir: resolve(root, "out/main"),
      lib: { entry: resolve(root, "electron/main.ts") },
    },
  },
  preload: {
    build: {
      outDir: resolve(root, "out/preload"),
      lib: { entry: resolve(root, "electron/preload.ts") },
    },
  },
  renderer: {
    root: resolve(root, "renderer"),
    plugins: [react(), preloadApp()],
    build: {
      outDir: resolve(root, "out/renderer"),
      target: "chrome130",
      sourcemap: true,
      minify: true,
      rolldownOptions: { input: resolve(root, "renderer/index.html") },
    },
  },
});
