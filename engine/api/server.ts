import { randomBytes, timingSafeEqual } from "node:crypto";
import { createReadStream, existsSync, statSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { createHTTPHandler } from "@trpc/server/adapters/standalone";
import { API_PATH, CLIENT_HEADER, TOKEN_COOKIE } from "../../shared/api";
import type { DecidedBy } from "../../shared/permission";
import type { Engine } from "../workers/engine";
import { appRouter } from "./router";

export interface ApiServerOptions {
  engine: Engine;
  version: string;
  port?: number;
  token?: string;
  /** The built renderer (index.html + assets), served at / for the browser UI. */
  rendererDir?: string;
  shutdown: () => void;
}

export interface ApiServer {
  port: number;
  token: string;
  url: string;
  close(): Promise<void>;
}

const MIME: Record<string, string> = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml", ".png": "image/png", ".json": "application/json", ".ico": "image/x-icon", ".woff2": "font/woff2" };

export const CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'";

function sameToken(given: string | undefined, token: string): boolean {
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function cookieToken(header: string | undefined): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === TOKEN_COOKIE) return v.join("=");
  }
  return undefined;
}

function clientIdentity(req: http.IncomingMessage): DecidedBy {
  const raw = String(req.headers[CLIENT_HEADER] ?? "gui").slice(0, 120);
  const [kind, ...rest] = raw.split(":");
  const name = rest.join(":") || undefined;
  if (kind === "mcp") return { kind: "mcp", name: name ?? "mcp-client" };
  if (kind === "cli") return { kind: "cli", name: name ?? "ocw" };
  return { kind: "person", name: name ?? kind ?? "gui" };
}

/** The control API: loopback only, a bearer token (or the UI's cookie) on every request, Host and Origin checked. */
export async function startApiServer(opts: ApiServerOptions): Promise<ApiServer> {
  const token = opts.token ?? randomBytes(24).toString("base64url");
  let port = 0;
  const clients = new Map<string, { kind: string; name: string; lastSeen: number; requests: number }>();
  const allowedHosts = () => new Set([`127.0.0.1:${port}`, `localhost:${port}`]);
  const trpc = createHTTPHandler({
    router: appRouter,
    // Queries may come as POST, so a long input (a huge id, a long directory) is refused with a message, not a 431.
    allowMethodOverride: true,
    basePath: API_PATH + "/",
    createContext: ({ req }) => {
      const by = clientIdentity(req);
      const key = `${by.kind}:${by.name ?? ""}`;
      const seen = clients.get(key) ?? { kind: by.kind, name: by.name ?? by.kind, lastSeen: 0, requests: 0 };
      clients.set(key, { ...seen, lastSeen: Date.now(), requests: seen.requests + 1 });
      return { engine: opts.engine, by, version: opts.version, shutdown: opts.shutdown, clients: () => [...clients.values()].sort((a, b) => b.lastSeen - a.lastSeen) };
    },
    maxBodySize: 2 * 1024 * 1024,
  });

  const server = http.createServer((req, res) => {
    const deny = (status: number, message: string) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: message }));
    };
    // DNS rebinding: a page on evil.com resolving to 127.0.0.1 sends its own Host; browsers send a foreign Origin.
    if (!allowedHosts().has(String(req.headers.host ?? ""))) return deny(421, "foreign Host header: the engine answers only 127.0.0.1/localhost on its own port");
    const origin = req.headers.origin;
    if (origin && !allowedHosts().has(origin.replace(/^http:\/\//, ""))) return deny(403, "foreign Origin: cross-site requests are refused");
    const url = new URL(req.url ?? "/", `http://${req.headers.host}`);
    const bearer = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ""))?.[1];
    const authed = sameToken(bearer, token) || sameToken(cookieToken(req.headers.cookie), token);

    if (url.pathname.startsWith(API_PATH + "/")) {
      if (!authed) return deny(401, "missing or wrong token: read it from the engine lock file (ocw serve prints a URL with it)");
      return trpc(req, res);
    }
    // The browser UI: `/?token=…` sets an HttpOnly cookie once, then redirects to a clean URL.
    const queryToken = url.searchParams.get("token");
    if (queryToken) {
      if (!sameToken(queryToken, token)) return deny(401, "wrong token in the URL: copy the URL `ocw serve` printed");
      res.writeHead(303, { location: "/", "set-cookie": `${TOKEN_COOKIE}=${token}; HttpOnly; SameSite=Strict; Path=/` });
      return res.end();
    }
    if (!authed) return deny(401, "open the URL that `ocw serve` printed (it carries the token)");
    return serveStatic(opts.rendererDir, url.pathname, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, "127.0.0.1", () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  return {
    port,
    token,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function serveStatic(dir: string | undefined, pathname: string, res: http.ServerResponse): void {
  if (!dir || !existsSync(path.join(dir, "index.html"))) {
    res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
    res.end("The opencode-worker engine is running, but the browser UI is not built. Run `npm run build` in the checkout.\n");
    return;
  }
  const rel = path.normalize(decodeURIComponent(pathname)).replace(/^([/\\])+/, "");
  let file = path.join(dir, rel);
  if (!file.startsWith(dir) || !existsSync(file) || statSync(file).isDirectory()) file = path.join(dir, "index.html");
  res.writeHead(200, {
    "content-type": MIME[path.extname(file)] ?? "application/octet-stream",
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "cache-control": file.endsWith("index.html") ? "no-store" : "max-age=3600",
  });
  createReadStream(file).pipe(res);
}
