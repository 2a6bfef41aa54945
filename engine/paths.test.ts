// Where the engine finds the browser UI it serves at /: a checkout's out/renderer first, else the ui/ next to its own
// bundle (the Claude Code plugin's plugin/dist/ui, where there is no checkout); and, where there is none, a message
// that tells this install's person what to do (a plugin user has no checkout to run `npm run build` in).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { browserUi } from "./paths";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A folder with `files` (relative path → content), as an install or checkout would hold them. */
function tree(files: string[]): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-ui-"));
  dirs.push(dir);
  for (const f of files) {
    mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    writeFileSync(path.join(dir, f), "x");
  }
  return dir;
}

describe("browserUi", () => {
  it("a checkout's out/renderer comes first, then the ui/ beside the bundle", () => {
    const root = tree(["package.json", "protocol/p.md", "renderer/index.html", "out/renderer/index.html", "dist/ui/index.html"]);
    expect(browserUi(root, path.join(root, "dist"))).toEqual({ dir: path.join(root, "out", "renderer") });
    rmSync(path.join(root, "out"), { recursive: true });
    // `npm run build:cli` alone: the bundle's own ui/.
    expect(browserUi(root, path.join(root, "dist"))).toEqual({ dir: path.join(root, "dist", "ui") });
    // From the sources (engine/), the checkout's dist/ui.
    expect(browserUi(root, path.join(root, "engine"))).toEqual({ dir: path.join(root, "dist", "ui") });
  });

  it("the plugin (no checkout): the ui/ next to its bundle, plugin/dist/ui", () => {
    const plugin = tree(["package.json", "protocol/p.md", ".claude-plugin/plugin.json", "dist/ocw.mjs", "dist/ui/index.html"]);
    expect(browserUi(plugin, path.join(plugin, "dist"))).toEqual({ dir: path.join(plugin, "dist", "ui") });
  });

  it("none: a plugin install is told to update or reinstall the plugin, not to build a checkout it does not have", () => {
    const plugin = tree(["package.json", "protocol/p.md", ".claude-plugin/plugin.json", "dist/ocw.mjs"]);
    const ui = browserUi(plugin, path.join(plugin, "dist"));
    expect(ui.dir).toBeUndefined();
    expect(ui.missing).toContain("claude plugin update opencode-worker@opencode-worker");
    expect(ui.missing).toContain(path.join(plugin, "dist", "ui", "index.html"));
    expect(ui.missing).not.toContain("npm run build");
    expect(ui.missing).not.toContain("checkout");
  });

  it("none in a checkout: build it there; none in another install: reinstall", () => {
    const checkout = tree(["package.json", "protocol/p.md", "renderer/index.html"]);
    expect(browserUi(checkout, path.join(checkout, "dist")).missing).toContain(`Run \`npm run build\` in ${checkout}.`);
    const other = tree(["package.json", "protocol/p.md", "dist/ocw.mjs"]);
    const ui = browserUi(other, path.join(other, "dist"));
    expect(ui.missing).toMatch(/Reinstall opencode-worker/);
    expect(ui.missing).not.toContain("claude plugin");
  });
});
