// plugin/ is the Claude Code plugin as installed from git, with no build step: its generated files must be exactly what
// the build makes from the committed sources, and a copy installed as Claude Code installs it (npm ci --ignore-scripts)
// must run: `ocw` works, opencode's real binary is placed, the MCP bridge answers and keeps Claude Code's secrets out
// of the engine it starts.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs build script without types
import { GENERATED_DIRS, generatedFiles } from "../../scripts/plugin.mjs";
import { cleanup, ROOT, tempDir } from "../helpers";
import { startMcp, type McpHandle } from "./mcp-helpers";

const git = (...args: string[]) => execFileSync("git", args, { cwd: ROOT, encoding: "utf8", maxBuffer: 64 * 1024 * 1024, stdio: ["ignore", "pipe", "pipe"] });
const isRepo = (() => {
  try {
    return git("rev-parse", "--is-inside-work-tree").trim() === "true";
  } catch {
    return false;
  }
})();

const dirs: string[] = [];
const handles: McpHandle[] = [];
afterAll(async () => {
  for (const h of handles) await h.close().catch(() => undefined);
  cleanup(...dirs);
});

describe.skipIf(!isRepo)(`plugin/ is in sync with the sources${isRepo ? "" : " (skipped: not a git checkout, nothing committed to compare)"}`, () => {
  it("every generated file equals a fresh build of the committed sources (run `npm run build:cli` and commit plugin/ when this fails)", () => {
    const fresh = generatedFiles(ROOT) as Map<string, string>;
    const committed = new Set(
      git("ls-tree", "-r", "--name-only", "HEAD", "plugin/")
        .split("\n")
        .filter(Boolean)
        .map((f) => f.slice("plugin/".length)),
    );
    const stale: string[] = [];
    for (const [rel, content] of fresh) {
      if (!committed.has(rel)) stale.push(`${rel} (not committed)`);
      else if (git("show", `HEAD:plugin/${rel}`) !== content) stale.push(`${rel} (differs)`);
    }
    for (const rel of committed) if (GENERATED_DIRS.some((d: string) => rel.startsWith(`${d}/`)) && !fresh.has(rel)) stale.push(`${rel} (no longer generated)`);
    const dirty = git("status", "--porcelain", "--", "engine", "shared", "skills", "protocol", "packs", "package.json", "package-lock.json").trim();
    expect(
      stale,
      `plugin/ is stale: run \`npm run build:cli\` and commit plugin/ together with its sources${dirty ? ` (uncommitted source changes here: ${dirty.split("\n").length} file(s))` : ""}`,
    ).toEqual([]);
  });

  it("the hand-written parts agree: version, server name, launcher on the Bash PATH", () => {
    const manifest = JSON.parse(readFileSync(path.join(ROOT, "plugin", ".claude-plugin", "plugin.json"), "utf8"));
    const market = JSON.parse(readFileSync(path.join(ROOT, ".claude-plugin", "marketplace.json"), "utf8"));
    // The plugin's own release version (npm run plugin:release; plugin-release.test.ts checks it moves with the content).
    expect(market.plugins[0]).toMatchObject({ name: manifest.name, source: "./plugin", version: manifest.version });
    // The server is declared in .mcp.json (what `claude plugin details` counts), not inline.
    expect(manifest.mcpServers).toBeUndefined();
    const mcp = JSON.parse(readFileSync(path.join(ROOT, "plugin", ".mcp.json"), "utf8"));
    expect(mcp.mcpServers).toEqual({ ocw: { command: "node", args: ["${CLAUDE_PLUGIN_ROOT}/bin/ocw", "mcp"] } });
    // Committed executable, so a git install keeps the mode.
    expect(git("ls-files", "-s", "plugin/bin/ocw").split(" ")[0]).toBe("100755");
    const lock = JSON.parse(readFileSync(path.join(ROOT, "plugin", "package-lock.json"), "utf8"));
    expect(Object.keys(lock.packages).filter((k) => k && !/^node_modules\/opencode-/.test(k))).toEqual([]);
  });
});

describe("the plugin installed as Claude Code installs it", () => {
  it("npm ci --ignore-scripts → ocw runs, places opencode's binary, and the MCP bridge starts an engine without Claude Code's secrets", async () => {
    const copy = tempDir("plugin-copy");
    const stateDir = tempDir("plugin-state");
    dirs.push(copy, stateDir);
    cpSync(path.join(ROOT, "plugin"), copy, { recursive: true, filter: (src) => !/node_modules|\.lock$/.test(path.relative(ROOT, src)) });
    execFileSync("npm", ["ci", "--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], {
      cwd: copy,
      stdio: "pipe",
      timeout: 240_000,
    });
    const stub = path.join(copy, "node_modules", "opencode-ai", "bin", "opencode.exe");
    expect(statSync(stub).size, "npm ci --ignore-scripts leaves opencode-ai's stub").toBeLessThan(10_000);
    expect(existsSync(path.join(copy, "node_modules", "electron"))).toBe(false);

    const env = { PATH: process.env.PATH ?? "", HOME: copy, OCW_STATE_DIR: stateDir };
    const version = execFileSync(path.join(copy, "bin", "ocw"), ["--version"], { env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    // the release this install is (its plugin.json), not the package's version
    expect(version.trim()).toBe(JSON.parse(readFileSync(path.join(ROOT, "plugin", ".claude-plugin", "plugin.json"), "utf8")).version);
    expect(statSync(stub).size, "the first run places the real binary").toBeGreaterThan(1_000_000);
    expect(execFileSync(stub, ["--version"], { encoding: "utf8" }).trim()).toMatch(/^\d+\.\d+\.\d+/);

    const mcp = await startMcp(stateDir, "plugin-test", {
      command: path.join(copy, "bin", "ocw"),
      env: { ANTHROPIC_API_KEY: "sk-ant-test-secret", CLAUDE_CODE_OAUTH_TOKEN: "oauth-test-secret", CLAUDE_PROJECT_DIR: copy, CLAUDECODE: "1", HOME: copy },
    });
    handles.push(mcp);
    const { tools } = await mcp.client.listTools();
    expect(tools.map((t) => t.name)).toContain("delegate");
    const s = await mcp.call("setup_status");
    expect(s.engine.pid).toBeGreaterThan(0);
    try {
      // The engine runs this copy's ocw (its launcher or bundle), and Claude Code's keys never reached it (nor, so, opencode or worker shells).
      const cmdline = readFileSync(`/proc/${s.engine.pid}/cmdline`, "utf8");
      expect(
        cmdline.split("\0").some((arg) => arg.startsWith(copy + path.sep)),
        cmdline,
      ).toBe(true);
      const environ = readFileSync(`/proc/${s.engine.pid}/environ`, "utf8").split("\0");
      expect(environ.filter((e) => /^(ANTHROPIC_|CLAUDE_CODE_OAUTH|CLAUDECODE=)/.test(e))).toEqual([]);
      expect(environ.join("\n")).not.toContain("test-secret");
    } finally {
      process.kill(s.engine.pid, "SIGTERM");
    }
  });
});
