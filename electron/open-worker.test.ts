// The desktop app's "open the worker's folder / an editor / a terminal": the folder always comes from the engine, the
// program runs detached with the workspace as its folder and last argument. A stand-in editor on PATH records what it got.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openWorker } from "./open-worker";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-openw-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const ws = path.join(tmp, "ws");
mkdirSync(ws);
const bin = path.join(tmp, "bin");
mkdirSync(bin);
const record = path.join(tmp, "ran.txt");
writeFileSync(path.join(bin, "code"), `#!/bin/sh\nprintf '%s\\n' "$PWD" "$@" > ${record}\n`);
chmodSync(path.join(bin, "code"), 0o755);

const asked: string[] = [];
const client = {
  workers: {
    workspace: {
      query: async ({ workerId }: { workerId: string }) => {
        asked.push(workerId);
        if (workerId === "w_gone") throw new Error("worker w_gone was discarded: its workspace is gone");
        if (workerId === "w_planted") return { workerId, path: ws, gitRuns: ['.git/config sets "core.fsmonitor"', '.git/hooks holds "post-checkout"'] };
        return { workerId, path: ws, gitRuns: [] };
      },
    },
  },
} as unknown as Parameters<typeof openWorker>[0];

describe("openWorker", () => {
  it("the editor ($VISUAL/$EDITOR unset: code) runs in the engine's workspace path", async () => {
    const r = await openWorker(client, "w_1", "editor", async () => "", { PATH: bin }, "linux");
    expect(r).toEqual({ ok: true, path: ws, detail: "code" });
    for (let i = 0; i < 200 && !existsSync(record); i++) await new Promise((res) => setTimeout(res, 10));
    expect(readFileSync(record, "utf8").trim().split("\n")).toEqual([ws, ws]);
  });
  it("the folder goes to the shell's handler; its failure is said", async () => {
    const opened: string[] = [];
    expect(await openWorker(client, "w_1", "folder", async (p) => (opened.push(p), ""), {}, "linux")).toEqual({
      ok: true,
      path: ws,
      detail: "the file manager",
    });
    expect(opened).toEqual([ws]);
    expect(await openWorker(client, "w_1", "folder", async () => "no handler", {}, "linux")).toEqual({ ok: false, path: ws, detail: "no handler" });
  });
  it("refuses what is not a worker id or a way to open, before asking the engine; the engine's refusal is passed on", async () => {
    asked.length = 0;
    expect(await openWorker(client, "/etc", "folder", async () => "")).toMatchObject({ ok: false, detail: "not a worker id" });
    expect(await openWorker(client, "w_1", "shell", async () => "")).toMatchObject({ ok: false });
    expect(asked).toEqual([]);
    expect(await openWorker(client, "w_gone", "terminal", async () => "")).toEqual({ ok: false, detail: "worker w_gone was discarded: its workspace is gone" });
  });
  it("no terminal installed: says what was tried and what to set", async () => {
    const r = await openWorker(client, "w_1", "terminal", async () => "", { PATH: path.join(tmp, "empty") }, "linux");
    expect(r.ok).toBe(false);
    expect(r.detail).toMatch(/none of x-terminal-emulator, gnome-terminal.* could start: set \$TERMINAL/);
  });
  it("a workspace whose git settings would run commands (the engine's gitRuns): no editor or terminal is started there, the folder still opens", async () => {
    rmSync(record, { force: true });
    for (const how of ["editor", "terminal"] as const) {
      const r = await openWorker(client, "w_planted", how, async () => "", { PATH: bin, TERMINAL: "code" }, "linux");
      expect(r.ok).toBe(false);
      expect(r.detail).toContain(
        'git settings that would run commands as you when git reads it (.git/config sets "core.fsmonitor"; .git/hooks holds "post-checkout"; the names are the worker\'s)',
      );
    }
    await new Promise((res) => setTimeout(res, 100));
    expect(existsSync(record)).toBe(false);
    expect(await openWorker(client, "w_planted", "folder", async () => "", {}, "linux")).toMatchObject({ ok: true, detail: "the file manager" });
  });
});

describe("openWorker believes the engine's answer only about a folder of its workspaces", () => {
  it("a server squatting the engine's old port names a folder of its own (or a link out of the workspaces): nothing is opened", async () => {
    const root = path.join(tmp, "state", "workspaces");
    const real = path.join(root, "repo-1", "w_1");
    mkdirSync(real, { recursive: true });
    const theirs = path.join(tmp, "attacker-repo");
    mkdirSync(theirs, { recursive: true });
    symlinkSync(theirs, path.join(root, "repo-1", "w_link"));
    const squatter = (p: string) =>
      ({ workers: { workspace: { query: async ({ workerId }: { workerId: string }) => ({ workerId, path: p, gitRuns: [] }) } } }) as unknown as Parameters<
        typeof openWorker
      >[0];
    rmSync(record, { force: true });
    for (const p of [theirs, path.join(root, "repo-1", "w_link"), root, "/"]) {
      const opened: string[] = [];
      expect(await openWorker(squatter(p), "w_1", "folder", async (x) => (opened.push(x), ""), { PATH: bin }, "linux", root)).toMatchObject({ ok: false });
      expect(await openWorker(squatter(p), "w_1", "editor", async () => "", { PATH: bin }, "linux", root)).toMatchObject({ ok: false });
      expect(opened).toEqual([]);
    }
    await new Promise((res) => setTimeout(res, 200));
    expect(existsSync(record)).toBe(false);
    const opened: string[] = [];
    expect(await openWorker(squatter(real), "w_1", "folder", async (x) => (opened.push(x), ""), {}, "linux", root)).toMatchObject({ ok: true, path: real });
    expect(opened).toEqual([real]);
  });
});
