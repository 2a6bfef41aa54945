// opencode serve under the one supervisor (engine/process/supervisor.ts), with a stand-in binary (OCW_OPENCODE_BIN) whose
// starts are scripted by a file: a crash is said once as `down`, a restart that fails is tried again until one holds,
// concurrent starts share one process, and a stop ends it with no restart. The real serve's kill -9 is
// test/integration/recovery.test.ts.
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, truncateSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cleanup, tempDir } from "../../test/helpers";
import { pidAlive } from "../process";
import { EGRESS_CAP } from "../net";
import { BUN_MAX_HTTP_REQUESTS, OPENCODE_LOG_CAP, OpencodeServer } from "./opencode-server";

const tmps: string[] = [];
const servers: OpencodeServer[] = [];
const saved = process.env.OCW_OPENCODE_BIN;
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
  cleanup(...tmps.splice(0));
  if (saved === undefined) delete process.env.OCW_OPENCODE_BIN;
  else process.env.OCW_OPENCODE_BIN = saved;
});

/**
 * A stand-in `opencode`: start N (counted in `starts`) reads its fate from `plan` (one word per start: `ok`, or `fail`
 * to exit 1 before listening, `slow` never to listen); `ok` answers GET /agent with the worker agent, its event stream
 * requests with `streams` (one text per connection, the last held open) and holds every other request open.
 */
function standIn(dir: string, plan: string[], streams: string[] = []): { starts: () => number } {
  const bin = path.join(dir, "opencode");
  const counter = path.join(dir, "starts");
  writeFileSync(counter, "0");
  writeFileSync(path.join(dir, "plan"), plan.join("\n"));
  writeFileSync(
    bin,
    `#!${process.execPath}
const fs = require("node:fs"), http = require("node:http");
const n = Number(fs.readFileSync(${JSON.stringify(counter)}, "utf8")) + 1;
fs.writeFileSync(${JSON.stringify(path.join(dir, "argv"))}, JSON.stringify(process.argv.slice(2)));
fs.writeFileSync(${JSON.stringify(path.join(dir, "bun-max"))}, String(process.env.BUN_CONFIG_MAX_HTTP_REQUESTS));
fs.writeFileSync(${JSON.stringify(counter)}, String(n));
const fate = fs.readFileSync(${JSON.stringify(path.join(dir, "plan"))}, "utf8").split("\\n")[n - 1] ?? "ok";
if (fate === "fail") { process.stderr.write("start " + n + " fails\\n"); process.exit(1); }
if (fate === "slow") { setInterval(() => {}, 1000); return; }
const streams = ${JSON.stringify(streams)};
let streamed = 0;
const server = http.createServer((req, res) => {
  if (req.url.startsWith("/agent")) { res.setHeader("content-type", "application/json"); res.end(JSON.stringify([{ name: "ocw-worker" }])); }
  if (req.url.startsWith("/global/event") && streamed < streams.length) {
    // stream n of the list, written 7 bytes at a time (a character's bytes may part); the last one stays open
    const text = Buffer.from(streams[streamed++]), last = streamed === streams.length;
    res.writeHead(200, { "content-type": "text/event-stream" });
    let at = 0;
    const step = () => { if (at >= text.length) { if (!last) res.end(); return; } res.write(text.subarray(at, at += 7)); setTimeout(step, 1); };
    step();
  }
});
server.listen(0, "127.0.0.1", () => console.log("opencode server listening on http://127.0.0.1:" + server.address().port));
`,
  );
  chmodSync(bin, 0o755);
  process.env.OCW_OPENCODE_BIN = bin;
  return { starts: () => Number(readFileSync(counter, "utf8")) };
}

function server(home: string, log: string[] = []): OpencodeServer {
  const s = new OpencodeServer({
    target: {
      id: "t",
      model: "m",
      endpoint: "http://127.0.0.1:9/v1",
      keyRef: null,
      serving: { engine: "scripted", endpoints: [], slots: 1 },
      checks: [],
    } as never,
    home,
    log: (l) => log.push(l),
  });
  servers.push(s);
  return s;
}

const until = async (what: string, f: () => boolean) => {
  for (let i = 0; i < 2400 && !f(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!f()) throw new Error(`timed out waiting for ${what}`);
};

describe("OpencodeServer on the one supervisor", () => {
  it("a crash is said once as down; the restarts that fail are tried again until one holds, then it is ready again", async () => {
    const dir = tempDir("oc-sup");
    tmps.push(dir);
    const fake = standIn(dir, ["ok", "fail", "fail", "ok"]);
    const log: string[] = [];
    const s = server(path.join(dir, "home"), log);
    const events: string[] = [];
    s.on("down", (why) => events.push(`down: ${why}`));
    s.on("ready", () => events.push("ready"));
    await s.start();
    const first = s.pid!;
    expect(s.ready).toBe(true);
    process.kill(first, "SIGKILL");
    await until("the server back", () => events.filter((e) => e === "ready").length === 2);
    expect(events).toEqual(["ready", "down: opencode serve exited unexpectedly (code null, signal SIGKILL)", "ready"]);
    expect(fake.starts()).toBe(4);
    expect(log.filter((l) => l.startsWith("restart failed: opencode serve exited during start-up"))).toHaveLength(2);
    expect(s.ready).toBe(true);
    expect(s.pid).not.toBe(first);
    expect(s.port).not.toBeNull();
  }, 120_000);

  it("opencode's log stays bounded: serve logs warnings only, and a log past the cap is moved aside at the next start", async () => {
    const dir = tempDir("oc-sup");
    tmps.push(dir);
    standIn(dir, ["ok"]);
    const home = path.join(dir, "home");
    // opencode appends every run to this one file (XDG_DATA_HOME/opencode/log): INFO lines, ~4 KB per worker.
    const log = path.join(home, ".local/share/opencode/log/opencode.log");
    mkdirSync(path.dirname(log), { recursive: true });
    writeFileSync(log, "");
    truncateSync(log, OPENCODE_LOG_CAP + 1);
    await server(home).start();
    expect(JSON.parse(readFileSync(path.join(dir, "argv"), "utf8"))).toContain("--log-level=WARN");
    expect(statSync(`${log}.1`).size).toBe(OPENCODE_LOG_CAP + 1);
    expect(existsSync(log) ? statSync(log).size : 0).toBe(0);
  }, 60_000);

  it("serve's Bun runs 512 fetches at once (BUN_CONFIG_MAX_HTTP_REQUESTS; 256 by default): a target's 256 slots of model requests and the egress proxy's cap on its webfetches fit together", async () => {
    const dir = tempDir("oc-sup");
    tmps.push(dir);
    standIn(dir, ["ok"]);
    await server(path.join(dir, "home")).start();
    expect(readFileSync(path.join(dir, "bun-max"), "utf8")).toBe("512");
    expect(BUN_MAX_HTTP_REQUESTS).toBeGreaterThanOrEqual(256 + EGRESS_CAP);
  }, 60_000);

  it("concurrent starts share one serve; a stop ends it and nothing restarts it", async () => {
    const dir = tempDir("oc-sup");
    tmps.push(dir);
    const fake = standIn(dir, ["ok", "ok"]);
    const s = server(path.join(dir, "home"));
    await Promise.all([s.start(), s.start(), s.start()]);
    expect(fake.starts()).toBe(1);
    const pid = s.pid!;
    await s.stop();
    expect(pidAlive(pid)).toBe(false);
    expect(s.ready).toBe(false);
    await new Promise((r) => setTimeout(r, 600));
    expect(fake.starts()).toBe(1);
    // started again after the stop: a new serve
    await s.start();
    expect(fake.starts()).toBe(2);
    expect(s.pid).not.toBe(pid);
  }, 120_000);

  it("a stop while serve is still starting ends that serve, and its start fails", async () => {
    const dir = tempDir("oc-sup");
    tmps.push(dir);
    const fake = standIn(dir, ["slow"]);
    const s = server(path.join(dir, "home"));
    const started = s.start();
    await until("the serve spawned", () => fake.starts() === 1);
    const pid = s.pid!;
    await s.stop();
    expect(pidAlive(pid)).toBe(false);
    await expect(started).rejects.toThrow(/exited during start-up/);
  }, 120_000);

  it("a first start that fails rejects with serve's own words, and nothing is restarted", async () => {
    const dir = tempDir("oc-sup");
    tmps.push(dir);
    const fake = standIn(dir, ["fail", "ok"]);
    const s = server(path.join(dir, "home"));
    await expect(s.start()).rejects.toThrow(/exited during start-up \(code 1, signal null\): start 1 fails/);
    await new Promise((r) => setTimeout(r, 600));
    expect(fake.starts()).toBe(1);
  }, 120_000);

  it("reads opencode's event stream: the events the engine acts on, in order, with their directory; the rest dropped; a reconnect is a resync", async () => {
    const dir = tempDir("oc-sup");
    tmps.push(dir);
    const data = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
    const connected = data({ payload: { id: "evt_0", type: "server.connected", properties: {} } });
    const idle = (sessionID: string, directory = "/w/a") =>
      data({ directory, project: "p", payload: { id: "evt_1", type: "session.idle", properties: { sessionID } } });
    standIn(
      dir,
      ["ok"],
      [
        connected +
          data({ directory: "global", project: "p", payload: { type: "plugin.added", properties: { id: "core/x" } } }) +
          idle("s1") +
          data({ directory: "/w/a", project: "p", payload: { type: "sync", syncEvent: { type: "session.idle.1", data: { sessionID: "s1" } } } }) +
          ": comment\n\n" +
          data({
            directory: "/w/b",
            project: "p",
            payload: { id: "evt_2", type: "message.part.delta", properties: { sessionID: "s2", partID: "p", field: "text", delta: "hé" } },
          }),
        connected + data({ payload: { type: "server.heartbeat", properties: {} } }) + idle("s3", "/w/c"),
      ],
    );
    const log: string[] = [];
    const s = server(path.join(dir, "home"), log);
    const seen: unknown[] = [];
    s.on("event", (e) => seen.push(e));
    s.on("resync", () => seen.push("resync"));
    await s.start();
    await until("both streams read", () => seen.length === 4);
    expect(seen).toEqual([
      { directory: "/w/a", type: "session.idle", properties: { sessionID: "s1" } },
      { directory: "/w/b", type: "message.part.delta", properties: { sessionID: "s2", partID: "p", field: "text", delta: "hé" } },
      "resync",
      { directory: "/w/c", type: "session.idle", properties: { sessionID: "s3" } },
    ]);
    expect(log).toContain("event stream dropped: the stream ended; reconnecting");
  }, 120_000);
});
