// The workspace plugin (WORKSPACE_PLUGIN) loaded as opencode loads it, its `tool.execute.before` called with a file
// tool's arguments: a path with a `..` after a symlink is refused where the kernel reads it outside the workspace, or
// elsewhere than its lexical reading (which is all the engine is told), before any ask; so is a FIFO, socket or device.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeWorkspacePlugin } from "./sandbox";

type Hook = (input: { tool: string; callID?: string }, output: { args: Record<string, unknown> }) => Promise<void>;
const tmp = realpathSync(mkdtempSync(path.join(os.tmpdir(), "ocw-plugin-paths-")));
const ws = path.join(tmp, "workspaces", "repo", "w-1");
const sibling = path.join(tmp, "workspaces", "other", "w-2");
let onBefore: Hook;
let onAfter: (input: { tool: string; callID?: string }) => Promise<void>;

beforeAll(async () => {
  mkdirSync(path.join(ws, "src", "deep"), { recursive: true });
  mkdirSync(path.join(ws, "tests", "sub"), { recursive: true });
  mkdirSync(sibling, { recursive: true });
  writeFileSync(path.join(sibling, "secret.txt"), "SECRET\n");
  symlinkSync("/", path.join(ws, "root"));
  symlinkSync(".", path.join(ws, "self"));
  symlinkSync(path.join(ws, "tests", "sub"), path.join(ws, "src", "t"));
  execFileSync("mkfifo", [path.join(ws, "fifo")]);
  symlinkSync("fifo", path.join(ws, "to-fifo"));
  const file = writeWorkspacePlugin(path.join(tmp, "plugin", "ocw-workspace.mjs"));
  const mod = (await import(pathToFileURL(file).href)) as { OcwWorkspace: (o: { directory: string; worktree: string }) => Promise<Record<string, Hook>> };
  const hooks = await mod.OcwWorkspace({ directory: ws, worktree: ws });
  onBefore = hooks["tool.execute.before"]!;
  onAfter = hooks["tool.execute.after"] as unknown as typeof onAfter;
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const call = (tool: string, args: Record<string, unknown>) => onBefore({ tool }, { args });

describe("a file tool's path with `..` after a symlink", () => {
  it("read, write, edit, glob, grep, list through `<ws>/root/../…` (the kernel: /…) are refused, with where the path really is", async () => {
    const via = `${ws}/root/..${sibling}`;
    await expect(call("read", { filePath: `${via}/secret.txt` })).rejects.toThrow(`is ${sibling}/secret.txt, outside your workspace`);
    await expect(call("read", { filePath: via })).rejects.toThrow(/outside your workspace/);
    await expect(call("write", { filePath: `${via}/planted.txt`, content: "x" })).rejects.toThrow(/outside your workspace/);
    await expect(call("edit", { filePath: `${via}/secret.txt`, oldString: "a", newString: "b" })).rejects.toThrow(/outside your workspace/);
    await expect(call("glob", { pattern: "*", path: via })).rejects.toThrow(/outside your workspace/);
    await expect(call("grep", { pattern: "S", path: via })).rejects.toThrow(/outside your workspace/);
    await expect(call("list", { path: via })).rejects.toThrow(/outside your workspace/);
    await expect(call("read", { filePath: `${ws}/root/../proc/self/environ` })).rejects.toThrow(/outside your workspace/);
  });

  it("`<ws>/self/..` (the kernel: the folder above the workspace, where the siblings are) is refused too", async () => {
    await expect(call("read", { filePath: `${ws}/self/..` })).rejects.toThrow(`is ${path.dirname(ws)}, outside your workspace`);
    await expect(call("bash", { command: "ls", workdir: `${ws}/self/..` })).rejects.toThrow(/outside your workspace/);
  });

  it("inside the workspace but elsewhere than its lexical reading (src/t → tests/sub: a protected file named as src/…): refused", async () => {
    await expect(call("write", { filePath: `${ws}/src/t/../test_x.py`, content: "x" })).rejects.toThrow(`is ${ws}/tests/test_x.py (a symlink before its ..)`);
  });

  it("ordinary paths pass: relative ones (opencode normalises them before it opens them), absolute ones inside, a `..` through real folders", async () => {
    await call("read", { filePath: "src/../README.md" });
    await call("read", { filePath: `${ws}/src/deep/../x.ts` });
    await call("write", { filePath: `${ws}/src/new/../new.txt`, content: "x" });
    await call("glob", { pattern: "**/*.ts", path: `${ws}/src` });
    await call("grep", { pattern: "x" });
    await call("bash", { command: "ls", workdir: `${ws}/src` });
  });
});

describe("a FIFO in the workspace (its open waits for a writer: a few such reads hung opencode serve, every worker of its target)", () => {
  it("read, write and edit of it, by name or through a symlink, are refused before the tool runs", async () => {
    await expect(call("read", { filePath: "fifo" })).rejects.toThrow("fifo is not a regular file or folder (a FIFO, socket or device)");
    await expect(call("read", { filePath: `${ws}/to-fifo` })).rejects.toThrow(/not a regular file or folder/);
    await expect(call("write", { filePath: "fifo", content: "x" })).rejects.toThrow(/not a regular file or folder/);
    await expect(call("edit", { filePath: "to-fifo", oldString: "a", newString: "b" })).rejects.toThrow(/not a regular file or folder/);
    await expect(call("grep", { pattern: "x", path: "fifo" })).rejects.toThrow(/not a regular file or folder/);
  });
});

describe("a file larger than 64 MiB (opencode's read goes through it whole and holds a line whole: serve's memory, every worker of its target)", () => {
  it("read and edit of it are refused, with what to do instead; write, grep and a file of 64 MiB are not", async () => {
    execFileSync("truncate", ["-s", String(64 * 1024 * 1024 + 1), path.join(ws, "big.txt")]);
    execFileSync("truncate", ["-s", String(64 * 1024 * 1024), path.join(ws, "edge.txt")]);
    await expect(call("read", { filePath: "big.txt" })).rejects.toThrow("big.txt is larger than 64 MiB. Read a part of it with a shell command");
    await expect(call("edit", { filePath: `${ws}/big.txt`, oldString: "a", newString: "b" })).rejects.toThrow(/larger than 64 MiB/);
    await call("write", { filePath: "big.txt", content: "small now" });
    await call("grep", { pattern: "a", path: "big.txt" });
    await call("read", { filePath: "edge.txt" });
  });
});

describe("the checks run once no bash command of the workspace runs (the lock first)", () => {
  it("a folder that a running command swaps for a symlink to / before its end: the read waiting for it is refused, not let through", async () => {
    mkdirSync(path.join(ws, "swap"));
    await onBefore({ tool: "bash", callID: "b1" }, { args: { command: "swap it" } });
    const read = onBefore({ tool: "read", callID: "r1" }, { args: { filePath: `${ws}/swap/..${sibling}/secret.txt` } });
    let done = false;
    void read.then(
      () => (done = true),
      () => (done = true),
    );
    await new Promise((r) => setTimeout(r, 20));
    expect(done).toBe(false); // waits for the command
    // The command swaps the folder for a symlink to /, then ends.
    rmSync(path.join(ws, "swap"), { recursive: true });
    symlinkSync("/", path.join(ws, "swap"));
    await onAfter({ tool: "bash", callID: "b1" });
    await expect(read).rejects.toThrow(`is ${sibling}/secret.txt, outside your workspace`);
    // Its refusal gave the lock back: a command runs again.
    await onBefore({ tool: "bash", callID: "b2" }, { args: { command: "ls" } });
    await onAfter({ tool: "bash", callID: "b2" });
  });
});
