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
  if (isIPv6(host)) return localV6(host) || ownNetwork(host, "ipv6") ? said : null;
  // A name without a domain, or under a suffix that is never public: a host of the local network.
  if (!host.includes(".") || /\.(local|internal|lan|home\.arpa|intranet|corp)$/.test(host)) return said;
  return null;
}

/**
 * Whether an IPv4 address (dotted, four parts) is local, private or not reachable on the public internet: each block of
 * IANA's IPv4 Special-Purpose Address Registry (RFC 6890 and its updates) marked not globally reachable, multicast, or
 * this machine's own network. `0.0.0.0/8` (this network: `0.0.0.0` is this host), `10/8`, `100.64/10` (CGNAT, the
 * carrier's network), `127/8`, `169.254/16` (the metadata address), `172.16/12`, `192.0.0.0/24` (IETF protocol
 * assignments; `.9` and `.10`, the PCP and TURN anycast addresses, are globally reachable), `192.0.2.0/24`,
 * `198.51.100.0/24` and `203.0.113.0/24` (documentation: a network uses them as its own), `192.168/16`,
 * `198.18.0.0/15` (benchmarking: a lab's or an appliance's own network), `224/4` (multicast), `240/4` (reserved,
 * `255.255.255.255` included).
 */
function localV4(address: string): boolean {
  const [a = 0, b = 0, c = 0, d = 0] = address.split(".").map(Number);
  const local =
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 100 && b >= 64 && b <= 127) ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 0 && c === 0 && d !== 9 && d !== 10) ||
    (a === 192 && b === 0 && c === 2) ||
    (a === 192 && b === 168) ||
    (a === 198 && (b === 18 || b === 19)) ||
    (a === 198 && b === 51 && c === 100) ||
    (a === 203 && b === 0 && c === 113) ||
    a >= 224;
  return local || ownNetwork(address, "ipv4");
}

/** An IPv6 address (as the URL parser writes it: hex groups, `::`) as its eight 16-bit groups, or null. */
function groupsV6(host: string): number[] | null {
  const [head = "", tail, more] = host.split("::");
  if (more !== undefined) return null;
  const part = (s: string) => (s ? s.split(":").map((g) => (/^[0-9a-f]{1,4}$/i.test(g) ? Number.parseInt(g, 16) : Number.NaN)) : []);
  const h = part(head);
  const t = tail === undefined ? [] : part(tail);
  if (tail !== undefined && h.length + t.length > 7) return null;
  const g = [...h, ...Array(Math.max(0, 8 - h.length - t.length)).fill(0), ...t];
  return g.length === 8 && g.every((n) => Number.isInteger(n)) ? g : null;
}

const v4Of = (hi: number, lo: number): string => [hi >> 8, hi & 255, lo >> 8, lo & 255].join(".");

/**
 * Whether an IPv6 address is local, private or not reachable on the public internet (IANA's IPv6 Special-Purpose
 * Address Registry, RFC 6890 and its updates). Only global unicast (`2000::/3`) can be public; outside it everything is
 * local or not unicast: `::/8` (`::`, `::1`, IPv4-mapped `::ffff:0:0/96`, IPv4-translated `::ffff:0:0:0/96`, the
 * deprecated IPv4-compatible `::a.b.c.d`), the local-use NAT64 prefix `64:ff9b:1::/48` (RFC 8215: the network's own
 * translators, whatever IPv4 address they are given), discard-only `100::/64`, ULA `fc00::/7`, link-local `fe80::/10`,
 * the deprecated site-local `fec0::/10`, multicast `ff00::/8`, and the rest IETF-reserved. The one exception is NAT64's
 * well-known prefix `64:ff9b::/96` (RFC 6052), which reaches the IPv4 address in its last 32 bits: that address decides.
 * Inside `2000::/3`: `2001::/23` (IETF protocol assignments: not globally reachable, but for the anycast and
 * overlay blocks the registry marks reachable), of which Teredo `2001::/32` carries its server's IPv4 address in bits
 * 32–63 and its client's, inverted, in the last 32 (either one local: local); documentation `2001:db8::/32` and
 * `3fff::/20`; and 6to4 `2002::/16`, which reaches the IPv4 address in bits 16–47 (that address decides).
 */
function localV6(host: string): boolean {
  const g = groupsV6(host);
  if (!g) return true;
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, , , g6 = 0, g7 = 0] = g;
  if (g0 === 0x64 && g1 === 0xff9b && g.slice(2, 6).every((n) => n === 0)) return localV4(v4Of(g6, g7));
  if ((g0 & 0xe000) !== 0x2000) return true;
  if (g0 === 0x2001 && g1 < 0x200) {
    if (g1 === 0) return localV4(v4Of(g2, g3)) || localV4(v4Of(g6 ^ 0xffff, g7 ^ 0xffff));
    const anycast = g1 === 1 && g.slice(2, 7).every((n) => n === 0) && g7 >= 1 && g7 <= 3; // PCP, TURN, DNS-SD SRP
    const reachable = g1 === 3 || (g1 === 4 && g2 === 0x112) || (g1 >= 0x20 && g1 <= 0x3f); // AMT, AS112, ORCHIDv2, DET
    return !(anycast || reachable);
  }
  if (g0 === 0x2001 && g1 === 0xdb8) return true;
  if (g0 === 0x2002) return localV4(v4Of(g1, g2));
  return (g0 & 0xfff0) === 0x3ff0;
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

/** What `host` resolves to, within `limitMs`; none when it cannot be resolved (or not in time). */
export async function lookupHost(host: string, lookup: Lookup = systemLookup, limitMs = LOOKUP_MS): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      lookup(host),
      new Promise<string[]>((_, reject) => {
        timer = setTimeout(() => reject(new Error("timeout")), limitMs);
        timer.unref?.();
      }),
    ]);
  } catch {
    return [];
  } finally {
    clearTimeout(timer);
  }
}
