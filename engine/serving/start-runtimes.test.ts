/**
 * The container launch of vLLM / SGLang (`docker|podman run` of the pinned image, start-runtimes.ts buildLaunch):
 * what the container really executes is the image's ENTRYPOINT (or `--entrypoint`) followed by the words after the
 * image. vLLM's vllm-openai image has shipped two entrypoints: `python3 -m vllm.entrypoints.openai.api_server`
 * (docker/Dockerfile's vllm-openai target, still so in vllm#17172, May 2025, and vllm#32292, Jan 2026: a positional
 * model there is not the model — the server silently serves the image's default, Qwen/Qwen3-0.6B) and later
 * `vllm serve` (vllm-project.github.io#305 and jetson-ai-lab#420, Aug 2026, vLLM 0.26). The launch must load the
 * planned model under either.
 */
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { buildLaunch } from "./start-runtimes";

/** What `docker run [opts] IMAGE args…` executes in the container, for an image whose ENTRYPOINT is `entrypoint`. */
function executed(run: string[], image: string, entrypoint: string[]): string[] {
  const i = run.indexOf(image);
  const before = run.slice(0, i);
  const e = before.indexOf("--entrypoint");
  return [...(e >= 0 ? [before[e + 1]!] : entrypoint), ...run.slice(i + 1)];
}

/** vLLM's own parsing of those words: `vllm serve MODEL …` takes the positional model; api_server only `--model`. */
function servedModel(argv: string[]): string | null {
  if (argv[0] === "vllm" && argv[1] === "serve") return argv[2] && !argv[2].startsWith("-") ? argv[2] : (argv[argv.indexOf("--model") + 1] ?? null);
  if (argv.join(" ").startsWith("python3 -m vllm.entrypoints.openai.api_server"))
    return argv.includes("--model") ? argv[argv.indexOf("--model") + 1]! : "Qwen/Qwen3-0.6B";
  return null;
}

const ENTRYPOINTS = {
  "api_server (docker/Dockerfile vllm-openai, through Jan 2026)": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
  "vllm serve (vllm-openai by Aug 2026)": ["vllm", "serve"],
};

describe("vLLM in its container", () => {
  const command =
    "VLLM_API_KEY=… vllm serve Qwen/Qwen3.6-27B-FP8 --host 127.0.0.1 --port 8000 --max-model-len 32768 --max-num-seqs 4 --gpu-memory-utilization 0.9 --served-model-name qwen3.6-27b-fp8 --tensor-parallel-size 2";
  for (const [name, entrypoint] of Object.entries(ENTRYPOINTS)) {
    it(`loads the planned model whatever the image's entrypoint: ${name}`, () => {
      const l = buildLaunch({
        runtime: "vllm",
        found: { how: "container", bin: "/usr/bin/docker" },
        command,
        port: 41234,
        key: "ocw-test",
        configDir: mkdtempSync(path.join(os.tmpdir(), "ocw-launch-")),
        env: {},
        family: "qwen3.6-27b Qwen/Qwen3.6-27B-FP8",
      });
      const image = "docker.io/vllm/vllm-openai:v0.19.0";
      expect(l.args).toContain(image);
      const argv = executed(l.args, image, entrypoint);
      expect(servedModel(argv)).toBe("Qwen/Qwen3.6-27B-FP8");
      expect(argv.slice(0, 2)).toEqual(["vllm", "serve"]);
      // inside the container it listens on 0.0.0.0:8000, published on the host's loopback port
      expect([argv[argv.indexOf("--host") + 1], argv[argv.indexOf("--port") + 1]]).toEqual(["0.0.0.0", "8000"]);
      expect(l.args).toContain("127.0.0.1:41234:8000");
      // the key by name only
      expect(l.args.join(" ")).not.toContain("ocw-test");
    });
  }
});
