/**
 * The one owner of model-server records (`<state>/serving.json`, issue 27). Three kinds of process write them: the
 * engine (setup, restart, keep, stop), `ocw serving supervise` (a restarted server's pid) and the CLI (`ocw setup`
 * in-process, `ocw serving stop`). Each change is read → change → atomic write under one lock file
 * (`serving.json.lock`, created exclusively, holding its owner's identity: pid + the kernel's start time, as the
 * engine's other pid files). A lock whose owner is gone (a crash between lock and unlock) is taken over; a live one is
 * waited for. The lock is written to a file of its own first and linked into place, so it never exists half written.
 * Nothing else writes serving.json.
 */
import { randomBytes } from "node:crypto";
import { closeSync, linkSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import path from "node:path";
import { readJson, stateDir, writeJsonAtomic } from "../store";
import { alive, processStartTime } from "../process";
import { SetupError } from "../models";

export interface ServingRecord {
  /** The target's id, or `ID@N` for replica N of a pool target (then `replicaOf` is the target's id). */
  targetId: string;
  replicaOf?: string;
  /** Environment the plan gave the server (a replica's CUDA_VISIBLE_DEVICES …); never the key. */
  env?: Record<string, string>;
  pid: number;
  /**
   * The kernel's start time of `pid` (processStartTime), so a pid given to another process since (a reboot, a long
   * time) is never taken for our server nor signalled. Absent in records of an older ocw, or null where the OS gives no
   * start time: such a record is judged by its pid alone (as before).
   */
  startTime?: string | null;
  /** The `ocw serving supervise` process that restarts the server after a crash (absent when unsupervised). */
  supervisorPid?: number | null;
  /** The start time of `supervisorPid`, as `startTime` is of `pid` (absent/null: judged by the pid alone). */
  supervisorStartTime?: string | null;
  restarts?: number;
  /** The person chose to keep it running when the engine stops (`ocw stop`); by default it stops with the engine. */
  keep?: boolean;
  port: number;
  bin: string;
  args: string[];
  logFile: string;
  keyFile: string | null;
  startedAt: string;
  /**
   * GPU memory the server holds, by the vendor tool's index (nvidia-smi / rocm-smi): measured as used after − before its
   * start, else the plan's bytes. A setup that replaces this target plans with it free (it is stopped before the load).
   */
  gpuBytes?: { index: number; bytes: number }[];
  /**
   * Which runtime the record runs (absent: llama.cpp, as every record of an older ocw). The supervisor judges readiness
   * and the key's hand-over by it: llama-server takes LLAMA_API_KEY, vLLM VLLM_API_KEY, SGLang its 0600 config file.
   */
  runtime?: "llama.cpp" | "vllm" | "sglang";
  /** A container the record runs in (docker/podman `--name`): stopped with the record. */
  container?: string | null;
  /** The last crash the supervisor saw, and when it gave up (null while it still restarts). */
  lastCrash?: string | null;
  gaveUp?: string | null;
}

export const servingFile = (dir = stateDir()) => path.join(dir, "serving.json");
const lockPath = (dir: string) => `${servingFile(dir)}.lock`;

/** How long a change waits for a live holder of the lock before it gives up (a holder keeps it for milliseconds). */
const LOCK_WAIT_MS = 15_000;
const sleeper = new Int32Array(new SharedArrayBuffer(4));
const pause = (ms: number) => Atomics.wait(sleeper, 0, 0, ms);

interface LockOwner {
  pid: number;
  startTime: string | null;
  nonce: string;
}

function readOwner(file: string): LockOwner | null {
  try {
    const v = JSON.parse(readFileSync(file, "utf8")) as Partial<LockOwner>;
    return typeof v.pid === "number" && typeof v.nonce === "string" ? { pid: v.pid, startTime: v.startTime ?? null, nonce: v.nonce } : null;
  } catch {
    return null;
  }
}

/**
 * Whether the lock's owner is gone. A lock appears whole (linked from a written file), so one with no owner in it was
 * damaged (a full disk, a hand edit): stale once it has stayed so for a while.
 */
function stale(owner: LockOwner | null, file: string): boolean {
  if (owner) return !alive({ pid: owner.pid, startTime: owner.startTime });
  try {
    return Date.now() - statSync(file).mtimeMs > 2000;
  } catch {
    return false; // gone meanwhile: try again
  }
}

/** Takes the lock; returns its release. */
function lock(dir: string): () => void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = lockPath(dir);
  const me: LockOwner = { pid: process.pid, startTime: processStartTime(process.pid), nonce: randomBytes(8).toString("hex") };
  const t0 = Date.now();
  // the lock appears whole: written to a file of our own, then linked into place (link fails when the lock exists),
  // so no other process ever reads a lock half written and takes it for a crashed one
  const mine = `${file}.${me.nonce}`;
  const fd = openSync(mine, "wx", 0o600);
  try {
    writeSync(fd, JSON.stringify(me));
  } finally {
    closeSync(fd);
  }
  const release = () => {
    // only our own lock is removed (a lock taken over from us after we were judged gone is the new owner's)
    if (readOwner(file)?.nonce === me.nonce) rmSync(file, { force: true });
  };
  for (let wait = 1; ; wait = Math.min(wait * 2, 20)) {
    try {
      linkSync(mine, file);
      rmSync(mine, { force: true });
      return release;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") {
        rmSync(mine, { force: true });
        throw e;
      }
    }
    const owner = readOwner(file);
    if (stale(owner, file)) {
      // take over: move the stale lock aside (one process wins the rename); if what moved is not the lock judged stale
      // (another process took over first and holds it now), put it back
      const aside = `${file}.stale.${me.nonce}`;
      try {
        renameSync(file, aside);
        const moved = readOwner(aside);
        if (moved && (moved.nonce !== owner?.nonce || !stale(moved, aside))) {
          try {
            linkSync(aside, file);
          } catch {
            /* a new lock is there already */
          }
        }
        rmSync(aside, { force: true });
      } catch {
        /* another process took it over first */
      }
      continue;
    }
    if (Date.now() - t0 > LOCK_WAIT_MS) {
      rmSync(mine, { force: true });
      throw new SetupError(
        "serving",
        `the model-server records (${servingFile(dir)}) stayed locked by process ${owner?.pid ?? "?"} for ${LOCK_WAIT_MS / 1000} s; if no ocw process runs, remove ${file}`,
        { lockFile: file, ownerPid: owner?.pid ?? null },
        "unavailable",
      );
    }
    pause(wait);
  }
}

/** The records as they are on disk (a read needs no lock: every write is one atomic rename). */
export function listServing(dir = stateDir()): ServingRecord[] {
  return readJson<ServingRecord[]>(servingFile(dir), []);
}

/**
 * Changes the records under the lock: `change` gets the current records and returns the new ones (it must not call
 * back into this module). Returns what was written.
 */
export function updateServing(change: (recs: ServingRecord[]) => ServingRecord[], dir = stateDir()): ServingRecord[] {
  const release = lock(dir);
  try {
    const next = change(listServing(dir));
    writeJsonAtomic(servingFile(dir), next);
    return next;
  } finally {
    release();
  }
}

/** Adds a record, replacing one of the same target id. */
export function putServing(rec: ServingRecord, dir = stateDir()): void {
  updateServing((recs) => [...recs.filter((r) => r.targetId !== rec.targetId), rec], dir);
}

/** Changes one record (by its target id); nothing when it is gone. */
export function patchServing(targetId: string, patch: Partial<ServingRecord>, dir = stateDir()): void {
  updateServing((recs) => recs.map((r) => (r.targetId === targetId ? { ...r, ...patch } : r)), dir);
}

/** Removes the records `drop` picks. */
export function removeServing(drop: (r: ServingRecord) => boolean, dir = stateDir()): void {
  updateServing((recs) => recs.filter((r) => !drop(r)), dir);
}
