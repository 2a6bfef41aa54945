// The engine's lock: who owns a state dir, and where its API listens. No process launching here (see launcher.ts).
//
// Two files in the state dir:
// - `engine.owner/<generation>`: ownership. An engine claims the state dir by creating the next generation with
//   link(2), which fails when the name exists, so of any number of engines starting at once exactly one claims it.
//   A generation is never deleted while it is the newest, so generations only grow; the owner is the newest, and a
//   claim stands only if it is still the newest after it was made. Taking over from a dead owner is the same step
//   (claim the next generation), so it is as race-free as the first claim: nothing is ever removed by a loser.
// - `engine.json`: where the owner's API listens (port, token), written once it listens. A dead engine's stays in
//   place, so the next one takes back its port and token and the dead one's clients reconnect unchanged.
// A recorded process counts as alive only when its pid exists *and* it is the same process: the start time the
// kernel gives it (Linux /proc/<pid>/stat field 22; `ps -o lstart=` on macOS) matches, so a pid reused by an
// unrelated process after a crash never passes for the engine. Clients also check the engine's instance id over
// its /health endpoint before they use it.
import { randomBytes } from "node:crypto";
import { linkSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { EngineLock } from "../../shared/api";
import { writeJsonAtomic } from "../store";

const lockFile = (stateDir: string) => path.join(stateDir, "engine.json");
const ownerDir = (stateDir: string) => path.join(stateDir, "engine.owner");

// Who a process is and whether it still runs: the process module (pid + kernel start time).
export { alive, type ProcessIdentity, processStartTime, selfIdentity } from "../process";
import { alive, type ProcessIdentity, selfIdentity } from "../process";

/** A record file of the state dir read as `schema` says it is; null when it is missing, unreadable or not that. */
function recordIn<T>(file: string, schema: z.ZodType<T>): T | null {
  try {
    return schema.parse(JSON.parse(readFileSync(file, "utf8")));
  } catch {
    return null;
  }
}

/** The lock file as written, alive or not (a stale one tells a restarted engine which port and token to take back). */
export function lastLock(stateDir: string): EngineLock | null {
  return recordIn(lockFile(stateDir), EngineLock);
}

/**
 * The running engine's lock, or null when there is none or it is stale (its process is gone, or its pid now belongs
 * to another process). A stale lock is left in place: the next engine overwrites it, taking back its port and token,
 * so clients of the dead one reconnect as they are.
 */
export function readLock(stateDir: string): EngineLock | null {
  const lock = lastLock(stateDir);
  return lock && alive({ pid: lock.pid, startTime: lock.startTime }) ? lock : null;
}

/** The supervisor recorded in the lock (alive or not), as a process identity. */
export function supervisorOf(lock: EngineLock | null): ProcessIdentity | null {
  return lock?.supervisorPid ? { pid: lock.supervisorPid, startTime: lock.supervisorStartTime ?? null } : null;
}

const endpointFile = (stateDir: string) => path.join(stateDir, "engine.endpoint.json");
const Endpoint = z.object({ port: z.number().int().min(1).max(65535), token: z.string().min(16) });

/** The last engine's port and token, kept across clean stops (engine.json goes with its engine; this file stays). */
export function lastEndpoint(stateDir: string): { port: number; token: string } | null {
  return recordIn(endpointFile(stateDir), Endpoint);
}

const stopFile = (stateDir: string) => path.join(stateDir, "engine.stopped.json");
const StopRecord = z.object({ at: z.number(), pid: z.number().int(), by: z.string().max(300) });
type StopRecord = z.infer<typeof StopRecord>;

/**
 * A clean stop's record (a stop request, a signal to `ocw serve`), written before the engine lets go of its lock: a
 * client whose call was cut by it can tell a deliberate stop from a crash, and need not start the engine again behind
 * the person's back (engine/mcp/link.ts). A crash leaves none.
 */
export function recordStop(stateDir: string, by: string): void {
  try {
    writeJsonAtomic(stopFile(stateDir), { at: Date.now(), pid: process.pid, by }, 0o600);
  } catch {
    /* a full disk: the clients then take the stop for a crash */
  }
}

/** The last clean stop (recordStop), or null. */
export function lastStop(stateDir: string): StopRecord | null {
  return recordIn(stopFile(stateDir), StopRecord);
}

const upgradeFile = (stateDir: string) => path.join(stateDir, "engine.upgrade.json");
const UpgradeRecord = z.object({ at: z.number(), pid: z.number().int(), from: z.string().max(200), to: z.string().max(200) });
export type UpgradeRecord = z.infer<typeof UpgradeRecord>;

/**
 * A client's replacement of an older engine (launcher.ts), written before it asks that engine (`pid`) to stop: the stop
 * the old engine then records (recordStop) is no person's, and a call it cut finds the new engine rather than ending.
 */
export function recordUpgrade(stateDir: string, r: UpgradeRecord): void {
  try {
    writeJsonAtomic(upgradeFile(stateDir), r, 0o600);
  } catch {
    /* a full disk: a call cut by the stop ends as after `ocw stop` */
  }
}

/** The last replacement of an older engine (recordUpgrade), or null. */
export function lastUpgrade(stateDir: string): UpgradeRecord | null {
  return recordIn(upgradeFile(stateDir), UpgradeRecord);
}

/** Whether a clean stop (lastStop) was a client's replacement of that older engine, not a person's stop. */
export function stopWasUpgrade(stateDir: string, stop: StopRecord): boolean {
  const up = lastUpgrade(stateDir);
  return !!up && up.pid === stop.pid && up.at <= stop.at + 1000 && stop.at - up.at < 60_000;
}

export function writeEndpoint(stateDir: string, e: { port: number; token: string }): void {
  writeJsonAtomic(endpointFile(stateDir), e, 0o600);
}

export function writeLock(stateDir: string, lock: EngineLock): void {
  writeJsonAtomic(lockFile(stateDir), lock, 0o600);
}

export function removeLock(stateDir: string, pid = process.pid): void {
  const file = lockFile(stateDir);
  try {
    const lock = JSON.parse(readFileSync(file, "utf8")) as EngineLock;
    if (lock.pid === pid) rmSync(file, { force: true });
  } catch {
    /* already gone */
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Ownership of a state dir.

export const OwnerRecord = z.object({
  pid: z.number().int(),
  startTime: z.string().nullable(),
  instanceId: z.string(),
  claimedAt: z.number(),
  /** Set by an owner that let go (its engine closed, the process may live on): it owns nothing any more. */
  released: z.boolean().optional(),
});
export type OwnerRecord = z.infer<typeof OwnerRecord>;

type Claim = { owned: true; generation: number; record: OwnerRecord } | { owned: false; holder: OwnerRecord };

function generations(stateDir: string): number[] {
  try {
    return readdirSync(ownerDir(stateDir))
      .filter((n) => /^\d+$/.test(n))
      .map(Number)
      .sort((a, b) => b - a);
  } catch {
    return [];
  }
}

function readOwner(stateDir: string, generation: number): OwnerRecord | "gone" | "unreadable" {
  try {
    return OwnerRecord.parse(JSON.parse(readFileSync(path.join(ownerDir(stateDir), String(generation)), "utf8")));
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ENOENT" ? "gone" : "unreadable";
  }
}

/** A fresh instance id: tells one engine process from another even when a pid or a port is reused. */
export function newInstanceId(): string {
  return randomBytes(12).toString("base64url");
}

/**
 * Claims the state dir for this process, unless a live process owns it: then says who does. Race-free among any
 * number of processes (see the top of this file). A holder whose record cannot be read (a foreign file) counts as
 * dead: records are created whole by link(2), never written in place.
 */
export function claimOwnership(stateDir: string, instanceId: string, me: ProcessIdentity = selfIdentity()): Claim {
  const dir = ownerDir(stateDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const record: OwnerRecord = { pid: me.pid, startTime: me.startTime, instanceId, claimedAt: Date.now() };
  const tmp = path.join(dir, `.claim-${me.pid}-${instanceId}`);
  writeFileSync(tmp, JSON.stringify(record) + "\n", { mode: 0o600 });
  try {
    for (let attempt = 0; attempt < 1000; attempt++) {
      const newest = generations(stateDir)[0] ?? 0;
      if (newest > 0) {
        const holder = readOwner(stateDir, newest);
        if (holder === "gone") continue; // superseded and cleaned up between the listing and the read: look again
        if (holder !== "unreadable" && holder.instanceId === instanceId) return { owned: true, generation: newest, record: holder };
        if (holder !== "unreadable" && !holder.released && alive(holder)) return { owned: false, holder };
      }
      const mine = newest + 1;
      try {
        linkSync(tmp, path.join(dir, String(mine)));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "EEXIST") continue; // someone else claimed this generation first
        throw err;
      }
      // A claim made from an outdated listing loses to any newer generation (and takes its own back); generations
      // below a standing claim are dead (each was superseded by a claim that found it dead) and are cleaned up.
      // The newest generation is never deleted, so generations only grow.
      const all = generations(stateDir);
      if ((all[0] ?? 0) > mine) {
        rmSync(path.join(dir, String(mine)), { force: true });
        continue;
      }
      for (const g of all) if (g < mine) rmSync(path.join(dir, String(g)), { force: true });
      return { owned: true, generation: mine, record };
    }
    throw new Error(`could not claim ${dir} after 1000 attempts: remove the folder if no engine runs`);
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** Lets go of a claim (the engine closed; the process may go on): the next generation records the release. */
export function releaseOwnership(stateDir: string, claim: { generation: number; record: OwnerRecord }): void {
  const dir = ownerDir(stateDir);
  if ((generations(stateDir)[0] ?? 0) !== claim.generation) return; // taken over already
  const tmp = path.join(dir, `.release-${claim.record.pid}-${claim.record.instanceId}`);
  try {
    writeFileSync(tmp, JSON.stringify({ ...claim.record, released: true }) + "\n", { mode: 0o600 });
    linkSync(tmp, path.join(dir, String(claim.generation + 1)));
    rmSync(path.join(dir, String(claim.generation)), { force: true });
  } catch {
    /* someone claimed the next generation first: nothing left to release */
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** The live owner of the state dir, if any. */
export function currentOwner(stateDir: string): OwnerRecord | null {
  for (const g of generations(stateDir)) {
    const holder = readOwner(stateDir, g);
    if (holder === "gone") continue;
    return holder !== "unreadable" && !holder.released && alive(holder) ? holder : null;
  }
  return null;
}
