// Which build an `ocw` is, and when a client replaces the running engine (shared/engine-build.ts): only an older one.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { compareVersions, engineIsOlder } from "../../shared/engine-build";
import { buildOf, bundleOf, versionNear } from "./build-info";
import { olderEngineText } from "./launcher";

describe("compareVersions", () => {
  it("compares part by part, numerically", () => {
    expect(compareVersions("0.1.22", "0.1.23")).toBe(-1);
    expect(compareVersions("0.1.23", "0.1.22")).toBe(1);
    expect(compareVersions("0.1.9", "0.1.10")).toBe(-1);
    expect(compareVersions("0.2.0", "0.1.99")).toBe(1);
    expect(compareVersions("1.0", "1.0.0")).toBe(0);
    expect(compareVersions("v1.2.3", "1.2.3")).toBe(0);
    expect(compareVersions("1.2.3-rc1", "1.2.3")).toBe(0);
    expect(compareVersions("dev", "1.0.0")).toBeNull();
  });
});

describe("engineIsOlder", () => {
  const b = (version: string | null) => ({ version, id: "abc" });
  it("an engine from before the handshake (no build) is older than a client that knows its version", () => {
    expect(engineIsOlder(undefined, "0.1.23")).toBe(true);
    expect(engineIsOlder(undefined, null)).toBe(false);
  });
  it("only a lower version is older: equal (another build), newer and unknown ones are used as they are", () => {
    expect(engineIsOlder(b("0.1.22"), "0.1.23")).toBe(true);
    expect(engineIsOlder(b("0.1.23"), "0.1.23")).toBe(false);
    expect(engineIsOlder(b("0.1.24"), "0.1.23")).toBe(false);
    expect(engineIsOlder(b(null), "0.1.23")).toBe(false);
    expect(engineIsOlder(b("0.1.22"), null)).toBe(false);
    expect(engineIsOlder(b("0.1.22"), "not-a-version")).toBe(false);
  });
  it("never both ways: of two versions at most one client replaces the other's engine", () => {
    for (const [x, y] of [
      ["0.1.22", "0.1.23"],
      ["0.1.23", "0.1.23"],
      ["1.0.0", "0.9.9"],
    ] as const)
      expect(engineIsOlder(b(x), y) && engineIsOlder(b(y), x)).toBe(false);
  });
});

describe("build-info", () => {
  const root = mkdtempSync(path.join(os.tmpdir(), "ocw-build-info-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const plugin = path.join(root, "plugin");
  const checkout = path.join(root, "checkout");
  for (const d of [plugin, checkout]) {
    mkdirSync(path.join(d, "dist"), { recursive: true });
    mkdirSync(path.join(d, "bin"), { recursive: true });
    writeFileSync(path.join(d, "dist", "ocw.mjs"), `// bundle of ${d}\n`);
    writeFileSync(path.join(d, "bin", "ocw"), "#!/usr/bin/env node\n");
  }
  mkdirSync(path.join(plugin, ".claude-plugin"));
  writeFileSync(path.join(plugin, ".claude-plugin", "plugin.json"), JSON.stringify({ version: "0.1.30" }));
  mkdirSync(path.join(checkout, "plugin", ".claude-plugin"), { recursive: true });
  writeFileSync(path.join(checkout, "plugin", ".claude-plugin", "plugin.json"), JSON.stringify({ version: "0.1.31" }));

  it("reads the version beside the bundle: a plugin install's manifest, or a checkout's plugin/", () => {
    expect(versionNear(path.join(plugin, "dist", "ocw.mjs"))).toBe("0.1.30");
    expect(versionNear(path.join(checkout, "dist", "ocw.mjs"))).toBe("0.1.31");
    expect(versionNear(path.join(root, "nowhere", "dist", "ocw.mjs"))).toBeNull();
  });
  it("a launcher (bin/ocw) is the bundle beside it: same version and hash", () => {
    expect(bundleOf(path.join(plugin, "bin", "ocw"))).toBe(path.join(plugin, "dist", "ocw.mjs"));
    expect(buildOf(path.join(plugin, "bin", "ocw"))).toEqual(buildOf(path.join(plugin, "dist", "ocw.mjs")));
    const a = buildOf(path.join(plugin, "dist", "ocw.mjs"));
    const c = buildOf(path.join(checkout, "bin", "ocw"));
    expect(a.version).toBe("0.1.30");
    expect(c.version).toBe("0.1.31");
    expect(a.id).toMatch(/^[0-9a-f]{12}$/);
    expect(a.id).not.toBe(c.id);
  });
  it("says a kept older engine with the versions, when it is replaced, and `ocw stop`", () => {
    const text = olderEngineText({ pid: 1, instanceId: "i", engine: "0.1.22", client: "0.1.23", atWork: 2 }, "this bridge");
    expect(text).toBe(
      "the running engine is 0.1.22, this bridge 0.1.23 (2 workers are at work on it): it is replaced once no worker is at work, or now with `ocw stop` (running workers become interrupted, resumable)",
    );
  });
});
