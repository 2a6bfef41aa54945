/** API keys for servers we start: generated, kept in the state dir with mode 0600, never in argv or targets.json. */
import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { stateDir } from "../store/paths";

export function generateKey(): string {
  return `ocw-${randomBytes(24).toString("base64url")}`;
}

export function keyFilePath(targetId: string, dir = stateDir()): string {
  return path.join(dir, "keys", `${targetId.replace(/[^A-Za-z0-9._-]/g, "_")}.key`);
}

/** Where a key a person typed for a target is kept (0600; the `.api-key` suffix tells it from a generated server key). */
export function typedKeyFilePath(targetId: string, dir = stateDir()): string {
  return path.join(dir, "keys", `${targetId.replace(/[^A-Za-z0-9._-]/g, "_")}.api-key`);
}

export function storeKey(file: string, key: string): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, key + "\n", { mode: 0o600 });
  chmodSync(file, 0o600);
}

export function readKey(file: string): string {
  const st = statSync(file);
  if (process.platform !== "win32" && (st.mode & 0o077) !== 0) {
    throw new Error(`key file ${file} is readable by others (mode ${(st.mode & 0o777).toString(8)}); run chmod 600 on it`);
  }
  return readFileSync(file, "utf8").trim();
}

/** The key for a target: from its key file (managed servers) or from the env var it names. */
export function resolveKey(t: { keyRef?: string | null; keyFile?: string | null }, env: NodeJS.ProcessEnv = process.env): string | null {
  if (t.keyFile) return readKey(t.keyFile);
  if (t.keyRef) return env[t.keyRef] ?? null;
  return null;
}

/** The key for probing an endpoint: null when none is set or its file cannot be read (the probe then shows the 401). */
export function keyForProbe(t: { keyRef?: string | null; keyFile?: string | null }): string | null {
  try {
    return resolveKey(t);
  } catch {
    return null;
  }
}
