import { existsSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { EngineLock } from "../../shared/api";
import { writeJsonAtomic } from "../store/json-file";

export const lockFile = (stateDir: string) => path.join(stateDir, "engine.json");

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The running engine's lock, or null when there is none or it is stale (its process is gone). */
export function readLock(stateDir: string): EngineLock | null {
  const file = lockFile(stateDir);
  if (!existsSync(file)) return null;
  try {
    const lock = EngineLock.parse(JSON.parse(readFileSync(file, "utf8")));
    if (alive(lock.pid)) return lock;
  } catch {
    /* unreadable: treat as stale */
  }
  rmSync(file, { force: true });
  return null;
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
