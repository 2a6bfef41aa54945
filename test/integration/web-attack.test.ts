// The engine's local server as a web page the person visits, and another local user, reach it (docs/security.md,
// "Attack routes": the web attacker's pass). A real `ocw serve` (the bundle); no model is needed.
import { execFile } from "node:child_process";
import http from "node:http";
import { chmodSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUNDLE, cleanup, startEngine, tempDir, type TestEngine } from "../helpers";

const run = promisify(execFile);
let engine: TestEngine;
let lock: { port: number; token: string };
const dirs: string[] = [];

beforeAll(async () => {
  // A state dir that was there already, open to every local user (made by hand, or OCW_STATE_DIR at a plain folder).
  const sd = tempDir("webattack-state");
  chmodSync(sd, 0o755);
  engine = await startEngine(sd);
  lock = JSON.parse(readFileSync(path.join(sd, "engine.json"), "utf8"));
});

afterAll(async () => {
  await engine?.kill();
  cleanup(engine?.stateDir ?? "", ...dirs);
});

describe("the engine's local server against a web page and other local users", () => {
  it.skipIf(process.platform !== "linux")(
    "`ocw gui` never puts the token in a command line: the opener (and the browser it starts) get a private file's path",
    async () => {
      // A stand-in xdg-open records its argv: what `ps` shows every local user while it and the browser run.
      const bin = tempDir("webattack-bin");
      dirs.push(bin);
      const argvFile = path.join(bin, "argv.txt");
      writeFileSync(path.join(bin, "xdg-open"), `#!/bin/sh\nprintf '%s\\n' "$@" > '${argvFile}'\n`, { mode: 0o755 });
      await run(process.execPath, [BUNDLE, "gui"], {
        env: { ...process.env, OCW_STATE_DIR: engine.stateDir, PATH: `${bin}:${process.env.PATH}` },
        timeout: 60_000,
      });
      let argv = "";
      for (let i = 0; i < 100 && !argv; i++) {
        try {
          argv = readFileSync(argvFile, "utf8");
        } catch {
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      expect(argv).not.toBe("");
      expect(argv).not.toContain(lock.token);
      const opened = argv.trim();
      expect(path.isAbsolute(opened)).toBe(true);
      expect(statSync(opened).mode & 0o777).toBe(0o600);
      const page = readFileSync(opened, "utf8");
      // The token travels in the fragment: never sent to the engine, taken out of the address bar by the page.
      expect(page).toContain(`http://127.0.0.1:${lock.port}/#token=${lock.token}`);
      expect(page).not.toContain("?token=");
      expect((await fetch(`http://127.0.0.1:${lock.port}/`)).status).toBe(200);
    },
  );

  it.skipIf(process.platform === "win32")("a state dir open to other users (0755) is narrowed to the person's alone (0700) when the engine starts", () => {
    expect(statSync(engine.stateDir).mode & 0o777).toBe(0o700);
    expect(statSync(path.join(engine.stateDir, "engine.json")).mode & 0o777).toBe(0o600);
  });

  it("a cross-site page's requests: form and no-cors POSTs (text/plain), a preflight, a query token, a rebinding Host, a sandboxed frame's Origin null: none reaches the API", async () => {
    const base = `http://127.0.0.1:${lock.port}`;
    const at = (p: string, init: RequestInit = {}) => fetch(base + p, { redirect: "manual", ...init });
    // A <form> or fetch(no-cors) POST: text/plain or urlencoded body, no Authorization, maybe no Origin.
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
      const r = await at("/trpc/engine.shutdown", { method: "POST", headers: { "content-type": type }, body: "{}" });
      expect(r.status).toBe(401);
      expect(r.headers.get("access-control-allow-origin")).toBeNull();
    }
    // JSONP-ish GETs (<script src>, <img>): the token in the query opens nothing on the API.
    expect((await at(`/trpc/workers.list?token=${lock.token}`)).status).toBe(401);
    expect((await at(`/health?token=${lock.token}`)).status).toBe(401);
    // CORS preflight: refused, with no Access-Control-Allow-* header a browser could act on.
    const pre = await at("/trpc/workers.list", {
      method: "OPTIONS",
      headers: { origin: "http://evil.test", "access-control-request-method": "POST", "access-control-request-headers": "authorization" },
    });
    expect(pre.status).toBe(403);
    expect([...pre.headers.keys()].filter((k) => k.startsWith("access-control-"))).toEqual([]);
    // A request with the token but from another origin (a stolen token used from a page; an EventSource cannot send it).
    const auth = { authorization: `Bearer ${lock.token}` };
    for (const origin of ["http://evil.test", "null", `https://127.0.0.1:${lock.port}`, `http://127.0.0.1:${lock.port + 1}`]) {
      expect((await at("/trpc/events", { headers: { ...auth, origin } })).status).toBe(403);
    }
    // DNS rebinding: evil.test resolving to 127.0.0.1 sends its own Host.
    for (const host of [`evil.test:${lock.port}`, `127.0.0.1.nip.io:${lock.port}`, `127.0.0.1:${lock.port}.`, "127.0.0.1"]) {
      const r = await new Promise<number>((resolve, reject) => {
        import("node:http").then(({ request }) =>
          request({ host: "127.0.0.1", port: lock.port, path: "/health", headers: { ...auth, host } }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          })
            .on("error", reject)
            .end(),
        );
      });
      expect(r).toBe(421);
    }
  });

  it("the UI's page: never framed, never sniffed, never sends the URL's token on as a Referer; no path leaves its folder", async () => {
    const base = `http://127.0.0.1:${lock.port}`;
    for (const p of [`/?token=${lock.token}`, "/index.html", "/nothing-here.js", "/%2e%2e/ocw.mjs", "/..%2f..%2fetc%2fpasswd", "/%74rpc/workers.list"]) {
      const r = await fetch(base + p);
      expect(r.status).toBe(200);
      expect(r.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      expect(r.headers.get("x-content-type-options")).toBe("nosniff");
      expect(r.headers.get("referrer-policy")).toBe("no-referrer");
      expect(await r.text()).toMatch(/^<!doctype html>/i);
    }
  });
});

describe("a restarted engine whose old port another local process took", () => {
  for (const signal of ["SIGKILL", "SIGTERM"] as const) {
    it(`after a ${signal === "SIGKILL" ? "crash (kill -9)" : "clean stop"}, the new engine's token is new: the one a squatter on the old port is sent opens nothing`, async () => {
      const sd = tempDir("webattack-squat");
      dirs.push(sd);
      const first = await startEngine(sd);
      const old = JSON.parse(readFileSync(path.join(sd, "engine.json"), "utf8")) as { port: number; token: string };
      await first.kill(signal);
      // Another local user's server takes the freed port before the engine comes back, and records what it is sent.
      const seen: string[] = [];
      const squatter = http.createServer((req, res) => {
        seen.push(String(req.headers.authorization ?? ""));
        res.end("<!doctype html>not the engine");
      });
      await new Promise<void>((resolve, reject) => squatter.once("error", reject).listen(old.port, "127.0.0.1", () => resolve()));
      try {
        const second = await startEngine(sd);
        try {
          const now = JSON.parse(readFileSync(path.join(sd, "engine.json"), "utf8")) as { port: number; token: string };
          expect(now.port).not.toBe(old.port);
          // An open tab (or the desktop window) still pointed at the old port sends its token there.
          await fetch(`http://127.0.0.1:${old.port}/trpc/events`, { headers: { authorization: `Bearer ${old.token}` } }).then((r) => r.text());
          expect(seen).toContain(`Bearer ${old.token}`);
          // What the squatter got must not open the engine.
          expect(now.token).not.toBe(old.token);
          const stolen = await fetch(`http://127.0.0.1:${now.port}/trpc/workers.list`, { headers: { authorization: `Bearer ${old.token}` } });
          expect(stolen.status).toBe(401);
          expect((await second.client.workers.list.query()).length).toBe(0);
        } finally {
          await second.kill();
        }
      } finally {
        await new Promise<void>((resolve) => squatter.close(() => resolve()));
      }
    });
  }
});
