// opencode-worker's opencode plugin, loaded as opencode loads it (an ES module file): every path a writing file tool
// names is checked, symlinks resolved, before the tool runs. opencode's apply_patch (and edit, write) read the file
// before they ask (for the ask's diff; edit fails "oldString not found" or "cannot be empty when editing an existing
// file" before it asks): an `*** Update File: sib/secret.txt` through a symlink into a sibling's workspace
// answered "Failed to read file to update" or went on to ask, so the worker learnt whether the sibling's file exists
// (and, by the patch's context lines, whether lines it guessed are in it), although the ask itself is refused. opencode
// serve sees every workspace of its target, so only a check before the tool runs closes it. Before the fix the plugin
// checked only bash's workdir and list's path.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { writeWorkspacePlugin } from "./sandbox";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-plugin-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

type Hooks = Record<string, (input: Record<string, unknown>, output: Record<string, unknown>) => Promise<void>>;

async function plugin(ws: string): Promise<Hooks> {
  const file = writeWorkspacePlugin(path.join(tmp, "plugin", "ocw.mjs"));
  const mod = (await import(pathToFileURL(file).href)) as { OcwWorkspace: (x: { directory: string; worktree: string }) => Promise<Hooks> };
  return mod.OcwWorkspace({ directory: ws, worktree: ws });
}

describe("the workspace plugin checks every file tool's paths before the tool runs", () => {
  const ws = path.join(tmp, "workspaces", "repo", "w-a");
  const sibling = path.join(tmp, "workspaces", "repo", "w-b");
  mkdirSync(path.join(ws, "src"), { recursive: true });
  mkdirSync(sibling, { recursive: true });
  writeFileSync(path.join(sibling, "secret.txt"), "token=1\n");
  writeFileSync(path.join(ws, "src", "a.ts"), "a\n");
  symlinkSync(sibling, path.join(ws, "sib"));
  let n = 0;
  const call = async (hooks: Hooks, tool: string, args: Record<string, unknown>) => {
    const callID = `c${++n}`;
    try {
      await hooks["tool.execute.before"]!({ tool, sessionID: "s", callID }, { args });
      await hooks["tool.execute.after"]!({ tool, sessionID: "s", callID }, {});
      return "ran";
    } catch (err) {
      return (err as Error).message;
    }
  };
  const patch = (...lines: string[]) => ["*** Begin Patch", ...lines, "*** End Patch"].join("\n");

  it("apply_patch through a symlink into a sibling's workspace (update, delete, add, move): refused, whether the file exists or not", async () => {
    const hooks = await plugin(ws);
    for (const p of [
      patch("*** Update File: sib/secret.txt", "@@", "-token=1", "+token=2"),
      patch("*** Update File: sib/absent.txt", "@@", "-x", "+y"),
      patch("*** Delete File: sib/secret.txt"),
      patch("*** Add File: src/ok.ts", "+ok", "*** Delete File: sib/secret.txt"),
      patch("*** Update File: src/a.ts", "*** Move to: sib/moved.ts", "@@", "-a", "+b"),
      patch("*** Update File: sib/secret.txt").replace(/\n/g, "\r\n"),
    ])
      expect(await call(hooks, "apply_patch", { patchText: p }), p).toMatch(
        /^opencode-worker refused this apply_patch call: sib\/\S+ leads outside your workspace\. Work only inside your own workspace\.$/,
      );
  });

  it("the refusal is the same whether the sibling's file exists, is absent, or is a link elsewhere (nothing is said of what is there)", async () => {
    const hooks = await plugin(ws);
    symlinkSync("/etc/hostname", path.join(sibling, "link.txt"));
    const said = async (name: string) =>
      (await call(hooks, "apply_patch", { patchText: patch(`*** Update File: sib/${name}`, "@@", "-x", "+y") })).replace(name, "NAME");
    expect(new Set([await said("secret.txt"), await said("absent.txt"), await said("link.txt")]).size).toBe(1);
  });

  it("edit and write of a path through the symlink: refused; the same tools inside the workspace run; read, glob and grep (which ask first) are left to the engine", async () => {
    const hooks = await plugin(ws);
    for (const tool of ["edit", "write", "multiedit", "lsp"]) {
      expect(await call(hooks, tool, { filePath: path.join(ws, "sib", "secret.txt") }), tool).toMatch(/refused this \w+ call/);
      expect(await call(hooks, tool, { filePath: "sib/absent.txt" }), tool).toMatch(/refused/);
      expect(await call(hooks, tool, { filePath: path.join(ws, "src", "a.ts") }), tool).toBe("ran");
    }
    expect(await call(hooks, "apply_patch", { patchText: patch("*** Update File: src/a.ts", "@@", "-a", "+b", "*** Add File: src/new/b.ts", "+b") })).toBe(
      "ran",
    );
    // opencode asks before these touch the path; the engine refuses them by real path, on the record.
    expect(await call(hooks, "grep", { pattern: "x", path: "sib" })).toBe("ran");
    expect(await call(hooks, "read", { filePath: "sib/secret.txt" })).toBe("ran");
  });

  it("a refused tool holds nothing: a bash command of the workspace runs after it", async () => {
    const hooks = await plugin(ws);
    expect(await call(hooks, "edit", { filePath: "sib/secret.txt" })).toMatch(/refused/);
    const bash = Promise.race([call(hooks, "bash", { command: "true" }), new Promise((r) => setTimeout(() => r("held"), 500))]);
    expect(await bash).toBe("ran");
  });
});
