/**
 * What a newcomer met walking the documented setup path on a CPU-only machine (2 cores, offline but for npm): each case
 * failed on the code before its fix. No process is started: the engine's setup functions run in this process
 * (test/setup-port.ts), and the servers are in-process HTTP stubs.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { HardwareReport } from "../hardware/detect";
import { TargetStore } from "../store/targets";
import { localSetupPort } from "../../test/setup-port";
import { runFit, runServingStop, runSetup, type SetupPort } from "./model-setup";
import { downloadFile } from "../models/download";
import { restartFailure } from "../serving/servers-api";
import { finish } from "../serving/setup";

const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-newcomer-"));
// A state dir of this file's own, for every case (vitest puts the variable back after).
beforeAll(() => void vi.stubEnv("OCW_STATE_DIR", path.join(dir, "state")));
afterAll(() => void vi.unstubAllEnvs());

/** A port that records what the command asked of the engine and answers nothing more. */
function recordingPort(): { port: SetupPort; asked: Record<string, unknown> } {
  const asked: Record<string, unknown> = {};
  const stop = (what: string) => async (i: unknown) => {
    asked[what] = i;
    throw Object.assign(new Error("stop here"), { data: { ocwKind: "input" } });
  };
  const port = { plan: stop("plan"), start: stop("start"), estimate: stop("estimate") } as unknown as SetupPort;
  return { port, asked };
}

describe("ocw setup --capture of a server that refuses the key given", () => {
  let server: http.Server;
  let url = "";
  beforeAll(async () => {
    // llama-server with --api-key: every route but /health answers 401 without the right bearer
    server = http.createServer((req, res) => {
      const ok = req.headers.authorization === "Bearer right-key-123";
      res.writeHead(ok ? 200 : 401, { "content-type": "application/json" });
      res.end(
        ok ? JSON.stringify({ data: [{ id: "m" }] }) : JSON.stringify({ error: { message: "Invalid API Key", type: "authentication_error", code: 401 } }),
      );
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => server.close());

  it("says the key was refused and names its variable — not that the server lists no model", async () => {
    const store = new TargetStore(path.join(dir, "capture-targets.json"));
    const r = await runSetup({ capture: url, apiKeyEnv: "MY_KEY", yes: true }, localSetupPort({ store, env: { MY_KEY: "wrong-key-456" } }));
    expect(r.code).toBe(2);
    expect(r.stderr).not.toMatch(/lists no model/);
    expect(r.stderr).toMatch(/refused the key in MY_KEY \(HTTP 401\)/);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).not.toContain("wrong-key-456");
    expect(store.list().targets).toHaveLength(0);
  });
});

describe("ocw serving stop --target of a server ocw did not start", () => {
  it("a captured target: says ocw leaves it running and how to forget it (exit 1), never 'no servers are running'", async () => {
    const store = new TargetStore(path.join(dir, "stop-targets.json"));
    store.save({
      id: "capture-m-18080",
      model: "m",
      quant: null,
      endpoint: "http://127.0.0.1:18080/v1",
      keyRef: null,
      contextLimit: 8192,
      serving: { engine: "llama.cpp", endpoints: [{ url: "http://127.0.0.1:18080/v1", slots: 2 }], slots: 2, perSlotCtx: 8192 },
      outcome: "underpowered",
      verifiedAt: new Date().toISOString(),
      checks: [],
    });
    const port = localSetupPort({ store });
    const r = await runServingStop({ target: "capture-m-18080" }, port);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/capture-m-18080 .*not started by ocw.*stop it where you started it.*ocw target remove capture-m-18080/);
    expect(r.stdout).toBe("");
  });
  it("an id that is no target: exit 2 naming it", async () => {
    const store = new TargetStore(path.join(dir, "stop-targets-2.json"));
    const r = await runServingStop({ target: "nope" }, localSetupPort({ store }));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^ocw: no target or model server "nope".*ocw serving list/);
  });
});

describe("paths and flags as the shell gives them", () => {
  it("ocw fit --model REL.gguf names the file to the engine by its absolute path (the engine runs elsewhere)", async () => {
    const file = path.join(dir, "rel.gguf");
    writeFileSync(file, "GGUF");
    const { port, asked } = recordingPort();
    await runFit({ model: path.relative(process.cwd(), file) }, port);
    expect((asked.plan as { model: string }).model).toBe(file);
  });
  it("ocw setup takes this shell's LLAMA_SERVER when no --llama-server is given (the engine's own environment may lack it)", async () => {
    const prev = process.env.LLAMA_SERVER;
    const bin = path.join(dir, "llama-server");
    writeFileSync(bin, "#!/bin/sh\n", { mode: 0o755 });
    process.env.LLAMA_SERVER = bin;
    try {
      const { port, asked } = recordingPort();
      await runSetup({ runtime: "llama.cpp", model: "/m.gguf", slots: "1", yes: true }, port);
      expect((asked.start as { llamaServer?: string }).llamaServer).toBe(bin);
      await runSetup({ runtime: "llama.cpp", model: "/m.gguf", slots: "1", yes: true, llamaServer: "/x/llama-server" }, port);
      expect((asked.start as { llamaServer?: string }).llamaServer).toBe("/x/llama-server");
      // one that names nothing: said as this shell's, before the engine is asked
      process.env.LLAMA_SERVER = path.join(dir, "gone", "llama-server");
      const r = await runSetup({ runtime: "llama.cpp", model: "/m.gguf", slots: "1", yes: true }, port);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^ocw: LLAMA_SERVER \(.*gone\/llama-server, from this shell\) names no file/);
    } finally {
      if (prev === undefined) delete process.env.LLAMA_SERVER;
      else process.env.LLAMA_SERVER = prev;
    }
  });
  it("--ctx / --min-ctx / --slots beyond what the engine takes: the flag named, no schema words", async () => {
    const { port } = recordingPort();
    for (const [o, re] of [
      [{ ctx: "2000000" }, /^ocw: --ctx must be at most 1048576 tokens \(got "2000000"\)$/],
      [{ minCtx: "100000000" }, /^ocw: --min-ctx must be at most 1048576 tokens \(got "100000000"\)$/],
      [{ slots: "700" }, /^ocw: --slots must be at most 256 \(got "700"\)$/],
    ] as const) {
      const r = await runSetup({ runtime: "llama.cpp", model: "/m.gguf", yes: true, ...o }, port);
      expect(r.code).toBe(2);
      expect(r.stderr.trim()).toMatch(re);
      const f = await runFit({ model: "/m.gguf", ...o }, port);
      expect(f.code).toBe(2);
      expect(f.stderr.trim()).toMatch(re);
    }
  });
  it("a file that is not a GGUF: its path said once, and what to give instead", async () => {
    const file = path.join(dir, "notes.gguf");
    writeFileSync(file, "hello, not a model\n");
    const hardware = {
      platform: "linux",
      arch: "x64",
      cpu: { model: "t", cores: 2, physicalCores: 2 },
      ram: { totalBytes: 24 * 1024 ** 3, freeBytes: 20 * 1024 ** 3 },
      gpus: [],
      llamaDevices: null,
      probes: [],
      problems: [],
      ms: 1,
    } satisfies HardwareReport;
    const r = await runFit({ model: file }, localSetupPort({ env: {}, hardware }));
    expect(r.code).toBe(2);
    expect(r.stderr.split(file).length - 1).toBe(1);
    expect(r.stderr).toMatch(/is not a GGUF file .*a \.gguf model file/);
  });
});

describe("offline", () => {
  it("a download that cannot reach its host says why (DNS), never a bare 'fetch failed'", async () => {
    const fetchImpl = (async () => {
      throw new TypeError("fetch failed", { cause: Object.assign(new Error("getaddrinfo ENOTFOUND github.com"), { code: "ENOTFOUND" }) });
    }) as unknown as typeof fetch;
    const err = await downloadFile({ url: "https://github.com/x/y.tar.gz", dest: path.join(dir, "y.tar.gz"), fetchImpl }).catch((e: Error) => e);
    expect((err as Error).message).not.toMatch(/fetch failed/);
    expect((err as Error).message).toMatch(/cannot download https:\/\/github\.com\/x\/y\.tar\.gz: cannot reach github\.com: its name does not resolve/);
  });
});

describe("ocw serving restart when the recorded port is taken now", () => {
  it("names the port and what to do, from llama-server's own log line", () => {
    const m = restartFailure(
      "t1",
      "llama-server exited (2) before it was ready",
      "0.00.006.828 E srv  start: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 44257",
      "/s/logs/t1.log",
      44257,
    );
    expect(m).toMatch(/^t1 did not start again: port 44257 is taken by another process/);
    expect(m).toMatch(/ocw setup/);
    expect(m).toContain("(log: /s/logs/t1.log)");
  });
});

describe("setting up the active target again", () => {
  it("an underpowered re-setup of the target in use says it is still active (it is), not 'not active'", () => {
    const store = new TargetStore(path.join(dir, "again-targets.json"));
    const t = {
      id: "llamacpp-m",
      model: "m",
      quant: null,
      endpoint: "http://127.0.0.1:40011/v1",
      keyRef: null,
      contextLimit: 8192,
      serving: { engine: "llama.cpp" as const, endpoints: [{ url: "http://127.0.0.1:40011/v1", slots: 1 }], slots: 1, perSlotCtx: 8192 },
      checks: [],
    };
    store.save(t, true);
    const v = { outcome: "underpowered", checks: [], summary: "", observed: {} } as unknown as Parameters<typeof finish>[2];
    const r = finish(store, { ...t, endpoint: "http://127.0.0.1:40137/v1" }, v, {});
    expect(store.list().active).toBe("llamacpp-m");
    expect(r.active).toBe(true);
    // another target, underpowered: saved, not made active
    const other = finish(store, { ...t, id: "llamacpp-n" }, v, {});
    expect(other.active).toBe(false);
    expect(store.list().active).toBe("llamacpp-m");
  });
});
