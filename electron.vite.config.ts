// electron-vite: main + preload (CJS, Node) and the renderer (the same React UI the engine serves to browsers).
// Output: out/main/main.js, out/preload/preload.js, out/renderer/index.html (served by `ocw serve` at /).
import { resolve } from "node:path";
import react from "@vitejs/plugin-react";
import { defineConfig } from "electron-vite";

const root = __dirname;

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
    plugins: [react()],
    build: {
      outDir: resolve(root, "out/renderer"),
      target: "chrome130",
      sourcemap: true,
      minify: true,
      rolldownOptions: { input: resolve(root, "renderer/index.html") },
    },
  },
});
