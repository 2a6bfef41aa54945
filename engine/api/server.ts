import { randomBytes, timingSafeEqual } from "node:crypto";
import { createReadStream, existsSync, statSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { createHTTPHandler } from "@trpc/server/adapters/standalone";
import { API_PATH, CLIENT_HEADER, HEALTH_PATH, type EngineBuild, type EngineHealth } from "../../shared/api";
import type { DecidedBy } from "../../shared/permission";
import type { BrowserUi } from "../paths";
import type { Engine } from "../workers";
import { plainSubscription, serveEvents } from "./event-stream";
import { appRouter, MAX_BODY_BYTES } from "./router";

const EVENTS_PATH = `${API_PATH}/events`;

interface ApiServerOptions {
  engine: Engine;
  version: string;
  port?: number;
  token?: string;
  /** This engine process's random id, answered at /health so clients can tell it from whatever else holds the port. */
  instanceId: string;
  /** Which release and bundle this engine runs: /health says it, so a newer client can tell it is older (launcher.ts). */
  build?: EngineBuild;
  /**
   * The built renderer (index.html + assets) served at / for the browser UI, looked up on each page request (a build
   * made after the engine started is served), or what the page says when there is none (engine/paths.ts browserUi).
   */
  browserUi?: () => BrowserUi;
  shutdown: (by: DecidedBy) => void;
}

export interface ApiServer {
  port: number;
  token: string;
  url: string;
  close(): Promise<void>;
}

const MIME: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript",
  ".css": "text/css",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".json": "application/json",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
};

const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'";

function sameToken(given: string | undefined, token: string): boolean {
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function clientIdentity(req: http.IncomingMessage): DecidedBy {
  const raw = String(req.headers[CLIENT_HEADER] ?? "gui").slice(0, 120);
  const [kind, ...rest] = raw.split(":");
  const name = rest.join(":") || undefined;
  if (kind === "mcp") return { kind: "mcp", name: name ?? "mcp-client" };
  if (kind === "cli") return { kind: "cli", name: name ?? "ocw" };
  return { kind: "person", name: name ?? kind ?? "gui" };
}

/**
 * The control API: loopback only, a bearer token in a header on every API request, Host and Origin checked. No cookie:
 * a browser sends cookies to every port of 127.0.0.1, so any local server a worker starts would receive one. The UI's
 * page (static files, no secrets) is served without the token; the page takes the token from the URL `ocw serve`
 * printed, keeps it, and sends it as a header. A request the server cannot parse is a 400, never a crash.
 */
export async function startApiServer(opts: ApiServerOptions): Promise<ApiServer> {
  const token = opts.token ?? randomBytes(24).toString("base64url");
  let port = 0;
  const clients = new Map<string, { kind: string; name: string; lastSeen: number; requests: number }>();
  const allowedHosts = () => new Set([`127.0.0.1:${port}`, `localhost:${port}`]);
  /** Who called (the `clients` list): each API request counts once. */
  const seenClient = (req: http.IncomingMessage): DecidedBy => {
    const by = clientIdentity(req);
    const key = `${by.kind}:${by.name ?? ""}`;
    const seen = clients.get(key) ?? { kind: by.kind, name: by.name ?? by.kind, lastSeen: 0, requests: 0 };
    clients.set(key, { ...seen, lastSeen: Date.now(), requests: seen.requests + 1 });
    return by;
  };
  const trpc = createHTTPHandler({
    router: appRouter,
    // Queries may come as POST, so a long input (a huge id, a long directory) is refused with a message, not a 431.
    allowMethodOverride: true,
    basePath: API_PATH + "/",
    createContext: ({ req }) => {
      const by = seenClient(req);
      return {
        engine: opts.engine,
        by,
        version: opts.version,
        shutdown: opts.shutdown,
        clients: () => [...clients.values()].sort((a, b) => b.lastSeen - a.lastSeen),
      };
    },
    maxBodySize: MAX_BODY_BYTES,
  });

  const handle = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const deny = (status: number, message: string) => {
      if (res.headersSent) return void res.destroy();
      res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" });
      res.end(JSON.stringify({ error: message }));
    };
    // RFC 9112: more than one Host is a 400 (Node would keep the first and drop the rest silently).
    if (req.rawHeaders.filter((h, i) => i % 2 === 0 && h.toLowerCase() === "host").length > 1) return deny(400, "more than one Host header");
    // DNS rebinding: a page on evil.com resolving to 127.0.0.1 sends its own Host; browsers send a foreign Origin.
    if (!allowedHosts().has(String(req.headers.host ?? "")))
      return deny(421, "foreign Host header: the engine answers only 127.0.0.1/localhost on its own port");
    const origin = req.headers.origin;
    if (origin && !allowedHosts().has(origin.replace(/^http:\/\//, ""))) return deny(403, "foreign Origin: cross-site requests are refused");
    const raw = req.url ?? "/";
    if (!raw.startsWith("/")) return deny(400, "the request target must be a path starting with /");
    let url: URL;
    let pathname: string;
    try {
      url = new URL(`http://${req.headers.host}${raw}`); // not new URL(raw, base): `//other/x` would change the host
      pathname = decodeURIComponent(url.pathname);
    } catch {
      return deny(400, "malformed URL: percent-escapes must encode UTF-8 (e.g. %25 for a literal %)");
    }
    const bearer = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ""))?.[1];
    const authed = sameToken(bearer, token);

    if (url.pathname.startsWith(API_PATH + "/") || url.pathname === HEALTH_PATH) {
      if (!authed)
        return deny(
          401,
          "missing or wrong token: send `authorization: Bearer <token>` with the token from the engine lock file (ocw serve prints a URL with it)",
        );
      if (url.pathname === HEALTH_PATH) {
        const body: EngineHealth = { ok: true, pid: process.pid, instanceId: opts.instanceId, ...(opts.build ? { build: opts.build } : {}) };
        res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" });
        return res.end(JSON.stringify(body));
      }
      // The event stream, written straight (event-stream.ts); anything but a plain, valid subscription goes to tRPC.
      const plain = url.pathname === EVENTS_PATH ? plainSubscription(req, url) : undefined;
      if (plain) {
        seenClient(req);
        return void serveEvents(opts.engine, plain.lastEventId, req, res).catch(() => res.destroy());
      }
      return trpc(req, res);
    }
    if (req.method !== "GET" && req.method !== "HEAD") return deny(405, "the UI's files are read with GET");
    // The browser UI: `/?token=…` opens it; a wrong token is refused here, so a stale URL says so at once.
    const queryToken = url.searchParams.get("token");
    if (queryToken !== null && !sameToken(queryToken, token)) return deny(401, "wrong token in the URL: copy the URL `ocw serve` printed");
    return serveStatic(opts.browserUi?.() ?? NO_UI, pathname, res);
  };
  const server = http.createServer((req, res) => {
    try {
      handle(req, res);
    } catch (err) {
      // Last line of defence: no request may take the engine down.
      if (!res.headersSent) {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: `bad request: ${(err as Error).message}` }));
      } else res.destroy();
    }
  });
  // A request Node's parser refuses (bad bytes, conflicting lengths, headers too large): answered, never a hang-up.
  // Said in words, in the shape of the API's other errors (a client reads `error.message` alike): it was an empty 431.
  server.on("clientError", (err: NodeJS.ErrnoException, socket) => {
    const big = err.code === "HPE_HEADER_OVERFLOW";
    const status = big ? "431 Request Header Fields Too Large" : "400 Bad Request";
    const message = big
      ? `the request's URL and headers are over the ${Math.round(http.maxHeaderSize / 1024)} KiB the engine reads: send a long input in a POST body (a subscription's too), or name fewer ids`
      : "the engine could not read the request as HTTP: it was refused";
    const body = JSON.stringify({ error: { message, code: -32600, data: { code: "BAD_REQUEST", httpStatus: big ? 431 : 400 } } });
    if (socket.writable)
      socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    else socket.destroy();
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

const NO_UI = { missing: "The opencode-worker engine is running, but its browser UI is missing." };

/** A file of the built UI; `pathname` is already decoded. Anything that is not a file inside `dir` is the app's index. */
function serveStatic(ui: BrowserUi, pathname: string, res: http.ServerResponse): void {
  const dir = ui.dir;
  if (!dir || !existsSync(path.join(dir, "index.html"))) {
    res.writeHead(200, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" });
    res.end(`${ui.missing ?? NO_UI.missing}\n`);
    return;
  }
  const rel = path.normalize(pathname.replaceAll("\0", "")).replace(/^([/\\])+/, "");
  let file = path.join(dir, rel);
  if (!file.startsWith(dir + path.sep) || !existsSync(file) || statSync(file).isDirectory()) file = path.join(dir, "index.html");
  res.writeHead(200, {
    "content-type": MIME[path.extname(file)] ?? "application/octet-stream",
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    // The page's URL may carry the token until the page removes it: never send it on as a Referer.
    "referrer-policy": "no-referrer",
    "cache-control": file.endsWith("index.html") ? "no-store" : "max-age=3600",
  });
  createReadStream(file)
    .on("error", () => res.destroy())
    .pipe(res);
}
