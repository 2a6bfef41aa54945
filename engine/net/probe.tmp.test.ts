import net, { type AddressInfo } from "node:net";
import { it } from "vitest";
import { EgressProxy } from "./egress";

function raw(port: number, text: string): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1", () => s.write(text));
    let got = "";
    s.on("data", (b) => (got += b));
    s.on("close", () => resolve(got));
    s.on("error", () => resolve(got + " [error]"));
    setTimeout(() => s.destroy(), 1500);
  });
}
it("probe", async () => {
  const svc = net.createServer((s) => s.end("HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nSECRET"));
  await new Promise<void>((r) => svc.listen(0, "0.0.0.0", r));
  const P = (svc.address() as AddressInfo).port;
  const p = new EgressProxy({ lookup: async (h) => (h === "pub.example.com" ? ["93.184.215.14"] : h === "rebind.example.com" ? ["127.0.0.1"] : []), dial: (a) => (a === "93.184.215.14" ? "127.0.0.1" : a), log: (l) => console.log("LOG", l) });
  const url = new URL(await p.start());
  const auth = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString("base64")}`;
  const port = Number(url.port);
  const hosts = ["2130706433", "0x7f.1", "017700000001", "0.0.0.0", "0", "127.1", "[::]", "[::ffff:7f00:1]", "[0:0:0:0:0:ffff:127.0.0.1]", "[::127.0.0.1]", "localhost.", "LOCALHOST", "127.0.0.1.", "%31%32%37.0.0.1", "\uff11\uff12\uff17.0.0.1", "public@127.0.0.1", "localhost.localdomain", "rebind.example.com", "ip6-localhost", "[::1]", "[fe80::1]"];
  for (const h of hosts) {
    const g = await raw(port, `GET http://${h}:${P}/x HTTP/1.1\r\nhost: pub.example.com\r\nproxy-authorization: ${auth}\r\nconnection: close\r\n\r\n`);
    const c = await raw(port, `CONNECT ${h}:${P} HTTP/1.1\r\nhost: ${h}:${P}\r\nproxy-authorization: ${auth}\r\n\r\nGET / HTTP/1.1\r\n\r\n`);
    console.log(`${h}\n   GET ${g.split("\r\n")[0]} ${g.includes("SECRET") ? "LEAK" : ""}\n   CONNECT ${c.split("\r\n")[0]} ${c.includes("SECRET") ? "LEAK" : ""}`);
  }
  for (const t of [`http:127.0.0.1:${P}/`, `http://pub.example.com\\@127.0.0.1:${P}/`, `http://127.0.0.1:${P}#@pub.example.com/`, `127.0.0.1:${P}`, `/x`, `*`]) {
    const g = await raw(port, `GET ${t} HTTP/1.1\r\nhost: 127.0.0.1:${P}\r\nproxy-authorization: ${auth}\r\nconnection: close\r\n\r\n`);
    console.log(`GET ${t} -> ${g.split("\r\n")[0]} ${g.includes("SECRET") ? "LEAK" : ""}`);
  }
  // host header differs
  const hh = await raw(port, `GET http://pub.example.com:${P}/ HTTP/1.1\r\nhost: 127.0.0.1:1\r\nproxy-authorization: ${auth}\r\nconnection: close\r\n\r\n`);
  console.log("host differs:", hh.split("\r\n")[0]);
  // pipelined: first public, second local
  const pl = await raw(port, `GET http://pub.example.com:${P}/a HTTP/1.1\r\nhost: pub.example.com\r\nproxy-authorization: ${auth}\r\n\r\nGET http://127.0.0.1:${P}/b HTTP/1.1\r\nhost: x\r\nproxy-authorization: ${auth}\r\nconnection: close\r\n\r\n`);
  console.log("pipelined:", JSON.stringify(pl.split("\r\n").filter((l) => l.startsWith("HTTP/") || l.includes("SECRET") || l.includes("refused"))));
  // pipelined without auth on second
  const pl2 = await raw(port, `GET http://pub.example.com:${P}/a HTTP/1.1\r\nhost: pub.example.com\r\nproxy-authorization: ${auth}\r\n\r\nGET http://pub.example.com:${P}/b HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`);
  console.log("pipelined no auth 2nd:", JSON.stringify(pl2.split("\r\n").filter((l) => l.startsWith("HTTP/"))));
  // TE/CL conflict
  const te = await raw(port, `POST http://pub.example.com:${P}/a HTTP/1.1\r\nhost: pub.example.com\r\nproxy-authorization: ${auth}\r\ncontent-length: 4\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\nGET http://127.0.0.1:${P}/ HTTP/1.1\r\n\r\n`);
  console.log("TE+CL:", JSON.stringify(te.split("\r\n")[0]));
  await p.close();
  svc.close();
}, 60000);
