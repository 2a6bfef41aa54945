import { randomBytes, timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";

/** One route of the gateway: opencode's requests for a target, forwarded with the target's real key. */
export interface GatewayRoute {
  /** The upstream base URL (the target's endpoint, e.g. https://api.example.com/v1). */
  upstream: string;
  /** The real key, added to forwarded requests; it never leaves the engine's process otherwise. */
  key: string;
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

  private async forward(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const fail = (status: number, message: string) => {
      if (!res.headersSent) res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `opencode-worker gateway: ${message}` } }));
    };
    try {
      const [, slug = "", ...rest] = (req.url ?? "/").split("/");
      const entry = this.routes.get(slug);
      const given = Buffer.from(String(req.headers.authorization ?? "").replace(/^Bearer\s+/i, ""));
      if (!entry || given.length !== entry.token.length || !timingSafeEqual(given, entry.token)) return fail(401, "unknown route or key");
      const url = entry.route.upstream.replace(/\/$/, "") + "/" + rest.join("/");
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) {
        if (v === undefined || ["host", "authorization", "connection", "content-length", "x-api-key"].includes(k)) continue;
        headers[k] = Array.isArray(v) ? v.join(", ") : v;
      }
      const key = entry.route.key;
      headers.authorization = `Bearer ${key}`;
      headers["x-api-key"] = key;
      const abort = new AbortController();
      res.on("close", () => abort.abort());
      const hasBody = req.method !== "GET" && req.method !== "HEAD";
      const upstream = await fetch(url, {
        method: req.method,
        headers,
        body: hasBody ? (Readable.toWeb(req) as ReadableStream) : undefined,
        signal: abort.signal,
        duplex: hasBody ? "half" : undefined,
      } as RequestInit);
      const out: Record<string, string> = {};
      upstream.headers.forEach((v, k) => {
        if (!["content-encoding", "content-length", "transfer-encoding", "connection"].includes(k)) out[k] = v;
      });
      res.writeHead(upstream.status, out);
      if (!upstream.body) return void res.end();
      for await (const chunk of upstream.body as unknown as AsyncIterable<Uint8Array>) res.write(chunk);
      res.end();
    } catch (err) {
      if ((err as Error).name === "AbortError") return void res.end();
      fail(502, `upstream unreachable: ${(err as Error).message}`);
    }
  }

  close(): void {
    this.server?.close();
    this.server = null;
  }
}
