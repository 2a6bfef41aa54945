// A read of a huge one-line file the worker wrote in its own workspace (inside: the engine answers it at once). opencode's
// read goes through the whole file and holds a line whole: a 1 GiB line took opencode serve ~1.3 GB more memory (measured
// here), and a worker command may write files of 4 GiB (OCW_COMMAND_MAX_FILE_MB): enough to end serve, and every worker
// of its target with it. The workspace plugin refuses read and edit of a file over 64 MiB before the tool runs.
import { describe, expect, it } from "vitest";
import { sandboxStatus } from "../../engine/sandbox/sandbox";
import { bash, readFile, type ScriptContext, type Step } from "../fixtures/scripted-model";
import { settle } from "../helpers";
import { scriptedEngineRig } from "./scripted-engine";

const rig = scriptedEngineRig("big", 2, { OCW_COMMAND_TIMEOUT_SEC: "60" });

describe.skipIf(sandboxStatus().kind === "none")("a huge file in the worker's workspace", () => {
  it("an 80 MiB one-line file: its read and edit are refused before the tool runs, with what to do instead", async () => {
    rig.model.addScript(
      /ATTACK-BIG/,
      (c: ScriptContext): Step => {
        if (c.turnStep === 0) return bash("head -c 83886080 /dev/zero | tr '\\0' a > big.txt; echo made");
        if (c.turnStep === 1) return readFile("big.txt");
        if (c.turnStep === 2) return { toolCalls: [{ name: "edit", args: { filePath: "big.txt", oldString: "aaaa", newString: "b" } }] };
        return { text: "OUTCOME: honest-failure" };
      },
      "big",
    );
    const r = rig.repo();
    const { workerId } = await rig.engine.client.workers.start.mutate({ task: "ATTACK-BIG", directory: r });
    const w = (await settle(rig.engine.client, [workerId], () => "once", 240_000)).get(workerId)!;
    const results: string[] = rig.model.requests
      .at(-1)!
      .body.messages.filter((m: { role: string }) => m.role === "tool")
      .map((m: { content: unknown }) => JSON.stringify(m.content));
    expect(results).toHaveLength(3);
    for (const t of results.slice(1)) {
      expect(t).toContain("big.txt is larger than 64 MiB. Read a part of it with a shell command");
      expect(t).not.toContain("aaaaaaaa");
    }
    expect(w.asks.map((a) => a.tool)).toEqual(["bash"]);
  }, 300_000);
});
