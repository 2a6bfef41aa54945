// A worker's reads of FIFOs it made in its own workspace (inside: the engine answers them at once, nobody is asked).
// opencode's read opens the FIFO and waits for a writer that never comes: before the fix, eight such reads at once hung
// opencode serve for every worker of its target (another worker started then stayed "starting"). Now the workspace
// plugin refuses them before the tool runs, and the other worker is done as usual.
import { describe, expect, it } from "vitest";
import { sandboxStatus } from "../../engine/sandbox/sandbox";
import { bash, readFile, writeFile, type ScriptContext, type Step } from "../fixtures/scripted-model";
import { settle } from "../helpers";
import { scriptedEngineRig } from "./scripted-engine";

const rig = scriptedEngineRig("fifo", 4, { OCW_COMMAND_TIMEOUT_SEC: "30" });

const repo = () => rig.repo();

describe.skipIf(sandboxStatus().kind === "none")("a worker's FIFOs (one opencode serve per target)", () => {
  it("eight reads of FIFOs in its workspace are refused, and another worker of the target still runs to its end", async () => {
    const fifos = ["f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8"];
    rig.model.addScript(
      /ATTACK-FIFO/,
      (c: ScriptContext): Step => {
        if (c.turnStep === 0) return bash(`mkfifo ${fifos.join(" ")}; echo made`);
        if (c.turnStep === 1) return { toolCalls: fifos.map((f) => ({ name: "read", args: { filePath: f } })) };
        return { text: "OUTCOME: built" };
      },
      "fifo",
    );
    rig.model.addScript(
      /INNOCENT/,
      (c) => (c.turnStep === 0 ? writeFile("ok.txt", "fine\n") : c.turnStep === 1 ? readFile("ok.txt") : { text: "OUTCOME: built" }),
      "innocent",
    );
    const a = await rig.engine.client.workers.start.mutate({ task: "ATTACK-FIFO", directory: repo() });
    const attacker = settle(rig.engine.client, [a.workerId], () => "once", 200_000);
    // The other worker starts once the FIFO reads have been made.
    const until = Date.now() + 60_000;
    while (Date.now() < until && !rig.model.requests.some((q) => q.response?.toolCalls?.length === fifos.length)) await new Promise((r) => setTimeout(r, 200));
    await new Promise((r) => setTimeout(r, 2000));
    const b = await rig.engine.client.workers.start.mutate({ task: "INNOCENT", directory: repo() });
    const other = (await settle(rig.engine.client, [b.workerId], () => "once", 90_000)).get(b.workerId)!;
    expect(other.state).toBe("built");
    await attacker; // settled (its FIFOs are no change grading takes: not built, whatever it claims)
    const results: string[] = rig.model.requests
      .filter((q) => q.matched === "fifo")
      .at(-1)!
      .body.messages.filter((m: { role: string }) => m.role === "tool")
      .map((m: { content: unknown }) => JSON.stringify(m.content));
    expect(results.slice(1)).toHaveLength(fifos.length);
    for (const t of results.slice(1)) expect(t).toContain("is not a regular file or folder (a FIFO, socket or device)");
  }, 300_000);
});
