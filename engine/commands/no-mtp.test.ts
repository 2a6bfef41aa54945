/**
 * `--no-mtp` (commander's `--no-` form) on `ocw fit`, `ocw setup` and `ocw deploy k8s`: speculative decoding with the
 * model's own MTP head is on by default where the catalog has a head; the flag reaches the engine as `mtp: false`
 * (the plans' own tests — engine/models/mtp.test.ts, parallel.test.ts, k8s.test.ts, fit-service.test.ts — check that
 * off removes the flags). No engine here: the port and the planner are stand-ins that keep what they were asked.
 */
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { DeployK8sInput } from "../../shared/deploy";
import { FitInput, FitPlanInput, type FitResult } from "../../shared/fit";
import { SetupStartInput } from "../../shared/setup";
import { registerDeployCommand, runDeployK8s } from "./deploy";
import { registerModelSetupCommands, runFit, runSetup, type SetupPort } from "./model-setup";

/** The options commander gives the action of `words` (fresh commands each time: commander keeps parsed values). */
async function optsOf(words: string[]): Promise<Record<string, unknown>> {
  const program = new Command("ocw").exitOverride();
  registerModelSetupCommands(program);
  registerDeployCommand(program);
  let got: Record<string, unknown> = {};
  const all = (c: Command): Command[] => [c, ...c.commands.flatMap(all)];
  for (const c of all(program)) c.action((o: Record<string, unknown>) => void (got = o));
  await program.parseAsync(words, { from: "user" });
  return got;
}

const noFit: FitResult = {
  hardware: { gpus: [], ramTotalBytes: 1, ramFreeBytes: 1, cpu: "t", runtimeDevices: null, notes: [] },
  pick: null,
  alternatives: [],
  problem: "nothing (a stand-in)",
};

describe("--no-mtp", () => {
  it("commander reads --no-mtp as mtp: false and its absence as true, on fit, setup and deploy k8s", async () => {
    for (const cmd of [["fit"], ["setup"], ["deploy", "k8s"]]) {
      expect((await optsOf([...cmd, "--no-mtp"])).mtp).toBe(false);
      expect((await optsOf(cmd)).mtp).toBe(true);
    }
  });

  it("the contract keeps it: FitInput / FitPlanInput / SetupStartInput / DeployK8sInput", () => {
    expect(FitInput.parse({ mtp: false }).mtp).toBe(false);
    expect(FitPlanInput.parse({ mtp: false, runtime: "vllm" }).mtp).toBe(false);
    expect(SetupStartInput.parse({ mtp: false }).mtp).toBe(false);
    expect(DeployK8sInput.parse({ mtp: false }).mtp).toBe(false);
    // absent: the default (on where the catalog has a head)
    expect(FitInput.parse({}).mtp).toBeUndefined();
  });

  it("ocw fit and ocw setup pass mtp: false to the engine; without the flag they pass no choice", async () => {
    const asked: { plan: unknown[]; start: unknown[] } = { plan: [], start: [] };
    const port = {
      plan: async (i: unknown) => (asked.plan.push(i), noFit),
      start: async (i: unknown) => {
        asked.start.push(i);
        throw new Error("a stand-in start");
      },
    } as unknown as SetupPort;
    await runFit({ model: "qwen3.6-27b", runtime: "vllm", mtp: false }, port);
    await runFit({ model: "qwen3.6-27b", runtime: "vllm", mtp: true }, port);
    expect(asked.plan).toEqual([expect.objectContaining({ mtp: false }), expect.not.objectContaining({ mtp: false })]);
    // the stand-in start fails (said as setup says a failure); what it was asked is what counts here
    await runSetup({ runtime: "vllm", model: "qwen3.6-27b", yes: true, json: true, mtp: false }, port).catch(() => null);
    await runSetup({ runtime: "vllm", model: "qwen3.6-27b", yes: true, json: true, mtp: true }, port).catch(() => null);
    expect(asked.start).toEqual([expect.objectContaining({ mtp: false }), expect.not.objectContaining({ mtp: false })]);
  });

  it("ocw deploy k8s passes mtp: false to the engine's planner", async () => {
    let got: DeployK8sInput | null = null;
    const planner = async (i: DeployK8sInput) => {
      got = i;
      throw new Error("a stand-in planner");
    };
    await expect(runDeployK8s({ model: "qwen3.6-27b", gpus: "1xH100=80G", mtp: false }, {}, planner)).rejects.toThrow(/stand-in/);
    expect(got).toMatchObject({ mtp: false });
  });
});
