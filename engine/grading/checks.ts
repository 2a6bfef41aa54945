import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { execa } from "execa";
import { counted } from "../../shared/words";
import { checkName, type CheckResult, type CheckSpec, type CommandCheck, type FileCheck } from "../../shared/check";
import {
  allowListedEnv,
  checkGroup,
  type CommandGroup,
  commandLimits,
  deniedRoots,
  hitNote,
  joinPrefix,
  LIMITS_WORDS,
  limitSetup,
  revealed,
  sandboxed,
  type SandboxKind,
  systemdPrefix,
} from "../sandbox";
import { killGroup, runCommand as runProcess } from "../process";
import { hashRegular } from "../workspace";
import { discard } from "./folders";
import {
  type CheckGoals,
  type ConfigSnapshot,
  checkGoals,
  configSnapshot,
  type GoalNamesake,
  goalNamesakeWhy,
  HELD_BACK_CODE,
  plantedConfig,
  plantedModules,
} from "./runner-config";

/** How checks are confined: the checkout (`root`) and a private tmp are writable, the engine's state is hidden, no network. */
export interface CheckSandbox {
  kind: SandboxKind;
  /** Hidden from checks: the engine's state dir (the checkout and tmp inside it are bound back). */
  stateDir: string;
  tmpDir: string;
  root?: string;
  /** Read-only inside the sandbox although under `root` (the protected files). */
  readOnly?: string[];
  /**
   * Grade at the layout the worker saw (bubblewrap only): the checkout (`root`) is mounted at the worker's workspace
   * path and the checks' tmp at the worker's tmp, and nothing is mounted at the grading folders' own paths, so code
   * cannot tell grading from the worker's own runs by its path (no `/grading/` in it).
   */
  mountAs?: { root: string; tmp?: string };
}

export const DEFAULT_CHECK_TIMEOUT_SEC = 300;
const OUTPUT_CAP = 64 * 1024;
const MAX_COMPARED_BYTES = 64 * 1024 * 1024;

function cap(text: string): string {
  if (text.length <= OUTPUT_CAP) return text;
  return `… ${text.length - OUTPUT_CAP} earlier characters cut …\n` + text.slice(-OUTPUT_CAP);
}

/**
 * The check's command line with the checkout mounted where the worker's workspace was (and its tmp where the worker's
 * tmp was): the sandbox's own policy with nothing writable at the grading paths, then the checkout, the tmp and the
 * protected files (read-only) bound at the worker's paths.
 */
function atWorkerLayout(
  argv: string[],
  cwd: string,
  sandbox: CheckSandbox,
  at: { root: string; tmp?: string },
  join: string[] | undefined,
  timeoutSec: number,
): { file: string; args: string[]; env: Record<string, string> } {
  const root = sandbox.root ?? cwd;
  const inside = (p: string, r: string) => p === r || p.startsWith(r + path.sep);
  const map = (p: string) => path.join(at.root, path.relative(root, p));
  // The worker's tmp path can be a mount point only where bubblewrap can make it: under the hidden state dir, or existing.
  const tmp = at.tmp && (inside(at.tmp, sandbox.stateDir) || existsSync(at.tmp)) ? at.tmp : sandbox.tmpDir;
  mkdirSync(path.join(sandbox.tmpDir, "home"), { recursive: true });
  const env = allowListedEnv({ CI: "1", HOME: path.join(tmp, "home"), TMPDIR: tmp });
  // Deny by default ($HOME, /tmp, /run … and the state dir empty; the toolchain allow-list read-only), with the limits.
  const cmd = sandboxed(
    argv,
    {
      base: "allow-list",
      tmpfs: deniedRoots(),
      hidden: [sandbox.stateDir],
      reveal: revealed(),
      writable: [],
      readOnly: [],
      network: "none",
      env,
      cwd: map(cwd),
      limits: { ...commandLimits(), wallSec: timeoutSec },
      join,
    },
    "bwrap",
  );
  const binds = ["--bind", root, at.root, "--bind", sandbox.tmpDir, tmp];
  for (const f of sandbox.readOnly ?? []) if (inside(f, root) && existsSync(f)) binds.push("--ro-bind", f, map(f));
  // The separator before the command: the policy's options end there (the limits' shell adds 3 words before argv).
  const sep = cmd.args.length - argv.length - LIMITS_WORDS - 1;
  return { ...cmd, args: [...cmd.args.slice(0, sep), ...binds, ...cmd.args.slice(sep)] };
}

/** Runs a shell check in its own process group, so a timeout kills everything it started. */
async function runCommand(check: CommandCheck, name: string, cwd: string, sandbox?: CheckSandbox): Promise<CheckResult> {
  const timeoutSec = check.timeoutSec ?? DEFAULT_CHECK_TIMEOUT_SEC;
  const expect = check.expectExit ?? 0;
  const started = Date.now();
  const shell = checkShell();
  let cmd = { file: shell, args: ["-c", check.run], env: allowListedEnv({ CI: "1" }) };
  // Every process of the check together: its own cgroup (processes, memory) where cgroups bind, else a systemd-run
  // scope; the per-process limits always (limitSetup says which bound).
  const l = commandLimits();
  let group: CommandGroup | null = null;
  let join: string[] | undefined;
  if (sandbox) {
    group = checkGroup(l.procs, l.memMb);
    join = group ? joinPrefix(group) : limitSetup().checks === "systemd-run" ? systemdPrefix(l.procs, l.memMb) : undefined;
  }
  if (sandbox?.mountAs && sandbox.kind === "bwrap") {
    cmd = atWorkerLayout([shell, "-c", check.run], cwd, sandbox, sandbox.mountAs, join, timeoutSec);
  } else if (sandbox) {
    mkdirSync(path.join(sandbox.tmpDir, "home"), { recursive: true });
    const env = allowListedEnv({ CI: "1", HOME: path.join(sandbox.tmpDir, "home"), TMPDIR: sandbox.tmpDir });
    // Deny by default: $HOME, /tmp, /run … and the whole state dir are empty; the toolchain allow-list comes back
    // read-only, the checkout and the check's tmp writable; the per-process limits and the output cap apply.
    const limits = { ...commandLimits(), wallSec: timeoutSec };
    cmd = sandboxed(
      [shell, "-c", check.run],
      {
        base: "allow-list",
        join,
        tmpfs: deniedRoots(),
        hidden: [sandbox.stateDir],
        reveal: revealed(),
        writable: [sandbox.root ?? cwd, sandbox.tmpDir],
        readOnly: sandbox.readOnly ?? [],
        network: "none",
        env,
        cwd,
        limits,
      },
      sandbox.kind,
    );
  }
  const child = execa(cmd.file, cmd.args, { cwd, reject: false, all: true, detached: true, stdin: "ignore", extendEnv: false, env: cmd.env });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    // The check leads its own process group (detached): everything it started goes with it.
    if (child.pid) killGroup(child.pid);
    else child.kill("SIGKILL");
  }, timeoutSec * 1000);
  const r = await child;
  clearTimeout(timer);
  const hits = group?.hits() ?? [];
  group?.remove();
  const note = hitNote(hits, l.procs, l.memMb);
  const output = cap(String(r.all ?? "") + (note ? `\n${note}` : ""));
  if (timedOut) {
    return {
      name,
      passed: false,
      exitCode: null,
      timedOut: true,
      durationMs: Date.now() - started,
      output: `${output}\n[check timed out after ${timeoutSec}s and was killed: fix the command or give it a larger timeoutSec]`,
    };
  }
  const exitCode = r.exitCode ?? null;
  return { name, passed: exitCode === expect, exitCode, durationMs: Date.now() - started, output };
}

function runFile(check: FileCheck, name: string, cwd: string, realCwd: string): CheckResult {
  const file = path.join(cwd, check.file);
  const wantExists = check.exists ?? true;
  const exists = existsSync(file);
  if (exists && !realpathSync(file).startsWith(realCwd + path.sep)) {
    return { name, passed: false, output: `${check.file} resolves outside the workspace` };
  }
  if (!wantExists) {
    // Absent is nothing at all there: a symlink whose target is missing is still an entry that git commits and a person's
    // checkout gets (a file "deleted" by pointing its name nowhere is not deleted).
    if (!exists && lstatOrNull(file)?.isSymbolicLink())
      return { name, passed: false, output: `${check.file} is a symlink (to ${JSON.stringify(readlinkSync(file))}, which is missing) but should not exist` };
    return { name, passed: !exists, output: exists ? `${check.file} exists but should not` : `${check.file} is absent, as required` };
  }
  if (!exists) return { name, passed: false, output: `${check.file} does not exist` };
  const problems: string[] = [];
  if (check.equals !== undefined || check.matches !== undefined) {
    // Read only a regular file of a sane size: a FIFO the checked code left would block the engine's thread for good,
    // a huge file would exhaust its memory.
    const st = statSync(file);
    if (!st.isFile())
      return { name, passed: false, output: `${check.file} is not a regular file (a folder, FIFO, socket or device): its content cannot be compared` };
    if (st.size > MAX_COMPARED_BYTES)
      return { name, passed: false, output: `${check.file} is ${st.size} bytes, over the ${MAX_COMPARED_BYTES}-byte limit of a file check's comparison` };
    const content = readFileSync(file, "utf8");
    // "equals" ignores only trailing whitespace at the end of the file (editors and models add a final newline).
    if (check.equals !== undefined && content.trimEnd() !== check.equals.trimEnd()) {
      problems.push(`content differs from the expected text (got ${JSON.stringify(content.slice(0, 200))})`);
    }
    if (check.matches !== undefined) {
      let re: RegExp;
      try {
        re = new RegExp(check.matches, "m");
      } catch (err) {
        return { name, passed: false, output: `invalid regex ${check.matches}: ${(err as Error).message}` };
      }
      if (!re.test(content)) problems.push(`content does not match /${check.matches}/`);
    }
  }
  return { name, passed: problems.length === 0, output: problems.length ? problems.join("; ") : `${check.file} ok` };
}

/**
 * At most this many guarded files are bound read-only in a check's sandbox: each is three words of bubblewrap's command
 * line, which takes at most 9000 (past it, "Exceeded maximum number of arguments": no check ran), and 2000 binds take
 * some 4 s at every check's start.
 */
const READ_ONLY_CAP = 2000;

/**
 * Runs the held-back checks in order in the fresh checkout. A command check runs the worker's code there, with the
 * checkout writable: what it leaves must not decide a later check. So the folder is resolved once, before the first
 * check, and a check whose folder has moved since (a parent turned into a symlink) fails; `protectedFiles` (absolute
 * paths in the checkout) are read-only inside the sandbox and compared after every command check, so code that
 * rewrites a protected test (a build step, a `pretest` script) fails the check that ran it. Unconfined (the person
 * opted out of the sandbox), only the comparison holds: code that restores the file before it ends is not seen.
 */
export async function runChecks(
  checks: CheckSpec[],
  cwd: string,
  sandbox?: CheckSandbox,
  protectedFiles: string[] = [],
  watch: {
    root?: string;
    planted?: string[];
    /** What grading already read of the held-back folders (heldBackListing): not walked and read again here. */
    heldBack?: HeldBackListing;
    /**
     * Files compared after every command check as the protected ones are, but not bound read-only in the sandbox: too
     * many to bind (a `.yarn/` cache of thousands of zips; bubblewrap's binds cost time that grows with their square).
     */
    compared?: string[];
  } = {},
): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  const realCwd = realpathSync(cwd);
  // Held-back files come in now, over the worker's, and are guarded like protected files while the checks run.
  let heldBack: string[];
  try {
    heldBack = copyHeldBack(checks, realCwd);
  } catch (err) {
    return checks.map((c, i) => ({ name: checkName(c, i), passed: false, output: `held-back files could not be brought in: ${(err as Error).message}` }));
  }
  // Read-only inside the sandbox: the held-back files first, then the protected ones in the order given, at most
  // READ_ONLY_CAP; those past it, and `watch.compared`, are compared only.
  const readOnly = [...new Set([...heldBack, ...protectedFiles])].slice(0, READ_ONLY_CAP);
  protectedFiles = [...protectedFiles, ...heldBack];
  const watched = [...protectedFiles, ...(watch.compared ?? [])];
  const guarded = watched.length ? new Map(watched.map((f) => [f, fingerprint(f)])) : null;
  // The runner configuration of the checkout as committed (with the held-back files in): a command check runs the
  // worker's code, which may write a conftest.py, a __mocks__/, a .npmrc… that a later check's runner loads. Scanned
  // again after every command check; what one wrote fails it and leaves the later checks unrun (runner-config.ts).
  const root = watch.root ?? sandbox?.root ?? realCwd;
  // The held-back and protected Python files (from the checkout's root): their byte code is cleared before each command check.
  const realRoot = realpathSync(root);
  const fromRoot = (f: string) => [path.relative(root, f), path.relative(realRoot, f)].find((r) => !r.startsWith("..") && !path.isAbsolute(r));
  const guardedPy = protectedFiles
    .filter((f) => f.endsWith(".py"))
    .flatMap((f) => fromRoot(f) ?? [])
    .map((f) => f.split(path.sep).join("/"));
  const { dirs: heldDirs, modules: heldModules, imports: heldImports } = watch.heldBack ?? heldBackListing(checks);
  let config: ConfigSnapshot | null = null;
  let planted: { by: string; what: string[] } | null = null;
  let ranCommand = false;
  /** Each command check's make goals, what its makes build and what its line writes besides (checkGoals), by the check's index. */
  let goals: (CheckGoals | null)[] = [];
  if (checks.some((c) => "run" in c)) {
    try {
      config = configSnapshot(root, realCwd, heldDirs, heldModules, heldImports);
      const sub = path.relative(realRoot, realCwd).split(path.sep).join("/");
      // The checks' PATH, and where a worker's `cc` could be put on it: the checkout, and where the checks see it.
      const pathEnv = allowListedEnv({}).PATH ?? "";
      const roots = sandbox?.mountAs ? [sandbox.mountAs.root] : [];
      goals = checks.map((c) => ("run" in c ? checkGoals(realRoot, sub, c.run, pathEnv, roots) : null));
    } catch (err) {
      return checks.map((c, i) => ({ name: checkName(c, i), passed: false, output: `not run: ${(err as Error).message}` }));
    }
  }
  // A goal's namesake is watched only where the checkout as committed has nothing of that name (one it holds is the
  // commit's own, which the rules of check configuration read).
  const watchedOf = (g: CheckGoals | null) => (g ? [...g.goals, ...g.intermediates] : []);
  const absentAtStart = new Set(goals.flatMap(watchedOf).flatMap((g) => (namesakeStamp(opened(realRoot, g.path)) === ABSENT ? [g.path] : [])));
  /**
   * What an earlier check's own build wrote beside a program of the worker's (namesakeOrigin "rebuild"), removed just
   * before the later check whose make reaches it (by its index), so that make builds it again from the commit.
   */
  const rebuildBefore = new Map<number, { p: string; writer: string }[]>();
  for (const [i, check] of checks.entries()) {
    const name = checkName(check, i);
    if (!planted)
      for (const { p, writer } of rebuildBefore.get(i) ?? [])
        if (!removeForRebuild(realRoot, p)) {
          planted = { by: writer, what: [`${p} written, and a link now on its way: it cannot be removed for a later make to build it again`] };
          watch.planted?.push(...planted.what);
        }
    if (planted) {
      results.push({ name, passed: false, output: `not run: the check "${planted.by}" wrote check configuration (${planted.what.join("; ")})` });
      continue;
    }
    if (realpathSync(cwd) !== realCwd) {
      results.push({ name, passed: false, output: `the checks' folder was moved by an earlier check (it now leads to ${realpathSync(cwd)}): not run` });
      continue;
    }
    if (!("run" in check)) {
      results.push(runFile(check, name, cwd, realCwd));
      continue;
    }
    clearHeldBackBytecode(realRoot, guardedPy);
    // Each command check starts with an empty HOME and TMPDIR (the first one's were emptied for the grading): what an
    // earlier check's code left there (a usercustomize.py or .pth in Python's user site, a tool's rc file, a cache of
    // other code) is read by a later check's tools at startup, where no scan of the checkout sees it.
    if (sandbox?.tmpDir && ranCommand) discard(sandbox.tmpDir);
    ranCommand = true;
    // The namesakes of the later checks' goals and of the prerequisites they reach that a rule builds, as they are
    // before this check runs.
    const namesakes = new Map<string, { g: GoalNamesake; j: number; by: string; before: string }>();
    for (const [j, later] of goals.entries())
      if (j > i && later)
        for (const g of watchedOf(later))
          if (absentAtStart.has(g.path) && !namesakes.has(g.path))
            namesakes.set(g.path, { g, j, by: checkName(checks[j]!, j), before: namesakeStamp(opened(realRoot, g.path)) });
    const r = await runCommand(check, name, cwd, sandbox && guarded ? { ...sandbox, readOnly } : sandbox);
    const changed = guarded ? [...guarded].filter(([f, before]) => fingerprint(f) !== before).map(([f]) => path.relative(realCwd, f)) : [];
    let result = changed.length
      ? { ...r, passed: false, output: `${r.output}\n[this check changed ${counted(changed.length, "protected file")}: ${changed.join(", ")}]` }
      : r;
    if (config) {
      let what: string[];
      const rebuilt: string[] = [];
      try {
        const after = configSnapshot(root, realCwd, heldDirs, heldModules, heldImports);
        what = [...plantedConfig(config, after, root), ...(await plantedModules(config, after))];
        // A file or folder named like a later check's make goal (or a prerequisite it reaches) that this check wrote:
        // its own build, built again by the later make, or planted (namesakeOrigin).
        for (const [p, { g, j, by, before }] of namesakes) {
          const now = namesakeStamp(opened(realRoot, p));
          if (now === before || now === ABSENT) continue;
          const origin = namesakeOrigin(goals[i], p, check.expectExit ?? 0);
          if (origin === "own") continue;
          if (origin === "rebuild") {
            rebuildBefore.set(j, [...(rebuildBefore.get(j) ?? []), { p, writer: name }]);
            rebuilt.push(p);
          } else what.push(`${p} ${before === ABSENT ? "written" : "changed"} — ${goalNamesakeWhy(g, by)}`);
        }
      } catch (err) {
        what = [(err as Error).message];
      }
      if (rebuilt.length && !what.length) {
        const it = rebuilt.length === 1 ? "it" : "them";
        result = {
          ...result,
          output: `${result.output}\n[this check's own build wrote ${rebuilt.join(", ")} beside a program of the worker's, which could have written ${it} too: removed before the later check whose make reaches ${it}, which builds ${it} again from the commit]`,
        };
      }
      if (what.length) {
        planted = { by: name, what };
        watch.planted?.push(...what);
        result = {
          ...result,
          passed: false,
          output: `${result.output}\n[this check wrote check configuration the worker's commit does not hold, which a later check's runner would load: ${what.join("; ")}. It fails, and the checks after it are not run]`,
        };
      }
    }
    results.push(result);
  }
  return results;
}

/**
 * Removes the cached byte code of the held-back and protected Python files (`held`: their paths from `root`): Python's own
 * (`__pycache__/X.cpython-3NN.pyc`) and pytest's rewritten one (`X.cpython-3NN-pytest-V.pyc`). Each is used when it names
 * the source's mtime and size, which a check's code can read and write a cache of other code for, that a later check's
 * runner would run in place of the held-back test. Never through a link: a `__pycache__` that is not a real folder goes
 * whole, and nothing outside the checkout (`root`, a real path) is touched. A readdir per folder of held-back Python
 * files, before each command check.
 */
export function clearHeldBackBytecode(root: string, held: string[]): void {
  const byDir = new Map<string, string[]>();
  for (const f of held) {
    if (!f.endsWith(".py")) continue;
    const dir = path.posix.dirname(f) === "." ? "" : path.posix.dirname(f);
    byDir.set(dir, [...(byDir.get(dir) ?? []), `${path.posix.basename(f, ".py")}.`]);
  }
  for (const [dir, stems] of byDir) {
    // The folder where it is now (an earlier check may have made it a link): only inside the checkout.
    let real: string;
    try {
      real = realpathSync(path.join(root, dir));
    } catch {
      continue;
    }
    if (real !== root && !real.startsWith(root + path.sep)) continue;
    const cache = path.join(real, "__pycache__");
    const st = lstatOrNull(cache);
    if (!st) continue;
    if (!st.isDirectory()) {
      rmSync(cache, { force: true, recursive: true });
      continue;
    }
    for (const name of readdirSync(cache))
      if (name.endsWith(".pyc") && stems.some((s) => name.startsWith(s))) rmSync(path.join(cache, name), { force: true, recursive: true });
  }
}

/**
 * Copies every command check's held-back folder (`files`) into `root`, never through a link: an entry of the checkout in
 * the way (a symlink, a file where a folder goes, a folder where a file goes) is removed first, so a worker's committed
 * symlink cannot send a held-back file (or its write) elsewhere. Returns the absolute paths written.
 */
export function copyHeldBack(checks: CheckSpec[], root: string): string[] {
  const written: string[] = [];
  for (const check of checks) {
    if (!("run" in check) || !check.files) continue;
    const src = check.files;
    let st;
    try {
      st = statSync(src);
    } catch {
      throw new Error(`${src} (a check's \`files\`) does not exist`);
    }
    if (!st.isDirectory()) throw new Error(`${src} (a check's \`files\`) is not a folder`);
    const walk = (from: string, rel: string) => {
      for (const e of readdirSync(from, { withFileTypes: true })) {
        const f = path.join(from, e.name);
        const r = rel ? `${rel}/${e.name}` : e.name;
        const dest = path.join(root, r);
        const there = lstatOrNull(dest);
        if (e.isDirectory()) {
          if (there && !there.isDirectory()) rmSync(dest, { force: true, recursive: true });
          if (!there || !there.isDirectory()) mkdirSync(dest);
          walk(f, r);
        } else if (e.isFile()) {
          if (there) rmSync(dest, { force: true, recursive: true });
          writeFileSync(dest, readFileSync(f), { mode: statSync(f).mode & 0o777 });
          written.push(dest);
        }
        // Links and special files in the held-back folder are not brought in.
      }
    };
    walk(src, "");
  }
  return written;
}

/** What the held-back folders hold (heldBackListing). */
export interface HeldBackListing {
  dirs: string[];
  modules: string[];
  imports: string[];
  importPaths: string[];
  /** The files a held-back JavaScript or TypeScript file's relative imports may load, as Node resolves them (jsImportCandidates). */
  jsImportPaths: string[];
}

/**
 * What the held-back folders hold, read as copyHeldBack walks them (each path relative to the checks' folder,
 * "/"-separated): `dirs`, the folders held-back files are copied into ("" for the checks' folder itself); `modules`, the
 * held-back code files a test imports by name (Python, JavaScript, TypeScript), what a worker's package, extension module
 * or other suffix of the same name beside one would stand in for (runner-config.ts); `imports`, the top-level names the
 * held-back Python files import (`import numpy as np`, `from yaml import safe_load`: numpy, yaml), what a worker's module
 * of that name would stand in for when it is an installed package; `importPaths`, where the modules they import may be
 * found (pythonImportPaths, from the checks' folder and from each test's own). One walk; a folder that cannot be read
 * adds nothing (the copy then fails the checks with its reason).
 */
export function heldBackListing(checks: CheckSpec[]): HeldBackListing {
  const dirs = new Set<string>();
  const modules = new Set<string>();
  const imports = new Set<string>();
  const importPaths = new Set<string>();
  const jsImportPaths = new Set<string>();
  const walk = (from: string, rel: string) => {
    for (const e of readdirSync(from, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(path.join(from, e.name), r);
      else if (e.isFile()) {
        dirs.add(rel);
        if (HELD_BACK_CODE.test(e.name)) modules.add(r);
        // Where each module it imports may be found: from the checks' folder (python -m, rootdir) and from the test's
        // own folder (pytest's and unittest's first sys.path entry); a relative import from the test's folder alone.
        if (e.name.endsWith(".py"))
          for (const m of pythonImportPaths(readTextOr(path.join(from, e.name)))) {
            if (m.startsWith("./")) importPaths.add(rel ? `${rel}/${m.slice(2)}` : m.slice(2));
            else {
              imports.add(topOf(m));
              importPaths.add(m);
              if (rel) importPaths.add(`${rel}/${m}`);
            }
          }
        else if (JS_CODE.test(e.name))
          for (const spec of jsRelativeImports(readTextOr(path.join(from, e.name)))) for (const f of jsImportCandidates(rel, spec)) jsImportPaths.add(f);
      }
    }
  };
  for (const check of checks) {
    if (!("run" in check) || !check.files) continue;
    try {
      walk(check.files, "");
    } catch {
      /* not readable: copyHeldBack says why */
    }
  }
  return { dirs: [...dirs], modules: [...modules], imports: [...imports], importPaths: [...importPaths], jsImportPaths: [...jsImportPaths] };
}

/** A JavaScript or TypeScript file whose imports and requires are read (jsRelativeImports). */
const JS_CODE = /\.([cm]?[jt]sx?)$/;

/**
 * The relative module specifiers a JavaScript or TypeScript file loads (`require('./helpers')`, `import { check } from
 * '../test-utils/index.js'`, `import './setup'`, `export * from './x'`, `import('./y')`), as written. Bare names
 * (installed packages) are left out. Matched in the text as a whole: one in a comment or a string counts too (the list
 * only narrows which of a worker's files are said with the verdict).
 */
export function jsRelativeImports(text: string): string[] {
  const out = new Set<string>();
  const patterns = [
    /\brequire\s*\(\s*(['"`])(\.{1,2}(?:\/[^'"`]*)?)\1\s*\)/g,
    /\bimport\s*\(\s*(['"`])(\.{1,2}(?:\/[^'"`]*)?)\1\s*[,)]/g,
    /\b(?:import|export)\b[^'"`;]*?\bfrom\s*(['"])(\.{1,2}(?:\/[^'"]*)?)\1/g,
    /\bimport\s*(['"])(\.{1,2}(?:\/[^'"]*)?)\1/g,
  ];
  for (const re of patterns) for (const m of text.matchAll(re)) out.add(m[2]!);
  return [...out];
}

/** The suffixes Node (and TypeScript's loaders: tsx, ts-node, vitest, jest) try after a specifier without one. */
const JS_SUFFIXES = [".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".tsx", ".jsx", ".json", ".node"];
/** TypeScript's ESM convention: `./helpers.js` is written for a helpers.ts. */
const TS_FOR_JS: Record<string, string[]> = { ".js": [".ts", ".tsx"], ".jsx": [".tsx"], ".mjs": [".mts"], ".cjs": [".cts"] };

/**
 * The files (relative to the checks' folder, "/"-separated) a relative specifier of a file in folder `rel` may load, as
 * Node resolves it: the exact file, the file with each suffix, the TypeScript source a `.js` specifier stands for, and a
 * folder's package.json and index files. None for a specifier that leaves the checks' folder.
 */
export function jsImportCandidates(rel: string, spec: string): string[] {
  const target = path.posix.normalize(path.posix.join(rel || ".", spec));
  if (target === ".." || target.startsWith("../") || path.posix.isAbsolute(target)) return [];
  const base = target === "." ? "" : target.replace(/\/$/, "");
  const out: string[] = [];
  if (base) {
    out.push(base, ...JS_SUFFIXES.map((s) => base + s));
    const ext = path.posix.extname(base);
    for (const ts of TS_FOR_JS[ext] ?? []) out.push(base.slice(0, -ext.length) + ts);
  }
  const inside = (f: string) => (base ? `${base}/${f}` : f);
  out.push(inside("package.json"), ...JS_SUFFIXES.map((s) => inside(`index${s}`)));
  return out;
}

/**
 * The modules a Python file imports, as paths ("/"-separated, no suffix): `import a.b as c`: a/b; `from a.b import c, d`:
 * a/b, a/b/c, a/b/d (a name may be a submodule); a relative import of the file's own folder as ./x (`from .x import y`:
 * ./x, ./x/y; `from . import x`: ./x). Imports from a parent package (`..`) are left out.
 */
export function pythonImportPaths(text: string): string[] {
  const out = new Set<string>();
  const first = (part: string) => /^\s*([A-Za-z_][\w.]*)/.exec(part)?.[1];
  for (const m of text.matchAll(/^[ \t]*(?:import[ \t]+([^#\n;]+)|from[ \t]+(\.*)([\w.]*)[ \t]+import\b[ \t]*\(?([^#\n;)]+))/gm)) {
    if (m[1] !== undefined) {
      for (const part of m[1].replace(/[()\\]/g, "").split(",")) {
        const name = first(part);
        if (name) out.add(name.replaceAll(".", "/"));
      }
      continue;
    }
    const dots = m[2] ?? "";
    if (dots.length > 1) continue;
    const base = (m[3] ?? "").replaceAll(".", "/");
    const prefix = dots ? `./${base}` : base;
    if (base) out.add(prefix);
    for (const part of (m[4] ?? "").replace(/\\/g, "").split(",")) {
      const name = first(part);
      if (name && !name.includes(".")) out.add(base ? `${prefix}/${name}` : `./${name}`);
    }
  }
  return [...out];
}

/** A file's text, or "" when it cannot be read (the copy says why). */
const readTextOr = (file: string) => {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
};

/** The top-level name of an absolute import's path (pythonImportPaths): numpy for numpy/linalg. */
const topOf = (m: string) => m.split("/")[0]!;

/**
 * The top-level names a Python file imports absolutely (`import a.b as c, d`: a, d; `from e.f import g`: e; a relative
 * `from . import x` names none): pythonImportPaths' absolute ones, cut to their first part. An import inside a string or
 * a `try` counts too: the list only narrows which of a worker's modules are asked about.
 */
export function pythonImports(text: string): string[] {
  return [
    ...new Set(
      pythonImportPaths(text)
        .filter((m) => !m.startsWith("./"))
        .map(topOf),
    ),
  ];
}

/** The shell a check's command runs in: bash, else sh. */
const checkShell = () => (existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh");

/**
 * Why a check's command cannot be read as shell, or null: the shell the checks run in reads each with `-n` (parsed,
 * nothing run; bash with extglob on, so `!(x)` after a `shopt -s extglob` reads too). A command with an unclosed quote
 * or parenthesis (`npm test && (`) was taken, and every grading of its worker then failed that check, for a reason no
 * worker could fix. A shell that could not be asked (not started, killed) says nothing: the check runs as before.
 */
export async function shellSyntaxProblem(checks: CheckSpec[]): Promise<string | null> {
  const shell = checkShell();
  for (const [i, c] of checks.entries()) {
    if (!("run" in c)) continue;
    const args = shell.endsWith("bash") ? ["-O", "extglob", "-n", "-c", c.run] : ["-n", "-c", c.run];
    const r = await runProcess(shell, args, { cwd: "/", env: { PATH: "/usr/bin:/bin", LC_ALL: "C" }, limitMs: 5000, maxOutputBytes: 16_384 });
    if (r.exitCode === 0 || r.exitCode === null || r.startError) continue;
    // "bash: -c: line 2: syntax error: unexpected end of file" → "line 2: syntax error: unexpected end of file"
    const why =
      r.stderr
        .split("\n")
        .find((l) => l.trim())
        ?.replace(/^\S*(bash|sh): (-c: |\d+: )?/, "")
        .trim() ?? `exit ${r.exitCode}`;
    return `check ${i + 1}'s command is not valid shell (${path.basename(shell)} reads: ${why.slice(0, 300)}): close its quotes and parentheses, or quote it whole where your shell took part of it (\`${checkName(c, i)}\`)`;
  }
  return null;
}

/**
 * Why a task's held-back folders cannot be used, or null: each must be an existing folder outside the repository (a
 * folder inside it would be in the worker's workspace once committed, and looks held back when it is not).
 */
export function heldBackProblem(checks: CheckSpec[], repoRoot: string): string | null {
  const root = realpathOr(repoRoot);
  for (const c of checks) {
    if (!("run" in c) || !c.files) continue;
    let real: string;
    try {
      real = realpathSync(c.files);
      if (!statSync(real).isDirectory()) return `a check's files ${c.files} is not a folder`;
    } catch {
      return `a check's files ${c.files} does not exist: give the absolute path of a folder of held-back tests`;
    }
    if (real === root || real.startsWith(root + path.sep))
      return `a check's files ${c.files} is inside the repository, where the worker can see it: keep held-back tests outside the repository`;
    // A folder above the repository (its parent, the home folder, /): every file in it would be copied into the checks'
    // folder, the repository and all beside it, where the worker's code runs.
    if (root.startsWith(real === path.sep ? real : real + path.sep))
      return `a check's files ${c.files} holds the repository itself: give a folder of held-back tests beside the repository, not one above it`;
  }
  return null;
}

const realpathOr = (p: string) => {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
};

const lstatOrNull = (p: string) => {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
};

const ABSENT = "absent";

/**
 * Where a namesake a check wrote came from:
 * - "own": the check's own build. What its own makes build (their goals and the prerequisites they reach), where its
 *   line runs nothing but makes, trusted compilers and quiet builtins; or a trusted compiler's `-o` output that its line
 *   names (`cc -o src/test src/test.c`, the person's own command) or writes without `-o` (`cc -c x.c`: `x.o`), where
 *   that compiler surely wrote it when the check passed: its commands joined by `&&` alone and its exit expected 0
 *   (every one ran and succeeded), or nothing but the compilers and quiet builtins run (no make, whose recipes run the
 *   worker's code); and nothing but compilers and quiet builtins after its compile (`cc -o t t.c && ./t`: `./t` could
 *   write `t` again, so it is a "rebuild").
 * - "rebuild": its own build could have written it, but a program of the worker's ran beside it and could have too
 *   (`make test; python3 gen.py`, `make && ./app`): what is there cannot be told from make's, so it is removed before
 *   the later check whose make reaches it, which builds it again from the commit. An honest build loses only the time
 *   to build it again; a planted one is never used. (Flagging it failed honest work: `make && ./app`, then `make test`
 *   sharing app's `.o` files.)
 * - "planted": nothing of the check's own builds it, so a program of the worker's wrote it (pass 12).
 */
function namesakeOrigin(own: CheckGoals | null | undefined, p: string, expectExit: number): "own" | "rebuild" | "planted" {
  if (!own || !(own.made.has(p) || own.compiled.has(p))) return "planted";
  if (own.others === null && own.made.has(p)) return "own";
  if (own.compiled.has(p) && !own.rewritable.has(p) && ((own.andOnly && expectExit === 0) || (own.others === null && !own.makes))) return "own";
  return "rebuild";
}

/**
 * Removes what a check wrote at `rel` (from the checkout's real root `realRoot`), for a later make to build it again:
 * only where the folder it is in is that folder of the checkout, with no link on the way (the check's processes are
 * gone by now, so nothing swaps one in after this look). False where a link is on the way: not removed. A name with a
 * trailing slash (make's `out/:`) is removed without it: with it, a link there would be resolved (Node's rm took
 * `out/` for the folder a link `out` leads to, outside the checkout too), where without it the link alone goes.
 */
function removeForRebuild(realRoot: string, rel: string): boolean {
  const name = rel.replace(/\/+$/, "");
  if (!name) return false;
  const at = path.join(realRoot, name);
  const folder = path.dirname(at);
  if (folder !== realRoot && !folder.startsWith(realRoot + path.sep)) return false;
  let real: string;
  try {
    // The folder as make opens the name (`build/../x.o` through `build`): a link there is one on its way.
    real = realpathSync(path.dirname(opened(realRoot, name)));
  } catch {
    return true; // its folder is gone, and it with it
  }
  if (real !== folder) return false;
  rmSync(at, { force: true, recursive: true });
  return true;
}

/**
 * A watched name's path (from the checkout's root `realRoot`, "/"-separated) as make opens it: joined as written, not
 * normalized (`src/build/../x.o` goes through `src/build`, a link too; path.join would make it `src/x.o`).
 */
function opened(realRoot: string, rel: string): string {
  return `${realRoot}${path.sep}${rel.split("/").join(path.sep)}`;
}

/**
 * What is at a goal's namesake now, as make would find it: nothing (ABSENT: nothing there, or a symlink whose target is
 * missing, which make does not take as the file), else what it is and when its inode last changed (its change time,
 * which no write, rename or `touch` leaves as it was).
 */
function namesakeStamp(file: string): string {
  try {
    const st = statSync(file);
    const l = lstatSync(file);
    return `${st.isDirectory() ? "folder" : "file"}:${l.ino}:${l.ctimeMs}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
  } catch {
    return ABSENT;
  }
}

/** What a protected file is now: its content's hash, or that it is gone or not a regular file. */
function fingerprint(file: string): string {
  try {
    const st = lstatSync(file);
    // A check may have grown it to any size: hashed a part at a time (files.ts).
    return st.isFile() ? (hashRegular(file) ?? "unreadable") : `not a file (${st.mode})`;
  } catch {
    return "absent";
  }
}
