/**
 * Verify's concurrency check on llama.cpp is decided by the server, not by the clock (issue 13): a server whose
 * /slots lists fewer slots than the requests sent at once fails even when the answers happen to arrive together, and
 * one with enough slots passes. The server is the GPU double test/fixtures/hardware/fake-runtime.ts in llama mode
 * (its /slots lists -np slots; it answers through the scripted model, which serves requests in parallel, so timing
 * alone would usually pass both). Runs without a real llama-server.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { buildSync } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../engine/serving/llama-server";
import { verifyEndpoint } from "../../engine/serving/verify";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-verify-conc-"));
const fake = path.join(tmp, "fake-runtime.mjs");
const children: ChildProcess[] = [];

beforeAll(() => {
  buildSync({
    entryPoints: [path.join(__dirname, "../fixtures/hardware/fake-runtime.ts")],
    bundle: true,
    platform: "node",
    format: "esm",
    outfile: fake,
    logLevel: "error",
  });
});
afterAll(() => {
  for (const c of children) c.kill("SIGTERM");
});

async function server(np: number): Promise<string> {
  const port = await freePort();
  const c = spawn(process.execPath, [fake, "-np", String(np), "-c", String(np * 4096), "--port", String(port), "--alias", "m"], {
    env: { ...process.env, OCW_FAKE_MODE: "llama", OCW_FAKE_LOAD_MS: "0" },
    stdio: "ignore",
  });
  children.push(c);
  for (let i = 0; i < 200; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return `http://127.0.0.1:${port}/v1`;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("the fake llama-server did not start");
}

describe("verify: concurrency on llama.cpp is decided by /slots", () => {
  it("1 slot for 4 requests fails, even though the answers overlap in time; 4 slots pass", async () => {
    const one = await verifyEndpoint({
      url: await server(1),
      model: "m",
      key: null,
      engine: "llama.cpp",
      slots: 4,
      perSlotCtx: null,
      concurrencyTokens: 16,
      tools: false,
    });
    const c1 = one.checks.find((c) => c.name === "concurrency")!;
    expect(c1.passed, c1.evidence).toBe(false);
    expect(c1.evidence).toMatch(/\/slots lists 1 slot .* 4 requests cannot run at once on 1 slot: they queue/);
    // (the fake answers in parallel, so the clock alone would usually have passed it: the evidence shows the spread)
    console.log(`-np 1: ${c1.evidence}`);
    const four = await verifyEndpoint({
      url: await server(4),
      model: "m",
      key: null,
      engine: "llama.cpp",
      slots: 4,
      perSlotCtx: null,
      concurrencyTokens: 16,
      tools: false,
    });
    const c4 = four.checks.find((c) => c.name === "concurrency")!;
    expect(c4.passed, c4.evidence).toBe(true);
    expect(c4.evidence).toMatch(/\/slots lists 4 slots/);
  }, 120_000);
});
