// A file tool's absolute path with a `..` after a symlink (`<workspace>/root/../<anywhere>`): opencode names the path to
// the engine lexically normalised (inside the workspace) while it opens the path as written, which the kernel resolves
// symlink first (`root` → `/`, then `..`). The engine answered such a read or search itself, at once, as inside.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { sandboxStatus } from "../../engine/sandbox/sandbox";
import { bash, readFile, toolCall, writeFile, type ScriptContext, type Step, turnSteps } from "../fixtures/scripted-model";
import { settle } from "../helpers";
import { scriptedEngineRig } from "./scripted-engine";

const sandbox = sandboxStatus();
const SECRET = "SIBLING" + Math.random().toString(36).slice(2);
const rig = scriptedEngineRig("dotdot", 2, { OCW_COMMAND_TIMEOUT_SEC: "30" });

describe.skipIf(sandbox.kind === "none")(`file tools' paths resolved as the kernel does (${sandbox.kind === "none" ? sandbox.reason : "bubblewrap"})`, () => {
  it("read, glob, grep and write through `<symlink>/..` in an absolute path, every ask approved: nothing outside the workspace is read or written", async () => {
    // Another worker's workspace (what opencode serve can see beside this worker's): a file of its own, and its folder.
    const sibling = path.join(rig.engine.stateDir, "workspaces", "other-0000", "w-sibling");
    mkdirSync(sibling, { recursive: true });
    writeFileSync(path.join(sibling, "secret.txt"), `${SECRET}\n`);
    const r = rig.repo({ "README.md": "# r\n" });
    let ws = "";
    // Every path below is, written out, <workspace>/root/../<sibling>/…: inside the workspace to a lexical reading.
    const via = (p: string) => `${ws}/root/..${p}`;
    const list: ((c: ScriptContext) => Step)[] = [
      () => bash("pwd -P; ln -s / root; echo linked"),
      (c) => {
        ws = (c.lastToolResult ?? "").split("\n")[0]!.trim();
        return readFile(via(path.join(sibling, "secret.txt")));
      },
      () => readFile(via(sibling)),
      () => toolCall("grep", { pattern: "SIBLING", path: via(sibling) }),
      () => toolCall("glob", { pattern: "*.txt", path: via(sibling) }),
      () => writeFile(via(path.join(sibling, "planted.txt")), "written by another worker\n"),
      () => toolCall("edit", { filePath: via(path.join(sibling, "secret.txt")), oldString: "S", newString: "EDITED" }),
      // opencode serve's own environment: its password and its config (the gateway's address and key for it).
      () => readFile(`${ws}/root/../proc/self/environ`),
    ];
    rig.model.addScript(/ATTACK-DOTDOT/, (c) => list[c.turnStep]?.(c) ?? { text: "Done.\nOUTCOME: built" }, "dotdot");
    const { workerId } = await rig.engine.client.workers.start.mutate({ task: "ATTACK-DOTDOT", directory: r });
    const w = (await settle(rig.engine.client, [workerId], () => "once", 240_000)).get(workerId)!;
    expect(ws).toBe(w.worktree);
    // What came back to the model from each tool: no file, folder or environment of anyone else's.
    const results: string[] = rig.model.requests
      .at(-1)!
      .body.messages.filter((m: { role: string }) => m.role === "tool")
      .map((m: { content: unknown }) => JSON.stringify(m.content));
    expect(results).toHaveLength(list.length);
    for (const t of results) {
      expect(t).not.toContain(SECRET);
      expect(t).not.toContain("<entries>");
      expect(t).not.toContain("OPENCODE_SERVER_PASSWORD");
    }
    expect(existsSync(path.join(sibling, "planted.txt")), "a write landed in the sibling's workspace").toBe(false);
    expect(readFileSync(path.join(sibling, "secret.txt"), "utf8")).toBe(`${SECRET}\n`);
    // Each was refused before any ask (nobody was asked to approve a write there), and the model was told why.
    for (const t of results.slice(1))
      expect(t).toMatch(/opencode-worker refused this (read|grep|glob|write|edit) call: .*( is \/.*,| leads) outside your workspace/);
    expect(w.asks.filter((a) => a.tool !== "bash")).toEqual([]);
  }, 300_000);

  it("a write through a dangling symlink (its target in a sibling's workspace, not made yet), every ask approved: refused before anyone is asked, nothing made there", async () => {
    const sibling = path.join(rig.engine.stateDir, "workspaces", "other-0001", "w-sibling");
    mkdirSync(sibling, { recursive: true });
    const r = rig.repo({ "README.md": "# r\n" });
    const list: Step[] = [
      bash(`ln -s ${path.join(sibling, "planted.txt")} dangling.txt; echo linked`),
      writeFile("dangling.txt", "written by another worker\n"),
    ];
    rig.model.addScript(/ATTACK-DANGLING/, turnSteps(...list), "dangling");
    const { workerId } = await rig.engine.client.workers.start.mutate({ task: "ATTACK-DANGLING", directory: r });
    const w = (await settle(rig.engine.client, [workerId], () => "once", 240_000)).get(workerId)!;
    expect(existsSync(path.join(sibling, "planted.txt")), "a write landed in the sibling's workspace").toBe(false);
    // The workspace plugin follows the dangling link as the kernel would (to the sibling's folder) and refuses the write
    // before it asks; the engine's own check of an ask's real path (inspectAsk) follows it too, should one come.
    expect(w.asks.filter((a) => a.tool !== "bash")).toEqual([]);
    const results = rig.model.requests
      .at(-1)!
      .body.messages.filter((m: { role: string }) => m.role === "tool")
      .map((m: { content: unknown }) => JSON.stringify(m.content));
    expect(results.at(-1)).toMatch(/opencode-worker refused this write call: dangling.txt leads outside your workspace/);
  }, 300_000);
});
