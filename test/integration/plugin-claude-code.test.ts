// The plugin installed the way Claude Code users install it, by the real Claude Code CLI: `claude plugin marketplace
// add <http git URL>` (this checkout's marketplace and plugin/ folder, committed to a repository served by
// `git http-backend`), `claude plugin install`, then `claude mcp list` shows the plugin's `ocw` server connected.
import { execFileSync } from "node:child_process";
import { appendFileSync, cpSync, existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanup, ROOT, tempDir } from "../helpers";
import { claudeCode, runClaude } from "./claude-code";
import { serveGit, type GitHttp } from "./git-http";

const cc = claudeCode();
const hasBackend = (() => {
  try {
    execFileSync("git", ["http-backend"], { env: { REQUEST_METHOD: "GET", PATH: process.env.PATH }, stdio: "pipe" });
    return true;
  } catch (err) {
    // Without GIT_PROJECT_ROOT it answers 4xx/5xx on stdout yet exists; only a missing program throws ENOENT-ish.
    return !/not a git command|ENOENT/.test(String((err as { stderr?: Buffer }).stderr ?? (err as Error).message));
  }
})();
const skip = "skip" in cc ? cc.skip : !hasBackend ? "`git http-backend` is not available (git's smart HTTP CGI)" : null;

let http: GitHttp;
let home: string;
let project: string;
let gitRoot: string;
let stateDir: string;
let env: NodeJS.ProcessEnv;
/** The marketplace's working copy: later commits are pushed to the served repository, as a maintainer's would be. */
let work: string;
const claude = (args: string[], o: { cwd?: string; timeoutMs?: number } = {}) =>
  runClaude((cc as { bin: string }).bin, args, { env, cwd: o.cwd ?? project, timeoutMs: o.timeoutMs });

/** A repository with what a push of this checkout would carry for the plugin: the marketplace and plugin/. */
function marketplaceRepo(): string {
  work = tempDir("marketplace");
  // With the root's ignore rules, so that the commit below holds what a real commit of this checkout would.
  cpSync(path.join(ROOT, ".gitignore"), path.join(work, ".gitignore"));
  cpSync(path.join(ROOT, ".claude-plugin"), path.join(work, ".claude-plugin"), { recursive: true });
  cpSync(path.join(ROOT, "plugin"), path.join(work, "plugin"), { recursive: true, filter: (src) => !/node_modules|\.lock$/.test(path.relative(ROOT, src)) });
  const git = (...a: string[]) => execFileSync("git", a, { cwd: work, stdio: "pipe" });
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "marketplace");
  execFileSync("git", ["clone", "-q", "--bare", work, path.join(gitRoot, "opencode-worker.git")], { stdio: "pipe" });
  return path.join(gitRoot, "opencode-worker.git");
}

/** Commits what changed in the marketplace's working copy and pushes it to the served repository. */
function publish(message: string): void {
  const git = (...a: string[]) => execFileSync("git", a, { cwd: work, stdio: "pipe" });
  git("add", "-A");
  git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message);
  git("push", "-q", path.join(gitRoot, "opencode-worker.git"), "main");
}

describe.skipIf(!!skip)(`Claude Code installs the plugin from git${skip ? ` (skipped: ${skip})` : ""}`, () => {
  beforeAll(async () => {
    home = tempDir("cc-home");
    project = tempDir("cc-project");
    gitRoot = tempDir("cc-git");
    stateDir = tempDir("cc-state");
    execFileSync("git", ["init", "-q", "-b", "main"], { cwd: project });
    env = {
      PATH: process.env.PATH,
      HOME: home,
      // The plugin's MCP server inherits Claude Code's environment: point it at this test's engine state.
      OCW_STATE_DIR: stateDir,
      OCW_STALL_SEC: "600",
      DISABLE_AUTOUPDATER: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_TELEMETRY: "1",
    };
    marketplaceRepo();
    http = await serveGit(gitRoot);
  });

  afterAll(async () => {
    await http?.close();
    // The bridge starts no engine for `mcp list`; end one if a call did.
    const lock = path.join(stateDir ?? "", "engine.json");
    if (existsSync(lock)) {
      try {
        process.kill(JSON.parse(readFileSync(lock, "utf8")).pid, "SIGTERM");
      } catch {}
    }
    cleanup(home, project, gitRoot, stateDir, work);
  });

  it("marketplace add from an http .git URL, install, and `claude mcp list` shows the ocw server connected", async () => {
    const url = http.url("opencode-worker");
    const add = await claude(["plugin", "marketplace", "add", url]);
    expect(add.code, `${add.stdout}\n${add.stderr}`).toBe(0);
    expect(http.requests.some((r) => r.includes("git-upload-pack"))).toBe(true);

    const t0 = Date.now();
    const install = await claude(["plugin", "install", "opencode-worker@opencode-worker"], { timeoutMs: 300_000 });
    expect(install.code, `${install.stdout}\n${install.stderr}`).toBe(0);
    const installSec = (Date.now() - t0) / 1000;

    // The installed copy: the slim folder, with its one dependency and no Electron or Playwright.
    const cache = path.join(home, ".claude", "plugins", "cache");
    const roots = findPluginRoots(cache);
    expect(roots, `no installed opencode-worker under ${cache}`).toHaveLength(1);
    const pluginRoot = roots[0]!;
    expect(existsSync(path.join(pluginRoot, "dist", "ocw.mjs"))).toBe(true);
    expect(existsSync(path.join(pluginRoot, "bin", "ocw"))).toBe(true);
    expect(statSync(path.join(pluginRoot, "bin", "ocw")).mode & 0o111).not.toBe(0);
    const modules = existsSync(path.join(pluginRoot, "node_modules")) ? readdirSync(path.join(pluginRoot, "node_modules")) : [];
    expect(modules.filter((m) => /electron|playwright/.test(m))).toEqual([]);

    const list = await claude(["mcp", "list"], { timeoutMs: 120_000 });
    const out = `${list.stdout}\n${list.stderr}`;
    const line = out.split("\n").find((l) => /ocw/.test(l)) ?? "";
    expect(line, out).toMatch(/plugin:opencode-worker:ocw/);
    expect(line, out).toMatch(/Connected/);
    expect(line, out).not.toMatch(/Failed/);
    // The first run placed opencode's real binary (Claude Code's npm ci skips its postinstall).
    const opencode = path.join(pluginRoot, "node_modules", "opencode-ai", "bin", "opencode.exe");
    if (modules.includes("opencode-ai")) expect(statSync(opencode).size).toBeGreaterThan(1_000_000);
    console.log(`claude plugin install: ${installSec.toFixed(1)} s; node_modules: ${modules.join(", ") || "(none: the launcher installs on first run)"}`);
  });

  it("`claude plugin details` counts the MCP server (.mcp.json), the supervisor subagent, the slash commands and both hooks", async () => {
    const d = await claude(["plugin", "details", "opencode-worker@opencode-worker"]);
    const out = `${d.stdout}\n${d.stderr}`;
    expect(d.code, out).toBe(0);
    expect(out).toMatch(/MCP servers \(1\)\s+ocw/);
    expect(out).toMatch(/Agents \(1\)\s+opencode-worker-supervisor/);
    expect(out).toMatch(/Hooks \(2\)\s+SessionStart, Stop/);
    // Slash commands are listed among the skills.
    for (const c of ["gui", "setup", "status", "opencode-worker", "model-setup"]) expect(out).toMatch(new RegExp(`Skills \\(5\\)[^\\n]*\\b${c}\\b`));
  });

  it("a release reaches users: a change under the same version is not delivered; after `npm run plugin:release` it is", async () => {
    const version = () =>
      JSON.parse(
        readFileSync(
          path.join(
            // the newest version's folder: compared as numbers (0.1.10 after 0.1.9), not as text
            findPluginRoots(path.join(home, ".claude", "plugins", "cache"))
              .sort((a, b) => a.localeCompare(b, "en", { numeric: true }))
              .at(-1)!,
            ".claude-plugin",
            "plugin.json",
          ),
          "utf8",
        ),
      ).version as string;
    const before = JSON.parse(readFileSync(path.join(work, "plugin", ".claude-plugin", "plugin.json"), "utf8")).version as string;
    expect(version()).toBe(before);
    appendFileSync(path.join(work, "plugin", "README.md"), "\nA change that ships.\n");
    publish("a change without a release");
    expect((await claude(["plugin", "marketplace", "update", "opencode-worker"])).code).toBe(0);
    const same = await claude(["plugin", "update", "opencode-worker@opencode-worker"], { timeoutMs: 300_000 });
    expect(`${same.stdout}${same.stderr}`).toMatch(new RegExp(`already at the latest version \\(${before.replace(/\./g, "\\.")}\\)`));

    const rel = execFileSync(process.execPath, [path.join(ROOT, "scripts", "plugin-release.mjs"), "--root", work, "README note"], { encoding: "utf8" });
    const [maj, min, patch] = before.split(".").map(Number);
    const next = `${maj}.${min}.${patch! + 1}`;
    expect(rel).toContain(`released ${next}`);
    publish(`release ${next}`);
    expect((await claude(["plugin", "marketplace", "update", "opencode-worker"])).code).toBe(0);
    const up = await claude(["plugin", "update", "opencode-worker@opencode-worker"], { timeoutMs: 300_000 });
    const out = `${up.stdout}${up.stderr}`;
    expect(up.code, out).toBe(0);
    expect(out).toMatch(new RegExp(`updated from ${before.replace(/\./g, "\\.")} to ${next.replace(/\./g, "\\.")}`));
    expect(version()).toBe(next);
  });
});

function findPluginRoots(dir: string, depth = 0): string[] {
  if (!existsSync(dir) || depth > 5) return [];
  if (existsSync(path.join(dir, ".claude-plugin", "plugin.json"))) {
    const m = JSON.parse(readFileSync(path.join(dir, ".claude-plugin", "plugin.json"), "utf8"));
    return m.name === "opencode-worker" ? [dir] : [];
  }
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() && d.name !== "node_modules" ? findPluginRoots(path.join(dir, d.name), depth + 1) : [],
  );
}
