import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { EngineLock } from "../../shared/api";
import { writeJsonAtomic } from "../store/json-file";

export const lockFile = (stateDir: string) => path.join(stateDir, "engine.json");

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The lock file as written, alive or not (a stale one tells a restarted engine which port and token to take back). */
export function lastLock(stateDir: string): EngineLock | null {
  try {
    return EngineLock.parse(JSON.parse(readFileSync(lockFile(stateDir), "utf8")));
  } catch {
    return null;
  }
}

/**
 * The running engine's lock, or null when there is none or it is stale (its process is gone). A stale lock is left in
 * place: the next engine overwrites it, taking back its port and token, so clients of the dead one reconnect as they are.
 */
export function readLock(stateDir: string): EngineLock | null {
  const lock = lastLock(stateDir);
  return lock && alive(lock.pid) ? lock : null;
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
