import { randomBytes, timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import https from "node:https";

/** One route of the gateway: opencode's requests for a target, forwarded with the target's real key. */
interface GatewayRoute {
  /** The upstream base URL (the target's endpoint, e.g. https://api.example.com/v1). */
  upstream: string;
  /** The real key, added to forwarded requests; it never leaves the engine's process otherwise. Null: none is sent. */
  key: string | null;
  /** How long the upstream may send nothing before the request is given up (modelSilenceMs). */
  silenceMs: number;
}

/** Connection-level headers, which belong to one hop, not to the request or answer being forwarded. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer"]);
/** The client's credentials to the gateway are replaced by the route's key; Host is the upstream's. */
const DROPPED_REQUEST_HEADERS = new Set([...HOP_BY_HOP, "host", "authorization", "x-api-key", "proxy-authorization", "expect"]);

/**
 * The upstream URL of a request's path under the route's base, or why there is none: the key goes only to the route's
 * origin, under its base path (a `..` or `%2e%2e` segment cannot reach the rest of the host), over http or https.
 */
export function upstreamUrl(base: string, rest: string): { url: URL } | { status: number; message: string } {
  let root: URL;
  let url: URL;
  try {
    root = new URL(base.replace(/\/$/, "") + "/");
    url = new URL(base.replace(/\/$/, "") + "/" + rest);
  } catch {
    return { status: 502, message: `the target's endpoint ${base} is not a URL` };
  }
  if (root.protocol !== "http:" && root.protocol !== "https:") return { status: 502, message: `the target's endpoint ${base} is not an http(s) URL` };
  if (url.origin !== root.origin || !url.pathname.startsWith(root.pathname))
    return { status: 400, message: `the request's path leaves the target's endpoint ${base}` };
  return { url };
}

/**
 * A loopback gateway in the engine that adds the model key: opencode (and so every worker) is given the gateway's URL
 * and a per-route gateway key instead of the provider's key, so no process a worker can reach holds the real one.
 */
export class KeyGateway {
  private server: http.Server | null = null;
  private port = 0;
  private readonly routes = new Map<string, { route: GatewayRoute; token: Buffer }>();

  /** Registers a route and returns what opencode should use as its provider's baseURL and apiKey. */
  async add(id: string, route: GatewayRoute): Promise<{ baseURL: string; apiKey: string }> {
    await this.listen();
    const token = randomBytes(24).toString("base64url");
    const slug = `${encodeURIComponent(id)}-${randomBytes(4).toString("hex")}`;
    this.routes.set(slug, { route, token: Buffer.from(token) });
    return { baseURL: `http://127.0.0.1:${this.port}/${slug}`, apiKey: token };
  }

  /**
   * The route of `baseURL` (as `add` gave it) sends this key (and, given, goes to this upstream) from now on: a key set
   * again (rotated) or removed, or a base URL fixed, while opencode runs takes effect on its next request, without
   * opencode knowing (it holds only the gateway's URL and key).
   */
  rekey(baseURL: string, key: string | null, upstream?: string): void {
    const slug = new URL(baseURL).pathname.split("/")[1] ?? "";
    const entry = this.routes.get(slug);
    if (entry) entry.route = { ...entry.route, key, ...(upstream ? { upstream } : {}) };
  }

  private listen(): Promise<void> {
    if (this.server) return Promise.resolve();
    const server = http.createServer((req, res) => void this.forward(req, res));
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => {
        this.port = (server.address() as AddressInfo).port;
        server.unref();
        resolve();
      });
    });
  }

  /**
   * Forwards one request as it comes (a plain proxy on node:http: the bytes and their encoding pass through). Not
   * fetch: undici gives up on a response after 300 s without headers or between two chunks, which a server of one's own
   * reaches while it processes a long prompt on a CPU; here the route's silence limit is the only limit.
   */
  private forward(req: http.IncomingMessage, res: http.ServerResponse): void {
    const fail = (status: number, message: string) => {
      if (res.headersSent) return void res.destroy();
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `opencode-worker gateway: ${message}` } }));
    };
    // Only loopback names on the gateway's own port (a web page rebinding its name to 127.0.0.1 sends its own Host), and
    // only one Host header.
    if (req.rawHeaders.filter((h, i) => i % 2 === 0 && h.toLowerCase() === "host").length !== 1 || !this.hostAllowed(String(req.headers.host ?? ""))) {
      return fail(421, "foreign Host header: the gateway answers only 127.0.0.1, localhost or [::1] on its own port");
    }
    const [, slug = "", ...rest] = (req.url ?? "/").split("/");
    const entry = this.routes.get(slug);
    const given = Buffer.from(String(req.headers.authorization ?? "").replace(/^Bearer\s+/i, ""));
    if (!entry || given.length !== entry.token.length || !timingSafeEqual(given, entry.token)) return fail(401, "unknown route or key");
    const target = upstreamUrl(entry.route.upstream, rest.join("/"));
    if ("message" in target) return fail(target.status, target.message);
    const { url } = target;
    const headers: http.OutgoingHttpHeaders = {};
    const named = new Set(
      String(req.headers.connection ?? "")
        .toLowerCase()
        .split(",")
        .map((h) => h.trim()),
    );
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !DROPPED_REQUEST_HEADERS.has(k) && !named.has(k)) headers[k] = v;
    if (entry.route.key) {
      headers.authorization = `Bearer ${entry.route.key}`;
      headers["x-api-key"] = entry.route.key;
    }
    const { silenceMs } = entry.route;
    let upstream: http.ClientRequest;
    try {
      upstream = (url.protocol === "https:" ? https : http).request(url, { method: req.method, headers, timeout: silenceMs }, (answer) => {
        const out: http.OutgoingHttpHeaders = {};
        for (const [k, v] of Object.entries(answer.headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) out[k] = v;
        res.writeHead(answer.statusCode ?? 502, out);
        answer.on("error", () => res.destroy());
        answer.on("aborted", () => res.destroy());
        answer.pipe(res);
      });
    } catch (err) {
      // A key an HTTP header cannot hold (a CR from a CRLF .env file): node refuses the request before sending it.
      return fail(502, `the request could not be sent upstream: ${(err as Error).message}`);
    }
    upstream.on("timeout", () => upstream.destroy(new Error(`the model server sent nothing for ${silenceMs / 1000} s`)));
    upstream.on("error", (err) => fail(err.message.startsWith("the model server") ? 504 : 502, `upstream: ${err.message}`));
    // The client (opencode) gave up: so does the request upstream, which frees the server's slot.
    res.on("close", () => res.writableFinished || upstream.destroy());
    req.pipe(upstream);
  }

  private hostAllowed(host: string): boolean {
    const h = host.toLowerCase();
    return [`127.0.0.1:${this.port}`, `localhost:${this.port}`, `[::1]:${this.port}`].includes(h);
  }

  close(): void {
    this.server?.close();
    this.server = null;
  }
}
