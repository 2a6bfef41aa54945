import { randomBytes, timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { LookupAddress, LookupOptions } from "node:dns";
import { isIP, type Socket, connect } from "node:net";
import { type Lookup, localAddress, lookupHost, resolvesLocal } from "./address";

/**
 * The engine's egress proxy: opencode serve runs with the host's network, and its webfetch (Bun's fetch) follows
 * redirects itself and resolves names itself, so the network guard's look at the first URL of an ask
 * (engine/approvals) is not enough — a public page that answers 302 to `http://169.254.169.254/`, or a name that
 * resolves to a public address when the engine looks and to `127.0.0.1` when opencode connects (DNS rebinding), read a
 * local service. opencode serve is given this proxy as HTTP_PROXY and HTTPS_PROXY (Bun's fetch honours both, and sends
 * every hop of a redirect chain through the proxy its first URL went through), so each connection it makes is looked
 * at here when it is made: the host resolved by the engine, refused when any address it has is local or private
 * (address.ts, the guard's one classification), else connected to the addresses that were checked (pinned: no second
 * lookup for opencode to be answered differently). The model's endpoints and the key gateway are opencode's NO_PROXY
 * (`directEntries`): model traffic never passes through the engine. Only what holds the proxy's key (opencode's
 * environment) may use it. Plain http is relayed request by request; https is a CONNECT tunnel (the TLS is opencode's).
 */
export interface EgressOptions {
  /** The addresses a host name resolves to (a test's stand-in); default: the system's resolver. */
  lookup?: Lookup;
  /** The address a checked address is reached at (a test's stand-in: a local server playing a public address); default: itself. */
  dial?: (address: string) => string;
  log?: (line: string) => void;
}

/** A connection with nothing sent either way for this long is closed (webfetch gives up after 120 s). */
const IDLE_MS = 130_000;
/** The host name a relayed connection is opened with: its resolver (`pinned`) answers the checked addresses. */
const PINNED = "egress.invalid";
/**
 * Headers that belong to one hop (RFC 9110 §7.6.1), not passed on; and Transfer-Encoding, whose framing Node's parser
 * has already undone (a relayed body is framed again by the proxy: an upstream's `transfer-encoding: gzip` passed back
 * unframed on a kept connection left its body to be read as the next answer).
 */
const HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "proxy-authenticate",
  "te",
  "trailer",
  "upgrade",
  "transfer-encoding",
]);

/** A plain answer on a proxy connection, which is then closed: `status` as `"400 Bad Request"`. */
function reply(socket: Socket, status: string, text: string): void {
  socket.end(`HTTP/1.1 ${status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`);
}

/** What an error nothing here expected says to opencode. */
const unexpected = (err: unknown) => `opencode-worker's proxy could not serve this request: ${err instanceof Error ? err.message : String(err)}\n`;

export class EgressProxy {
  private server: http.Server | null = null;
  private starting: Promise<string> | null = null;
  private readonly key = randomBytes(24).toString("base64url");
  private readonly sockets = new Set<Socket>();
  /** Connections a CONNECT was answered 200 on: their bytes are the tunnel's from then on. */
  private readonly tunnelled = new WeakSet<Socket>();
  /** Each connection's request being served (its answer not over yet), which the next one on it waits for. */
  private readonly turns = new WeakMap<Socket, Promise<void>>();

  constructor(private readonly opts: EgressOptions = {}) {}

  /** Starts the proxy (once) on loopback; its URL, with the key opencode presents (Proxy-Authorization). */
  start(): Promise<string> {
    this.starting ??= new Promise<string>((resolve, reject) => {
      // Whatever goes wrong with one request is a 502 for it (its connection closed, once it was answered), never the
      // engine's (an error thrown here would be the engine process's unhandled rejection).
      const server = http.createServer((req, res) => {
        // One request of a connection at a time: requests pipelined on one connection (answered in order anyway) each
        // opened its upstream connection at once — 2,000 in one write were 2,000 connections, held until they idled out.
        const turn = (this.turns.get(req.socket) ?? Promise.resolve()).then(() => this.serve(req, res)).catch(() => void res.destroy());
        this.turns.set(req.socket, turn);
      });
      server.on(
        "connect",
        (req: http.IncomingMessage, socket: Socket, head: Buffer) =>
          void this.tunnel(req, socket, head).catch((err) =>
            socket.writable && !this.tunnelled.has(socket) ? reply(socket, "502 Bad Gateway", unexpected(err)) : socket.destroy(),
          ),
      );
      server.on("connection", (s: Socket) => {
        this.sockets.add(s);
        s.once("close", () => this.sockets.delete(s));
      });
      // A request Node's parser refuses (a CL/TE conflict, a bad header, an oversized head, a byte a request line may not
      // hold) is answered as Node would answer it, and its connection closed.
      server.on("clientError", (err: NodeJS.ErrnoException, socket: Socket) => {
        const [status, text] =
          err.code === "HPE_HEADER_OVERFLOW"
            ? ["431 Request Header Fields Too Large", "the request's head is too large\n"]
            : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
              ? ["408 Request Timeout", "the request did not arrive in time\n"]
              : ["400 Bad Request", "not an HTTP request this proxy reads\n"];
        const pending = (socket as Socket & { _httpMessage?: http.ServerResponse | null })._httpMessage;
        if (socket.writable && !pending?.headersSent) reply(socket, status, text);
        else socket.destroy();
      });
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => {
        server.off("error", reject);
        // An error of the listening socket after it listens (accept's ENOBUFS or ENOMEM) is the engine's uncaught
        // exception without a listener: the listener used while starting handled only the first.
        server.on("error", (err) => this.opts.log?.(`egress proxy: ${err.message}`));
        this.server = server;
        const port = (server.address() as { port: number }).port;
        resolve(`http://ocw:${this.key}@127.0.0.1:${port}`);
      });
    });
    return this.starting;
  }

  async close(): Promise<void> {
    const s = this.server;
    this.server = null;
    this.starting = null;
    if (!s) return;
    for (const sock of this.sockets) sock.destroy();
    await new Promise<void>((r) => s.close(() => r()));
  }

  /**
   * One plain-http request, in its connection's turn: relayed, and its answer over (or the connection gone) before the
   * connection's next request is looked at. A request whose connection closed while it waited is dropped.
   */
  private async serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const socket = req.socket;
    if (socket.destroyed || res.destroyed) return;
    let done = () => {};
    const over = new Promise<void>((resolve) => {
      done = resolve;
      res.once("close", done);
      socket.once("close", done);
    });
    try {
      await this.relay(req, res);
    } catch (err) {
      if (res.headersSent || res.destroyed) res.destroy();
      else {
        res.writeHead(502, { "content-type": "text/plain; charset=utf-8", connection: "close" });
        res.end(unexpected(err));
      }
    }
    await over;
    res.off("close", done);
    socket.off("close", done);
  }

  private authorised(req: http.IncomingMessage): boolean {
    const got = Buffer.from(req.headers["proxy-authorization"] ?? "");
    const want = Buffer.from(`Basic ${Buffer.from(`ocw:${this.key}`).toString("base64")}`);
    return got.length === want.length && timingSafeEqual(got, want);
  }

  /**
   * Where a connection to `host` may go: the addresses to connect to (each one checked), or why not. A name is looked
   * up here, once; any local or private address among its answers refuses it (as the queue does).
   */
  private async admit(host: string): Promise<{ addresses: string[] } | { status: number; why: string }> {
    const bare = host.replace(/^\[|\]$/g, "");
    const named = localAddress(bare);
    if (named) return { status: 403, why: named };
    if (isIP(bare)) return { addresses: [bare] };
    const addresses = await lookupHost(bare.replace(/\.$/, ""), this.opts.lookup);
    if (!addresses.length) return { status: 502, why: `${bare} could not be resolved` };
    const local = resolvesLocal(bare, addresses);
    if (local) return { status: 403, why: local };
    return { addresses };
  }

  /**
   * The connection's resolver: the checked addresses and nothing else (tried in turn, as Node does for a name), so the
   * connection never looks the name up again.
   */
  private pinned(addresses: string[]) {
    const list: LookupAddress[] = addresses.map((a) => this.opts.dial?.(a) ?? a).map((address) => ({ address, family: isIP(address) }));
    return (_host: string, opts: LookupOptions, cb: (err: Error | null, address: string | LookupAddress[], family?: number) => void) =>
      opts.all ? cb(null, list) : cb(null, list[0]!.address, list[0]!.family);
  }

  private refused(target: string, why: string): string {
    this.opts.log?.(`egress refused ${target}: ${why}`);
    return `opencode-worker refused to connect to ${target}: ${why}; fetch only public pages\n`;
  }

  /** A plain-http request in absolute form (`GET http://host/path`): relayed to the checked address. */
  private async relay(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const send = (status: number, text: string, headers: Record<string, string> = {}) => {
      if (res.headersSent) return void res.destroy();
      res.writeHead(status, { "content-type": "text/plain; charset=utf-8", connection: "close", ...headers });
      res.end(text);
    };
    if (!this.authorised(req)) return send(407, "proxy authentication required\n", { "proxy-authenticate": 'Basic realm="ocw"' });
    let url: URL;
    try {
      url = new URL(req.url ?? "");
    } catch {
      return send(400, "a proxy request names an absolute http:// URL\n");
    }
    if (url.protocol !== "http:") return send(400, "a proxy request names an absolute http:// URL (https goes through CONNECT)\n");
    const where = await this.admit(url.hostname);
    // opencode gave up while the name was looked up: nothing to connect for (a connection opened now was held, to
    // nobody, until it idled out)
    if (res.destroyed || req.socket.destroyed) return;
    if ("why" in where) return send(where.status, this.refused(url.host, where.why));
    this.opts.log?.(`egress ${url.host} at ${where.addresses.join(", ")}`);
    const headers: http.OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP.has(k) && v !== undefined) headers[k] = v;
    headers.host = url.host;
    // A body opencode framed chunked is framed chunked again: Node's client frames a GET's, DELETE's or OPTIONS's body
    // only when told, and wrote it bare after the headers, where the server read it as a second request.
    if (req.headers["transfer-encoding"] !== undefined && req.headers["content-length"] === undefined) headers["transfer-encoding"] = "chunked";
    const up = http.request({
      // a name never looked up (`.invalid`): the connection goes where `pinned` says
      host: PINNED,
      lookup: this.pinned(where.addresses),
      // a connection of its own: a pooled one (all named PINNED) may be to another host's address
      agent: false,
      port: Number(url.port || 80),
      method: req.method,
      path: url.pathname + url.search,
      headers,
      setHost: false,
      timeout: IDLE_MS,
    });
    up.on("timeout", () => up.destroy(new Error("timed out")));
    up.on("error", (err) => send(502, `opencode-worker could not reach ${url.host}: ${err.message}\n`));
    // A 101 to a request that asked for no upgrade (the Upgrade header is not passed on): Node's client leaves the
    // request unanswered, and opencode's fetch waited until it gave up.
    up.on("upgrade", (_answer, upSocket) => {
      upSocket.destroy();
      send(502, `opencode-worker could not reach ${url.host}: it answered with status 101\n`);
    });
    up.on("response", (answer) => {
      answer.on("error", () => res.destroy());
      // A status Node's parser takes but its writer refuses (`099`, `000`) threw in this handler: the engine's uncaught
      // exception, from any page a worker fetched.
      const status = answer.statusCode ?? 0;
      if (status < 200 || status > 999) {
        up.destroy();
        return send(502, `opencode-worker could not reach ${url.host}: it answered with status ${status}\n`);
      }
      const back: http.OutgoingHttpHeaders = {};
      for (const [k, v] of Object.entries(answer.headers)) if (!HOP.has(k) && v !== undefined) back[k] = v;
      try {
        res.writeHead(status, back);
      } catch (err) {
        up.destroy();
        for (const h of res.getHeaderNames()) res.removeHeader(h);
        return send(502, `opencode-worker could not reach ${url.host}: ${(err as Error).message}\n`);
      }
      answer.pipe(res);
    });
    req.on("error", () => up.destroy());
    res.on("close", () => up.destroy());
    req.pipe(up);
  }

  /** An https connection (`CONNECT host:443`): a tunnel to the checked address; the TLS inside is opencode's own. */
  private async tunnel(req: http.IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
    socket.on("error", () => socket.destroy());
    const answer = (status: string, text: string, extra = ""): void =>
      void socket.end(
        `HTTP/1.1 ${status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(text)}\r\n${extra}connection: close\r\n\r\n${text}`,
      );
    if (!this.authorised(req))
      return answer("407 Proxy Authentication Required", "proxy authentication required\n", 'proxy-authenticate: Basic realm="ocw"\r\n');
    // host:port, the port always spelled (the URL parser would drop a default one)
    const m = /^(\[[0-9a-fA-F:.]+\]|[^:/@[\]\s]+):(\d{1,5})$/.exec(req.url ?? "");
    let hostname = "";
    try {
      hostname = m ? new URL(`http://${m[1]}/`).hostname : "";
    } catch {
      /* not a host */
    }
    const port = Number(m?.[2]);
    if (!hostname || !(port > 0 && port < 65536)) return answer("400 Bad Request", "CONNECT names host:port\n");
    const target = `${hostname}:${port}`;
    const where = await this.admit(hostname);
    if (socket.destroyed) return;
    if ("why" in where) return answer(where.status === 403 ? "403 Forbidden" : "502 Bad Gateway", this.refused(target, where.why));
    this.opts.log?.(`egress ${target} at ${where.addresses.join(", ")}`);
    const up = connect({ host: PINNED, port, lookup: this.pinned(where.addresses) });
    up.setTimeout(IDLE_MS, () => up.destroy());
    socket.setTimeout(IDLE_MS, () => socket.destroy());
    let open = false;
    up.on("error", (err) => (!open ? answer("502 Bad Gateway", `opencode-worker could not reach ${target}: ${err.message}\n`) : socket.destroy()));
    up.once("connect", () => {
      open = true;
      this.tunnelled.add(socket);
      socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length) up.write(head);
      up.pipe(socket);
      socket.pipe(up);
    });
    socket.once("close", () => up.destroy());
    up.once("close", () => socket.destroy());
  }
}

/**
 * opencode's NO_PROXY entries for the URLs it must reach directly (the model's endpoints, the key gateway), as narrow
 * as Bun's fetch reads them (Bun 1.3.14, tried): `host:port` is that host alone on that port, but only a port the URL
 * spells (a default port, 80 or 443, is dropped from the URL, so `host:443` never matches); a bare `host` is the host
 * and every name under it, on every port. An endpoint on a default port is therefore a bare host.
 */
export function directEntries(urls: string[]): string[] {
  const out = new Set<string>();
  for (const raw of urls) {
    try {
      const u = new URL(raw);
      const host = u.hostname.toLowerCase();
      if (host) out.add(u.port ? `${host}:${u.port}` : host);
    } catch {
      /* not a URL: nothing opencode could reach */
    }
  }
  return [...out];
}

/**
 * The NO_PROXY entry under which a fetch of `url` goes past the proxy (Bun's rule, `directEntries`), or null. Wider than
 * Bun where unsure: a trailing dot is dropped, and a bare entry matches every name under it.
 */
export function bypassesProxy(url: string, entries: string[]): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  const host = u.hostname.toLowerCase().replace(/\.$/, "");
  for (const e of entries) {
    const entry = e.trim().toLowerCase().replace(/\.$/, "");
    if (!entry) continue;
    if (entry === "*") return entry;
    const m = /^(.*):(\d+)$/.exec(entry);
    if (m && !m[1]!.endsWith(":")) {
      if (host === m[1] && u.port === m[2]) return entry;
      continue;
    }
    const name = entry.replace(/^\*?\./, "");
    if (host === name || host.endsWith(`.${name}`)) return entry;
  }
  return null;
}
