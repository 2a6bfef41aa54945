// The engine's in-process snapshot (snapshot.ts) against git's own, on random worker edits of small random bases
// (fast-check, a fixed seed): whatever the worker leaves, the engine's commit has the tree `git add -A && git
// write-tree` makes on a fresh index of the base in a copy of the worktree (or the engine fell back to git's way, which
// is counted and checked the same), git reads every object of it from the engine's object folders (fsck, verify-pack),
// and the checkout the engine wrote is what `git checkout-index` of that commit writes. The hand-written cases are in
// test/fixtures/snapshot-cases.ts; a divergence found here is minimised and added there.
// Found so far: a repository standing where the base has a file (git's add takes it as a gitlink, or refuses it; the
// engine's had graded the file deleted). OCW_FUZZ_SEED and OCW_FUZZ_RUNS run another seed or more runs; OCW_FUZZ_SHRINK=1
// minimises a failure (fast-check's shrinking, each step a real grading), OCW_FUZZ_KEEP=1 keeps the repositories.
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { gitStartsDuring } from "../../test/fixtures/git-repo";
import { listing } from "../../test/fixtures/snapshot-cases";
import { commitAndCheckOut, createWorkspace, inspectRepo, snapshotCaps } from "./workspace";

const SEED = Number(process.env.OCW_FUZZ_SEED ?? 20260612);
const RUNS = Number(process.env.OCW_FUZZ_RUNS ?? 60);

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-snapfuzz-"));
afterAll(() => process.env.OCW_FUZZ_KEEP || rmSync(tmp, { recursive: true, force: true }));
let n = 0;

// The reference git: no config or excludes of this machine's (as the engine's own git reads none).
const home = path.join(tmp, "home");
mkdirSync(home);
const gitEnv = (extra: Record<string, string> = {}) => {
  const env: Record<string, string | undefined> = {
    ...process.env,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    HOME: home,
    XDG_CONFIG_HOME: home,
    LC_ALL: "C",
    ...extra,
  };
  for (const k of ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES"]) if (!(k in extra)) delete env[k];
  return env;
};
const git = (dir: string, args: string[], extra?: Record<string, string>, input?: string) =>
  execFileSync("git", ["-C", dir, ...args], {
    encoding: "latin1",
    env: gitEnv(extra),
    input: input && Buffer.from(input),
    stdio: ["pipe", "pipe", "pipe"],
  }).replace(/\n$/, "");

// Names that sort around each other in git's tree order ("a" < "a b" < "a-" < "a.b" < "a/" < "a0"), spaces, a leading
// dash, é composed (NFC) and decomposed (NFD), names the ignore patterns below match.
const NAMES = ["a", "a.b", "a-", "a0", "a b", "-x", "\u00e9", "e\u0301", "x.log", "keep.log", "build", "d", "f.txt", ".hidden"];
// Rarer: names a shell, a glob, an ignore file or a quoting list reads otherwise.
const ODD_NAMES = ["*", "[a]", "!n", "#c", '"q', "a\nb", "a\\b", "\t", " ", "a "];
const IGNORE_LINES = [
  "*.log",
  "!keep.log",
  "build/",
  "a*",
  "!a.b",
  "/a0",
  "*.txt",
  "!*.txt",
  "d/",
  "!d/",
  "-*",
  "\u00e9",
  "**/x.log",
  "*",
  "!*/",
  "!.gitignore",
];
const LINK_TARGETS = ["a", "../a", "a/a0", "d/", ".", "..", "nowhere", "/nonexistent/abs", "/tmp", "\u00e9"];

const name = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...NAMES) }, { weight: 1, arbitrary: fc.constantFrom(...ODD_NAMES) });
const relPath = fc.array(name, { minLength: 1, maxLength: 3 }).map((parts) => parts.join("/"));

type Content = { small: string } | { large: number; fill: number };
const content: fc.Arbitrary<Content> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom("", "a\n", "b\n", "x", "\r\n", "\0\x01\xff", "line\n".repeat(40)).map((small) => ({ small })) },
  // Just over (or at) 64 KiB: compressed off the engine's thread, and a pack written there.
  { weight: 1, arbitrary: fc.record({ large: fc.integer({ min: 64 * 1024 - 1, max: 64 * 1024 + 70 }), fill: fc.nat(255) }) },
);
const bytesOf = (c: Content) => ("small" in c ? Buffer.from(c.small, "latin1") : Buffer.alloc(c.large, c.fill));

type BaseFile = { path: string } & ({ file: Content; exec: boolean } | { link: string } | { ignore: string[] });
const baseFile: fc.Arbitrary<BaseFile> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ path: relPath, file: content, exec: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ path: relPath, link: fc.constantFrom(...LINK_TARGETS) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      path: fc.oneof(fc.constant(""), relPath).map((d) => (d ? `${d}/.gitignore` : ".gitignore")),
      ignore: fc.array(fc.constantFrom(...IGNORE_LINES), { minLength: 1, maxLength: 3 }),
    }),
  },
);

/** A path of the edits: one of the base's (or a folder above it), or any from the names. */
type Target = { ref: number; up: number } | { path: string };
const target: fc.Arbitrary<Target> = fc.oneof(fc.record({ ref: fc.nat(), up: fc.nat(2) }), fc.record({ path: relPath }));

type Op =
  | { op: "write"; at: Target; file: Content; exec: boolean }
  | { op: "rm"; at: Target }
  | { op: "chmod"; at: Target; mode: number }
  | { op: "link"; at: Target; to: string }
  | { op: "ignore"; at: Target | null; lines: string[] }
  | { op: "swap"; at: Target }
  | { op: "mkdir"; at: Target }
  | { op: "hardlink"; at: Target; from: Target }
  | { op: "special"; at: Target; what: "fifo" | "attributes" | "nested" | "nested-commit" };
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant("write" as const), at: target, file: content, exec: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("rm" as const), at: target }) },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant("chmod" as const), at: target, mode: fc.constantFrom(0o755, 0o644, 0o744, 0o711, 0o700, 0o655, 0o611, 0o600) }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("link" as const), at: target, to: fc.constantFrom(...LINK_TARGETS) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("ignore" as const),
      at: fc.option(target, { nil: null }),
      lines: fc.array(fc.constantFrom(...IGNORE_LINES), { minLength: 1, maxLength: 3 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("swap" as const), at: target }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("mkdir" as const), at: target }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("hardlink" as const), at: target, from: target }) },
  // What the engine leaves to git's way (or git's listing leaves out): a FIFO, attributes, a nested repository.
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant("special" as const), at: target, what: fc.constantFrom("fifo", "attributes", "nested", "nested-commit") }),
  },
);

const scenario = fc.record({
  format: fc.constantFrom("sha1", "sha1", "sha1", "sha256"),
  base: fc.array(baseFile, { minLength: 1, maxLength: 8 }),
  ops: fc.array(op, { minLength: 0, maxLength: 6 }),
  // Checked files (a partial checkout) or the whole tree.
  only: fc.option(fc.array(target, { minLength: 1, maxLength: 3 }), { nil: null }),
});
type Scenario = typeof scenario extends fc.Arbitrary<infer S> ? S : never;

const FIXED_DATE = { GIT_AUTHOR_DATE: "2026-01-01T00:00:00Z", GIT_COMMITTER_DATE: "2026-01-01T00:00:00Z" };

const lst = (p: string) => {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
};

/** Makes `p`'s folders real folders (a file or symlink on the way removed), and `p` itself free. */
function clear(w: string, p: string) {
  const parts = p.split("/");
  for (let i = 1; i < parts.length; i++) {
    const at = path.join(w, ...parts.slice(0, i));
    const st = lst(at);
    if (st && !st.isDirectory()) rmSync(at);
    if (!st || !st.isDirectory()) mkdirSync(at);
  }
  rmSync(path.join(w, p), { recursive: true, force: true });
}

function put(w: string, f: BaseFile | { path: string; file: Content; exec: boolean }) {
  clear(w, f.path);
  const at = path.join(w, f.path);
  if ("file" in f) writeFileSync(at, bytesOf(f.file), { mode: f.exec ? 0o755 : 0o644 });
  else if ("link" in f) symlinkSync(f.link, at);
  else writeFileSync(at, `${f.ignore.join("\n")}\n`);
}

/** The base: its files committed with `add -A -f` (an ignored file is tracked), no path both a file and a folder. */
function baseRepo(s: Scenario): { dir: string; paths: string[] } {
  const dir = path.join(tmp, `base-${n++}`);
  execFileSync("git", ["init", "-q", "-b", "main", `--object-format=${s.format}`, dir], { env: gitEnv() });
  const paths: string[] = [];
  for (const f of s.base) {
    if (paths.some((p) => p === f.path || p.startsWith(`${f.path}/`) || f.path.startsWith(`${p}/`))) continue;
    put(dir, f);
    paths.push(f.path);
  }
  git(dir, ["add", "-A", "-f"]);
  git(dir, ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "base"]);
  return { dir, paths: paths.sort() };
}

const resolve = (t: Target, paths: string[]): string => {
  if ("path" in t) return t.path;
  const parts = paths[t.ref % paths.length]!.split("/");
  return parts.slice(0, Math.max(1, parts.length - t.up)).join("/");
};

/** The worker's edits, each as a shell would make them (whatever is on the way made to fit). */
function edit(w: string, s: Scenario, paths: string[]) {
  for (const o of s.ops) {
    const p = o.at ? resolve(o.at, paths) : "";
    const at = path.join(w, p);
    const st = lst(at);
    switch (o.op) {
      case "write":
        put(w, { path: p, file: o.file, exec: o.exec });
        break;
      case "rm":
        // (nothing there, or a file on the way: nothing to remove)
        if (st) rmSync(at, { recursive: true, force: true });
        break;
      case "chmod":
        // The owner's executable bit is git's (100755), whatever the group's and others' are.
        if (st?.isFile()) chmodSync(at, o.mode);
        break;
      case "link":
        clear(w, p);
        symlinkSync(o.to, at);
        break;
      case "ignore":
        // The folder's .gitignore (the top's with none named), added or changed.
        if (!p || st?.isDirectory()) {
          clear(w, p ? `${p}/.gitignore` : ".gitignore");
          writeFileSync(path.join(at, ".gitignore"), `${o.lines.join("\n")}\n`);
        }
        break;
      case "swap":
        // A file made a folder of the same name (a file in it), a folder a file.
        if (st?.isDirectory()) {
          rmSync(at, { recursive: true });
          writeFileSync(at, "was a folder\n");
        } else {
          clear(w, p);
          mkdirSync(at);
          writeFileSync(path.join(at, "a0"), "was a file\n");
        }
        break;
      case "mkdir":
        clear(w, p);
        mkdirSync(at);
        break;
      case "hardlink": {
        const from = path.join(w, resolve(o.from, paths));
        if (!lst(from)?.isFile() || from === at || from.startsWith(`${at}/`)) break;
        clear(w, p);
        linkSync(from, at);
        break;
      }
      case "special":
        if (o.what === "fifo") {
          clear(w, p);
          execFileSync("mkfifo", [at]);
        } else if (o.what === "attributes") {
          clear(w, `${p}/.gitattributes`);
          writeFileSync(path.join(at, ".gitattributes"), "* text eol=crlf\n");
        } else {
          if (!st?.isDirectory()) put(w, { path: `${p}/a`, file: { small: "n\n" }, exec: false });
          git(at, ["init", "-q"]);
          if (o.what === "nested-commit") {
            git(at, ["add", "-A"]);
            git(at, ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "n"], FIXED_DATE);
          }
        }
        break;
    }
  }
}

/** The paths to check out for `only` (as workspace.ts's checkoutList): each and every folder above it. */
const checkoutList = (only: string[]) => [...new Set(only.flatMap((p) => p.split("/").map((_, i, parts) => parts.slice(0, i + 1).join("/"))))];

const stats = { runs: 0, inProcess: 0, fellBack: 0, failedBothWays: 0, unchanged: 0 };

async function check(s: Scenario): Promise<void> {
  stats.runs++;
  const base = baseRepo(s);
  const id = `w-${n++}`;
  const ws = await createWorkspace(path.join(tmp, "workspaces"), await inspectRepo(base.dir), id, path.join(tmp, "repos", `${id}.git`));
  edit(ws.worktree, s, base.paths);
  const only = s.only ? [...new Set(s.only.map((t) => resolve(t, base.paths)))] : undefined;
  const baseObjects = path.join(base.dir, ".git", "objects");

  // git's own: a copy of the worktree, a fresh index of the base, every file added.
  const copy = path.join(tmp, `copy-${n++}`);
  execFileSync("cp", ["-a", ws.worktree, copy]);
  const refObjects = path.join(tmp, `ref-objects-${n++}`);
  mkdirSync(refObjects);
  const refEnv = { GIT_INDEX_FILE: path.join(tmp, `ref-index-${n++}`), GIT_OBJECT_DIRECTORY: refObjects, GIT_ALTERNATE_OBJECT_DIRECTORIES: baseObjects };
  let gitsTree: string | { error: string };
  try {
    git(copy, ["read-tree", ws.baseCommit], refEnv);
    git(copy, ["add", "-A"], refEnv);
    gitsTree = git(copy, ["write-tree"], refEnv);
  } catch (err) {
    gitsTree = { error: String((err as { stderr?: string }).stderr ?? err) };
  }

  // The engine's.
  const dir = path.join(tmp, `checkout-${n++}`);
  let made: Awaited<ReturnType<typeof commitAndCheckOut>> | { error: string } = { error: "" };
  const starts = await gitStartsDuring(path.join(tmp, `bin-${n++}`), async () => {
    made = await commitAndCheckOut(ws, "ocw: snapshot", dir, snapshotCaps(), only, "any").catch((err: Error) => ({ error: err.message }));
  });
  const fellBack = starts.includes("add");
  if ("error" in made || typeof gitsTree !== "string") {
    // git's add refused these files: so must the engine (by git's way), and no tree of its own stands.
    expect({ engine: "error" in made, git: typeof gitsTree !== "string", fellBack }).toEqual({ engine: true, git: true, fellBack: true });
    stats.failedBothWays++;
    return;
  }
  if (fellBack) stats.fellBack++;
  else stats.inProcess++;
  const m = made as Awaited<ReturnType<typeof commitAndCheckOut>>;

  // 1. The commit's tree is git's.
  const grade = path.join(ws.gitDir, "grade-objects");
  const objEnv = { GIT_OBJECT_DIRECTORY: grade, GIT_ALTERNATE_OBJECT_DIRECTORIES: baseObjects };
  const commitText = git(base.dir, ["cat-file", "commit", m.commit], objEnv);
  const tree = /^tree ([0-9a-f]+)$/m.exec(commitText)?.[1];
  expect({ tree, fellBack }).toEqual({ tree: gitsTree, fellBack });
  if (m.commit === ws.baseCommit) {
    stats.unchanged++;
    expect(m.changed).toEqual([]);
  } else {
    expect(commitText).toMatch(new RegExp(`^parent ${ws.baseCommit}$`, "m"));
    // 2. Every object of it readable from the engine's object folders (the new ones there, the rest the base's).
    git(base.dir, ["cat-file", "-e", `${m.commit}^{tree}`], objEnv);
    git(base.dir, ["fsck", "--connectivity-only", "--no-dangling", "--no-progress", m.commit], objEnv);
    const packs = existsSync(path.join(grade, "pack")) ? readdirSync(path.join(grade, "pack")).filter((f) => f.endsWith(".idx")) : [];
    // The engine's own way writes one pack (git's way loose objects).
    if (!fellBack) expect(packs).toHaveLength(1);
    for (const idx of packs) git(base.dir, ["verify-pack", `--object-format=${s.format}`, path.join(grade, "pack", idx)]);
    // The changes named are the diff's.
    const diff = git(base.dir, ["diff", "--name-only", "-z", "--no-renames", ws.baseCommit, m.commit], objEnv)
      .split("\0")
      .filter(Boolean)
      .map((p) => Buffer.from(p, "latin1").toString("utf8"));
    expect([...m.changed].sort()).toEqual(diff.sort());
  }

  // 3. The checkout: git's checkout-index of that commit (the checked files and the folders above them, or all).
  const gitsCheckout = path.join(tmp, `git-checkout-${n++}`);
  mkdirSync(gitsCheckout);
  const coEnv = { ...objEnv, GIT_INDEX_FILE: path.join(tmp, `co-index-${n++}`) };
  git(base.dir, ["read-tree", m.commit], coEnv);
  if (m.partial && only) {
    try {
      git(base.dir, ["--work-tree", gitsCheckout, "checkout-index", "--stdin", "-f", "-q"], coEnv, `${checkoutList(only).join("\n")}\n`);
    } catch {
      // a name not a file of the tree (a folder, or none): git says so and writes the rest, as the engine's script
    }
  } else git(base.dir, ["--work-tree", gitsCheckout, "checkout-index", "-a", "-f", "-q"], coEnv);
  expect(listing(Buffer.from(dir))).toEqual(listing(Buffer.from(gitsCheckout)));
}

describe("the engine's own snapshot against git's, on random edits of random bases", () => {
  it(`seed ${SEED}, ${RUNS} runs`, { timeout: 300_000 }, async () => {
    try {
      await fc.assert(
        fc.asyncProperty(scenario, (s) => check(s)),
        { seed: SEED, numRuns: RUNS, endOnFailure: !process.env.OCW_FUZZ_SHRINK },
      );
    } catch (err) {
      console.error("snapshot fuzz: the failing run's error:", (err as Error).cause);
      throw new Error(`snapshot fuzz failed (seed ${SEED}; rerun with OCW_FUZZ_SEED=${SEED}, OCW_FUZZ_SHRINK=1 to minimise): ${(err as Error).message}`, {
        cause: (err as Error).cause,
      });
    }
    console.log(`snapshot fuzz, seed ${SEED}:`, stats);
    // Most runs are the engine's own (else this compared git with git).
    expect(stats.inProcess).toBeGreaterThan(RUNS / 2);
  });
});
