// The HTTP port against a local HTTP server playing opencode's answers: how each way a call can end becomes a
// PortResult, and that every call goes out as the SDK's generated client sends it (route, query, body).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createOpencodeClient } from "@opencode-ai/sdk/v2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failureText } from "./port";
import { httpPort } from "./http-port";

let server: http.Server;
let url = "";
/** What the server answers next: a status and a body (raw text), or "hang" (never answers). */
let next: { status: number; body: string } | "hang" = { status: 200, body: "true" };
/** The requests the server got: method, path with query, authorization, body (parsed JSON, or undefined). */
const seen: { method: string; url: string; auth?: string; body: unknown }[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (c: Buffer) => (raw += c.toString()));
    req.on("end", () => {
      seen.push({ method: req.method!, url: req.url!, auth: req.headers.authorization, body: raw ? JSON.parse(raw) : undefined });
      if (next === "hang") return;
      res.writeHead(next.status, { "content-type": "application/json" });
      res.end(next.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const port = () => httpPort({ url });

describe("the HTTP port", () => {
  it("a 2xx answer is the value; a call without one is ok", async () => {
    next = { status: 200, body: JSON.stringify({ id: "ses_1", projectID: "p", title: "t" }) };
    expect(await port().createSession({ directory: "/d", title: "t" })).toEqual({ ok: true, value: { id: "ses_1", projectID: "p" } });
    next = { status: 200, body: "true" };
    expect(await port().replyPermission({ requestID: "per_1", reply: "once" })).toEqual({ ok: true, value: undefined });
    next = { status: 200, body: JSON.stringify([{ id: "per_1", sessionID: "s", permission: "edit", patterns: [], metadata: {}, always: [] }]) };
    const list = await port().permissions({});
    expect(list.ok && list.value.map((p) => p.id)).toEqual(["per_1"]);
  });

  it("an error status is `status` with opencode's code; a 2xx answer without the value is a failure too", async () => {
    next = { status: 404, body: JSON.stringify({ name: "NotFoundError", data: { message: "gone" } }) };
    const r = await port().replyPermission({ requestID: "per_1", reply: "reject" });
    expect(r).toEqual({ ok: false, kind: "status", status: 404 });
    expect(!r.ok && failureText(r)).toBe("HTTP 404");
    next = { status: 200, body: "{}" };
    expect(await port().createSession({ directory: "/d", title: "t" })).toEqual({ ok: false, kind: "status", status: 200 });
  });

  it("no HTTP answer is `no-answer`: nobody listening, an unreadable body, the call's time limit", async () => {
    const closed = httpPort({ url: "http://127.0.0.1:9" });
    const refused = await closed.abort({ sessionID: "s" });
    expect(refused).toMatchObject({ ok: false, kind: "no-answer" });
    next = { status: 200, body: '[{"id": "per_1",' };
    const unreadable = await port().permissions({});
    expect(unreadable).toMatchObject({ ok: false, kind: "no-answer" });
    expect(!unreadable.ok && failureText(unreadable)).toMatch(/JSON/);
    next = "hang";
    const hung = await port().replyPermission({ requestID: "per_1", reply: "once" }, { signal: AbortSignal.timeout(200) });
    expect(hung).toMatchObject({ ok: false, kind: "no-answer" });
    expect(!hung.ok && failureText(hung)).toBe("no answer within the time limit");
  });
});

describe("what goes out", () => {
  /** Every call of the port made once through the SDK's own client and once through the port: the same requests. */
  const calls = async (p: ReturnType<typeof httpPort> | ReturnType<typeof sdkCalls>) => {
    const d = "/w/a dir/ü";
    next = { status: 200, body: JSON.stringify({ id: "ses_1", projectID: "p" }) };
    await p.createSession({ directory: d, title: "job 1" });
    next = { status: 204, body: "" };
    await p.prompt({ sessionID: "ses_1", directory: d, agent: "ocw-worker", text: "do it" });
    await p.prompt({ sessionID: "ses_1", directory: d, agent: "ocw-worker", model: { providerID: "ocw-1", modelID: "m" }, text: "more" });
    next = { status: 200, body: "true" };
    await p.abort({ sessionID: "ses_1", directory: d });
    await p.replyPermission({ requestID: "per_1", directory: d, reply: "once" });
    await p.replyPermission({ requestID: "per_1", directory: d, reply: "reject", message: "no" });
    await p.replyQuestion({ requestID: "que_1", directory: d, answers: [["a"], ["b", "c"]] });
    await p.rejectQuestion({ requestID: "que_1", directory: d });
    await p.deleteSession({ sessionID: "ses_1", directory: d });
    await p.dispose({ directory: d });
    next = { status: 200, body: "{}" };
    await p.sessionStatus({ directory: d });
    next = { status: 200, body: "[]" };
    await p.messages({ sessionID: "ses_1", directory: d });
    await p.permissions({ directory: d });
    await p.questions({ directory: d });
  };
  /** The same calls through the SDK's generated client, as the engine made them before this port. */
  const sdkCalls = (c: ReturnType<typeof createOpencodeClient>) => ({
    createSession: (a: { directory: string; title: string }) => c.session.create(a),
    prompt: (a: { sessionID: string; directory: string; agent: string; model?: { providerID: string; modelID: string }; text: string }) =>
      c.session.promptAsync({
        sessionID: a.sessionID,
        directory: a.directory,
        agent: a.agent,
        ...(a.model ? { model: a.model } : {}),
        parts: [{ type: "text", text: a.text }],
      }),
    abort: (a: { sessionID: string; directory: string }) => c.session.abort(a),
    replyPermission: (a: { requestID: string; directory: string; reply: "once" | "reject"; message?: string }) => c.permission.reply(a),
    replyQuestion: (a: { requestID: string; directory: string; answers: string[][] }) => c.question.reply(a),
    rejectQuestion: (a: { requestID: string; directory: string }) => c.question.reject(a),
    deleteSession: (a: { sessionID: string; directory: string }) => c.session.delete(a),
    dispose: (a: { directory: string }) => c.instance.dispose(a),
    sessionStatus: (a: { directory: string }) => c.session.status(a),
    messages: (a: { sessionID: string; directory: string }) => c.session.messages(a),
    permissions: (a: { directory: string }) => c.permission.list(a),
    questions: (a: { directory: string }) => c.question.list(a),
  });

  it("each call goes out as the SDK's client sends it: method, route, query, body, authorization", async () => {
    seen.length = 0;
    await calls(sdkCalls(createOpencodeClient({ baseUrl: url, headers: { Authorization: "Basic b3BlbmNvZGU6cHc=" } })));
    const sdk = seen.splice(0);
    await calls(httpPort({ url, authorization: "Basic b3BlbmNvZGU6cHc=" }));
    const ours = seen.splice(0);
    expect(ours.length).toBe(14);
    // The query's encoding of the folder may differ (%20 or +); what opencode reads from it may not.
    const norm = (r: (typeof ours)[number]) => {
      const u = new URL(r.url, "http://x");
      return { method: r.method, path: u.pathname, directory: u.searchParams.get("directory"), auth: r.auth, body: r.body };
    };
    expect(ours.map(norm)).toEqual(sdk.map(norm));
    expect(norm(ours[0]!).directory).toBe("/w/a dir/ü");
  });
});
