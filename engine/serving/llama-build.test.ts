// "Build one" as the engine runs it, with a stand-in build script (OCW_LLAMA_BUILD_SCRIPT): progress streamed from its
// stderr, the path from its last stdout line checked to run, a failure's cause taken from the build's own error line.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { LlamaBuildJob } from "../../shared/llama-build";
import { buildFailureCause, cancelLlamaBuild, llamaBuildJob, progressOf, startLlamaBuild } from "./llama-build";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-lbuild-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const STUB = path.resolve(__dirname, "../../test/fixtures/stub-llama-build.sh");

function build(mode: string): { first: LlamaBuildJob; seen: LlamaBuildJob[]; end: Promise<LlamaBuildJob> } {
  const seen: LlamaBuildJob[] = [];
  let resolve!: (j: LlamaBuildJob) => void;
  const end = new Promise<LlamaBuildJob>((r) => (resolve = r));
  const env = { ...process.env, OCW_LLAMA_BUILD_SCRIPT: STUB, OCW_NVCC: "", STUB_BUILD_MODE: mode, STUB_BUILD_OUT: mkdtempSync(path.join(tmp, "out-")) };
  const first = startLlamaBuild((j) => {
    seen.push(j);
    if (j.state !== "running") resolve(j);
  }, env);
  return { first, seen, end };
}

describe("llama-server build job", () => {
  it("streams progress and ends with a path that runs", async () => {
    const { first, seen, end } = build("ok");
    expect(first).toMatchObject({ state: "running", variant: "cpu", path: null });
    const j = await end;
    expect(j).toMatchObject({ state: "done", failure: null, progress: { done: 4, total: 4 } });
    expect(j.path).toMatch(/bin\/llama-server$/);
    expect(j.lines).toContain("[2/4] Building CXX object step2.o");
    expect(seen[0]!.state).toBe("running");
    expect(llamaBuildJob(j.jobId)).toMatchObject({ state: "done", path: j.path });
  });
  it("a failed build says its own error line, not just an exit code", async () => {
    const j = await build("fail").end;
    expect(j.state).toBe("failed");
    expect(j.failure!.cause).toBe("error: cmake not found; install it (apt-get install -y cmake git ninja-build g++ ccache)");
    expect(j.path).toBeNull();
  });
  it("a built binary that does not run is a failure, with why", async () => {
    const j = await build("broken").end;
    expect(j.state).toBe("failed");
    expect(j.failure!.cause).toMatch(/does not run: `--version` exited with 127: error while loading shared libraries: libstub\.so/);
  });
  it("one build at a time; cancel ends it", async () => {
    const { first, end } = build("slow");
    const again = startLlamaBuild(() => undefined, { ...process.env, OCW_LLAMA_BUILD_SCRIPT: STUB });
    expect(again.jobId).toBe(first.jobId);
    cancelLlamaBuild(first.jobId);
    expect((await end).state).toBe("cancelled");
    expect(() => llamaBuildJob("b_nope")).toThrow(/unknown build job/);
  });
  it("no build script: a clear refusal", () => {
    expect(() => startLlamaBuild(() => undefined, { ...process.env, OCW_LLAMA_BUILD_SCRIPT: path.join(tmp, "none.sh") })).toThrow(
      /give a llama-server path instead/,
    );
  });
  it("reads progress and causes", () => {
    expect(progressOf("[12/345] Building CXX")).toEqual({ done: 12, total: 345 });
    expect(progressOf("[ 42%] Building CXX")).toEqual({ done: 42, total: 100 });
    expect(progressOf("cmake -G Ninja")).toBeNull();
    expect(buildFailureCause(["a", "b"], "exit 2")).toBe("b");
    expect(buildFailureCause([], "exit 2")).toBe("exit 2");
  });
});
