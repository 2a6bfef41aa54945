/**
 * serving.json has one owner (records.ts): several processes changing the records at once lose nothing, and a lock
 * left by a process that died holding it is taken over instead of blocking every later change.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listServing, putServing, type ServingRecord, servingFile, updateServing } from "./records";

let dir: string;
let bundle: string;

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "ocw-records-"));
  // a writer process: N records of its own, each added by its own read → change → write (as setup, supervise, stop do)
  const entry = path.join(dir, "writer.ts");
  writeFileSync(
    entry,
    `import { putServing, patchServing } from ${JSON.stringify(path.resolve(__dirname, "records.ts"))};
const [stateDir, who, n] = process.argv.slice(2);
for (let i = 0; i < Number(n); i++) {
  putServing({ targetId: who + "-" + i, pid: 0, port: 1, bin: "b", args: [], logFile: "l", keyFile: null, startedAt: "t" }, stateDir);
  patchServing(who + "-" + i, { restarts: 1 }, stateDir);
}
console.log("done");
`,
  );
  bundle = path.join(dir, "writer.mjs");
  execFileSync(path.resolve(__dirname, "../../node_modules/.bin/esbuild"), [
    entry,
    "--bundle",
    "--platform=node",
    "--format=esm",
    `--outfile=${bundle}`,
    "--log-level=error",
  ]);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const rec = (targetId: string): ServingRecord => ({ targetId, pid: 0, port: 1, bin: "b", args: [], logFile: "l", keyFile: null, startedAt: "t" });

describe("serving records (one owner, a lock)", () => {
  it("six processes writing at once lose no record and no change", async () => {
    const state = mkdtempSync(path.join(dir, "state-"));
    putServing(rec("before"), state);
    const writers = Array.from(
      { length: 6 },
      (_, w) =>
        new Promise<string>((resolve, reject) => {
          const c = spawn(process.execPath, [bundle, state, `w${w}`, "40"], { stdio: ["ignore", "pipe", "pipe"] });
          let out = "";
          c.stdout.on("data", (b) => (out += b));
          c.stderr.on("data", (b) => (out += b));
          c.on("error", reject);
          c.on("exit", (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`writer ${w} exited ${code}: ${out}`))));
        }),
    );
    // this process writes too, meanwhile
    for (let i = 0; i < 40; i++) updateServing((all) => [...all, rec(`main-${i}`)], state);
    expect(await Promise.all(writers)).toEqual(Array(6).fill("done"));
    const recs = listServing(state);
    expect(recs).toHaveLength(1 + 6 * 40 + 40);
    expect(new Set(recs.map((r) => r.targetId)).size).toBe(recs.length);
    // every patch landed on its record
    expect(recs.filter((r) => r.targetId.startsWith("w") && r.restarts !== 1)).toEqual([]);
    expect(existsSync(`${servingFile(state)}.lock`)).toBe(false);
    // no lock file of a writer is left behind
    expect(readdirSync(state).filter((f) => f.includes(".lock"))).toEqual([]);
  }, 120_000);

  it("takes over a lock whose owner died holding it", () => {
    const state = mkdtempSync(path.join(dir, "stale-"));
    // a process that is gone: its pid and a start time it never had
    const dead = spawn(process.execPath, ["-e", ""]);
    const pid = dead.pid!;
    execFileSync(process.execPath, ["-e", ""]); // let it end
    writeFileSync(`${servingFile(state)}.lock`, JSON.stringify({ pid, startTime: "1", nonce: "dead" }));
    putServing(rec("after-crash"), state);
    expect(listServing(state).map((r) => r.targetId)).toEqual(["after-crash"]);
    expect(existsSync(`${servingFile(state)}.lock`)).toBe(false);
  });

  it("takes over a damaged lock file (no owner in it) once it is older than a moment", () => {
    const state = mkdtempSync(path.join(dir, "empty-"));
    writeFileSync(`${servingFile(state)}.lock`, "");
    utimesSync(`${servingFile(state)}.lock`, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    putServing(rec("x"), state);
    expect(listServing(state).map((r) => r.targetId)).toEqual(["x"]);
  });
});
