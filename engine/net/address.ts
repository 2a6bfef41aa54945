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
  if (isIPv4(host)) {
    const [a = 0, b = 0] = host.split(".").map(Number);
    const local =
      a === 0 ||
      a === 10 ||
      a === 127 ||
      (a === 100 && b >= 64 && b <= 127) ||
      (a === 169 && b === 254) ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168);
    return local || ownNetwork(host, "ipv4") ? said : null;
  }
  if (isIPv6(host))
    return host === "::1" || host === "::" || /^(f[cd]|fe[89ab])/.test(host) || host.startsWith("::ffff:") || ownNetwork(host, "ipv6") ? said : null;
  // A name without a domain, or under a suffix that is never public: a host of the local network.
  if (!host.includes(".") || /\.(local|internal|lan|home\.arpa|intranet|corp)$/.test(host)) return said;
  return null;
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
