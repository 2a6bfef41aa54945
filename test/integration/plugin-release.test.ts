// Releases that reach users: Claude Code updates an installed plugin only when its version changes, so what ships in
// plugin/ must never change without a new version. plugin/release.json records the last release (version and a hash of
// the shipped files); `npm run plugin:release` bumps the version in both manifests and records the new content.
import { execFileSync } from "node:child_process";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script without types
import { contentHash, manifestVersions, readRelease, release } from "../../scripts/plugin-release.mjs";
import { cleanup, ROOT, tempDir } from "../helpers";

const dirs: string[] = [];
afterAll(() => cleanup(...dirs));

/** A copy of the parts a release touches: the marketplace manifest and plugin/ (without installed modules). */
function copy(): string {
  const root = tempDir("plugin-release");
  dirs.push(root);
  cpSync(path.join(ROOT, ".claude-plugin"), path.join(root, ".claude-plugin"), { recursive: true });
  cpSync(path.join(ROOT, "plugin"), path.join(root, "plugin"), { recursive: true, filter: (src) => !/node_modules|\.lock$/.test(path.relative(ROOT, src)) });
  return root;
}

describe("plugin releases", () => {
  it("what ships in plugin/ is the last release's content, under that release's version in both manifests (run `npm run plugin:release` when this fails)", () => {
    const last = readRelease(ROOT);
    expect(last, "plugin/release.json is missing: run `npm run plugin:release`").not.toBeNull();
    const versions = manifestVersions(ROOT);
    expect(
      contentHash(path.join(ROOT, "plugin")),
      `plugin/ changed since release ${last.version} but the version did not: run \`npm run plugin:release\` and commit what it writes`,
    ).toBe(last.contentHash);
    expect(versions).toEqual({ plugin: last.version, marketplace: last.version });
    expect(readFileSync(path.join(ROOT, "plugin", "CHANGELOG.md"), "utf8")).toContain(`- ${last.version} (`);
  });

  it("a change to a shipped file bumps the patch version in both manifests, records the new hash and a changelog line; no change, no release", () => {
    const root = copy();
    const before = readRelease(root);
    // Bring the copy to a released state first (this checkout may hold unreleased changes).
    release(root);
    const base = readRelease(root);
    expect(release(root)).toMatchObject({ released: false, version: base.version });

    writeFileSync(
      path.join(root, "plugin", "skills", "opencode-worker", "SKILL.md"),
      readFileSync(path.join(root, "plugin", "skills", "opencode-worker", "SKILL.md"), "utf8") + "\nA new line.\n",
    );
    // The check of the first test, on the copy: content changed, version not.
    expect(contentHash(path.join(root, "plugin"))).not.toBe(base.contentHash);
    const r = release(root, { today: "2026-12-05" });
    const [maj, min, patch] = base.version.split(".").map(Number);
    const next = `${maj}.${min}.${patch + 1}`;
    expect(r).toMatchObject({ released: true, version: next, changed: ["skills/opencode-worker/SKILL.md"] });
    expect(manifestVersions(root)).toEqual({ plugin: next, marketplace: next });
    expect(readRelease(root)).toMatchObject({ version: next, contentHash: contentHash(path.join(root, "plugin")) });
    const log = readFileSync(path.join(root, "plugin", "CHANGELOG.md"), "utf8");
    expect(log).toContain(`- ${next} (2026-12-05): changed: skills/opencode-worker/SKILL.md`);
    expect(log.indexOf(`- ${next} `)).toBeLessThan(log.indexOf(`- ${before.version} `));
    expect(log.match(/^# /gm)).toHaveLength(1);
    // The hand-written manifest keeps its layout: only the version moved.
    const manifest = readFileSync(path.join(root, "plugin", ".claude-plugin", "plugin.json"), "utf8");
    expect(manifest.replace(`"version": "${next}"`, "")).toBe(
      readFileSync(path.join(ROOT, "plugin", ".claude-plugin", "plugin.json"), "utf8").replace(/"version": "[^"]*"/, ""),
    );

    // The script as `npm run plugin:release` runs it, with a note; a second run changes nothing.
    writeFileSync(path.join(root, "plugin", "README.md"), "changed\n");
    const out = execFileSync(process.execPath, [path.join(ROOT, "scripts", "plugin-release.mjs"), "--root", root, "README", "rewritten"], { encoding: "utf8" });
    expect(out).toMatch(new RegExp(`released ${maj}\\.${min}\\.${patch + 2}`));
    expect(readFileSync(path.join(root, "plugin", "CHANGELOG.md"), "utf8")).toMatch(
      new RegExp(`- ${maj}\\.${min}\\.${patch + 2} \\(\\d{4}-\\d\\d-\\d\\d\\): README rewritten\\n`),
    );
    expect(execFileSync(process.execPath, [path.join(ROOT, "scripts", "plugin-release.mjs"), "--root", root], { encoding: "utf8" })).toMatch(/nothing changed/);
  });
});
