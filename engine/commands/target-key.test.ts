/**
 * `ocw target key ID` / `ocw target remove ID`: a developer on the command line rotates or forgets an API target's key
 * (before, only the desktop app's Setup could: the CLI had `target use` alone). The key comes from stdin or a named
 * variable — never argv — and is kept by the engine (the OS keychain, else a 0600 file), never in targets.json.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { localSetupPort } from "../../test/setup-port";
import { resolveKey } from "../serving/keys";
import { TargetStore } from "../store";
import { runTargetKey, runTargetRemove } from "./model-setup";

let state: string;
const saved = { dir: process.env.OCW_STATE_DIR, keychain: process.env.OCW_KEYCHAIN };
beforeAll(() => {
  state = mkdtempSync(path.join(os.tmpdir(), "ocw-target-key-"));
  process.env.OCW_STATE_DIR = state;
  process.env.OCW_KEYCHAIN = "off";
});
afterAll(() => {
  for (const [k, v] of [
    ["OCW_STATE_DIR", saved.dir],
    ["OCW_KEYCHAIN", saved.keychain],
  ] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  rmSync(state, { recursive: true, force: true });
});

describe("ocw target key / remove", () => {
  it("rotates from a variable or stdin, refuses argv-like use, forgets with --clear, and remove takes the key along", async () => {
    const store = new TargetStore(path.join(state, "targets.json"));
    const url = "https://api.example.com/v1";
    store.save(
      {
        id: "api-m",
        model: "m",
        quant: null,
        endpoint: url,
        keyRef: "OLD_VAR",
        serving: { engine: "api", endpoints: [{ url, slots: 4 }], slots: 4, perSlotCtx: null },
        checks: [],
      },
      true,
    );
    const port = localSetupPort({ store });
    const file = path.join(state, "keys", "api-m.api-key");

    const a = await runTargetKey("api-m", { fromEnv: "NEW_PROVIDER_KEY" }, port, { env: { NEW_PROVIDER_KEY: "sk-new-1" } });
    expect([a.code, a.stdout]).toEqual([0, "the key of api-m is set (kept in a 0600 file of the engine's state dir); workers started from now on use it\n"]);
    expect(resolveKey(store.get("api-m")!, {})).toBe("sk-new-1");
    expect(statSync(file).mode & 0o777).toBe(0o600);

    const b = await runTargetKey("api-m", {}, port, { stdin: async () => "sk-piped-2\n" });
    expect(b.code).toBe(0);
    expect(resolveKey(store.get("api-m")!, {})).toBe("sk-piped-2");
    expect(readFileSync(path.join(state, "targets.json"), "utf8")).not.toMatch(/sk-new-1|sk-piped-2/);

    // a terminal on stdin and no variable: the key is never taken from the command line
    const c = await runTargetKey("api-m", {}, port, { stdin: async () => null });
    expect([c.code, c.stderr]).toEqual([
      2,
      expect.stringMatching(/give the key on stdin .* or name its variable with --from-env VAR — never on the command line/),
    ]);
    const d = await runTargetKey("api-m", { fromEnv: "sk-abc123" }, port, { env: {} });
    expect(d.stderr).toMatch(/--from-env takes the NAME of an environment variable \(got "sk-a…"\), not the key itself/);
    expect(d.stderr).not.toContain("sk-abc123");
    expect((await runTargetKey("api-m", { fromEnv: "UNSET_VAR" }, port, { env: {} })).stderr).toMatch(/UNSET_VAR is not set here/);
    expect((await runTargetKey("nope", { fromEnv: "K" }, port, { env: { K: "x" } })).stderr).toMatch(/no target "nope"/);
    // an unknown id is said first: not "stdin held no key" / "UNSET_VAR is not set here", then "no target" once that is fixed
    expect((await runTargetKey("nope", {}, port, { stdin: async () => "" })).stderr).toMatch(/no target "nope"/);
    expect((await runTargetKey("nope", { fromEnv: "UNSET_VAR" }, port, { env: {} })).stderr).toMatch(/no target "nope"/);
    expect((await runTargetKey("nope", {}, port, { stdin: async () => null })).stderr).toMatch(/no target "nope"/);

    const e = await runTargetKey("api-m", { clear: true }, port);
    expect(e.stdout).toMatch(/the key of api-m is forgotten/);
    expect(existsSync(file)).toBe(false);
    expect(resolveKey(store.get("api-m")!, {})).toBeNull();

    await runTargetKey("api-m", { fromEnv: "K" }, port, { env: { K: "sk-3" } });
    const f = await runTargetRemove("api-m", {}, port);
    expect([f.code, f.stdout]).toEqual([0, "target api-m removed (its kept key with it)\n"]);
    expect(store.list().targets).toEqual([]);
    expect(existsSync(file)).toBe(false);
    expect((await runTargetRemove("api-m", {}, port)).stderr).toMatch(/no target "api-m"/);
  });
});
