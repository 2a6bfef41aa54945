// The cost of containment: worker start (queued → first model request) from the worker's own events and the scripted
// model's request log, and a private repository (`git clone --shared`, the engine's createWorkspace) against a git
// worktree on a repository of a few thousand files: time and disk per worker.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, lstatSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { EngineClient } from "../engine/api/client";
import { createWorkspace, inspectRepo } from "../engine/workspace/workspace";
import type { WorkerEvent } from "../shared/worker";
import { cleanup, makeRepo, settle, tempDir } from "../test/helpers";
import { requestLog, type BenchModel } from "./model";
import { median, round } from "./stats";

export interface WorkerStart {
  workerId: string;
  /** worker.created (queued) → the first chat request of its session at the model. */
  firstRequestMs: number | null;
  /** queued → admitted (state starting): time spent waiting for a slot. */
  admitMs: number | null;
  /** queued → its private repository made (worker.workspace). */
  workspaceMs: number | null;
  /** queued → its opencode session created (worker.session). */
  sessionMs: number | null;
  /** queued → its first ask opened, and that ask answered (the engine side's asks go through MCP's wait → approve). */
  askMs?: number | null;
  answeredMs?: number | null;
  /** queued → settled (its session's idle accepted), and → its verdict recorded (built / honest-failure). */
  settledMs?: number | null;
  verdictMs?: number | null;
  /** queued → the last chat request of its session at the model (its final turn). */
  lastRequestMs?: number | null;
  /** When the first chat request reached the model (epoch ms; the bench's clock). */
  firstRequestAt?: number | null;
}

/**
 * Per worker, from its event log (engine clock) and the model's request log (the model's process's clock; same machine),
 * fetched once from the model's process where it has one: call it after the batch.
 */
export async function workerStarts(client: EngineClient, model: BenchModel, ids: string[]): Promise<WorkerStart[]> {
  const requests = await requestLog(model);
  return Promise.all(
    ids.map(async (workerId) => {
      const events = (await client.workers.events.query({ workerId })) as WorkerEvent[];
      const created = events.find((e) => e.type === "worker.created")?.ts ?? null;
      const at = (pred: (e: WorkerEvent) => boolean) => {
        const e = events.find(pred);
        return e && created !== null ? e.ts - created : null;
      };
      const session = events.find((e) => e.type === "worker.session") as Extract<WorkerEvent, { type: "worker.session" }> | undefined;
      const chats = session ? requests.filter((r) => r.kind === "chat" && r.sessionId === session.sessionId) : [];
      const first = chats[0];
      const last = chats.at(-1);
      return {
        workerId,
        firstRequestMs: first && created !== null ? first.at - created : null,
        admitMs: at((e) => e.type === "worker.state" && e.state === "starting"),
        workspaceMs: at((e) => e.type === "worker.workspace"),
        sessionMs: at((e) => e.type === "worker.session"),
        askMs: at((e) => e.type === "ask.opened"),
        answeredMs: at((e) => e.type === "ask.resolved"),
        settledMs: at((e) => e.type === "worker.state" && e.state === "settled"),
        verdictMs: at((e) => e.type === "verdict"),
        lastRequestMs: last && created !== null ? last.at - created : null,
        firstRequestAt: first?.at ?? null,
      };
    }),
  );
}

/** Medians over a set of worker starts (null when none was measured). */
export function startMedians(starts: WorkerStart[]) {
  const m = (k: keyof Omit<WorkerStart, "workerId">) => {
    const xs = starts.map((s) => s[k]).filter((x): x is number => x !== null);
    return xs.length ? round(median(xs), 0) : null;
  };
  return {
    firstRequestMs: m("firstRequestMs"),
    admitMs: m("admitMs"),
    workspaceMs: m("workspaceMs"),
    sessionMs: m("sessionMs"),
    askMs: m("askMs"),
    answeredMs: m("answeredMs"),
    settledMs: m("settledMs"),
    verdictMs: m("verdictMs"),
    n: starts.filter((s) => s.firstRequestMs !== null).length,
  };
}

/** `count` workers one after another on an idle engine (nothing else queued): the start of a lone worker. */
export async function loneStarts(client: EngineClient, model: BenchModel, count: number): Promise<WorkerStart[]> {
  const dir = makeRepo();
  const out: WorkerStart[] = [];
  for (let i = 0; i < count; i++) {
    const { workerId } = await client.workers.start.mutate({ task: `BENCH-TINY lone ${i}`, directory: dir });
    await settle(client, [workerId], undefined, 120_000);
    out.push(...(await workerStarts(client, model, [workerId])));
  }
  cleanup(dir);
  return out;
}

// ---------- private repository vs worktree ----------

/** A repository of `files` files (about 2 KB each, 50 to a folder) in one commit. */
export function sizableRepo(files: number): string {
  const dir = makeRepo();
  for (let i = 0; i < files; i++) {
    const sub = path.join(dir, "src", `m${Math.floor(i / 50)}`);
    if (i % 50 === 0) mkdirSync(sub, { recursive: true });
    writeFileSync(path.join(sub, `f${i}.ts`), `// file ${i}\n` + `export const v${i} = ${JSON.stringify("x".repeat(60))};\n`.repeat(28));
  }
  const git = (...args: string[]) => execFileSync("git", args, { cwd: dir, stdio: "pipe" });
  git("add", "-A");
  git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "files");
  git("gc", "-q");
  return dir;
}

/** Apparent bytes and allocated KB (du) under a path. */
function diskOf(p: string): { bytes: number; kb: number } {
  let bytes = 0;
  if (!lstatSync(p).isDirectory()) return { bytes: lstatSync(p).size, kb: Number(execFileSync("du", ["-sk", p], { encoding: "utf8" }).split("\t")[0]) };
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const f = path.join(d, e.name);
      if (e.isDirectory()) walk(f);
      else bytes += lstatSync(f).size;
    }
  };
  walk(p);
  const kb = Number(execFileSync("du", ["-sk", p], { encoding: "utf8" }).split("\t")[0]);
  return { bytes, kb };
}

export interface RepoCost {
  files: number;
  repoMb: number;
  /** Per worker: ms to make it, and disk beyond the user's repository (checked-out files + git metadata). */
  privateRepo: { ms: number[]; kb: number; metaKb: number };
  worktree: { ms: number[]; kb: number; metaKb: number };
}

/**
 * The engine's createWorkspace (one script: `git init`, the user's objects as its alternate, checkout of a branch; the
 * engine's own bare repository is made later, by grading's first snapshot) against `git worktree add -b` on the same
 * repository, alternating, `reps` each.
 * Disk: the workspace (and the engine's repository, where it exists already), or the worktree and its admin folder in
 * the user's .git (its index).
 */
export async function repoCost(files: number, reps: number): Promise<RepoCost> {
  const repo = sizableRepo(files);
  const root = tempDir("bench-ws");
  const info = await inspectRepo(repo);
  const priv: number[] = [];
  const wt: number[] = [];
  let privDisk = { kb: 0, metaKb: 0 };
  let wtDisk = { kb: 0, metaKb: 0 };
  try {
    for (let i = 0; i < reps; i++) {
      const id = `w${i}`;
      let t = performance.now();
      const ws = await createWorkspace(path.join(root, "ws"), info, id, path.join(root, "git", id));
      priv.push(performance.now() - t);
      const a = diskOf(ws.worktree);
      // The engine's own repository is made by grading's first snapshot, not here: nothing of it exists yet.
      const g = existsSync(ws.gitDir) ? diskOf(ws.gitDir) : { bytes: 0, kb: 0 };
      const meta = diskOf(path.join(ws.worktree, ".git"));
      privDisk = { kb: a.kb + g.kb, metaKb: meta.kb + g.kb };
      const dest = path.join(root, "wt", id);
      t = performance.now();
      execFileSync("git", ["-C", repo, "worktree", "add", "-q", "-b", `bench/${id}`, dest, "HEAD"], { stdio: "pipe" });
      wt.push(performance.now() - t);
      const w = diskOf(dest);
      const admin = diskOf(path.join(repo, ".git", "worktrees", id));
      wtDisk = { kb: w.kb + admin.kb, metaKb: admin.kb + diskOf(path.join(dest, ".git")).kb };
    }
    return {
      files,
      repoMb: round(diskOf(repo).kb / 1024),
      privateRepo: { ms: priv.map((x) => round(x, 0)), ...privDisk },
      worktree: { ms: wt.map((x) => round(x, 0)), ...wtDisk },
    };
  } finally {
    cleanup(repo, root);
  }
}
