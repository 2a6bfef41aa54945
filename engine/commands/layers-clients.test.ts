// The layering lint's rule for the clients (scripts/layers.mjs), run as `npm test` runs it, on a small fixture tree:
// a client (an `ocw` command, the CLI's entry, the MCP bridge) imports only the API's client surface, shared/, the pure
// modules and other clients; a pure module imports no Node module, reads no `process`, and its value imports are
// shared/ and pure modules only.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";

const LINT = path.resolve(__dirname, "../../scripts/layers.mjs");
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Runs the lint on a tree of these files (plus the folders it reads); its exit code and its lines. */
async function lint(files: Record<string, string>): Promise<{ code: number; lines: string[] }> {
  const root = mkdtempSync(path.join(os.tmpdir(), "ocw-layers-"));
  dirs.push(root);
  for (const d of ["shared", "engine", "renderer/src", "electron"]) mkdirSync(path.join(root, d), { recursive: true });
  // every folder the lint requires a surface of (SURFACED) has one: an empty index.ts unless the files give it
  const surfaced = /const SURFACED = \[([^\]]*)\];\s*SURFACED\.push\(([^)]*)\)/.exec(readFileSync(LINT, "utf8"));
  for (const f of `${surfaced?.[1] ?? ""},${surfaced?.[2] ?? ""}`.match(/[a-z-]+/g) ?? []) {
    mkdirSync(path.join(root, "engine", f), { recursive: true });
    writeFileSync(path.join(root, "engine", f, "index.ts"), "export {};\n");
  }
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
    writeFileSync(path.join(root, f), text);
  }
  const r = await promisify(execFile)(process.execPath, [LINT], { env: { ...process.env, LAYERS_ROOT: root }, timeout: 60_000 }).then(
    (o) => ({ code: 0, out: o.stdout + o.stderr }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? 1, out: `${e.stdout ?? ""}${e.stderr ?? ""}` }),
  );
  return { code: r.code, lines: r.out.split("\n").filter(Boolean) };
}

const BASE: Record<string, string> = {
  "shared/api.ts": "export const API_PATH = '/trpc';\n",
  "engine/store/targets.ts": "export class TargetStore {}\n",
  "engine/store/index.ts": "export { TargetStore } from './targets';\n",
  "engine/serving/setup.ts": "import { TargetStore } from '../store';\nexport const setup = () => new TargetStore();\n",
  "engine/models/estimate.ts": "export const estimate = (n: number) => n * 2;\n",
  "engine/api/client.ts": "import { API_PATH } from '../../shared/api';\nexport const connect = () => API_PATH;\n",
  "engine/api/launcher.ts": "export const stateDir = () => '/tmp';\n",
  "engine/commands/other.ts": "export const other = 1;\n",
};

describe("layers: the clients' rule", () => {
  it("passes a client that imports the API client, the launcher, shared/, a pure module and another client", async () => {
    const r = await lint({
      ...BASE,
      "engine/commands/good.ts":
        "import { connect } from '../api/client';\nimport { stateDir } from '../api/launcher';\nimport { API_PATH } from '../../shared/api';\nimport { estimate } from '../models/estimate';\nimport { other } from './other';\nexport const good = () => [connect(), stateDir(), API_PATH, estimate(other)];\n",
    });
    expect(r.lines.at(-1)).toMatch(/0 violation\(s\)/);
    expect(r.code).toBe(0);
  });

  it("fails on a client that imports the store, a setup module or (as a type) the store, and on the CLI's entry doing so", async () => {
    const r = await lint({
      ...BASE,
      "engine/commands/targets-old.ts": "import { TargetStore } from '../store';\nexport const list = () => new TargetStore();\n",
      "engine/commands/deploy.ts": "import { setup } from '../serving/setup';\nexport const deploy = () => setup();\n",
      "engine/mcp/command.ts": "import type { TargetStore } from '../store';\nexport const t = (s: TargetStore) => s;\n",
      "engine/cli.ts": "import { setup } from './serving/setup';\nexport const cli = () => setup();\n",
    });
    expect(r.code).toBe(1);
    const text = r.lines.join("\n");
    expect(text).toMatch(/engine\/commands\/targets-old\.ts → engine\/store\/index\.ts: a client imports only the API's client surface/);
    expect(text).toMatch(/engine\/commands\/deploy\.ts → engine\/serving\/setup\.ts: a client imports only/);
    expect(text).toMatch(/engine\/mcp\/command\.ts → engine\/store\/index\.ts \(type\): a client imports only/);
    expect(text).toMatch(/engine\/cli\.ts → engine\/serving\/setup\.ts: a client imports only/);
  });

  it("fails on a pure module that imports a Node module, reads process or imports an impure module", async () => {
    const r = await lint({
      ...BASE,
      "engine/models/estimate.ts":
        "import { readFileSync } from 'node:fs';\nimport { TargetStore } from '../store/targets';\nexport const estimate = () => [readFileSync(process.env.X ?? ''), new TargetStore()];\n",
    });
    expect(r.code).toBe(1);
    const text = r.lines.join("\n");
    expect(text).toMatch(/engine\/models\/estimate\.ts reads process: a pure module has no environment/);
    expect(text).toMatch(/engine\/models\/estimate\.ts \(pure\) → node:fs: a pure module imports only shared\//);
    expect(text).toMatch(/engine\/models\/estimate\.ts \(pure\) → engine\/store\/targets\.ts: a pure module imports only shared\//);
  });
});
