import { lstatSync, readlinkSync, realpathSync } from "node:fs";
import path from "node:path";
import { policyGlob } from "./policy-glob";
import { protectMatcher, scopeMatcher } from "../grading";
import { foldPath } from "../workspace";
import { grantsFor, type Grant, type PermissionAsk } from "../../shared/permission";
import { redirectionParts, splitCommand } from "../../shared/shell";

type Flag = NonNullable<PermissionAsk["flags"]>[number];

/**
 * libc's realpath where it is the same answer (one call, not a JS lstat per part of the path: asks are inspected twice
 * each, 32 at once in a batch); Node's own on Windows, whose native one misreads some drives.
 */
const realpath = process.platform === "win32" ? realpathSync : realpathSync.native;

/**
 * The real location of a path that may not exist yet: its deepest existing ancestor resolved, the rest appended. An
 * absolute path is read as the kernel reads it, never normalised first: `<ws>/link/../x` is `x` beside what `link`
 * names (opencode opens an absolute path as the worker wrote it), not `<ws>/x`.
 */
export function realLocation(p: string, links = 0): string {
  let dir = path.isAbsolute(p) ? p : path.resolve(p);
  const rest: string[] = [];
  for (;;) {
    try {
      return path.join(realpath(dir), ...rest);
    } catch {
      // A dangling symlink: a write through it creates its target, wherever that is (its folder resolved in turn). After
      // 40 links the kernel opens nothing (ELOOP), nor is anything taken from it here.
      const target = links < 40 ? linkTarget(dir) : null;
      // Joined as written, not normalised: a `..` in the target is the kernel's to read, after any link before it.
      if (target !== null)
        return realLocation([path.isAbsolute(target) ? target : `${path.dirname(dir)}${path.sep}${target}`, ...rest].join(path.sep), links + 1);
      const parent = path.dirname(dir);
      if (parent === dir) return path.join(dir, ...rest);
      rest.unshift(path.basename(dir));
      dir = parent;
    }
  }
}

function linkTarget(p: string): string | null {
  try {
    return lstatSync(p).isSymbolicLink() ? readlinkSync(p) : null;
  } catch {
    return null;
  }
}

function viaSymlink(p: string, root: string): string | null {
  let dir = path.resolve(p);
  while (dir.startsWith(root + path.sep)) {
    try {
      if (lstatSync(dir).isSymbolicLink()) return dir;
    } catch {
      /* not there yet */
    }
    dir = path.dirname(dir);
  }
  return null;
}

/**
 * A tool's path as opencode opens it: an absolute one as written (a `..` in it is the kernel's to read, after any
 * symlink before it), a relative one from `base`, which opencode normalises before it opens it.
 */
export const asOpened = (base: string, p: string): string => (path.isAbsolute(p) ? p : path.resolve(base, p));

const inside = (p: string, root: string) => p === root || p.startsWith(root + path.sep);

/**
 * What a person should know before deciding an ask that names a file: where it really is (symlinks resolved), and
 * whether it is outside the worker's workspace, protected, or out of scope. Computed from the path opencode gives
 * (its `filepath`), never by parsing shell text.
 */
export function inspectAsk(
  ask: Pick<PermissionAsk, "tool" | "what" | "workdir" | "paths">,
  ws: { worktree: string; cwd: string },
  spec: { scope: string[]; protect: string[] },
): Flag[] {
  if (ask.tool === "bash" && ask.workdir) return inspectWorkdir(ask.workdir, ws);
  if (ask.tool !== "edit" && ask.tool !== "external_directory") return [];
  // An ask of several files (apply_patch): each one, relative ones from the workspace's root as opencode names them.
  if (ask.tool === "edit" && ask.paths?.length) {
    const flags = ask.paths.flatMap((p) => inspectPath(asOpened(ws.worktree, p), ws, spec));
    const seen = new Set<string>();
    return flags.filter((f) => !seen.has(f.kind + f.detail) && seen.add(f.kind + f.detail));
  }
  return inspectPath(asOpened(ws.cwd, ask.what), ws, spec);
}

/** One file an ask writes: where it really lands, and whether that is outside, protected or out of scope. */
function inspectPath(asked: string, ws: { worktree: string; cwd: string }, spec: { scope: string[]; protect: string[] }): Flag[] {
  const root = realLocation(ws.worktree);
  const real = realLocation(asked);
  const flags: Flag[] = [];
  const link = viaSymlink(asked, path.resolve(ws.worktree));
  if (link) flags.push({ kind: "symlink", detail: `${path.relative(ws.worktree, link)} is a symlink: the write lands in ${real}` });
  if (!inside(real, root)) {
    flags.push({ kind: "outside-workspace", detail: `${real} is outside the worker's workspace` });
    return flags;
  }
  const rel = path.relative(realLocation(ws.cwd), real).split(path.sep).join("/");
  if (protectMatcher(spec.protect)(rel)) flags.push({ kind: "protected", detail: `${rel} is protected (${spec.protect.join(", ")})` });
  else if (spec.scope.length && !scopeMatcher(spec.scope)(rel))
    flags.push({ kind: "out-of-scope", detail: `${rel} is outside the task's scope (${spec.scope.join(", ")})` });
  return flags;
}

/**
 * A bash command's folder, symlinks resolved: outside the workspace (another worker's workspace through a symlink, say)
 * the engine refuses the ask; the worker shell refuses to run there anyway (engine/sandbox), whoever answers.
 */
function inspectWorkdir(workdir: string, ws: { worktree: string; cwd: string }): Flag[] {
  const asked = asOpened(ws.cwd, workdir);
  const real = realLocation(asked);
  const flags: Flag[] = [];
  const link = viaSymlink(asked, path.resolve(ws.worktree));
  if (link) flags.push({ kind: "symlink", detail: `the command's folder ${path.relative(ws.worktree, link)} is a symlink to ${real}` });
  if (!inside(real, realLocation(ws.worktree)))
    flags.push({ kind: "outside-workspace", detail: `the command's folder ${real} is outside the worker's workspace` });
  return flags;
}

export { grantOffer, grantPattern } from "../../shared/permission";

/**
 * The worker's grants that answer an ask, if any: every simple command of a shell command (every part of `;`, `&&`,
 * `||`, `|`, `&`, line breaks) needs a grant of its own, matched exactly; a command that cannot be split with
 * certainty, and a flagged ask (outside, protected, out of scope), is never granted.
 */
export function grantFor(ask: PermissionAsk, grants: Grant[]): Grant[] | undefined {
  return grantsFor(ask, grants);
}

/**
 * Whether a user's policy rule (a glob) answers an ask. For a shell command the rule is matched per simple command: an
 * approving rule answers only when every simple command matches it (and the command splits with certainty); a
 * rejecting rule answers when the whole command or any simple command matches.
 */
export function ruleMatches(ask: Pick<PermissionAsk, "tool" | "what"> & { paths?: string[] }, rule: { pattern: string; decision: string }): boolean {
  const holdBack = rule.decision === "reject";
  const isMatch = (text: string) => policyGlob(text, rule.pattern, holdBack);
  // A rejecting rule on a path (an edit, a read…) holds for the names a case-insensitive, normalising file system
  // opens as the same file (`SECRETS/x`, `.Env`), as protect globs do; an approving one answers only the name as written.
  const onPath = (p: string) => isMatch(p) || (holdBack && policyGlob(foldPath(p), foldPath(rule.pattern), true));
  // An ask of several files (apply_patch; `what` is their names joined, which `src/**` would match whole): an approving
  // rule answers only when it matches every file, a rejecting one when it matches any.
  if (ask.tool !== "bash" && ask.paths?.length) return rule.decision === "reject" ? onPath(ask.what) || ask.paths.some(onPath) : ask.paths.every(onPath);
  if (ask.tool !== "bash") return onPath(ask.what);
  const split = splitCommand(ask.what);
  if (rule.decision === "reject") return isMatch(ask.what) || (split.ok && split.commands.some(isMatch));
  return split.ok && split.commands.every((c) => approvesSimple(c, rule.pattern));
}

/**
 * Whether an approving pattern answers one simple command. A command with a redirection is approved only by a pattern
 * that spells the same redirection operators in the same places, each stretch between them matched on its own: `npm
 * test*` does not answer `npm test > ~/.bashrc`, `npm test > out/*.log` answers `npm test > out/a.log`.
 */
function approvesSimple(command: string, pattern: string): boolean {
  const c = redirectionParts(command);
  if (!c.ops.length) return policyGlob(command, pattern, false);
  const p = redirectionParts(pattern);
  if (p.ops.length !== c.ops.length || p.ops.some((op, i) => op !== c.ops[i])) return false;
  return c.texts.every((t, i) => {
    const [text, glob] = [t.trim(), p.texts[i]!.trim()];
    return text === glob || (!!text && !!glob && policyGlob(text, glob, false));
  });
}

/**
 * The rule that answers an ask among `rules` (in order): a rejecting rule wins over approving ones, else the first
 * matching rule. A rule names one tool or "*" (any). Questions are never answered by a rule (the queue never asks).
 */
export function pickRule<R extends { tool: string; pattern: string; decision: string }>(
  rules: readonly R[],
  ask: Pick<PermissionAsk, "tool" | "what"> & { paths?: string[] },
): R | undefined {
  const hits = rules.filter((r) => (r.tool === "*" || r.tool === ask.tool) && ruleMatches(ask, r));
  return hits.find((r) => r.decision === "reject") ?? hits[0];
}

/** What the rule builder shows for a sample ask: its simple commands (shell), which rules match it, and which one answers. */
interface PolicyExplanation {
  /** A shell command's simple commands, each with the rules (indexes) that match it alone; null for other tools. */
  parts: { command: string; rules: number[] }[] | null;
  /** Why a shell command cannot be split with certainty (then no approving rule answers it), or null. */
  unsplittable: string | null;
  /** Per rule: whether it matches this ask (for its tool and decision, as the engine decides). */
  matches: boolean[];
  /** The rule that answers (its index and decision), or null: the ask waits for a person. */
  answer: { index: number; decision: string } | null;
}

export function explainPolicy(
  rules: readonly { tool: string; pattern: string; decision: string }[],
  ask: Pick<PermissionAsk, "tool" | "what">,
): PolicyExplanation {
  const forTool = (r: { tool: string }) => r.tool === "*" || r.tool === ask.tool;
  const matches = rules.map((r) => forTool(r) && ruleMatches(ask, r));
  const picked = pickRule(rules, ask);
  let parts: PolicyExplanation["parts"] = null;
  let unsplittable: string | null = null;
  if (ask.tool === "bash") {
    const split = splitCommand(ask.what);
    if (split.ok)
      parts = split.commands.map((command) => ({
        command,
        rules: rules.flatMap((r, i) => (forTool(r) && policyGlob(command, r.pattern, r.decision === "reject") ? [i] : [])),
      }));
    else unsplittable = split.why;
  }
  return { parts, unsplittable, matches, answer: picked ? { index: rules.indexOf(picked), decision: picked.decision } : null };
}
