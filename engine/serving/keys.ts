/** API keys for servers we start: generated, kept in the state dir with mode 0600, never in argv or targets.json. */
import { config } from "../config";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { stateDir } from "../store";
import { SetupError } from "../models";

export function generateKey(): string {
  return `ocw-${randomBytes(24).toString("base64url")}`;
}

export function keyFilePath(targetId: string, dir = stateDir()): string {
  return path.join(dir, "keys", `${targetId.replace(/[^A-Za-z0-9._-]/g, "_")}.key`);
}

export function storeKey(file: string, key: string): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, key + "\n", { mode: 0o600 });
  chmodSync(file, 0o600);
}

export function readKey(file: string): string {
  const st = statSync(file);
  if (process.platform !== "win32" && (st.mode & 0o077) !== 0) {
    throw new SetupError(
      "serving",
      `key file ${file} is readable by others (mode ${(st.mode & 0o777).toString(8)}); run chmod 600 on it`,
      { file, mode: (st.mode & 0o777).toString(8) },
      "unavailable",
    );
  }
  return readFileSync(file, "utf8").trim();
}

// ---------------------------------------------------------------------------------------------------------------
// API keys a person types in (the setup screen): kept in the OS keychain (@napi-rs/keyring: macOS Keychain, Windows
// Credential Manager, the Secret Service on Linux) or, where none answers, in a 0600 file in the state dir — never in
// targets.json, argv, logs or an event. A worker never sees it: opencode gets it through its own environment, and the
// sandbox hides the state dir.

/** A credential store: the OS keychain through @napi-rs/keyring, or a test double with the same failures (throws). */
export interface SecretBackend {
  set(account: string, secret: string): void;
  get(account: string): string | null;
  delete(account: string): void;
}

const SERVICE = "opencode-worker";
let keychain: SecretBackend | null | undefined;
let backendOverride: SecretBackend | null | undefined;

/** For tests: a backend to use instead of the OS keychain (null: behave as if there is none). */
export function useSecretBackend(b: SecretBackend | null | undefined): void {
  backendOverride = b;
}

/** The OS keychain, or null where the library or a keychain is missing (checked with a write and a read once). */
function osKeychain(): SecretBackend | null {
  if (backendOverride !== undefined) return backendOverride;
  if (keychain !== undefined) return keychain;
  keychain = null;
  if (config().OCW_KEYCHAIN === "off") return null;
  try {
    const { Entry } = createRequire(import.meta.url)("@napi-rs/keyring") as typeof import("@napi-rs/keyring");
    // Linux: the Secret Service only; the kernel keyring would lose the key at logout.
    const entry = (account: string) => new Entry(SERVICE, account, { linux: { store: "secret-service" } });
    const b: SecretBackend = {
      set: (a, v) => entry(a).setPassword(v),
      get: (a) => entry(a).getPassword() ?? null,
      delete: (a) => void entry(a).deletePassword(),
    };
    b.set("probe", "ok");
    if (b.get("probe") !== "ok") return null;
    b.delete("probe");
    keychain = b;
  } catch {
    keychain = null;
  }
  return keychain;
}

/** Where a target's typed-in key lives when no keychain answers (apart from a managed server's generated key). */
export function apiKeyFilePath(targetId: string, dir = stateDir()): string {
  return path.join(dir, "keys", `${targetId.replace(/[^A-Za-z0-9._-]/g, "_")}.api-key`);
}

/**
 * Stores the API key a person gave for a target: in the OS keychain when one answers, else in a 0600 file. Returns
 * the fields to record on the target (`keyStore` or `keyFile`); the key itself is in neither.
 */
export function storeApiKey(targetId: string, key: string, dir = stateDir()): { keyStore: "keychain"; keyFile: null } | { keyStore: null; keyFile: string } {
  const k = osKeychain();
  if (k) {
    try {
      k.set(`target:${targetId}`, key);
      rmSync(apiKeyFilePath(targetId, dir), { force: true });
      return { keyStore: "keychain", keyFile: null };
    } catch {
      /* the keychain refused (locked, denied): the file below */
    }
  }
  const file = apiKeyFilePath(targetId, dir);
  storeKey(file, key);
  return { keyStore: null, keyFile: file };
}

/** Forgets a target's typed-in key (keychain entry and file). */
export function forgetApiKey(targetId: string, dir = stateDir()): void {
  try {
    osKeychain()?.delete(`target:${targetId}`);
  } catch {
    /* none stored */
  }
  rmSync(apiKeyFilePath(targetId, dir), { force: true });
}

/** The key for a target: from the keychain, its key file (typed in, or a managed server's), or the env var it names. */
export function resolveKey(
  t: { id?: string; keyRef?: string | null; keyFile?: string | null; keyStore?: string | null },
  env: NodeJS.ProcessEnv = process.env,
): string | null {
  if (t.keyStore === "keychain" && t.id) {
    const k = osKeychain();
    let v: string | null = null;
    try {
      v = k?.get(`target:${t.id}`) ?? null;
    } catch {
      v = null;
    }
    if (!v)
      throw new SetupError(
        "serving",
        `the key of target ${t.id} is not in the OS keychain (it was locked, or the entry was removed): set it again in Setup, or with \`ocw target key ${t.id}\``,
        { targetId: t.id },
        "unavailable",
      );
    return v;
  }
  if (t.keyFile) return readKey(t.keyFile);
  if (t.keyRef) return env[t.keyRef] ?? null;
  return null;
}

/** The key for probing an endpoint: null when none is set or its file cannot be read (the probe then shows the 401). */
export function keyForProbe(t: { id?: string; keyRef?: string | null; keyFile?: string | null; keyStore?: string | null }): string | null {
  try {
    return resolveKey(t);
  } catch {
    return null;
  }
}
