/**
 * MTP / speculative decoding is planned only where the catalog says the weights ship the head, with the runtime's own
 * flags: llama.cpp `--spec-type draft-mtp` (the GGUF must keep the NextN layers), vLLM `--speculative-config` with
 * method mtp, SGLang NEXTN; and every llama.cpp plan carries `--metrics`. The flags are checked against the pinned
 * llama-server's own --help where LLAMA_SERVER is set.
 */
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { parallelDevices, proposeParallel } from "../serving/parallel";
import { CATALOG } from "./catalog";
import { GiB } from "./estimate";
import { catalogModel, commandWords, type PlanDevices, planModel, propose } from "./plan";
import { llamaMtpArgs, mtpOf } from "./mtp";

const MiB = 1024 ** 2;
const gpus = (n: number, name: string, totalMiB: number): PlanDevices =>
  parallelDevices({
    gpus: Array.from({ length: n }, (_, i) => ({ index: i, vendor: "nvidia", name, totalBytes: totalMiB * MiB, freeBytes: (totalMiB - 500) * MiB })),
    ram: { freeBytes: 256 * GiB },
  }).dev;
const flag = (cmd: string, f: string) => {
  const a = commandWords(cmd).args;
  const i = a.indexOf(f);
  return i < 0 ? null : a[i + 1]!;
};

describe("MTP where the model ships it", () => {
  it("vLLM: the maker's safetensors carry Qwen3.6's head → --speculative-config method mtp; gpt-oss has none", async () => {
    const r = await proposeParallel({
      runtime: "vllm",
      dev: gpus(2, "NVIDIA H100 80GB HBM3", 81559),
      slots: 4,
      minCtx: 32768,
      model: "qwen3.6-27b",
      verified: () => false,
      hub: false,
    });
    expect(r.pick?.model).toBe("qwen3.6-27b");
    expect(JSON.parse(flag(r.pick!.command, "--speculative-config")!)).toEqual({ method: "mtp", num_speculative_tokens: 2 });
    const oss = await proposeParallel({
      runtime: "vllm",
      dev: gpus(2, "NVIDIA H100 80GB HBM3", 81559),
      slots: 4,
      minCtx: 32768,
      model: "gpt-oss-20b",
      verified: () => false,
      hub: false,
    });
    expect(oss.pick?.model).toBe("gpt-oss-20b");
    expect(flag(oss.pick!.command, "--speculative-config")).toBeNull();
  });

  it("SGLang: NEXTN with the head's draft steps", async () => {
    const r = await proposeParallel({
      runtime: "sglang",
      dev: gpus(2, "NVIDIA H100 80GB HBM3", 81559),
      slots: 4,
      minCtx: 32768,
      model: "qwen3.6-27b",
      verified: () => false,
      hub: false,
    });
    expect([flag(r.pick!.command, "--speculative-algorithm"), flag(r.pick!.command, "--speculative-num-steps")]).toEqual(["NEXTN", "2"]);
  });

  it("llama.cpp: draft-mtp only for a GGUF that keeps the head; --metrics always", () => {
    const dev: PlanDevices = { gpus: [], hostFreeBytes: 200 * GiB };
    const qwen = CATALOG.find((e) => e.id === "qwen3.6-35b-a3b")!;
    const quant = qwen.quants.at(-1)!.quant;
    // the catalog's unsloth GGUF is not confirmed to keep the NextN layers: no speculative flags
    const plain = planModel(catalogModel(qwen, quant), dev, 1, 8192, false)!;
    expect(plain.command).not.toContain("--spec-type");
    expect(commandWords(plain.command).args).toContain("--metrics");
    // a GGUF repo that keeps them (the catalog says so): llama-server drafts with the model's own head
    const withHead = { ...qwen, mtp: { gguf: true, safetensors: true, draftTokens: 3 } };
    expect(mtpOf(withHead)).toMatchObject({ gguf: true });
    const p = planModel(catalogModel(withHead, quant), dev, 1, 8192, false)!;
    expect([flag(p.command, "--spec-type"), flag(p.command, "--spec-draft-n-max")]).toEqual(["draft-mtp", "3"]);
    expect(commandWords(p.command).args).toContain("--metrics");
  });

  it.skipIf(!process.env.LLAMA_SERVER)("the pinned llama-server knows every flag the plans use for it", () => {
    const help = execFileSync(process.env.LLAMA_SERVER!, ["--help"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    const [spec, , nmax] = llamaMtpArgs(3);
    expect(help).toContain(`${spec} `);
    expect(help).toMatch(/draft-mtp/);
    expect(help).toContain(nmax);
    expect(help).toMatch(/--metrics/);
  });
});

/**
 * The switch (`mtp: false` on the plan's input; `ocw setup|fit --no-mtp`): speculative decoding raises one stream's
 * speed but can lower a server's total throughput with many slots busy, so a person may turn the head off. Off: no
 * speculative flags on any runtime, and the reason says "MTP off (asked)"; the default keeps them.
 */
describe("MTP switched off (asked)", () => {
  const qwen = CATALOG.find((e) => e.id === "qwen3.6-35b-a3b")!;
  const quant = qwen.quants.at(-1)!.quant;
  // a GGUF repo that keeps the NextN layers: llama.cpp drafts with it by default
  const withHead = { ...qwen, mtp: { gguf: true, safetensors: true, draftTokens: 3 } };
  const cpu: PlanDevices = { gpus: [], hostFreeBytes: 200 * GiB };

  it("llama.cpp: one server — no draft-mtp and the reason says so; the default drafts", () => {
    const off = planModel(catalogModel(withHead, quant, false), cpu, 1, 8192, false)!;
    expect(off.command).not.toContain("--spec-");
    expect(off.reason).toMatch(/MTP off \(asked\)/);
    expect(off.mtp).toBe("off");
    const on = planModel(catalogModel(withHead, quant), cpu, 1, 8192, false)!;
    expect([flag(on.command, "--spec-type"), flag(on.command, "--spec-draft-n-max")]).toEqual(["draft-mtp", "3"]);
    expect(on.reason).not.toMatch(/MTP off/);
    expect(on.mtp).toBe("on");
    // a model whose GGUF has no head: nothing to switch off, nothing said
    const plain = planModel(catalogModel(qwen, quant, false), cpu, 1, 8192, false)!;
    expect(plain.reason).not.toMatch(/MTP/);
    expect(plain.mtp).toBeUndefined();
  });

  it("llama.cpp: the planner's proposal and a pool of replicas carry no flags when off", () => {
    const only = [{ ...withHead, autoPick: true }];
    const off = propose(cpu, 1, 8192, () => false, only, undefined, { mtp: false });
    expect(off.pick!.command).not.toContain("--spec-");
    expect(off.pick!.reason).toMatch(/MTP off \(asked\)/);
    const on = propose(cpu, 1, 8192, () => false, only);
    expect(flag(on.pick!.command, "--spec-type")).toBe("draft-mtp");
    const two = gpus(2, "NVIDIA GeForce RTX 4090", 24564);
    const pool = planModel(catalogModel(withHead, quant, false), two, 4, 8192, false)!;
    expect(pool.pool?.replicas).toBe(2);
    for (const e of pool.pool!.endpoints) expect(e.command).not.toContain("--spec-");
    expect(pool.reason).toMatch(/MTP off \(asked\)/);
    const poolOn = planModel(catalogModel(withHead, quant), two, 4, 8192, false)!;
    for (const e of poolOn.pool!.endpoints) expect(flag(e.command, "--spec-type")).toBe("draft-mtp");
  });
});
