/**
 * kill -9 of the model server in the middle of a batch: a real llama-server (tiny random-weight model, 2 slots) serving
 * two workers, while a third worker on the scripted model waits on a pending approval. The workers whose model call
 * died must be interrupted at once with the reason (opencode alone would retry for a minute or more), the approval
 * must stay answerable, and once the server is started again the interrupted workers resume in their sessions.
 * Needs LLAMA_SERVER (scripts/build-llama-server.sh; CI exports it); without it the test reports itself skipped.
 */
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildLlamaArgs, freePort, startLlamaServer, stopPid, type StartOptions } from "../../engine/serving/llama-server";
import type { Target } from "../../shared/target";
import { isAtRest } from "../../shared/worker";
import { vocabDirFor, writeTinyModels } from "../fixtures/gguf/writer";
import { startScriptedModel, writeFile, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, settle, startEngine, untilAsk, untilState, type TestEngine } from "../helpers";

const BIN = process.env.LLAMA_SERVER;
const VOCAB = vocabDirFor(BIN);
const SKIP = !BIN
  ? "LLAMA_SERVER is unset: build it with scripts/build-llama-server.sh and export LLAMA_SERVER=<path>"
  : !VOCAB
    ? `no llama.cpp test vocabularies next to ${BIN}`
    : null;

let engine: TestEngine;
let model: ScriptedModel;
let llamaPid: number | null = null;
let llamaOpts: StartOptions;
let port: number;
const dirs: string[] = [];

beforeAll(async () => {
  if (SKIP) return;
  const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-llama-kill-"));
  dirs.push(tmp);
  const { llama: gguf } = await writeTinyModels(tmp, VOCAB!);
  port = await freePort();
  // Unified KV: each of the 2 slots may use the whole context, which opencode's long system prompt needs.
  const args = buildLlamaArgs({ model: gguf, alias: "tiny", ctx: 32768, parallel: 2, kvUnified: true, port });
  llamaOpts = { bin: BIN!, args, apiKey: null, logFile: path.join(tmp, "llama.log"), port };
  llamaPid = (await startLlamaServer(llamaOpts)).pid;
  model = await startScriptedModel({
    scripts: [{ name: "ask", match: /LLAMA-KILL-ASK/, script: (c) => (c.turnStep === 0 ? writeFile("a.txt", "a\n") : { text: "OUTCOME: built" }) }],
  });
  engine = await startEngine();
  const real: Target = {
    id: "llama",
    model: "tiny",
    endpoint: `http://127.0.0.1:${port}/v1`,
    keyRef: null,
    serving: { engine: "llama.cpp", endpoints: [], slots: 2, perSlotCtx: 32768 },
    // Long enough answers that the kill lands mid-stream; short enough that a resumed worker finishes.
    outputLimit: 1024,
    checks: [],
  };
  await engine.client.targets.save.mutate({ target: real, activate: true });
  await engine.client.targets.save.mutate({ target: scriptedTarget(model.url, 2), activate: false });
}, 180_000);

afterAll(async () => {
  await engine?.kill();
  if (llamaPid) await stopPid(llamaPid);
  await model?.close();
  cleanup(engine?.stateDir ?? "", ...dirs);
});

async function processing(): Promise<number> {
  const slots = (await fetch(`http://127.0.0.1:${port}/slots`).then(
    (r) => r.json(),
    () => [],
  )) as { is_processing?: boolean }[];
  return Array.isArray(slots) ? slots.filter((s) => s.is_processing).length : 0;
}

describe("kill -9 of the model server mid-batch (real llama-server)", () => {
  it("its workers are interrupted at once with the reason, a pending approval elsewhere survives, and after the restart they resume", async (ctx) => {
    if (SKIP) return ctx.skip(SKIP);
    const repo = makeRepo();
    dirs.push(repo);
    const { workerIds } = await engine.client.workers.startBatch.mutate({
      tasks: [
        { task: "Write hello.txt containing hello.", directory: repo, checks: [{ file: "hello.txt" }] },
        { task: "Write bye.txt containing bye.", directory: repo, checks: [{ file: "bye.txt" }] },
        { task: "LLAMA-KILL-ASK write a.txt", directory: repo, targetId: "scripted", checks: [{ file: "a.txt" }] },
      ],
    });
    const [a, b, asker] = workerIds as [string, string, string];
    const waiting = await untilAsk(engine.client, asker, 120_000);
    const deadline = Date.now() + 120_000;
    while ((await processing()) < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(await processing()).toBeGreaterThan(0);

    const killedAt = Date.now();
    process.kill(llamaPid!, "SIGKILL");
    llamaPid = null;
    // A worker whose model call died is interrupted with the reason, not left to opencode's minute-long retries.
    const hit = await Promise.race([a, b].map((id) => untilState(engine.client, id, (w) => w.state === "interrupted", 60_000)));
    const afterMs = hit.updatedAt - killedAt;
    console.log(`model server killed: ${hit.id} interrupted ${afterMs} ms later: ${hit.stateReason}`);
    expect(afterMs).toBeLessThan(15_000);
    expect(hit.stateReason).toMatch(new RegExp(`model endpoint http://127.0.0.1:${port}/v1 stopped answering .*resume`));
    // The other one either was interrupted too or ends on its own (it was not mid-call): nothing is left hanging.
    const other = await untilState(engine.client, hit.id === a ? b : a, (w) => w.state === "interrupted" || isAtRest(w.state), 120_000);
    // Resuming while the server is still down says so and changes nothing.
    await expect(engine.client.workers.resume.mutate({ workerId: hit.id })).rejects.toThrow(/cannot reach the model endpoint/);
    expect((await engine.client.workers.get.query({ workerId: hit.id })).state).toBe("interrupted");

    // The approval on the other target was neither lost nor answered on anyone's behalf.
    const ask = (await engine.client.approvals.list.query()).find((x) => x.workerId === asker);
    expect(ask).toMatchObject({ id: waiting.asks[0]!.id, status: "pending" });
    const built = (await settle(engine.client, [asker], () => "once")).get(asker)!;
    expect(built.state).toBe("built");

    // The server is back (same port): the interrupted workers resume in their sessions and end with a verdict or a reason.
    llamaPid = (await startLlamaServer(llamaOpts)).pid;
    const interrupted = [hit, other].filter((w) => w.state === "interrupted");
    for (const w of interrupted) await engine.client.workers.resume.mutate({ workerId: w.id });
    const after = await settle(
      engine.client,
      interrupted.map((w) => w.id),
      () => "reject",
      400_000,
    );
    for (const w of interrupted) {
      const now = after.get(w.id)!;
      expect(now.sessionId).toBe(w.sessionId);
      expect(now.state === "error" ? now.stateReason : now.verdict).toBeTruthy();
    }
    expect((await engine.client.health.query()).ok).toBe(true);
  }, 600_000);
});
