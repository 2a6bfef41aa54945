import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cleanup, tempDir } from "../../test/helpers";
import { OPENCODE_MODELS_CATALOG, OPENCODE_PLUGIN_PACKAGE, seedModelsCatalog, seedOpencodeConfigDir } from "./config";

const tmps: string[] = [];
afterEach(() => cleanup(...tmps.splice(0)));
const tmp = () => {
  const d = tempDir("oc-seed");
  tmps.push(d);
  return d;
};

describe("seedOpencodeConfigDir", () => {
  it("writes node_modules/ and a lock whose root lists the plugin package (what opencode's Npm.checkDirty looks for)", () => {
    const dir = path.join(tmp(), "opencode");
    seedOpencodeConfigDir(dir);
    expect(existsSync(path.join(dir, "node_modules"))).toBe(true);
    const lock = JSON.parse(readFileSync(path.join(dir, "package-lock.json"), "utf8"));
    expect(Object.keys(lock.packages[""].dependencies)).toEqual([OPENCODE_PLUGIN_PACKAGE]);
  });
  it("keeps a package.json's own dependencies in the lock and leaves an already complete state alone", () => {
    const dir = tmp();
    writeFileSync(path.join(dir, "package.json"), JSON.stringify({ dependencies: { "left-pad": "1.3.0" } }));
    seedOpencodeConfigDir(dir);
    const lockFile = path.join(dir, "package-lock.json");
    expect(Object.keys(JSON.parse(readFileSync(lockFile, "utf8")).packages[""].dependencies).sort()).toEqual([OPENCODE_PLUGIN_PACKAGE, "left-pad"]);
    writeFileSync(lockFile, JSON.stringify({ packages: { "": { dependencies: { "left-pad": "1.3.0", [OPENCODE_PLUGIN_PACKAGE]: "1.18.33" } } } }));
    seedOpencodeConfigDir(dir);
    expect(JSON.parse(readFileSync(lockFile, "utf8")).packages[""].dependencies[OPENCODE_PLUGIN_PACKAGE]).toBe("1.18.33");
  });
});

// The real opencode serve: without the seed, every instance boot forks an npm install of the plugin SDK into the config
// dir, under a lock named `npm-install:<dir>` (opencode's Lock: $XDG_STATE_HOME/opencode/locks/sha1(key).lock). Offline it
// can only fail ("background dependency install failed" once npm gives up, LockTimeoutError for the boots that wait).
describe("opencode serve with its own home", () => {
  it("boots instances for several workspaces without starting the plugin install", async () => {
    const root = tmp();
    const home = path.join(root, "oc-home");
    const { OpencodeServer } = await import("./opencode-server");
    const server = new OpencodeServer({
      target: {
        id: "seed",
        model: "m",
        endpoint: "http://127.0.0.1:9/v1",
        keyRef: null,
        serving: { engine: "scripted", endpoints: [], slots: 1 },
        checks: [],
      } as never,
      home,
    });
    try {
      await server.start();
      const dirs = [1, 2, 3].map((i) => {
        const d = path.join(root, `w${i}`);
        mkdirSync(d);
        return d;
      });
      // Each session's instance boots (reads the config dir); serve logs warnings only, so the answers are the proof.
      const made = await Promise.all(dirs.map((directory) => server.port!.createSession({ directory, title: "t" })));
      expect(made.map((r) => r.ok)).toEqual([true, true, true]);
      await new Promise((r) => setTimeout(r, 1500));
    } finally {
      await server.stop();
    }
    const configDir = path.join(home, ".config", "opencode");
    const lock = path.join(home, ".local", "state", "opencode", "locks", createHash("sha1").update(`npm-install:${configDir}`).digest("hex") + ".lock");
    expect(existsSync(lock), "opencode took the npm-install lock of its config dir: it is installing the plugin SDK").toBe(false);
    const log = readFileSync(path.join(home, ".local", "share", "opencode", "log", "opencode.log"), "utf8");
    expect(log).not.toMatch(/dependency install failed/);
  }, 90_000);
});

// opencode builds each instance's provider list from its models.dev catalog; the one embedded in the binary costs ~0.9 s
// of serve's JS thread per new workspace, so serve is given an empty catalog (our providers are complete in the config).
describe("seedModelsCatalog", () => {
  it("writes an empty catalog, rewrites a changed one, and serve's env points OPENCODE_MODELS_PATH at it", async () => {
    const file = path.join(tmp(), "a", "models.json");
    expect(seedModelsCatalog(file)).toBe(file);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({});
    writeFileSync(file, JSON.stringify({ openai: { id: "openai", models: {} } }));
    seedModelsCatalog(file);
    expect(readFileSync(file, "utf8")).toBe(OPENCODE_MODELS_CATALOG);
    const { OpencodeServer } = await import("./opencode-server");
    const home = tmp();
    const server = new OpencodeServer({
      target: {
        id: "seed",
        model: "m",
        endpoint: "http://127.0.0.1:9/v1",
        keyRef: null,
        serving: { engine: "scripted", endpoints: [], slots: 1 },
        checks: [],
      } as never,
      home,
    });
    const env = (server as unknown as { env(): Record<string, string> }).env();
    expect(env.OPENCODE_MODELS_PATH).toBe(path.join(home, "models-catalog.json"));
    expect(JSON.parse(readFileSync(env.OPENCODE_MODELS_PATH!, "utf8"))).toEqual({});
  });
});
