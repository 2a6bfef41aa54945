// The SDK port against the real SDK client and a local HTTP server playing opencode's answers: how each way a call can
// end becomes a PortResult (the SDK returns a fetch error but throws on an unreadable body; both are `no-answer`).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createOpencodeClient } from "@opencode-ai/sdk/v2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failureText } from "./port";
import { sdkPort } from "./sdk-port";

let server: http.Server;
let url = "";
/** What the server answers next: a status and a body (raw text), or "hang" (never answers). */
let next: { status: number; body: string } | "hang" = { status: 200, body: "true" };

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    if (next === "hang") return;
    res.writeHead(next.status, { "content-type": "application/json" });
    res.end(next.body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const port = () => sdkPort(createOpencodeClient({ baseUrl: url }));

describe("the SDK port", () => {
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

  it("no HTTP answer is `no-answer`: nobody listening, an unreadable body (the SDK throws), the call's time limit", async () => {
    const closed = sdkPort(createOpencodeClient({ baseUrl: "http://127.0.0.1:9" }));
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
