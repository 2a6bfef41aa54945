import http from "node:http";
import type { Agent as SdkAgent, PermissionRequest, QuestionRequest } from "@opencode-ai/sdk/v2";
import type { OpencodePort, PortResult, TurnMessage } from "./port";

/**
 * The port over opencode's HTTP API, spoken directly with node:http: the routes, query and bodies of the SDK's
 * generated client (@opencode-ai/sdk/v2 sdk.gen.ts, the same version as the binary: 1.18.33), its types for what comes
 * back. Measured (issue 31): the SDK's fetch path (a WHATWG Request built, its body read back as a stream, undici's
 * fetch, a Response and its stream) took ~30 % of the engine's CPU in a 32-task batch, about 1 ms per call where a
 * plain request takes ~0.2 ms. The answers are the same: `no-answer` where no HTTP answer came (or its body could not be
 * read), `status` for an error status, the value read from a 2xx answer (without it, a `status` failure).
 */
interface HttpTarget {
  /** opencode serve's base URL, `http://127.0.0.1:PORT`. */
  url: string;
  /** Its `Authorization` header (OPENCODE_SERVER_PASSWORD's basic auth); absent: none sent. */
  authorization?: string;
}

/** What one request ended with: the answer's status and body, or no answer at all. */
type Answer = { status: number; body: Buffer } | { error: unknown };

/**
 * One request. Connections are kept alive and reused (as undici's fetch did); a free one is let go after 4 s, before
 * Bun's server closes an idle one (10 s), so a request is not written onto a socket the server is closing.
 */
function send(
  agent: http.Agent,
  t: HttpTarget,
  method: "GET" | "POST" | "DELETE",
  route: string,
  directory: string | undefined,
  body: unknown,
  signal?: AbortSignal,
): Promise<Answer> {
  const url = `${t.url}${route}${directory === undefined ? "" : `?directory=${encodeURIComponent(directory)}`}`;
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const headers: Record<string, string> = {};
  if (t.authorization) headers.authorization = t.authorization;
  if (payload) {
    headers["content-type"] = "application/json";
    headers["content-length"] = String(payload.length);
  }
  return new Promise((resolve) => {
    let req: http.ClientRequest;
    try {
      req = http.request(url, { method, agent, headers, ...(signal ? { signal } : {}) }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on("error", (error) => resolve({ error }));
        res.on("aborted", () => resolve({ error: new Error("the answer was cut off") }));
      });
    } catch (error) {
      resolve({ error });
      return;
    }
    req.on("error", (error) => resolve({ error: error.name === "AbortError" && signal?.reason ? signal.reason : error }));
    req.end(payload);
  });
}

/** An answer as a PortResult: a 2xx answer's value is what `pick` reads from its JSON (without `pick`, none). */
function result<V>(a: Answer, pick?: (data: unknown) => V | undefined): PortResult<V> {
  if ("error" in a) return { ok: false, kind: "no-answer", error: a.error };
  if (a.status < 200 || a.status > 299) return { ok: false, kind: "status", status: a.status };
  if (!pick) return { ok: true, value: undefined as V };
  let data: unknown;
  try {
    data = a.body.length ? JSON.parse(a.body.toString("utf8")) : undefined;
  } catch (error) {
    // An answer whose body cannot be read is no answer: opencode may or may not have acted.
    return { ok: false, kind: "no-answer", error };
  }
  const value = pick(data);
  return value === undefined ? { ok: false, kind: "status", status: a.status } : { ok: true, value };
}

const same = <T>(d: unknown): T | undefined => (d === undefined || d === null ? undefined : (d as T));
const id = (s: string) => encodeURIComponent(s);

/** The port for one running opencode serve: the only module that calls opencode's HTTP API (its event stream is sse.ts). */
export function httpPort(t: HttpTarget): OpencodePort & { agents(a: { directory: string }): Promise<PortResult<SdkAgent[]>>; close(): void } {
  const agent = new http.Agent({ keepAlive: true, timeout: 4000, scheduling: "lifo" });
  const get = <V>(route: string, directory: string | undefined, pick: (d: unknown) => V | undefined) =>
    send(agent, t, "GET", route, directory, undefined).then((a) => result(a, pick));
  const post = (route: string, directory: string | undefined, body: unknown, signal?: AbortSignal) =>
    send(agent, t, "POST", route, directory, body, signal).then((a) => result<void>(a));
  return {
    agents: ({ directory }) => get("/agent", directory, same<SdkAgent[]>),
    createSession: ({ directory, title }) =>
      send(agent, t, "POST", "/session", directory, { title }).then((a) =>
        result(a, (d) => {
          const s = d as { id?: string; projectID?: string } | undefined;
          return s?.id ? { id: s.id, projectID: String(s.projectID ?? "") } : undefined;
        }),
      ),
    prompt: ({ sessionID, directory, agent: name, model, text }) =>
      post(`/session/${id(sessionID)}/prompt_async`, directory, { agent: name, ...(model ? { model } : {}), parts: [{ type: "text", text }] }),
    abort: ({ sessionID, directory }) => post(`/session/${id(sessionID)}/abort`, directory, undefined),
    sessionStatus: ({ directory }) => get("/session/status", directory, same<Record<string, { type: string }>>),
    messages: ({ sessionID, directory }) => get(`/session/${id(sessionID)}/message`, directory, same<TurnMessage[]>),
    replyPermission: ({ requestID, directory, reply, message }, o) =>
      post(`/permission/${id(requestID)}/reply`, directory, { reply, ...(message ? { message } : {}) }, o?.signal),
    replyQuestion: ({ requestID, directory, answers }, o) => post(`/question/${id(requestID)}/reply`, directory, { answers }, o?.signal),
    rejectQuestion: ({ requestID, directory }, o) => post(`/question/${id(requestID)}/reject`, directory, undefined, o?.signal),
    permissions: ({ directory }) => get("/permission", directory, same<PermissionRequest[]>),
    questions: ({ directory }) => get("/question", directory, same<QuestionRequest[]>),
    deleteSession: ({ sessionID, directory }) => send(agent, t, "DELETE", `/session/${id(sessionID)}`, directory, undefined).then((a) => result<void>(a)),
    dispose: ({ directory }) => post("/instance/dispose", directory, undefined),
    close: () => agent.destroy(),
  };
}
