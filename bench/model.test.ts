// The bench's scripted model in a process of its own (bench/model.ts): it answers a scripted request as the in-process
// model does, and its request log comes back to the parent, when asked, with the fields the bench reads.
import { afterEach, describe, expect, it } from "vitest";
import { requestLog, startBenchModelProcess, type BenchModel } from "./model";

let model: BenchModel | null = null;
afterEach(async () => {
  await model?.close();
  model = null;
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("the bench's model in a process of its own", () => {
  it("serves a batch script and hands its request log back after the batch", async () => {
    model = await startBenchModelProcess();
    expect(model.pid).toBeGreaterThan(0);
    expect(model.pid).not.toBe(process.pid);
    const before = Date.now();
    const res = await fetch(`${model.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-session-id": "ses_bench_1" },
      body: JSON.stringify({
        model: "scripted-1",
        stream: false,
        messages: [{ role: "user", content: "BENCH-BATCH 3 c0n16engine" }],
        tools: [{ type: "function", function: { name: "write", parameters: {} } }],
      }),
    });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { choices: { message: { tool_calls: { function: { name: string; arguments: string } }[] } }[] };
    const call = answer.choices[0]!.message.tool_calls[0]!.function;
    expect(call.name).toBe("write");
    expect(JSON.parse(call.arguments)).toEqual({ filePath: "f3.txt", content: "x\n" });
    const after = Date.now();

    // Nothing crosses until asked: the parent's copy is empty until the log is fetched.
    expect(model.requests).toEqual([]);
    const log = await requestLog(model);
    expect(log).toHaveLength(1);
    const [r] = log;
    expect(r).toMatchObject({ kind: "chat", sessionId: "ses_bench_1", matched: "batch", stream: false, finished: true, clientAborted: false });
    expect(r!.response?.type).toBe("toolCalls");
    // `at` is on this machine's clock, as the bench compares it with its own and the engine's timestamps.
    expect(r!.at).toBeGreaterThanOrEqual(before);
    expect(r!.at).toBeLessThanOrEqual(after);
    expect(r!.finishedAt).toBeGreaterThanOrEqual(r!.at);
    // The request bodies stay in the model's process unless asked for.
    expect(r!.body).toBeUndefined();
    expect(model.requests).toBe(log);

    const pid = model.pid!;
    await model.close();
    model = null;
    expect(alive(pid)).toBe(false);
  });
});
