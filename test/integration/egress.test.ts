// The network guard at connect time, on the real `opencode serve` and the scripted model: an approved webfetch of a
// public page is checked again on every hop when opencode connects (engine/net/egress.ts), so a redirect to a local
// service, or a name that resolves elsewhere when opencode connects than when the engine looked (DNS rebinding), reads
// nothing local. The engine runs in this process for its stand-ins (as the queue's tests use them): a resolver that
// plays public names, and a local server that plays a public address. The model's own traffic (NO_PROXY) still flows.
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isAtRest, pendingAsks, type Worker } from "../../shared/worker";
import { TargetStore } from "../../engine/store/targets";
import { Engine } from "../../engine/workers/engine";
import { startScriptedModel, toolCall, turnSteps, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, tempDir } from "../helpers";

/** A public address (TEST-NET-3 would do too): the engine checks it, and reaches it at the local server playing it. */
const PUBLIC = "93.184.215.14";

let model: ScriptedModel;
let engine: Engine;
const log: string[] = [];
const dirs: string[] = [];
const hits: string[] = [];
/** What each name resolves to, answer by answer (the last one repeats): the engine's resolver in these tests. */
const answers = new Map<string, string[][]>();
let secretPort = 0;
let redirectPort = 0;
const SECRET = `METADATA-${Math.random().toString(36).slice(2)}`;
const servers: http.Server[] = [];

async function listen(handler: http.RequestListener): Promise<number> {
  const s = http.createServer(handler);
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  return (s.address() as AddressInfo).port;
}

beforeAll(async () => {
  // A local service the worker must never read: a cloud metadata service's credentials.
  secretPort = await listen((req, res) => {
    hits.push(`secret ${req.url}`);
    res.end(`{"AccessKeyId":"${SECRET}"}`);
  });
  // The "public" page (played on loopback, reached at PUBLIC): it redirects where its path says.
  redirectPort = await listen((req, res) => {
    hits.push(`public ${req.headers.host} ${req.url}`);
    const to = new URL(req.url ?? "/", "http://x").searchParams.get("to");
    if (to) res.writeHead(302, { location: to }).end();
    else res.end("a public page");
  });
  model = await startScriptedModel();
  const stateDir = tempDir("egress-state");
  dirs.push(stateDir);
  const targets = new TargetStore(path.join(stateDir, "targets.json"));
  targets.save(scriptedTarget(model.url, 2, "egress"), true);
  engine = new Engine({
    stateDir,
    targets,
    stallSec: 3600,
    log: (l) => log.push(l),
    net: {
      lookup: async (host) => {
        const list = answers.get(host);
        if (!list) return [];
        return list.length > 1 ? list.shift()! : list[0]!;
      },
      dial: (address) => (address === PUBLIC ? "127.0.0.1" : address),
    },
  });
}, 60_000);

afterAll(async () => {
  await engine?.close();
  await model?.close();
  for (const s of servers) s.close();
  cleanup(...dirs);
});

/** Runs a worker whose model asks the given webfetches one after another; a person approves each. */
async function fetchesApproved(task: string, urls: string[]): Promise<{ worker: Worker; seen: string }> {
  model.addScript(new RegExp(task), turnSteps(...urls.map((url) => toolCall("webfetch", { url, format: "text" }))), task);
  const repo = makeRepo();
  dirs.push(repo);
  const { workerId } = await engine.start({ task, directory: repo, checks: [{ run: "true" }] });
  const answered = new Set<string>();
  const until = Date.now() + 150_000;
  let w = engine.get(workerId);
  while (!isAtRest(w.state)) {
    if (Date.now() > until) throw new Error(`worker ${workerId} did not finish: ${w.state}`);
    for (const a of pendingAsks(w)) {
      if (answered.has(a.id)) continue;
      answered.add(a.id);
      await engine.decide({ askId: a.id, decision: "once" }, { kind: "person" }).catch(() => answered.delete(a.id));
    }
    await new Promise((r) => setTimeout(r, 100));
    w = engine.get(workerId);
  }
  const seen = JSON.stringify(model.requests.filter((q) => q.matched === task).map((q) => q.body));
  return { worker: w, seen };
}

describe("egress: every hop of an approved webfetch is checked when opencode connects", () => {
  it("a public page that redirects to a local service (loopback, the metadata address, a name of the private network): the page is read, the local service never", async () => {
    answers.set("docs.example.org", [[PUBLIC]]);
    answers.set("intranet-wiki.example.org", [["10.1.2.3"]]);
    const page = (to: string) => `http://docs.example.org:${redirectPort}/page?to=${encodeURIComponent(to)}`;
    const { worker, seen } = await fetchesApproved("EGRESS-REDIRECT", [
      page(`http://127.0.0.1:${secretPort}/latest/meta-data/iam/security-credentials/role`),
      page("http://169.254.169.254/latest/meta-data/"),
      page(`http://intranet-wiki.example.org:${secretPort}/`),
      `http://docs.example.org:${redirectPort}/plain`,
    ]);
    const fetches = worker.asks.filter((a) => a.tool === "webfetch");
    // The engine's look at the first URL let each through (a person approved it): only the connect-time check stands.
    expect(fetches.map((a) => a.decision)).toEqual(["once", "once", "once", "once"]);
    // Every first hop reached the "public" page through the engine's proxy, by the name the worker gave.
    expect(hits.filter((h) => h.startsWith("public")).length).toBe(4);
    expect(hits.filter((h) => h.startsWith("secret"))).toEqual([]);
    expect(seen.includes(SECRET), "a local service's answer reached the model").toBe(false);
    // The public page itself was read: the model saw it.
    expect(seen).toContain("a public page");
    expect(log.join("\n")).toMatch(new RegExp(`egress refused 127\\.0\\.0\\.1:${secretPort}: 127\\.0\\.0\\.1 \\(a local or private network address\\)`));
    expect(log.join("\n")).toMatch(/egress refused 169\.254\.169\.254(:80)?: 169\.254\.169\.254 \(a local or private network address\)/);
    expect(log.join("\n")).toMatch(/egress refused intranet-wiki\.example\.org:\d+: intranet-wiki\.example\.org, which resolves to 10\.1\.2\.3/);
    // Every connection the proxy saw was the worker's fetches: the model's traffic (NO_PROXY) never passed through it.
    expect(log.filter((l) => l.startsWith("egress ")).map((l) => l.replace(/:\d+/g, ":P"))).toEqual([
      `egress docs.example.org:P at ${PUBLIC}`,
      "egress refused 127.0.0.1:P: 127.0.0.1 (a local or private network address)",
      `egress docs.example.org:P at ${PUBLIC}`,
      "egress refused 169.254.169.254: 169.254.169.254 (a local or private network address)",
      `egress docs.example.org:P at ${PUBLIC}`,
      "egress refused intranet-wiki.example.org:P: intranet-wiki.example.org, which resolves to 10.1.2.3 (a local or private network address)",
      `egress docs.example.org:P at ${PUBLIC}`,
    ]);
    // What the worker was told of each refused hop: opencode's own words for the proxy's 403 (the reason is the engine's log's).
    const told = model.requests
      .filter((q) => q.matched === "EGRESS-REDIRECT")
      .at(-1)!
      .body.messages.filter((m: { role: string }) => m.role === "tool");
    expect(told.map((m: { content: string }) => m.content.replace(/\(403 GET .*\)$/, "(403 GET …)"))).toEqual([
      "StatusCode: non 2xx status code (403 GET …)",
      "StatusCode: non 2xx status code (403 GET …)",
      "StatusCode: non 2xx status code (403 GET …)",
      "a public page",
    ]);
  }, 240_000);

  it("DNS rebinding: a name that resolved to a public address when the engine looked resolves to loopback when opencode connects: nothing is read", async () => {
    hits.length = 0;
    // The queue's look (the ask) gets the public address; every later one, the proxy's when opencode connects, loopback.
    answers.set("rebind.example.org", [[PUBLIC], ["127.0.0.1"]]);
    const { worker, seen } = await fetchesApproved("EGRESS-REBIND", [`http://rebind.example.org:${secretPort}/latest/meta-data/`]);
    expect(worker.asks.filter((a) => a.tool === "webfetch").map((a) => a.decision)).toEqual(["once"]);
    expect(hits).toEqual([]);
    expect(seen.includes(SECRET)).toBe(false);
    expect(log.join("\n")).toMatch(/egress refused rebind\.example\.org:\d+: rebind\.example\.org, which resolves to 127\.0\.0\.1/);
  }, 240_000);

  it("a redirect to this machine's own interface address (a service on 0.0.0.0 answers there, whatever the address's range): nothing is read", async (ctx) => {
    // This machine's addresses that no fixed range calls local (a public or documentation address on an interface).
    const own = Object.values(os.networkInterfaces())
      .flat()
      .filter((i): i is os.NetworkInterfaceInfo => !!i && !i.internal && i.family === "IPv4")
      .map((i) => i.address)
      .filter((a) => !/^(10|127|0)\.|^169\.254\.|^192\.168\.|^172\.(1[6-9]|2\d|3[01])\.|^100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\./.test(a));
    if (!own.length) return ctx.skip();
    const everywhere = net.createServer((s) => {
      hits.push("service on 0.0.0.0");
      s.end(`HTTP/1.1 200 OK\r\ncontent-length: ${SECRET.length}\r\nconnection: close\r\n\r\n${SECRET}`);
    });
    await new Promise<void>((r) => everywhere.listen(0, "0.0.0.0", r));
    try {
      hits.length = 0;
      answers.set("docs.example.org", [[PUBLIC]]);
      const port = (everywhere.address() as AddressInfo).port;
      const { worker, seen } = await fetchesApproved("EGRESS-OWN", [
        `http://docs.example.org:${redirectPort}/page?to=${encodeURIComponent(`http://${own[0]}:${port}/`)}`,
      ]);
      expect(worker.asks.filter((a) => a.tool === "webfetch").map((a) => a.decision)).toEqual(["once"]);
      expect(hits.filter((h) => h.startsWith("service"))).toEqual([]);
      expect(seen.includes(SECRET)).toBe(false);
      expect(log.join("\n")).toContain(`egress refused ${own[0]}:${port}: ${own[0]} (a local or private network address)`);
    } finally {
      everywhere.close();
    }
  }, 240_000);

  it("a public page that answers a status Node cannot write back (099): the fetch fails, the engine goes on (it was the engine's uncaught exception)", async () => {
    const odd = net.createServer((s) => {
      s.on("error", () => {});
      s.once("data", () => s.end("HTTP/1.1 099 Odd\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"));
    });
    await new Promise<void>((r) => odd.listen(0, "127.0.0.1", r));
    const thrown: unknown[] = [];
    const onThrow = (e: unknown) => thrown.push(e);
    process.on("uncaughtException", onThrow);
    try {
      answers.set("odd.example.org", [[PUBLIC]]);
      answers.set("docs.example.org", [[PUBLIC]]);
      const { worker, seen } = await fetchesApproved("EGRESS-ODD", [
        `http://odd.example.org:${(odd.address() as AddressInfo).port}/`,
        `http://docs.example.org:${redirectPort}/after`,
      ]);
      expect(worker.asks.filter((a) => a.tool === "webfetch").map((a) => a.decision)).toEqual(["once", "once"]);
      expect(thrown).toEqual([]);
      // The next fetch went through the same proxy: it still serves.
      expect(seen).toContain("a public page");
    } finally {
      process.off("uncaughtException", onThrow);
      odd.close();
    }
  }, 240_000);
});
