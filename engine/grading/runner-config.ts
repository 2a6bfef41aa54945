// Checks that cannot be gamed from the workspace: the files that decide what a check command really runs (the test
// runner's configuration, scripts, and modules that shadow a tool) are protected by default whenever a task has command
// checks. A change to one of them is its own violation kind ("check configuration"), whatever the task's `protect`
// says; a task that must change one names it exactly in its `scope`.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Files (by base name, anywhere in the repository) that configure or hook a test runner. */
const RUNNER_FILES = new Set([
  "conftest.py",
  "pytest.ini",
  ".pytest.ini",
  "tox.ini",
  "noxfile.py",
  ".npmrc",
  ".yarnrc",
  ".yarnrc.yml",
  ".pnpmfile.cjs",
  ".mocharc",
  ".mocharc.js",
  ".mocharc.cjs",
  ".mocharc.json",
  ".mocharc.yml",
  ".mocharc.yaml",
  ".babelrc",
  ".babelrc.js",
  ".nycrc",
  ".coveragerc",
  "sitecustomize.py",
  "usercustomize.py",
  "Makefile",
  "makefile",
  "GNUmakefile",
]);

/** Top-level files named like a tool or a module a check may run: they shadow it (`python -m pytest` imports ./pytest.py first). */
const SHADOW_TOP =
  /^(pytest|_pytest|py|unittest|nose|nose2|doctest|coverage|hypothesis|tox|pip|setuptools|site|runpy|importlib|node|npm|npx|yarn|pnpm|jest|vitest|mocha|tsc|make|bash|sh|python|python3)(\.py|\.pth|\.js|\.cjs|\.mjs|\.sh)?$/;

/** Files whose runner-related part only counts (the rest may change freely): compared between the base and the commit. */
const SECTIONED = new Set(["package.json", "pyproject.toml", "setup.cfg"]);

/** Why a changed path (relative to the repository root, "/"-separated) may change what a check runs, or null. */
export function runnerConfigReason(file: string): string | null {
  const parts = file.split("/");
  const base = parts[parts.length - 1]!;
  if (parts.includes("node_modules")) return "node_modules/ (installed code a check runs)";
  if (parts.includes("__pycache__") && base.endsWith(".pyc")) return "compiled Python a check may import";
  if (RUNNER_FILES.has(base)) return `${base} (test runner configuration or hook)`;
  if (/\.config\.[^/]+$/.test(base) || /^\.?[\w-]+rc\.(js|cjs|mjs|json|ya?ml)$/.test(base)) return `${base} (tool configuration)`;
  if (base.endsWith(".pth")) return `${base} (Python path hook)`;
  if (parts.length === 1 && SHADOW_TOP.test(base)) return `${base} (named like a tool a check may run: it shadows it)`;
  if (parts.length === 2 && SHADOW_TOP.test(parts[0]!) && base === "__init__.py") return `${parts[0]}/ (a package named like a tool a check may run)`;
  return null;
}

/** The runner-related part of a sectioned file: package.json's scripts and runner keys; pytest/tox/coverage sections of an INI or TOML file. */
export function runnerPart(file: string, text: string | null): string {
  if (text === null) return "";
  const base = path.posix.basename(file);
  if (base === "package.json") {
    try {
      const j = JSON.parse(text) as Record<string, unknown>;
      return JSON.stringify(["scripts", "jest", "mocha", "ava", "c8", "nyc", "vitest"].map((k) => [k, j[k] ?? null]));
    } catch {
      return `unparsable:${text}`;
    }
  }
  // INI / TOML: the sections that configure a test runner, their text as is.
  const keep: string[] = [];
  let on = false;
  for (const line of text.split(/\r?\n/)) {
    const head = /^\s*\[+\s*([^\]]+?)\s*\]+\s*$/.exec(line);
    if (head) on = /^(tool[.:])?(pytest|tox|coverage|testenv|nox)\b/i.test(head[1]!);
    if (on) keep.push(line);
  }
  return keep.join("\n");
}

async function baseText(repo: string, commit: string, file: string): Promise<string | null> {
  try {
    // Read from the user's repository's objects (no filter, no hook runs for cat-file).
    const { stdout } = await run("git", ["-C", repo, "cat-file", "blob", `${commit}:${file}`], {
      maxBuffer: 16 * 1024 * 1024,
      env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" },
    });
    return stdout;
  } catch {
    return null;
  }
}

function newText(checkout: string, file: string): string | null {
  try {
    return readFileSync(path.join(checkout, file), "utf8");
  } catch {
    return null;
  }
}

/**
 * The changed files (relative to the repository root) that change what a check runs, each with why; those the task's
 * scope names exactly are allowed. Sectioned files count only when their runner part differs from the base's.
 */
export async function runnerConfigChanges(opts: {
  changed: string[];
  sub: string;
  scope: string[];
  repo: string;
  baseCommit: string;
  checkout: string;
}): Promise<string[]> {
  const named = new Set(opts.scope.map((s) => s.replace(/^\.\//, "")));
  const out: string[] = [];
  for (const file of opts.changed) {
    // Scope globs are relative to the folder the user named (`sub`); git paths to the repository's root.
    const rel = opts.sub ? (file.startsWith(opts.sub + "/") ? file.slice(opts.sub.length + 1) : `../${file}`) : file;
    if (named.has(rel)) continue;
    const base = path.posix.basename(file);
    if (SECTIONED.has(base)) {
      const before = runnerPart(file, await baseText(opts.repo, opts.baseCommit, file));
      const after = runnerPart(file, newText(opts.checkout, file));
      if (before !== after)
        out.push(`check configuration changed: ${file} (${base === "package.json" ? "its scripts or test runner settings" : "its test runner sections"})`);
      continue;
    }
    const why = runnerConfigReason(file) ?? (rel.startsWith("../") ? null : runnerConfigReason(rel));
    if (why) out.push(`check configuration changed: ${file} — ${why}`);
  }
  return out;
}
