import { Resolver } from "node:dns/promises";
import { BlockList, isIP, isIPv4, isIPv6 } from "node:net";
import os from "node:os";

/**
 * Why a URL is on this machine or its private network, or null: the network guard's one classification, applied to the
 * URL a webfetch asks for (engine/approvals) and to every connection opencode's process makes through the egress proxy
 * (egress.ts). opencode serve runs with the host's network (it reaches the model), so its webfetch would read a local
 * service — a cloud metadata service's credentials, a dev server, an unkeyed admin page — into the model's context.
 * Literal addresses (as the URL parser normalises them: `2130706433`, `0x7f.1`), this machine's own interface addresses
 * and their networks (`ownNetwork`), and local names; a public name that
 * resolves to one is refused by whoever looks it up (the queue when the ask comes, the proxy when opencode connects).
 */
export function localTarget(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  let host = u.hostname.toLowerCase().replace(/\.$/, "");
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  const said = `${host} (a local or private network address)`;
  if (!host) return null;
  if (host === "localhost" || host.endsWith(".localhost")) return said;
  if (isIPv4(host)) return localV4(host) ? said : null;
  if (isIPv6(host)) {
    if (host === "::1" || host === "::" || /^(f[cd]|fe[89ab])/.test(host) || host.startsWith("::ffff:") || ownNetwork(host, "ipv6")) return said;
    const v4 = embeddedV4(host);
    return v4 && localV4(v4) ? said : null;
  }
  // A name without a domain, or under a suffix that is never public: a host of the local network.
  if (!host.includes(".") || /\.(local|internal|lan|home\.arpa|intranet|corp)$/.test(host)) return said;
  return null;
}

/** Whether an IPv4 address (dotted, four parts) is local or private: the fixed ranges, or this machine's own network. */
function localV4(address: string): boolean {
  const [a = 0, b = 0] = address.split(".").map(Number);
  const local =
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 100 && b >= 64 && b <= 127) ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168);
  return local || ownNetwork(address, "ipv4");
}

/**
 * The IPv4 address an IPv6 one carries to an IPv4 host, or null: NAT64's well-known prefix (`64:ff9b::/96`, RFC 6052:
 * on an IPv6-only network its translator reaches the IPv4 address, a private one of the network included), a /96 of
 * the local-use prefix `64:ff9b:1::/48` (RFC 8215: the network's own translators; its last 32 bits), and the deprecated
 * IPv4-compatible form (`::a.b.c.d`). `host` as the URL parser writes it (hex groups, `::`).
 */
function embeddedV4(host: string): string | null {
  const [head = "", tail] = host.split("::");
  const part = (s: string) => (s ? s.split(":").map((g) => Number.parseInt(g, 16)) : []);
  const h = part(head);
  const t = tail === undefined ? [] : part(tail);
  const g = [...h, ...Array(Math.max(0, 8 - h.length - t.length)).fill(0), ...t];
  if (g.length !== 8 || g.some((n) => !Number.isInteger(n))) return null;
  const nat64 = g[0] === 0x64 && g[1] === 0xff9b && (g[2] === 1 || g.slice(2, 6).every((n) => n === 0));
  const compatible = g.slice(0, 6).every((n) => n === 0);
  if (!nat64 && !compatible) return null;
  return [g[6]! >> 8, g[6]! & 255, g[7]! >> 8, g[7]! & 255].join(".");
}

/**
 * Whether an address is one of this machine's own (any interface's: a service listening on 0.0.0.0 or :: answers on
 * each of them, a public or documentation-range address included) or on the network an interface is on (a global IPv6
 * /64 of the home network, a public IPv4 LAN). A prefix wider than /16 (IPv4) or /48 (IPv6) counts as its address alone.
 * Read at every check: interfaces come and go.
 */
function ownNetwork(address: string, type: "ipv4" | "ipv6"): boolean {
  let ifaces: NodeJS.Dict<os.NetworkInterfaceInfo[]>;
  try {
    ifaces = os.networkInterfaces();
  } catch {
    return false;
  }
  const own = new BlockList();
  for (const info of Object.values(ifaces).flat()) {
    if (!info) continue;
    const family = info.family === "IPv4" ? "ipv4" : "ipv6";
    if (family !== type) continue;
    const prefix = Number(info.cidr?.split("/")[1]);
    try {
      own.addAddress(info.address, family);
      if (prefix >= (family === "ipv4" ? 16 : 48)) own.addSubnet(info.address, prefix, family);
    } catch {
      /* an address the list does not take (a scoped one): loopback and link-local are refused above anyway */
    }
  }
  try {
    return own.check(address, type);
  } catch {
    return false;
  }
}

/** Why an address (as a resolver answers: `127.0.0.1`, `::1`) is on this machine or its private network, or null. */
export function localAddress(address: string): string | null {
  return localTarget(`http://${isIP(address) === 6 ? `[${address}]` : address}/`);
}

/**
 * Why `host` is local by what it resolved to (any of `addresses` local or private), or null: the queue when the ask
 * comes and the proxy when opencode connects read a name's answers alike.
 */
export function resolvesLocal(host: string, addresses: string[]): string | null {
  const local = addresses.find((a) => localAddress(a) !== null);
  return local ? `${host}, which resolves to ${local} (a local or private network address)` : null;
}

/** The addresses a host name resolves to: the system's resolver, or a test's stand-in. */
export type Lookup = (host: string) => Promise<string[]>;

/** How long a host name is looked up before it counts as not found. */
export const LOOKUP_MS = 3000;

/**
 * The system's DNS servers (resolv.conf; `servers`, a test's), asked for a name's A and AAAA records by c-ares on the
 * engine's event loop. Not `dns.lookup`: getaddrinfo blocks a thread of libuv's pool (4 threads, shared with every file
 * read and write of the engine) until the system resolver gives up, 10 s or more for a name whose nameserver never
 * answers, and the look-up outlives LOOKUP_MS — a worker's webfetch asks for a handful of such names (looked up before
 * anyone answers them) stalled the whole engine. The hosts file and other name services are not read: a name only they
 * know is not found (the proxy connects only to what was resolved here, so nothing is reached past the check).
 */
export function dnsLookup(servers?: string[]): Lookup {
  return async (host) => {
    const r = new Resolver({ timeout: 1000, tries: 2 });
    if (servers) r.setServers(servers);
    try {
      const [v4, v6] = await Promise.allSettled([r.resolve4(host), r.resolve6(host)]);
      return [...(v4.status === "fulfilled" ? v4.value : []), ...(v6.status === "fulfilled" ? v6.value : [])];
    } finally {
      r.cancel();
    }
  };
}

const systemLookup = dnsLookup();

/** What `host` resolves to, within LOOKUP_MS; none when it cannot be resolved (or not in time). */
export async function lookupHost(host: string, lookup: Lookup = systemLookup): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      lookup(host),
      new Promise<string[]>((_, reject) => {
        timer = setTimeout(() => reject(new Error("timeout")), LOOKUP_MS);
        timer.unref?.();
      }),
    ]);
  } catch {
    return [];
  } finally {
    clearTimeout(timer);
  }
}
