import { lstatSync } from "node:fs";
import { lstat, readdir } from "node:fs/promises";
import path from "node:path";
import { parseClaim, type Baseline, type Verdict } from "../../shared/verdict";
import { checkName, type CheckSpec } from "../../shared/check";
import {
  changedBetween,
  checkOutBase,
  checkOutCommit,
  commitAndCheckOut,
  flaggedChanges,
  foldPath,
  gradedStoreOf,
  keepGraded,
  mergeHint,
  partialHolds,
  SnapshotTooLarge,
  treeChanges,
  type Workspace,
} from "../workspace";
import { limitSetup } from "../sandbox";
import { type HeldBackListing, heldBackListing, runChecks, type CheckSandbox } from "./checks";
import { discard, folderIn } from "./folders";
import {
  type CheckScripts,
  checkScripts,
  checkScriptCaveats,
  guardedConfigFiles,
  pytestPluginModules,
  runnerConfigChanges,
  runnerConfigReason,
} from "./runner-config";
import { checkScope, fromTaskFolder, protectMatcher } from "./scope";

export interface GradeInput {
  workspace: Workspace;
  checks: CheckSpec[];
  scope: string[];
  protect: string[];
  finalText: string;
  title: string;
  /** A folder of the engine's for the fresh checkout the checks run in (emptied first, removed after). */
  checkoutDir: string;
  /** How checks are confined; absent: unconfined (the person opted out of the sandbox). */
  sandbox?: CheckSandbox;
  /** Which checks already passed on the base commit (null when they could not run there). */
  baseline?: Baseline | null;
  /** The previous round's graded commit: the verdict lists the files changed since (rounds after the first). */
  previousCommit?: string | null;
  /**
   * A worker started from other workers' graded commits (a task after others in a batch): the person's commit the batch
   * started from, and the file names its tasks' scopes allow. Check configuration is read from there, so what an earlier
   * task's worker committed (its own checks ran no command, so its grading did not look) counts here too.
   */
  checkConfigFrom?: { base: string; scope: string[] } | null;
}

/** The checkout's files that `protect` names (its globs are relative to the folder the user named), as absolute paths. */
async function protectedIn(checkout: string, sub: string, protect: string[]): Promise<string[]> {
  if (!protect.length) return [];
  const isProtected = protectMatcher(protect);
  const entries = await readdir(checkout, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => !e.isDirectory())
    .map((e) =>
      path
        .relative(checkout, path.join(e.parentPath ?? (e as unknown as { path: string }).path, e.name))
        .split(path.sep)
        .join("/"),
    )
    .filter((f) => isProtected(fromTaskFolder(sub.split(path.sep).join("/"), f)))
    .map((f) => path.join(checkout, f));
}

/** The paths (from the repository's root) that file checks read, when every check is a file check; else undefined. */
function fileChecksOnly(checks: CheckSpec[], sub: string): string[] | undefined {
  if (!checks.length || checks.some((c) => "run" in c)) return undefined;
  const root = sub.split(path.sep).join("/");
  return checks.map((c) => path.posix.join(root, (c as { file: string }).file));
}

/**
 * Grades a settled worker (every process of it already ended): the engine commits the workspace's files in its own
 * repository, runs the checks the worker never saw in a fresh checkout of that commit, checks scope, compares the
 * worker's claim. `built` only if every check and the scope pass. The verdict names the commit; only it is merged.
 */
export async function grade(input: GradeInput): Promise<Verdict> {
  try {
    return await gradeSnapshot(input);
  } catch (err) {
    if (!(err instanceof SnapshotTooLarge)) throw err;
    // Over the snapshot caps (files, bytes, one file's size): nothing was committed, checked or published. A verdict of
    // its own kind, with the claim kept: the worker is not built, and the violation says why.
    return ungradedVerdict(input.finalText, input.workspace, {
      checks: input.checks.map((c, i) => ({ name: checkName(c, i), passed: false, output: `not run: ${err.message}` })),
      scope: { passed: false, violations: [`snapshot too large: ${err.message}`], changedFiles: [], snapshotCap: err.message },
      flags: [],
      reason: err.message,
      caveats: caveatsOf(input.checks),
    });
  }
}

/**
 * The verdict of a change that could not be graded (over the snapshot caps, or grading itself failed): not built, no
 * commit, nothing to merge, the worker's claim kept beside why.
 */
export function ungradedVerdict(
  finalText: string,
  ws: Pick<Workspace, "branch" | "worktree">,
  o: { checks: Verdict["checks"]; scope: Verdict["scope"]; flags?: Verdict["flags"]; reason: string; caveats?: string[] },
): Verdict {
  const { claim, reason } = parseClaim(finalText);
  return {
    verdict: "honest-failure",
    claim,
    claimReason: reason,
    honest: claim === "honest-failure",
    checks: o.checks,
    scope: o.scope,
    gradedAt: Date.now(),
    branch: ws.branch,
    worktree: ws.worktree,
    commit: null,
    diffStat: "",
    mergeHint: null,
    ...(o.flags ? { flags: o.flags } : {}),
    reason: o.reason,
    weakEvidence: false,
    sincePrevious: null,
    ...(o.caveats ? { caveats: o.caveats } : {}),
  };
}

async function gradeSnapshot(input: GradeInput): Promise<Verdict> {
  const { workspace: ws } = input;
  const checkout = input.checkoutDir;
  let checks;
  let scope;
  let graded;
  let helpers: string[] = [];
  let scriptCaveats: string[] = [];
  const sub = path.relative(ws.worktree, ws.cwd);
  // A check's HOME and TMPDIR start empty at every grading: what an earlier grading's checks left there (a cache, a
  // marker file) must not decide this one. Renamed away, never deleted here: a tree the user may not delete at once (a
  // read-only module cache) must not fail the grading.
  discardAll(checkout, input.sandbox?.tmpDir);
  try {
    // File checks alone read only their files: just those are checked out (from the snapshot's index, no second read of
    // the tree), unless one of them came out other than the whole tree would show it (a symlink on its way): then the
    // whole tree, so that each check sees what it would in a full checkout.
    const only = fileChecksOnly(input.checks, sub);
    graded = await commitAndCheckOut(ws, `ocw: ${input.title}`, checkout, undefined, only);
    if (graded.partial && only && !partialHolds(checkout, only)) await checkOutCommit(ws, graded.commit, checkout);
    // scope/protect globs are relative to the folder the user named; git paths are relative to the repo root.
    const rel = graded.changed.map((f) => fromTaskFolder(sub.split(path.sep).join("/"), f));
    scope = checkScope(rel, input.scope, input.protect);
    // With command checks, the files that decide what a check runs are protected by default (runner-config.ts).
    // What the held-back folders hold, read once for the rules below and the checks' run.
    const listing = input.checks.some((c) => "run" in c) ? heldBackListing(input.checks) : undefined;
    // The scripts the checks' commands run by name, read once for the rule, the caveats and the guard below.
    const subPath = sub.split(path.sep).join("/");
    const commands = commandsOf(input.checks);
    const scripts = listing ? checkScripts(commands, subPath, checkout) : undefined;
    // The pytest plugins' modules the project loads, read once for the rule and the guard below.
    const pluginModules = listing ? pytestPluginModules(checkout, subPath, commands, listing.dirs) : undefined;
    if (listing && scripts) {
      const from = input.checkConfigFrom && input.checkConfigFrom.base !== ws.baseCommit ? input.checkConfigFrom : null;
      const config = await runnerConfigChanges({
        changed: from ? await changedBetween(ws, from.base, graded.commit) : graded.changed,
        sub: subPath,
        scope: from ? [...input.scope, ...from.scope] : input.scope,
        repo: ws.repo,
        baseCommit: from ? from.base : ws.baseCommit,
        checkout,
        commands,
        scripts,
        pluginModules,
        ...heldBackOf(listing),
      });
      helpers = changedHelpers(rel, listing);
      scriptCaveats = await checkScriptCaveats({
        changed: graded.changed,
        scripts,
        sub: subPath,
        scope: input.scope,
        repo: ws.repo,
        baseCommit: ws.baseCommit,
      });
      if (config.length) scope = { ...scope, passed: false, violations: [...scope.violations, ...config], checkConfig: config };
    }
    const cwd = await folderIn(checkout, sub);
    // The protected files, the project's test harnesses the checks' commands run by name, and the check configuration the
    // scan between checks does not see (the pytest plugin modules the project loads, Yarn's `.yarn/` files): a check that
    // rewrites one (a build step writing `exit 0` into the script a later check runs) fails.
    // Of the last, the first CONFIG_BINDS are read-only in the sandbox too (the plugin modules, Yarn's release and
    // plugins); the rest (a `.yarn/` cache) are compared after every check only.
    const config =
      typeof cwd === "string" && listing ? guardedConfigFiles(checkout, subPath, commands, listing.dirs, pluginModules).map((f) => path.join(checkout, f)) : [];
    const guarded =
      typeof cwd === "string" && scripts
        ? [...(await protectedIn(checkout, sub, input.protect)), ...guardedScripts(checkout, scripts), ...config.slice(0, CONFIG_BINDS)]
        : [];
    const planted: string[] = [];
    checks =
      typeof cwd === "string"
        ? await runChecks(
            input.checks,
            cwd,
            input.sandbox ? { ...input.sandbox, root: checkout, mountAs: { root: ws.worktree, ...input.sandbox.mountAs } } : undefined,
            guarded,
            { root: checkout, planted, heldBack: listing, compared: config.slice(CONFIG_BINDS) },
          )
        : input.checks.map((c, i) => ({ name: checkName(c, i), passed: false, output: cwd.problem }));
    // Runner configuration a check wrote for a later one (a conftest.py its code planted): a check-configuration
    // violation, as if the worker had committed it; the checks after it did not run.
    if (planted.length) {
      const config = planted.map((p) => `check configuration written by a check: ${p}`);
      scope = { ...scope, passed: false, violations: [...scope.violations, ...config], checkConfig: [...(scope.checkConfig ?? []), ...config] };
    }
  } finally {
    discardAll(checkout, input.sandbox?.tmpDir);
  }
  const checksPassed = scope.passed && checks.every((c) => c.passed);
  // Evidence, not absence: a worker that changed nothing showed nothing, whatever its checks say (they ran on the
  // untouched base, so they would have passed without it). A no-op is never built.
  const noChange = graded.changed.length === 0;
  const built = checksPassed && !noChange;
  const verdict = built ? "built" : "honest-failure";
  const passedOnBase = new Set(input.baseline?.passedOnBase ?? []);
  const why = noChange
    ? checksPassed
      ? `no change: the worker changed no file, so nothing was shown to work${checks.length ? ` (its checks pass on the untouched base too: ${checks.length === 1 ? "it proves" : "they prove"} nothing)` : ""}`
      : "no change: the worker changed no file"
    : null;
  // Built, but every check passed on the base before any change: the checks do not tell this change from none.
  const weakEvidence = built && !!input.baseline && checks.every((c) => passedOnBase.has(c.name));
  const { claim, reason } = parseClaim(input.finalText);
  const sincePrevious = input.previousCommit ? await changedBetween(ws, input.previousCommit, graded.commit).catch(() => null) : null;
  // Nothing reaches the person's repository at grading: a built commit is kept in the engine's graded store until the
  // person lands or publishes it (engine/workspace/workspace.ts, publishBranch).
  if (built) await keepGraded(ws, graded.commit);
  // What needs an explicit acceptance before it is merged: the graded commit's own diff (read by grading's script), the
  // engine's store for what that does not hold (a symlink's target, package.json scripts).
  const flags = built
    ? await flaggedChanges(
        ws.repo,
        ws.baseCommit,
        graded.commit,
        await gradedStoreOf(ws),
        graded.changes && { changes: graded.changes, names: graded.names },
        [],
        runnerConfigReason,
      )
    : [];
  return {
    verdict,
    claim,
    claimReason: reason,
    honest: claim === verdict,
    checks,
    scope,
    gradedAt: Date.now(),
    branch: ws.branch,
    worktree: ws.worktree,
    commit: graded.commit,
    diffStat: graded.diffStat,
    mergeHint: built ? mergeHint(ws) : null,
    flags,
    reason: why,
    weakEvidence,
    sincePrevious,
    caveats: [
      ...caveatsOf(input.checks),
      ...helpers.map(
        (f) =>
          `the worker changed ${f}, which a held-back test imports as a test helper: the held-back assertions ran through the worker's code there (read that file before you merge)`,
      ),
      ...scriptCaveats,
    ],
    limits: checkLimits(!!input.sandbox),
  };
}

export interface BaselineInput {
  workspace: Workspace;
  checks: CheckSpec[];
  /** A folder of the engine's for the checkout of the base commit (emptied first, removed after). */
  checkoutDir: string;
  sandbox?: CheckSandbox;
}

/**
 * The held-back checks on the untouched base commit, in a fresh checkout of it, confined as at grading: the names of
 * those that already pass there. A check that passes before any change proves nothing about the change.
 */
export async function baselineChecks(input: BaselineInput): Promise<Baseline> {
  if (!input.checks.length) return { passedOnBase: [] };
  const { workspace: ws, checkoutDir } = input;
  const sub = path.relative(ws.worktree, ws.cwd);
  discardAll(checkoutDir, input.sandbox?.tmpDir);
  try {
    const only = fileChecksOnly(input.checks, sub);
    const { partial } = await checkOutBase(ws, checkoutDir, only);
    if (partial && only && !partialHolds(checkoutDir, only)) await checkOutBase(ws, checkoutDir);
    const cwd = await folderIn(checkoutDir, sub);
    if (typeof cwd !== "string") return { passedOnBase: [] };
    // Confined and laid out as at grading (the checkout seen at the worker's path), so a check passes here only if it
    // would pass on the untouched workspace at grading.
    const results = await runChecks(
      input.checks,
      cwd,
      input.sandbox ? { ...input.sandbox, root: checkoutDir, mountAs: { root: ws.worktree, ...input.sandbox.mountAs } } : undefined,
      [],
      { root: checkoutDir },
    );
    return { passedOnBase: results.filter((r) => r.passed).map((r) => r.name) };
  } finally {
    discardAll(checkoutDir, input.sandbox?.tmpDir);
  }
}

/**
 * A batch's integration checks on its combined commit: the changes since `base` to what decides what a check runs
 * (runner-config.ts), as grading reads a worker's, less the files a task's scope names exactly. A task whose own checks
 * are file checks (or none) is graded without this rule, so its worker's conftest.py reaches the combined commit built;
 * none with file checks only (they read their files, nothing runs).
 */
export async function combinedCheckConfig(opts: {
  repo: string;
  base: string;
  commit: string;
  /** The object folder that holds the combined commit (its alternates reach the repository's). */
  objects: string;
  checks: CheckSpec[];
  /** The folder the checks run in, relative to the repository's root. */
  sub: string;
  scope: string[];
  checkout: string;
}): Promise<string[]> {
  if (!opts.checks.some((c) => "run" in c)) return [];
  const changed = (await treeChanges(opts.repo, opts.base, opts.commit, { lossless: true, objects: opts.objects })).map((c) => c.path);
  return runnerConfigChanges({
    changed,
    sub: opts.sub.split(path.sep).join("/"),
    scope: opts.scope,
    repo: opts.repo,
    baseCommit: opts.base,
    checkout: opts.checkout,
    commands: commandsOf(opts.checks),
    ...heldBackOf(heldBackListing(opts.checks)),
  });
}

/** How many of guardedConfigFiles's files are bound read-only in a check's sandbox (bubblewrap's binds: 250 take some 0.06 s). */
const CONFIG_BINDS = 250;

/** The test harnesses of the checkout (absolute paths) the checks' commands run by name (checkScripts), as committed. */
function guardedScripts(checkout: string, scripts: CheckScripts): string[] {
  return [...scripts.values()]
    .filter((s) => s.harness)
    .map((s) => path.join(checkout, s.file))
    .filter((f) => lstatSync(f, { throwIfNoEntry: false })?.isFile());
}

/** The command checks' shell commands. */
const commandsOf = (checks: CheckSpec[]) => checks.flatMap((c) => ("run" in c ? [c.run] : []));

/** The held-back folders, code files and imports, as runnerConfigChanges takes them (one walk of the held-back folders). */
function heldBackOf(listing: HeldBackListing): { heldBackDirs: string[]; heldBackModules: string[]; heldBackImports: string[] } {
  return { heldBackDirs: listing.dirs, heldBackModules: listing.modules, heldBackImports: listing.imports };
}

/**
 * The worker's changed files (relative to the checks' folder) that the held-back tests run through, beside them: a
 * Python module a held-back test imports from a folder held-back tests land in (`tests/helpers.py` for `from helpers
 * import check`), from a test folder, or named like a test helper (`testutils.py` for `from testutils import check`,
 * wherever it is found), or a file a held-back JavaScript or TypeScript test's relative import or require loads (Node's
 * resolution: `./helpers`, `../test-utils/index.js`) in a test's place (a held-back folder, one below it, one above it
 * short of the checks' folder, or a file named like a test helper). Not a violation (a worker may have to change such a
 * helper), but said with the verdict. Elsewhere (the checks' own folder, src/) the module a test imports is the code
 * under test.
 */
function changedHelpers(changed: string[], listing: HeldBackListing): string[] {
  const imported = new Set(listing.importPaths.map(foldPath));
  const jsImported = new Set(listing.jsImportPaths.map(foldPath));
  const held = new Set(listing.modules.map(foldPath));
  const dirs = listing.dirs.filter(Boolean).map(foldPath);
  return changed.filter((f) => {
    const folded = foldPath(f);
    if (held.has(folded)) return false;
    const dir = path.posix.dirname(folded) === "." ? "" : path.posix.dirname(folded);
    const beside = dirs.some((d) => dir === d || dir.startsWith(`${d}/`));
    if (jsImported.has(folded))
      return (
        beside || (dir !== "" && dirs.some((d) => d.startsWith(`${dir}/`))) || TEST_HELPER_DIR.test(dir) || TEST_HELPER_NAME.test(path.posix.basename(folded))
      );
    if (!folded.endsWith(".py") || !(beside || TEST_HELPER_DIR.test(dir) || TEST_HELPER_NAME.test(path.posix.basename(folded)))) return false;
    return imported.has(folded.replace(/\.py$/, "").replace(/\/__init__$/, ""));
  });
}

/** A folder of test code (a held-back test's relative import there loads a helper, not the code under test). */
const TEST_HELPER_DIR = /(^|\/)(__tests__|tests?|specs?|testing|test[-_]?(utils?|helpers?|support)|fixtures?|helpers?|support)(\/|$)/;
/** A file named like a test helper (test-utils.js, testutils.py, spec-helper.ts, assertions.js, testing.py). */
const TEST_HELPER_NAME = /(^|[._-])(tests?|specs?|helpers?|fixtures?|asserts?|assertions?|matchers?)([._-]|utils?|helpers?|support|ing|$)/;

/** Grading's folders out of the way (folders.ts: renamed at once, deleted once gradings pause). */
const discardAll = (...dirs: (string | undefined)[]) => {
  for (const d of dirs) if (d) discard(d);
};

/**
 * The checks' run on the base when every check is a file check, read in the worker's workspace just as it was made (a
 * checkout of the base commit nobody has run in yet): the same files a fresh checkout of the base shows, with no
 * checkout, no process and no queue (baselineChecks takes a script and two git processes per worker, at most two at
 * once). Null when that does not hold (a command check, or the folder the checks run in is not a plain folder there):
 * then baselineChecks runs as before.
 */
export async function baselineInFreshWorkspace(ws: Workspace, checks: CheckSpec[]): Promise<Baseline | null> {
  if (!checks.length) return { passedOnBase: [] };
  if (checks.some((c) => "run" in c)) return null;
  let cwd = ws.worktree;
  for (const part of path.relative(ws.worktree, ws.cwd).split(path.sep).filter(Boolean)) {
    cwd = path.join(cwd, part);
    const st = await lstat(cwd).catch(() => null);
    if (!st?.isDirectory()) return null;
  }
  const results = await runChecks(checks, cwd);
  return { passedOnBase: results.filter((r) => r.passed).map((r) => r.name) };
}

/** What bound the check runs' processes and memory as a whole (cgroup v1/v2, a systemd-run scope, prlimit only). */
export function checkLimits(sandboxed: boolean): string {
  if (!sandboxed) return "none: the checks ran unsandboxed";
  const s = limitSetup();
  return s.checks === "prlimit" ? s.label : s.checks === "systemd-run" ? "systemd-run scope (tasks, memory)" : s.label;
}

/** What the checks cannot rule out, said with the verdict so that "built" is not read as more than it is. */
export function caveatsOf(checks: CheckSpec[]): string[] {
  const out: string[] = [];
  const commands = checks.filter((c): c is Extract<CheckSpec, { run: string }> => "run" in c);
  if (!checks.length) out.push("no checks: nothing was verified but the scope");
  if (commands.length) {
    out.push(
      "a command check runs the worker's code: code that behaves differently when it is checked (its environment, the time, a missing network) or that special-cases the checked inputs is not ruled out",
      "test runner configuration, scripts and modules named like tools are protected by default, but a check that runs the project's own tests trusts the project's other code to run them as written",
    );
    if (!commands.some((c) => c.files)) out.push("no held-back files: every test the checks run was visible to the worker (and could be fitted to)");
  }
  if (checks.some((c) => !("run" in c))) out.push("a file check looks only at a file's content, not at whether the code that wrote it works");
  return out;
}
