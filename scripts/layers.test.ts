// The layering lint (scripts/layers.mjs) on a small tree of its own: a surface bypassed, a required surface missing, a
// file cycle made only of type imports through surfaces, and an app's allow-listed file taken by name. The script is
// copied beside the tree (it finds its root from its own place) and run as `npm test` runs it.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const repo = path.dirname(path.dirname(new URL(import.meta.url).pathname));
const SURFACED = [
  "harness",
  "approvals",
  "budgets",
  "recovery",
  "grading",
  "gateway",
  "registry",
  "workers",
  "admission",
  "workspace",
  "process",
  "sandbox",
  "net",
  "store",
  "hardware",
  "serving",
  "models",
];
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A tree with every required surface (empty) plus `files`; the lint's violations, one per line. */
function lint(files: Record<string, string>, drop: string[] = []): string[] {
  const root = mkdtempSync(path.join(os.tmpdir(), "ocw-layers-"));
  dirs.push(root);
  mkdirSync(path.join(root, "scripts"));
  copyFileSync(path.join(repo, "scripts", "layers.mjs"), path.join(root, "scripts", "layers.mjs"));
  symlinkSync(path.join(repo, "node_modules"), path.join(root, "node_modules"));
  for (const d of ["shared", "renderer/src", "electron"]) mkdirSync(path.join(root, d), { recursive: true });
  const all: Record<string, string> = { "shared/ids.ts": "export const x = 1;\n" };
  for (const f of SURFACED) all[`engine/${f}/index.ts`] = "export {};\n";
  Object.assign(all, files);
  for (const [f, text] of Object.entries(all)) {
    if (drop.includes(f)) continue;
    mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
    writeFileSync(path.join(root, f), text);
  }
  const r = spawnSync(process.execPath, [path.join(root, "scripts", "layers.mjs")], { encoding: "utf8" });
  const problems = r.stderr
    .split("\n")
    .filter((l) => l.startsWith("layers: "))
    .map((l) => l.slice(8));
  expect(r.stdout).toMatch(new RegExp(`, ${problems.length} violation\\(s\\)`));
  expect(r.status).toBe(problems.length ? 1 : 0);
  return problems;
}

describe("the layering lint", { timeout: 120_000 }, () => {
  it("passes a tree that imports every folder through its surface", () => {
    expect(
      lint({
        "engine/registry/registry.ts": "export class WorkerRegistry {}\n",
        "engine/registry/index.ts": 'export { WorkerRegistry } from "./registry";\n',
        "engine/approvals/queue.ts": 'import type { WorkerRegistry } from "../registry";\nexport type Q = WorkerRegistry;\n',
        "engine/workers/engine.ts": 'import { WorkerRegistry } from "../registry";\nexport const e = new WorkerRegistry();\n',
      }),
    ).toEqual([]);
  });

  it("names an import that goes past a folder's surface", () => {
    expect(
      lint({
        "engine/workers/engine.ts": "export class Engine {}\n",
        "engine/workers/index.ts": 'export { Engine } from "./engine";\n',
        "engine/api/host.ts": 'import { Engine } from "../workers/engine";\nexport const h = new Engine();\n',
      }),
    ).toEqual(["engine/api/host.ts → engine/workers/engine.ts: import engine/workers/ through its surface, engine/workers/index.ts"]);
  });

  it("requires the surfaces it lists: a deleted index.ts fails", () => {
    expect(lint({}, ["engine/workers/index.ts", "engine/process/index.ts", "engine/serving/index.ts", "engine/models/index.ts"])).toEqual([
      "engine/workers/ has no index.ts: its surface is required",
      "engine/process/ has no index.ts: its surface is required",
      "engine/serving/ has no index.ts: its surface is required",
      "engine/models/ has no index.ts: its surface is required",
    ]);
  });

  it("fails on a file cycle made only of type imports through surfaces (the registry placed inside workers/)", () => {
    const problems = lint({
      "engine/workers/registry.ts": "export class WorkerRegistry {}\n",
      "engine/workers/engine.ts": 'import type { Q } from "../approvals";\nexport type E = Q;\n',
      "engine/workers/index.ts": 'export type { E } from "./engine";\nexport { WorkerRegistry } from "./registry";\n',
      "engine/approvals/queue.ts": 'import type { WorkerRegistry } from "../workers";\nexport type Q = WorkerRegistry;\n',
      "engine/approvals/index.ts": 'export type { Q } from "./queue";\n',
    });
    expect(problems).toContainEqual("file cycle: engine/approvals/index.ts ↔ engine/approvals/queue.ts ↔ engine/workers/engine.ts ↔ engine/workers/index.ts");
  });

  it("names an OCW_* variable read outside engine/config.ts, in an app or a client too", () => {
    expect(
      lint({
        "electron/main.ts": "export const root = process.env.OCW_ROOT;\n",
        "engine/commands/run.ts": 'export const debug = process.env["OCW_DEBUG"];\nprocess.env.OCW_NO_SANDBOX = "1";\n',
      }),
    ).toEqual([
      "engine/commands/run.ts reads OCW_DEBUG: every OCW_* variable is read in engine/config.ts",
      "electron/main.ts reads OCW_ROOT: every OCW_* variable is read in engine/config.ts",
    ]);
  });

  it("keeps opencode's SDK, its types included, behind the harness", () => {
    expect(
      lint({
        "engine/harness/port.ts": 'import type { Part } from "@opencode-ai/sdk/v2";\nexport type P = Part;\n',
        "engine/registry/replies.ts": 'import type { Message } from "@opencode-ai/sdk/v2";\nexport type M = Message;\n',
      }),
    ).toEqual(["engine/registry/replies.ts (type) imports @opencode-ai/sdk/v2: only engine/harness/ (the opencode port) uses opencode's SDK"]);
  });

  it("lets an app take its allow-listed file by name, and nothing else of the folder", () => {
    const store = {
      "engine/store/paths.ts": "export const stateDir = () => '/tmp';\n",
      "engine/store/targets.ts": "export class TargetStore {}\n",
      "engine/store/index.ts": 'export { stateDir } from "./paths";\nexport { TargetStore } from "./targets";\n',
    };
    expect(lint({ ...store, "electron/main.ts": 'import { stateDir } from "../engine/store/paths";\nexport const d = stateDir();\n' })).toEqual([]);
    expect(lint({ ...store, "electron/main.ts": 'import { TargetStore } from "../engine/store/targets";\nexport const t = new TargetStore();\n' })).toEqual([
      "electron/main.ts → engine/store/targets.ts: electron/ may import only shared/ and engine/api/client.ts, engine/api/launcher.ts, engine/api/lock.ts, engine/store/paths.ts, engine/config.ts",
      "electron/main.ts → engine/store/targets.ts: import engine/store/ through its surface, engine/store/index.ts",
    ]);
  });
});
