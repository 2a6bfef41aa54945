// API keys typed in for a target: the OS keychain through @napi-rs/keyring when one answers, else a 0600 file in the
// state dir; never in the target record. Where no desktop keychain runs (these machines: the library answers
// "Couldn't access platform storage"), the keychain path is driven through an in-memory backend with the library's
// interface and failures.
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { apiKeyFilePath, forgetApiKey, resolveKey, storeApiKey, useSecretBackend, type SecretBackend } from "./keys";

const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-keys-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => useSecretBackend(undefined));

function memory(opts: { failSet?: boolean } = {}): SecretBackend & { map: Map<string, string> } {
  const map = new Map<string, string>();
  return {
    map,
    set: (a, v) => {
      if (opts.failSet) throw new Error("Couldn't access platform storage: AccessDenied");
      map.set(a, v);
    },
    get: (a) => map.get(a) ?? null,
    delete: (a) => void map.delete(a),
  };
}

describe("typed-in API keys", () => {
  it("go to the OS keychain when one answers: the target records only where, and the key resolves from there", () => {
    const kc = memory();
    useSecretBackend(kc);
    const where = storeApiKey("api-one", "sk-secret-1", dir);
    expect(where).toEqual({ keyStore: "keychain", keyFile: null });
    expect(kc.map.get("target:api-one")).toBe("sk-secret-1");
    expect(JSON.stringify({ id: "api-one", ...where })).not.toContain("sk-secret-1");
    expect(resolveKey({ id: "api-one", ...where, keyRef: null })).toBe("sk-secret-1");
    forgetApiKey("api-one", dir);
    expect(() => resolveKey({ id: "api-one", ...where })).toThrow(/not in the OS keychain.*set it again in Setup, or with `ocw target key api-one`/);
  });

  it("go to a 0600 file in the state dir where no keychain answers, or it refuses the write", () => {
    for (const backend of [null, memory({ failSet: true })]) {
      useSecretBackend(backend);
      const where = storeApiKey("api-two", "sk-secret-2", dir);
      expect(where).toEqual({ keyStore: null, keyFile: apiKeyFilePath("api-two", dir) });
      expect(statSync(where.keyFile!).mode & 0o777).toBe(0o600);
      expect(readFileSync(where.keyFile!, "utf8").trim()).toBe("sk-secret-2");
      expect(resolveKey({ id: "api-two", ...where })).toBe("sk-secret-2");
      forgetApiKey("api-two", dir);
      expect(() => statSync(where.keyFile!)).toThrow();
    }
  });

  it("with the real library: the keychain where it works, else the file (the key resolves either way)", () => {
    const where = storeApiKey("api-three", "sk-secret-3", dir);
    expect(resolveKey({ id: "api-three", ...where })).toBe("sk-secret-3");
    forgetApiKey("api-three", dir);
  });
});
