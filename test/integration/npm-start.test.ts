// `npm start` (scripts/start.mjs) on a machine where no Electron binary was fetched yet: it fetches one through
// Electron's own installer (@electron/get) from ELECTRON_MIRROR, with progress, into electron_config_cache and
// node_modules/electron/dist, checks it against the mirror's SHASUMS256.txt and launches it; when the download fails
// it says why and serves the browser UI from an engine under its supervisor, which keeps its port and token across
// kill -9 and across `ocw stop` + start.
//
// The mirror is a local HTTP server laid out as Electron's release host (`<mirror>v<version>/<file>`, as
// @electron/get's artifact-utils.js builds the URL); what it serves is a stand-in "electron": a shell script that
// records its arguments. The checkout is a temp copy of the parts start.mjs touches: scripts/start.mjs, the built
// dist/ and out/ (links), and node_modules as links to this checkout's, except the electron package, copied without
// any binary (as npm installs it here), so nothing is written into this checkout's node_modules.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alive, lastLock, readLock, supervisorOf } from "../../engine/api/lock";
import { healthy } from "../../engine/api/client";
import { BUNDLE, cleanup, ROOT, stopDetachedEngine, tempDir } from "../helpers";

const VERSION = JSON.parse(readFileSync(path.join(ROOT, "node_modules", "electron", "package.json"), "utf8")).version as string;
const ZIP = `electron-v${VERSION}-${process.platform}-${process.arch}.zip`;
const dirs: string[] = [];
const children: ChildProcess[] = [];

/** A checkout as start.mjs sees it, with an electron package that has no binary. */
function checkout(): string {
  const root = tempDir("npm-start-root");
  dirs.push(root);
  mkdirSync(path.join(root, "scripts"));
  copyFileSync(path.join(ROOT, "scripts", "start.mjs"), path.join(root, "scripts", "start.mjs"));
  copyFileSync(path.join(ROOT, "package.json"), path.join(root, "package.json"));
  for (const d of ["dist", "out", "protocol", "packs"]) symlinkSync(path.join(ROOT, d), path.join(root, d));
  mkdirSync(path.join(root, "node_modules"));
  for (const name of readdirSync(path.join(ROOT, "node_modules"))) {
    if (name === "electron" || name === ".bin") continue;
    symlinkSync(path.join(ROOT, "node_modules", name), path.join(root, "node_modules", name));
  }
  cpSync(path.join(ROOT, "node_modules", "electron"), path.join(root, "node_modules", "electron"), {
    recursive: true,
    filter: (src) => !/[\\/]electron[\\/](dist|path\.txt)$/.test(src),
  });
  return root;
}

/** The stand-in binary, zipped as Electron's release zip is (the executable at the top, named `electron`). */
function standInZip(): Buffer {
  const dir = tempDir("standin");
  dirs.push(dir);
  writeFileSync(
    path.join(dir, "electron"),
    '#!/bin/sh\n{ echo "launched"; echo "OCW_ROOT=$OCW_ROOT"; for a in "$@"; do echo "arg=$a"; done; } > "$STANDIN_RECORD"\n',
    { mode: 0o755 },
  );
  writeFileSync(path.join(dir, "version"), VERSION);
  const r = spawnSync("zip", ["-X", "-q", "stand-in.zip", "electron", "version"], { cwd: dir });
  if (r.status !== 0) throw new Error(`zip failed: ${r.stderr}`);
  return readFileSync(path.join(dir, "stand-in.zip"));
}

interface Mirror {
  url: string;
  requests: string[];
  close(): Promise<void>;
}

/** Electron's release layout: `<mirror>v<version>/<file>`; `files` maps a file name to its body (absent → 404). */
async function mirror(files: Record<string, Buffer | string>): Promise<Mirror> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? "");
    const m = /^\/v([^/]+)\/([^/?]+)$/.exec(req.url ?? "");
    const body = m && m[1] === VERSION ? files[m[2]!] : undefined;
    if (body === undefined) {
      res.writeHead(404, { "content-type": "text/plain" }).end("Not Found");
      return;
    }
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": Buffer.byteLength(body) }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    requests,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

function sha256(b: Buffer): string {
  return createHash("sha256").update(b).digest("hex");
}

/** Runs `node scripts/start.mjs` with a clean Electron environment plus `env`; resolves on exit or on `until`. */
function npmStart(
  root: string,
  env: NodeJS.ProcessEnv,
  until?: (out: string, err: string) => boolean,
): Promise<{ code: number | null; out: string; err: string; proc: ChildProcess }> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(ELECTRON_|electron_|npm_config_electron|force_no_cache)/i.test(k)));
  const proc = spawn(process.execPath, [path.join(root, "scripts", "start.mjs")], { cwd: root, env: { ...base, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  children.push(proc);
  let out = "";
  let err = "";
  return new Promise((resolve) => {
    const check = () => until?.(out, err) && resolve({ code: null, out, err, proc });
    proc.stdout!.on("data", (b) => ((out += b.toString()), check()));
    proc.stderr!.on("data", (b) => ((err += b.toString()), check()));
    proc.once("exit", (code) => resolve({ code, out, err, proc }));
  });
}

const skip = process.platform === "win32" || spawnSync("zip", ["-v"]).status !== 0;

describe.skipIf(skip)("npm start fetches Electron through @electron/get", () => {
  let zip: Buffer;
  beforeAll(() => {
    zip = standInZip();
  });
  afterAll(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGTERM");
    cleanup(...dirs);
  });

  it("from ELECTRON_MIRROR into electron_config_cache, checked against the mirror's SHASUMS256.txt, with progress, then launches it", async () => {
    const root = checkout();
    const cache = tempDir("electron-cache");
    dirs.push(cache);
    const state = tempDir("npm-start-state");
    dirs.push(state);
    const record = path.join(state, "standin.txt");
    const m = await mirror({ [ZIP]: zip, "SHASUMS256.txt": `${sha256(zip)} *${ZIP}\n` });
    try {
      // Given without its trailing slash (Electron's docs ask for one; without, @electron/get would drop the separator).
      const r = await npmStart(
        root,
        { ELECTRON_MIRROR: m.url.replace(/\/$/, ""), electron_config_cache: cache, STANDIN_RECORD: record, OCW_STATE_DIR: state },
        (_out, err) => /token=|starting the engine/.test(_out + err),
      );
      expect(r.code, r.err).toBe(0);
      expect(m.requests).toEqual(expect.arrayContaining([`/v${VERSION}/${ZIP}`, `/v${VERSION}/SHASUMS256.txt`]));
      expect(r.err).toMatch(new RegExp(`downloading ${ZIP.replace(/\./g, "\\.")}: 100%`));
      // The stand-in ran, with the app's main script, from where install.js would have put it.
      const launched = readFileSync(record, "utf8").split("\n");
      expect(launched).toContain("launched");
      expect(launched).toContain(`OCW_ROOT=${root}`);
      expect(launched).toContain(`arg=${path.join(root, "out", "main", "main.js")}`);
      expect(readFileSync(path.join(root, "node_modules", "electron", "path.txt"), "utf8")).toBe("electron");
      expect(existsSync(path.join(root, "node_modules", "electron", "dist", "electron"))).toBe(true);
      // Kept in Electron's cache (a folder per URL directory, as @electron/get's Cache lays it out).
      const cached = readdirSync(cache, { recursive: true }).map(String);
      expect(cached.some((f) => f.endsWith(ZIP))).toBe(true);
      // Not the official build: said so, and the browser UI was not started.
      expect(r.err).toMatch(/not the official Electron/);
      expect(r.out).not.toMatch(/token=/);
      expect(r.err).not.toMatch(/starting the engine/);

      // A second start finds the binary: no request at all.
      m.requests.length = 0;
      const again = await npmStart(root, { ELECTRON_MIRROR: m.url, electron_config_cache: cache, STANDIN_RECORD: record });
      expect(again.code).toBe(0);
      expect(m.requests).toEqual([]);
    } finally {
      await stopDetachedEngine(state);
      await m.close();
    }
  }, 120_000);

  it("a zip that does not match the mirror's SHASUMS256.txt is not launched: browser UI, with the reason", async () => {
    const root = checkout();
    const cache = tempDir("electron-cache");
    const state = tempDir("npm-start-state");
    dirs.push(cache, state);
    const record = path.join(state, "standin.txt");
    const m = await mirror({ [ZIP]: zip, "SHASUMS256.txt": `${"0".repeat(64)} *${ZIP}\n` });
    try {
      const r = await npmStart(root, { ELECTRON_MIRROR: m.url, electron_config_cache: cache, STANDIN_RECORD: record, OCW_STATE_DIR: state }, (out) =>
        /token=/.test(out),
      );
      expect(r.err).toMatch(/fetching Electron failed: .*(checksum|match)/i);
      expect(existsSync(record)).toBe(false);
      expect(r.out.split("\n")[0]).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=/);
    } finally {
      await stopDetachedEngine(state);
      await m.close();
    }
  }, 120_000);

  it("a mirror that 404s: the browser UI from a supervised engine that keeps its port and token across kill -9 and ocw stop", async () => {
    const root = checkout();
    const cache = tempDir("electron-cache");
    const state = tempDir("npm-start-state");
    dirs.push(cache, state);
    const m = await mirror({});
    try {
      const env = { ELECTRON_MIRROR: m.url, electron_config_cache: cache, OCW_STATE_DIR: state };
      const r = await npmStart(root, env, (out) => /token=/.test(out));
      expect(r.err).toMatch(
        new RegExp(`fetching Electron failed: Response code 404 \\(Not Found\\) for ${m.url.replace(/\./g, "\\.")}v${VERSION.replace(/\./g, "\\.")}/`),
      );
      expect(r.err).toMatch(/browser/);
      const url = r.out.split("\n")[0]!.trim();
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=/);
      const first = readLock(state)!;
      expect(url).toBe(`http://127.0.0.1:${first.port}/?token=${first.token}`);
      // Supervised, as `ocw serve --background` is.
      const sup = supervisorOf(first);
      expect(sup && alive(sup)).toBe(true);

      // kill -9: back on the same port and token, and the foreground process says so.
      process.kill(first.pid, "SIGKILL");
      const back = await until(() => {
        const l = readLock(state);
        return l && l.instanceId !== first.instanceId ? l : null;
      });
      expect({ port: back.port, token: back.token }).toEqual({ port: first.port, token: first.token });
      expect(await healthy(back)).toBe(true);

      // ocw stop ends engine and supervisor; the foreground process notices and exits.
      const stop = spawnSync(process.execPath, [BUNDLE, "stop"], { env: { ...process.env, OCW_STATE_DIR: state }, encoding: "utf8" });
      expect(stop.stderr).toMatch(/engine stopped/);
      await until(() => (r.proc.exitCode !== null ? true : null));
      expect(lastLock(state)).toBeNull();

      // npm start again: the same URL, so a tab left open reconnects.
      const again = await npmStart(root, env, (out) => /token=/.test(out));
      expect(again.out.split("\n")[0]!.trim()).toBe(url);
    } finally {
      await stopDetachedEngine(state);
      await m.close();
    }
  }, 120_000);
});

async function until<T>(f: () => T | null | false | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = f();
    if (v) return v;
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 100));
  }
}
