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
 *
 * Each opencode serve has an identity of its own (`identity()`: a user name and key in its proxy URL), and one identity
 * holds at most `cap` requests and tunnels through the proxy at once; beyond that a request is answered 503 at once.
 * Bun's fetch runs at most BUN_CONFIG_MAX_HTTP_REQUESTS requests per process at once (256 by default) and queues the
 * rest, model requests included: webfetches to a page that never answers held every one of them, and every worker of
 * that serve stalled until webfetch gave up (120 s). A refusal frees Bun's slot at once (docs/security.md, measured).
 */
export interface EgressOptions {
  /** The addresses a host name resolves to (a test's stand-in); default: the system's resolver. */
  lookup?: Lookup;
  /** The address a checked address is reached at (a test's stand-in: a local server playing a public address); default: itself. */
  dial?: (address: string) => string;
  log?: (line: string) => void;
  /** Requests and tunnels one identity holds through the proxy at once; default `EGRESS_CAP`. */
  cap?: number;
}

/**
 * Requests and tunnels one opencode serve holds through the proxy at once. Bun (1.3.14, measured) counts requests in
 * flight, not sockets, but keeps up to 64 idle kept-alive sockets per process for ~6 s, and an idle https tunnel is
 * still a tunnel here: 64 of them plus 64 webfetches in flight. Half of the 256 requests Bun runs by default stay free
 * for the model; opencode serve is given BUN_CONFIG_MAX_HTTP_REQUESTS=512 (engine/harness/opencode-server.ts) so a
 * target's 256 slots of workers streaming and this cap fit together.
 */
export const EGRESS_CAP = 128;

/** One client of the proxy (an opencode serve): its Proxy-Authorization, and what it holds through the proxy now. */
interface Identity {
  name: string;
  /** Whose it is, in the engine's log (a target's id). */
  label: string;
  key: string;
  /** `Basic base64(name:key)`, as opencode sends it. */
  auth: Buffer;
  held: number;
  /** The cap was logged since the identity last held half of it or less (one line per flood, not one per refusal). */
  told: boolean;
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
  /** By user name: `ocw` (what `start()` answers) and one per `identity()`. */
  private readonly identities = new Map<string, Identity>();
  private readonly cap: number;
  private port = 0;
  private readonly sockets = new Set<Socket>();
  /** Connections a CONNECT was answered 200 on: their bytes are the tunnel's from then on. */
  private readonly tunnelled = new WeakSet<Socket>();
  /** Each connection's request being served (its answer not over yet), which the next one on it waits for. */
  private readonly turns = new WeakMap<Socket, Promise<void>>();

  constructor(private readonly opts: EgressOptions = {}) {
    this.cap = opts.cap ?? EGRESS_CAP;
    this.identities.set("ocw", EgressProxy.newIdentity("ocw", "ocw"));
  }

  private static newIdentity(name: string, label: string): Identity {
    const key = randomBytes(24).toString("base64url");
    return { name, label, key, auth: Buffer.from(`Basic ${Buffer.from(`${name}:${key}`).toString("base64")}`), held: 0, told: false };
  }

  private urlOf(id: Identity): string {
    return `http://${id.name}:${id.key}@127.0.0.1:${this.port}`;
  }

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
        this.port = (server.address() as { port: number }).port;
        resolve(this.urlOf(this.identities.get("ocw")!));
      });
    });
    return this.starting;
  }

  /**
   * A URL of the started proxy with an identity of its own (user name and key): what one opencode serve is given, so
   * that its requests and tunnels are counted apart from every other's (at most `cap` at once). `label` names it in the
   * engine's log.
   */
  identity(label: string): string {
    if (!this.server) throw new Error("the egress proxy is not started");
    const id = EgressProxy.newIdentity(`s${this.identities.size}`, label);
    this.identities.set(id.name, id);
    return this.urlOf(id);
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

  /** Whose key the request presents (its user name picks the identity; the key is compared in constant time), or null. */
  private authorised(req: http.IncomingMessage): Identity | null {
    const header = req.headers["proxy-authorization"] ?? "";
    if (!header.startsWith("Basic ")) return null;
    const user = Buffer.from(header.slice(6), "base64").toString("latin1");
    const id = this.identities.get(user.slice(0, user.indexOf(":")));
    if (!id) return null;
    const got = Buffer.from(header);
    return got.length === id.auth.length && timingSafeEqual(got, id.auth) ? id : null;
  }

  /**
   * One more request or tunnel held by `id`: its release (once, whichever of its ends comes first), or null when `id`
   * holds `cap` already (what the caller answers 503, which frees opencode's fetch at once).
   */
  private take(id: Identity): (() => void) | null {
    if (id.held >= this.cap) {
      if (!id.told) this.opts.log?.(`egress: ${id.label} holds ${this.cap} connections through the proxy (its limit): more are refused until some end`);
      id.told = true;
      return null;
    }
    id.held++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      if (--id.held <= this.cap / 2) id.told = false;
    };
  }

  /** What a request past the cap is answered (the connection then closed). */
  private full(): string {
    return `opencode-worker's proxy refused this connection: this opencode already has ${this.cap} connections open through it (its limit); try again when some of its fetches end\n`;
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
    const who = this.authorised(req);
    if (!who) return send(407, "proxy authentication required\n", { "proxy-authenticate": 'Basic realm="ocw"' });
    // Held from here (its name's lookup included: Bun's request waits through it) until its answer is over or its
    // connection gone.
    const release = this.take(who);
    if (!release) return send(503, this.full());
    const over = () => {
      release();
      res.off("close", over);
      req.socket.off("close", over);
    };
    res.once("close", over);
    req.socket.once("close", over);
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
    let release: (() => void) | null = null;
    // An answer ends the tunnel: what it held is free then, whenever opencode closes its side.
    const answer = (status: string, text: string, extra = ""): void => {
      release?.();
      socket.end(
        `HTTP/1.1 ${status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(text)}\r\n${extra}connection: close\r\n\r\n${text}`,
      );
    };
    const who = this.authorised(req);
    if (!who) return answer("407 Proxy Authentication Required", "proxy authentication required\n", 'proxy-authenticate: Basic realm="ocw"\r\n');
    // Held from here (its name's lookup included) until the connection closes, an idle kept-alive tunnel too: the proxy
    // cannot tell one from a tunnel whose page never answers.
    release = this.take(who);
    if (!release) return answer("503 Service Unavailable", this.full());
    socket.once("close", release);
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
