import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { chooseEndpoint, hasRoom, readLive, type EndpointStatus } from "./capacity";

const ep = (url: string, o: Partial<EndpointStatus> = {}): EndpointStatus => ({ url, healthy: true, slots: 4, inUse: 0, live: null, problem: null, checkedAt: 0, ...o });
const live = (o: Partial<NonNullable<EndpointStatus["live"]>>) => ({ source: "llama.cpp /slots" as const, totalSlots: 4, busy: 0, waiting: null, kvUsage: null, ...o });

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
      body = [{ path: "/slots", status: 200, text: JSON.stringify([{ id: 0, is_processing: true }, { id: 1, is_processing: false }, { id: 2, is_processing: true }]) }];
      expect(await readLive(await url, null)).toEqual({ source: "llama.cpp /slots", totalSlots: 3, busy: 2, waiting: null, kvUsage: null });
    });

    it("vLLM /metrics (current and older KV metric names)", async () => {
      body = [{ path: "/metrics", status: 200, text: '# HELP x\nvllm:num_requests_running{model_name="m"} 5.0\nvllm:num_requests_waiting{model_name="m"} 1.0\nvllm:gpu_cache_usage_perc{model_name="m"} 0.42\n' }];
      expect(await readLive(await url, null)).toEqual({ source: "vllm /metrics", totalSlots: null, busy: 5, waiting: 1, kvUsage: 0.42 });
    });

    it("SGLang /metrics; nothing known → null", async () => {
      body = [{ path: "/metrics", status: 200, text: 'sglang:num_running_reqs{model_name="m"} 2\nsglang:num_queue_reqs{model_name="m"} 0\nsglang:token_usage{model_name="m"} 0.3\n' }];
      expect(await readLive(await url, null)).toMatchObject({ source: "sglang /metrics", busy: 2, waiting: 0, kvUsage: 0.3 });
      body = [];
      expect(await readLive(await url, null)).toBeNull();
    });
  });
});
