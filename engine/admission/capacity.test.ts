import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import type { Target } from "../../shared/target";
import type { Worker } from "../../shared/worker";
import type { TargetStore } from "../store/targets";
import type { WorkerRegistry } from "../registry";
import { Pools } from "./pools";
import { chooseEndpoint, EndpointProbes, freeSlots, hasRoom, readEndpoint, readLive, type EndpointStatus } from "./capacity";

const ep = (url: string, o: Partial<EndpointStatus> = {}): EndpointStatus => ({
  url,
  healthy: true,
  slots: 4,
  inUse: 0,
  live: null,
  problem: null,
  checkedAt: 0,
  ...o,
});
const live = (o: Partial<NonNullable<EndpointStatus["live"]>>) => ({
  source: "llama.cpp /slots" as const,
  totalSlots: 4,
  busy: 0,
  waiting: null,
  kvUsage: null,
  ...o,
});

describe("admission by live capacity", () => {
  it("an endpoint has room while it is healthy, under its slots, and its own report shows a free slot, no queue, KV not full", () => {
    expect(hasRoom(ep("a"))).toBe(true);
    expect(hasRoom(ep("a", { healthy: false }))).toBe(false);
    expect(hasRoom(ep("a", { inUse: 4 }))).toBe(false);
    expect(hasRoom(ep("a", { slots: 8, inUse: 4, live: live({ totalSlots: 4 }) }))).toBe(false); // the server has fewer slots than configured
    expect(hasRoom(ep("a", { inUse: 1, live: live({ busy: 4 }) }))).toBe(false); // others keep every slot busy
    expect(hasRoom(ep("a", { live: { source: "vllm /metrics", totalSlots: null, busy: 3, waiting: 2, kvUsage: 0.5 } }))).toBe(false);
    expect(hasRoom(ep("a", { live: { source: "vllm /metrics", totalSlots: null, busy: 3, waiting: 0, kvUsage: 0.95 } }))).toBe(false);
    expect(hasRoom(ep("a", { live: { source: "sglang /metrics", totalSlots: null, busy: 3, waiting: 0, kvUsage: 0.5 } }))).toBe(true);
  });

  it("a worker stays on its endpoint while it has room; otherwise the one with most room; none when all are full", () => {
    const list = [ep("a", { inUse: 3 }), ep("b", { inUse: 1 }), ep("c", { inUse: 2 })];
    expect(chooseEndpoint(list, "a")!.url).toBe("a");
    expect(chooseEndpoint(list, null)!.url).toBe("b");
    expect(chooseEndpoint([ep("a", { healthy: false }), ep("b", { inUse: 3 })], "a")!.url).toBe("b");
    expect(chooseEndpoint([ep("a", { inUse: 4 }), ep("b", { healthy: false })], "a")).toBeNull();
  });

  it("another client's load on a server is told apart from ours when the reading says how many were ours", () => {
    // 2 slots, 1 busy with someone else's request when read (none of ours then): room for one of ours, not two.
    const foreign = live({ totalSlots: 2, busy: 1, ours: 0 });
    expect(freeSlots(ep("a", { slots: 2, live: foreign }))).toBe(1);
    expect(hasRoom(ep("a", { slots: 2, inUse: 1, live: foreign }))).toBe(false);
    // Both busy slots were ours when read: no foreign load, so the slot one of them left is free again.
    expect(hasRoom(ep("a", { slots: 2, inUse: 1, live: live({ totalSlots: 2, busy: 2, ours: 2 }) }))).toBe(true);
    // Without `ours` (an older reader) the old rule holds: a full report means no room, else the configured slots.
    expect(hasRoom(ep("a", { slots: 2, inUse: 1, live: live({ totalSlots: 2, busy: 1 }) }))).toBe(true);
    expect(hasRoom(ep("a", { slots: 2, inUse: 0, live: live({ totalSlots: 2, busy: 2 }) }))).toBe(false);
    // The most room counts the server's report: b has 3 configured free but 1 real; c has 2.
    const list = [ep("b", { slots: 4, inUse: 1, live: live({ totalSlots: 4, busy: 3, ours: 1 }) }), ep("c", { slots: 2 })];
    expect(chooseEndpoint(list, null)!.url).toBe("c");
  });

  it("one probe per endpoint per period, shared by every caller; joined while in flight; `fresh` forces one", async () => {
    let t = 1000;
    let calls = 0;
    let release: () => void = () => undefined;
    const probe = async (e: { url: string; slots: number }): Promise<EndpointStatus> => {
      calls++;
      await new Promise<void>((r) => (release = r));
      return ep(e.url, { checkedAt: t });
    };
    const probes = new EndpointProbes(2000, probe, () => t);
    const a = probes.read({ url: "a", slots: 2 }, null);
    const b = probes.health("a", null);
    await new Promise((r) => setImmediate(r));
    release();
    expect((await a).url).toBe("a");
    expect(await b).toBeNull();
    expect(calls).toBe(1);
    t += 1500; // within the period: the pool refresh and the model-health check share the reading
    expect((await probes.read({ url: "a", slots: 3 }, null)).slots).toBe(3);
    expect(await probes.health("a", null)).toBeNull();
    expect(calls).toBe(1);
    t += 500; // a period later: probed again
    const c = probes.read({ url: "a", slots: 2 }, null);
    await new Promise((r) => setImmediate(r));
    release();
    await c;
    expect(calls).toBe(2);
    const d = probes.health("a", null, { fresh: true });
    await new Promise((r) => setImmediate(r));
    release();
    await d;
    expect(calls).toBe(3);
    expect(probes.sent.get("a")).toBe(3);
  });

  it("one timed-out probe after a healthy reading keeps the endpoint in admission; a second one, or a refused connection, takes it out", async () => {
    let t = 0;
    const answers: (string | null)[] = [null, "TimeoutError", null, "TimeoutError", "TimeoutError", null, "ECONNREFUSED"];
    const probes = new EndpointProbes(
      1000,
      async (e) => ep(e.url, { healthy: !answers[0], problem: answers.shift() ?? null, checkedAt: t }),
      () => t,
    );
    const next = async () => ((t += 1000), probes.read({ url: "a", slots: 4 }, null));
    const seen: boolean[] = [];
    for (let i = 0; i < 7; i++) seen.push((await next()).healthy);
    expect(seen).toEqual([true, true, true, true, false, true, false]);
  });

  describe("reads the serving engines' own reports", () => {
    let body: { path: string; status: number; text: string }[] = [];
    const server = http.createServer((req, res) => {
      const r = body.find((b) => b.path === req.url);
      res.writeHead(r?.status ?? 404, { "content-type": "text/plain" });
      res.end(r?.text ?? "");
    });
    const url = new Promise<string>((resolve) => server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`)));
    afterAll(() => server.close());

    it("llama.cpp /slots", async () => {
      body = [
        {
          path: "/slots",
          status: 200,
          text: JSON.stringify([
            { id: 0, is_processing: true },
            { id: 1, is_processing: false },
            { id: 2, is_processing: true },
          ]),
        },
      ];
      expect(await readLive(await url, null)).toEqual({ source: "llama.cpp /slots", totalSlots: 3, busy: 2, waiting: null, kvUsage: null });
      // Read for admission: says how many were ours then; a server that does not answer has no reading.
      body.push({ path: "/v1/models", status: 200, text: "{}" });
      expect((await readEndpoint({ url: await url, slots: 3 }, null, 1)).live).toMatchObject({ busy: 2, ours: 1 });
      expect(await readEndpoint({ url: "http://127.0.0.1:1/v1", slots: 3 }, null, 1)).toMatchObject({
        healthy: false,
        live: null,
        problem: expect.any(String),
      });
    });

    it("a llama-server still loading its model (503 'Loading model' on every path, as the pinned build answers) is not healthy; a 401 or 404 still is reachable", async () => {
      const loading = JSON.stringify({ error: { message: "Loading model", type: "unavailable_error", code: 503 } });
      body = ["/health", "/v1/models", "/slots", "/props"].map((path) => ({ path, status: 503, text: loading }));
      const s = await readEndpoint({ url: await url, slots: 2 }, "k", 0);
      expect(s.healthy).toBe(false);
      expect(s.problem).toMatch(/loading the model/);
      // a pool does not send a worker to it while another replica is ready
      expect(chooseEndpoint([s, ep("b", { inUse: 3 })], null)!.url).toBe("b");
      // any other HTTP answer still counts as reachable (a wrong key is the auth check's business)
      body = [{ path: "/v1/models", status: 401, text: "{}" }];
      expect((await readEndpoint({ url: await url, slots: 2 }, "k", 0)).healthy).toBe(true);
      body = [{ path: "/v1/models", status: 503, text: "upstream overloaded" }];
      expect((await readEndpoint({ url: await url, slots: 2 }, "k", 0)).problem).toMatch(/503/);
    });

    it("llama.cpp with /slots off (--no-slots: 501) but --metrics: busy and queued from its own counters (as the pinned build reports 2 running, 1 deferred)", async () => {
      body = [
        {
          path: "/slots",
          status: 501,
          text: '{"error":{"code":501,"message":"This server does not support slots endpoint. Start it with `--slots`","type":"not_supported_error"}}',
        },
        {
          path: "/metrics",
          status: 200,
          text: "# HELP llamacpp:prompt_tokens_total x\nllamacpp:prompt_tokens_total 12\nllamacpp:requests_processing 2\nllamacpp:requests_deferred 1\n",
        },
      ];
      const r = await readLive(await url, null);
      expect(r).toEqual({ source: "llama.cpp /metrics", totalSlots: null, busy: 2, waiting: 1, kvUsage: null });
      // a request queued inside the server: no room for another worker there
      expect(hasRoom(ep("a", { slots: 4, live: r }))).toBe(false);
    });

    it('vLLM with --data-parallel-size 2: one series per engine (engine="0", "1"), all of them counted — not the first engine\'s alone', async () => {
      body = [
        {
          path: "/metrics",
          status: 200,
          text: [
            "# HELP vllm:num_requests_running Number of requests in model execution batches.",
            'vllm:num_requests_running{engine="0",model_name="m"} 4.0',
            'vllm:num_requests_running{engine="1",model_name="m"} 4.0',
            'vllm:num_requests_waiting{engine="0",model_name="m"} 0.0',
            'vllm:num_requests_waiting{engine="1",model_name="m"} 3.0',
            'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5',
            'vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.97',
            "",
          ].join("\n"),
        },
      ];
      const r = await readLive(await url, null);
      // busy and queued add up over the engines; the KV of the engine with the most room (where a new request goes)
      expect(r).toEqual({ source: "vllm /metrics", totalSlots: null, busy: 8, waiting: 3, kvUsage: 0.5 });
      expect(hasRoom(ep("a", { slots: 16, inUse: 8, live: r }))).toBe(false);
    });

    it("vLLM /metrics (current and older KV metric names)", async () => {
      body = [
        {
          path: "/metrics",
          status: 200,
          text: '# HELP x\nvllm:num_requests_running{model_name="m"} 5.0\nvllm:num_requests_waiting{model_name="m"} 1.0\nvllm:gpu_cache_usage_perc{model_name="m"} 0.42\n',
        },
      ];
      expect(await readLive(await url, null)).toEqual({ source: "vllm /metrics", totalSlots: null, busy: 5, waiting: 1, kvUsage: 0.42 });
    });

    it("SGLang /metrics; nothing known → null", async () => {
      body = [
        {
          path: "/metrics",
          status: 200,
          text: 'sglang:num_running_reqs{model_name="m"} 2\nsglang:num_queue_reqs{model_name="m"} 0\nsglang:token_usage{model_name="m"} 0.3\n',
        },
      ];
      expect(await readLive(await url, null)).toMatchObject({ source: "sglang /metrics", busy: 2, waiting: 0, kvUsage: 0.3 });
      body = [];
      expect(await readLive(await url, null)).toBeNull();
    });
  });

  it("a busy pool is probed once per endpoint per period: the pool refresh and the model-health check share the reading", async () => {
    // Two endpoints that count what they are asked; one queued worker makes the pool busy.
    const hits = new Map<string, number>();
    const servers = await Promise.all(
      [0, 1].map(
        () =>
          new Promise<http.Server>((resolve) => {
            const srv = http.createServer((req, res) => {
              const port = (srv.address() as AddressInfo).port;
              hits.set(`${port} ${req.url}`, (hits.get(`${port} ${req.url}`) ?? 0) + 1);
              res.writeHead(200, { "content-type": "application/json" });
              res.end(
                req.url === "/slots"
                  ? JSON.stringify([
                      { id: 0, is_processing: false },
                      { id: 1, is_processing: false },
                    ])
                  : "{}",
              );
            });
            srv.listen(0, "127.0.0.1", () => resolve(srv));
          }),
      ),
    );
    const urls = servers.map((s) => `http://127.0.0.1:${(s.address() as AddressInfo).port}/v1`);
    const target: Target = {
      id: "p",
      model: "m",
      endpoint: urls[0]!,
      keyRef: null,
      serving: { engine: "llama.cpp", endpoints: urls.map((url) => ({ url, slots: 2 })), slots: 4 },
      checks: [],
    };
    const worker = { id: "w1", targetId: "p", state: "queued", endpoint: null } as unknown as Worker;
    const registry = {
      workers: new Map([["w1", worker]]),
      list: () => [worker],
      notice: () => undefined,
      transient: () => undefined,
    } as unknown as WorkerRegistry;
    const targets = {
      get: (id: string) => (id === "p" ? target : undefined),
      list: () => ({ active: "p", targets: [target] }),
      active: () => target,
    } as unknown as TargetStore;
    const period = 100;
    const pools = new Pools({ registry, targets, poolProbeMs: period, modelProbeMs: period, endpointDown: () => undefined, changed: () => undefined });
    const t0 = performance.now();
    // Ten periods: the two checks not sharing a reading would make about twice as many probes as the bound below.
    await new Promise((r) => setTimeout(r, 10 * period));
    // A loaded machine may not have finished a reading of each endpoint yet: wait for one (the count below allows for
    // the periods that took).
    for (let i = 0; i < 200 && !pools.endpoints()[0]!.endpoints.every((e) => e.live); i++) await new Promise((r) => setTimeout(r, 50));
    // Read before the servers close: a probe in flight then fails and clears its endpoint's reading.
    const ours = pools.endpoints()[0]!.endpoints.map((e) => e.live?.ours);
    pools.close();
    const periods = (performance.now() - t0) / period;
    await new Promise((r) => setTimeout(r, 100)); // probes in flight end
    for (const s of servers) s.close();
    for (const u of urls) {
      const port = new URL(u).port;
      const models = hits.get(`${port} /v1/models`) ?? 0;
      // Both checks ran about `periods` times each; at most one probe per period (and the first at once) reached the
      // server. (A loaded machine runs fewer periods: no lower bound past the first probe.)
      expect(models, `${u}: ${JSON.stringify([...hits])}`).toBeGreaterThanOrEqual(1);
      expect(models, `${u}: ${JSON.stringify([...hits])}`).toBeLessThanOrEqual(Math.ceil(periods) + 2);
      expect(hits.get(`${port} /slots`) ?? 0).toBeLessThanOrEqual(Math.ceil(periods) + 2);
    }
    // The pool's reading says how many of ours were on each endpoint (none: the worker is queued).
    expect(ours).toEqual([0, 0]);
  });
});
