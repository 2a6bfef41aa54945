// The network guard's classification against IANA's special-purpose address registries (IPv4 and IPv6): every block
// the registries mark not globally reachable, multicast, and the IPv6 forms that carry an IPv4 address (6to4, Teredo,
// NAT64, mapped, translated) of a local one, is local; the blocks the registries mark reachable stay public.
import http from "node:http";
import { describe, expect, it } from "vitest";
import { localAddress, localTarget } from "./address";
import { EgressProxy } from "./egress";

const LOCAL = /a local or private network address/;

/** Teredo address for a server and a client IPv4 address (the client's inverted, RFC 4380). */
function teredo(server: string, client: string): string {
  const s = server.split(".").map(Number);
  const c = client.split(".").map((n) => Number(n) ^ 255);
  const hex = (a: number, b: number) => ((a << 8) | b).toString(16);
  return `2001:0:${hex(s[0]!, s[1]!)}:${hex(s[2]!, s[3]!)}:8000:f227:${hex(c[0]!, c[1]!)}:${hex(c[2]!, c[3]!)}`;
}

describe("addresses not reachable on the public internet (IANA special-purpose registries)", () => {
  it("IPv4: benchmarking, CGNAT, IETF protocol assignments, documentation, reserved, broadcast, this network, multicast are local (198.18/15, TEST-NETs, 240/4, 224/4 and 255.255.255.255 were public)", () => {
    for (const a of [
      "198.18.0.1",
      "198.19.255.254",
      "100.64.0.1",
      "100.127.255.254",
      "192.0.0.1",
      "192.0.0.170",
      "192.0.2.1",
      "198.51.100.7",
      "203.0.113.9",
      "240.0.0.1",
      "250.1.2.3",
      "255.255.255.255",
      "0.0.0.0",
      "0.1.2.3",
      "224.0.0.1",
      "239.255.255.250",
    ])
      expect([a, localAddress(a)]).toEqual([a, expect.stringMatching(LOCAL)]);
    // next to them, and the registry's globally reachable exceptions: public
    for (const a of [
      "198.17.255.255",
      "198.20.0.1",
      "100.63.255.255",
      "100.128.0.1",
      "192.0.0.9",
      "192.0.0.10",
      "192.0.3.1",
      "203.0.114.1",
      "223.255.255.254",
      "93.184.215.14",
    ])
      expect([a, localAddress(a)]).toEqual([a, null]);
  });

  it("IPv6 outside global unicast (2000::/3): discard-only, site-local, multicast, mapped, translated, compatible, local-use NAT64 are local (fec0::/10, ff00::/8, 100::/64 were public)", () => {
    for (const a of [
      "fec0::1",
      "feff::1",
      "ff02::1",
      "ff0e::1",
      "100::1",
      "100::ffff:ffff:ffff:ffff",
      "::ffff:5db8:d70e",
      "::ffff:0:7f00:1",
      "::ffff:0:5db8:d70e",
      "::5db8:d70e",
      "64:ff9b:1::5db8:d70e",
      "64:ff9b:1:abcd::1",
      "5f00::1",
      "4000::1",
      "e000::1",
    ])
      expect([a, localAddress(a)]).toEqual([a, expect.stringMatching(LOCAL)]);
    expect(localTarget("http://[::ffff:127.0.0.1]/")).toMatch(LOCAL);
    expect(localAddress("64:ff9b::5db8:d70e")).toBeNull();
  });

  it("6to4 (2002::/16) and Teredo (2001::/32) of a local IPv4 address are local, of a public one public (they were public whatever they carried)", () => {
    for (const a of ["2002:7f00:1::1", "2002:a9fe:a9fe::", "2002:c0a8:101:1::5", "2002:a00:1::1", "2002:c612:1::1"])
      expect([a, localAddress(a)]).toEqual([a, expect.stringMatching(LOCAL)]);
    expect(localAddress("2002:5db8:d70e::1")).toBeNull();
    for (const [server, client] of [
      ["65.54.227.120", "127.0.0.1"],
      ["65.54.227.120", "169.254.169.254"],
      ["65.54.227.120", "10.1.2.3"],
      ["10.0.0.1", "93.184.215.14"],
    ]) {
      const a = teredo(server!, client!);
      expect([a, localAddress(a)]).toEqual([a, expect.stringMatching(LOCAL)]);
    }
    expect(localAddress(teredo("65.54.227.120", "93.184.215.14"))).toBeNull();
  });

  it("IPv6 inside 2000::/3: IETF protocol assignments and documentation are local; the anycast and overlay blocks the registry marks reachable, and ordinary global addresses, are public", () => {
    for (const a of ["2001:2::1", "2001:10::1", "2001:1::4", "2001:1ff::1", "2001:db8::1", "2001:db8:ffff::1", "3fff::1", "3fff:fff::1"])
      expect([a, localAddress(a)]).toEqual([a, expect.stringMatching(LOCAL)]);
    for (const a of [
      "2001:1::1",
      "2001:1::2",
      "2001:1::3",
      "2001:3::1",
      "2001:4:112::1",
      "2001:20::1",
      "2001:3f::1",
      "2001:200::1",
      "2606:4700::6810:1",
      "2620:4f:8000::1",
      "2a00:1450:4001::1",
    ])
      expect([a, localAddress(a)]).toEqual([a, null]);
  });

  it("the proxy refuses a name that resolves to one of them and a CONNECT to one, before connecting", async () => {
    const dialled: string[] = [];
    const p = new EgressProxy({
      lookup: async (h) => (h === "bench.example.com" ? ["198.18.0.5"] : h === "sixtofour.example.com" ? ["2002:7f00:1::1"] : []),
      dial: (a) => (dialled.push(a), "127.0.0.1"),
    });
    const url = new URL(await p.start());
    const auth = `Basic ${Buffer.from(`${url.username}:${url.password}`).toString("base64")}`;
    const status = (target: string) =>
      new Promise<number>((resolve, reject) => {
        const req = http.request({ host: url.hostname, port: url.port, method: "CONNECT", path: target, headers: { "proxy-authorization": auth } });
        req.on("connect", (res, socket) => (socket.destroy(), resolve(res.statusCode!)));
        req.on("response", (res) => (res.resume(), resolve(res.statusCode!)));
        req.on("error", reject);
        req.end();
      });
    try {
      for (const t of [
        "bench.example.com:443",
        "sixtofour.example.com:443",
        "198.18.0.5:443",
        `[${teredo("65.54.227.120", "127.0.0.1")}]:443`,
        "[fec0::1]:443",
        "255.255.255.255:443",
      ])
        expect([t, await status(t)]).toEqual([t, 403]);
      expect(dialled).toEqual([]);
    } finally {
      await p.close();
    }
  });
});
