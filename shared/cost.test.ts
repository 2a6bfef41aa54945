import { describe, expect, it } from "vitest";
import { dollars, priceFromListing, spendBy, spendText, workerSpend, type CostTarget } from "./cost";
import type { Worker } from "./worker";

const api: CostTarget = { id: "api", serving: { engine: "api" }, price: { inputPerMTok: 3, outputPerMTok: 15 } };
const apiNoPrice: CostTarget = { id: "api2", serving: { engine: "api" } };
const local: CostTarget = { id: "local", serving: { engine: "llama.cpp" } };
const w = (targetId: string, input: number, output: number, cost = 0, extra: Partial<Worker> = {}) =>
  ({ targetId, usage: { input, output, reasoning: 0, cost }, ...extra }) as Worker;
const tok = (n: number) => String(n);

describe("cost per worker", () => {
  it("an API target: its tokens at its price per million", () => {
    const s = workerSpend(w("api", 1_000_000, 100_000), api);
    expect(s.usd).toBeCloseTo(3 + 1.5);
    expect(spendText(s, tok)).toBe("$4.50");
  });
  it("the provider's own reported cost wins over the price", () => {
    expect(workerSpend(w("api", 1_000_000, 0, 0.25), api).usd).toBe(0.25);
  });
  it("a model of one's own: tokens, never money", () => {
    const s = workerSpend(w("local", 900, 100), local);
    expect(s).toMatchObject({ usd: 0, localTokens: 1000, apiWorkers: 0 });
    expect(spendText(s, tok)).toBe("1000 tok");
  });
  it("an API target without a price: tokens, said to be unpriced", () => {
    expect(spendText(workerSpend(w("api2", 10, 5), apiNoPrice), tok)).toBe("15 tok (API, no price)");
  });
});

describe("cost per batch and repository", () => {
  it("sums by key, money and local tokens side by side, unpriced ones counted", () => {
    const ws = [
      w("api", 1_000_000, 0, 0, { batchId: "b1", repo: "/a" }),
      w("local", 500, 500, 0, { batchId: "b1", repo: "/a" }),
      w("api2", 10, 0, 0, { batchId: "b2", repo: "/b" }),
    ];
    const by = spendBy(ws, [api, apiNoPrice, local], (x) => x.batchId ?? "");
    expect(spendText(by.get("b1")!, tok)).toBe("$3.00 · 1000 tok local");
    expect(spendText(by.get("b2")!, tok)).toBe("10 tok (API, no price)");
    const repo = spendBy(ws, [api, apiNoPrice, local], (x) => x.repo);
    expect(repo.get("/a")!.workers).toBe(2);
    const all = spendBy(ws, [api, apiNoPrice, local]).get("")!;
    expect(spendText(all, tok)).toBe("$3.00 + 1 unpriced · 1000 tok local");
  });
});

describe("prices from a provider's model list", () => {
  it("OpenRouter: dollars per token as strings", () => {
    expect(priceFromListing({ id: "x", pricing: { prompt: "0.000003", completion: "0.000015" } })).toEqual({ inputPerMTok: 3, outputPerMTok: 15 });
  });
  it("Together: dollars per million", () => {
    expect(priceFromListing({ id: "x", pricing: { input: 0.88, output: 0.88 } })).toEqual({ inputPerMTok: 0.88, outputPerMTok: 0.88 });
  });
  it("none, garbage or negative: no price", () => {
    expect(priceFromListing({ id: "x" })).toBeNull();
    expect(priceFromListing({ id: "x", pricing: { prompt: "free?", completion: "1" } })).toBeNull();
    expect(priceFromListing({ id: "x", pricing: { prompt: "-1", completion: "1" } })).toBeNull();
    expect(priceFromListing(null)).toBeNull();
  });
  it("dollars read short", () => {
    expect([dollars(0), dollars(0.0042), dollars(0.00998), dollars(0.42), dollars(12.3), dollars(1234.4)]).toEqual([
      "$0",
      "$0.0042",
      "$0.01",
      "$0.42",
      "$12.30",
      "$1,234",
    ]);
  });
});
