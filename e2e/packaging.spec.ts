// The desktop packaging config (electron-builder.yml): checked with electron-builder's own schema validation, for the
// artifacts people install (Linux AppImage + deb, macOS dmg, Windows nsis), the ocw:// deep-link scheme, and the files
// it packs, which must exist after the build (global setup builds them). A real `--dir` build needs an Electron 45
// binary, which cannot be downloaded here: with OCW_ELECTRON_DIST set to a folder holding one it runs; otherwise that
// test reports itself skipped with the reason.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { expect, test } from "@playwright/test";
import YAML from "yaml";

const ROOT = path.resolve(__dirname, "..");
const require_ = createRequire(__filename);
const config = () => YAML.parse(readFileSync(path.join(ROOT, "electron-builder.yml"), "utf8")) as Record<string, any>;

async function validate(cfg: unknown): Promise<string | null> {
  const { validateConfiguration } = require_("app-builder-lib/out/util/config/config") as { validateConfiguration: (c: unknown, l: unknown) => Promise<void> };
  const { DebugLogger } = require_("builder-util") as { DebugLogger: new (enabled: boolean) => unknown };
  try {
    await validateConfiguration(cfg, new DebugLogger(false));
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

test("electron-builder accepts the config, and would refuse a broken one", async () => {
  expect(await validate(config())).toBeNull();
  const broken = { ...config(), linux: { ...config().linux, target: 42 }, nsis: { oneClick: "sometimes" } };
  expect(await validate(broken)).toMatch(/does not match the API schema/);
});

test("it makes Linux (AppImage, deb), macOS (dmg) and Windows (nsis) artifacts, registers ocw://, and the deb pulls in bubblewrap and git", () => {
  const c = config();
  expect(c.linux.target).toEqual(expect.arrayContaining(["AppImage", "deb"]));
  expect(c.mac.target).toEqual(expect.arrayContaining(["dmg"]));
  expect(c.win.target).toEqual(expect.arrayContaining(["nsis"]));
  expect(c.protocols).toEqual([expect.objectContaining({ schemes: ["ocw"] })]);
  expect(c.linux.mimeTypes).toContain("x-scheme-handler/ocw");
  // A `depends` list replaces electron-builder's own: Electron's libraries must stay in it.
  expect(c.deb.depends).toEqual(expect.arrayContaining(["bubblewrap", "git", "libgtk-3-0", "libnss3", "libnotify4", "xdg-utils"]));
  expect(c.linux.maintainer).toMatch(/<.+@.+>/);
  expect(c.asar).toBe(false);
});

test("everything it packs exists after the build: the main process it starts, the preload, the UI, the engine bundle, protocol and packs", () => {
  const c = config();
  const pkg = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { main: string };
  expect(c.extraMetadata.main).toBe(pkg.main);
  for (const f of [pkg.main, "out/preload/preload.js", "out/renderer/index.html", "dist/ocw.mjs", "protocol", "packs", "skills"]) {
    expect(existsSync(path.join(ROOT, f)), `${f} (packed by electron-builder.yml) is missing: run npm run build`).toBe(true);
  }
  // Each included folder of `files` is one of those.
  for (const glob of c.files as string[])
    if (!glob.startsWith("!") && glob.endsWith("/**")) expect(existsSync(path.join(ROOT, glob.slice(0, -3))), glob).toBe(true);
  // The release the app was built from, where its engine reads it (engine/api/build-info.ts): without it the app's engine
  // reports no version, never replaces an older idle engine and is replaced by any client.
  expect(c.files).toContain("plugin/.claude-plugin/plugin.json");
  expect(JSON.parse(readFileSync(path.join(ROOT, "plugin/.claude-plugin/plugin.json"), "utf8")).version).toMatch(/^\d+\.\d+\.\d+$/);
  // The icon: a PNG of at least 512×512 (macOS needs that size; Linux and Windows are made from it).
  const icon = readFileSync(path.join(ROOT, c.linux.icon));
  expect(icon.subarray(1, 4).toString()).toBe("PNG");
  expect(icon.readUInt32BE(16)).toBeGreaterThanOrEqual(512);
  expect(icon.readUInt32BE(20)).toBeGreaterThanOrEqual(512);
});

test("a Linux --dir build lays the app out as configured (needs an Electron 45 binary: OCW_ELECTRON_DIST)", () => {
  const dist = process.env.OCW_ELECTRON_DIST;
  test.skip(
    !dist || !existsSync(path.join(dist, "electron")),
    "no Electron binary: npm's electron package ships none and its download host is unreachable here. Set OCW_ELECTRON_DIST to a folder holding an Electron 45 Linux build to run this test.",
  );
  test.setTimeout(600_000);
  const out = mkdtempSync(path.join(os.tmpdir(), "ocw-pack-"));
  try {
    execFileSync(
      process.execPath,
      [require_.resolve("electron-builder/cli.js"), "--linux", "--dir", `-c.electronDist=${dist}`, `-c.directories.output=${out}`],
      { cwd: ROOT, stdio: "pipe", timeout: 540_000 },
    );
    const app = path.join(out, "linux-unpacked");
    expect(existsSync(path.join(app, "opencode-worker"))).toBe(true);
    for (const f of [
      "out/main/main.js",
      "out/preload/preload.js",
      "out/renderer/index.html",
      "dist/ocw.mjs",
      "protocol",
      "packs",
      "package.json",
      "plugin/.claude-plugin/plugin.json",
    ])
      expect(existsSync(path.join(app, "resources", "app", f)), f).toBe(true);
    expect(JSON.parse(readFileSync(path.join(app, "resources", "app", "package.json"), "utf8")).main).toBe("out/main/main.js");
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
