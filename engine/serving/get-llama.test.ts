import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectedLlamaBackend, installPrebuilt, LLAMA_CPP_PIN, pickAsset, pinnedRelease, type Release, variantsFor } from "./get-llama";
import { findLlamaServer } from "./llama-server";

const names = [
  "llama-b7000-bin-ubuntu-x64.tar.gz",
  "llama-b7000-bin-ubuntu-vulkan-x64.tar.gz",
  "llama-b7000-bin-win-cuda-12.4-x64.zip",
  "llama-b7000-bin-win-cpu-x64.zip",
  "llama-b7000-bin-macos-arm64.zip",
  "cudart-llama-bin-win-cuda-12.4-x64.zip",
  "llama-b7000-bin-ubuntu-cuda-x64.tar.gz",
];
const rel = (base = "http://x"): Release => ({ tag: "b7000", assets: names.map((n) => ({ name: n, url: `${base}/${n}`, size: null, sha256: null })) });

describe("release asset choice", () => {
  it("variants follow the hardware, CPU last", () => {
    // llama.cpp publishes no Linux CUDA build: CUDA only as a source build where nvcc is, else Vulkan
    expect(variantsFor("linux", "x64", [{ vendor: "nvidia" }])).toEqual(["vulkan", "cpu"]);
    expect(variantsFor("linux", "x64", [{ vendor: "nvidia" }], { nvcc: true })).toEqual(["cuda", "vulkan", "cpu"]);
    expect(variantsFor("win32", "x64", [{ vendor: "nvidia" }])).toEqual(["cuda", "vulkan", "cpu"]);
    expect(variantsFor("linux", "x64", [{ vendor: "amd" }])).toEqual(["vulkan", "cpu"]);
    expect(variantsFor("darwin", "arm64", [])).toEqual(["metal", "cpu"]);
    expect(variantsFor("linux", "x64", [])).toEqual(["cpu"]);
  });
  it("picks by platform, arch and variant", () => {
    expect(pickAsset(rel(), "linux", "x64", "cpu")?.name).toBe("llama-b7000-bin-ubuntu-x64.tar.gz");
    expect(pickAsset(rel(), "linux", "x64", "vulkan")?.name).toBe("llama-b7000-bin-ubuntu-vulkan-x64.tar.gz");
    expect(pickAsset(rel(), "win32", "x64", "cuda")?.name).toBe("llama-b7000-bin-win-cuda-12.4-x64.zip");
    expect(pickAsset(rel(), "darwin", "arm64", "metal")?.name).toBe("llama-b7000-bin-macos-arm64.zip");
    expect(pickAsset(rel(), "linux", "arm64", "cpu")).toBeNull();
  });
});

describe("installPrebuilt against a local release server", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-rel-"));
  const files: Record<string, Buffer> = {};
  let server: http.Server;
  let base = "";
  beforeAll(async () => {
    // a release-like tarball per variant: build/bin/llama-server (CUDA's fails like a build without a driver)
    for (const [name, ok] of [
      ["llama-b7000-bin-ubuntu-cuda-x64.tar.gz", false],
      ["llama-b7000-bin-ubuntu-x64.tar.gz", true],
    ] as const) {
      const src = path.join(dir, `src-${ok}`, "build", "bin");
      mkdirSync(src, { recursive: true });
      writeFileSync(
        path.join(src, "llama-server"),
        ok ? "#!/bin/sh\necho 'version: 7000 (fake)'\n" : "#!/bin/sh\necho 'CUDA driver version is insufficient' >&2\nexit 1\n",
      );
      chmodSync(path.join(src, "llama-server"), 0o755);
      execFileSync("tar", ["-czf", path.join(dir, name), "-C", path.join(dir, `src-${ok}`), "build"]);
      files[name] = readFileSync(path.join(dir, name));
    }
    server = http.createServer((req, res) => {
      const n = decodeURIComponent((req.url ?? "").slice(1));
      if (n === "releases/latest") {
        res.setHeader("content-type", "application/json");
        return res.end(
          JSON.stringify({
            tag_name: "b7000",
            assets: Object.entries(files).map(([name, b]) => ({
              name,
              browser_download_url: `${base}/${name}`,
              size: b.length,
              digest: `sha256:${createHash("sha256").update(b).digest("hex")}`,
            })),
          }),
        );
      }
      const b = files[n];
      if (!b) {
        res.statusCode = 404;
        return res.end();
      }
      res.setHeader("content-length", String(b.length));
      res.end(b);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("lists the release, verifies the checksum, falls back from a CUDA build that cannot run to the CPU build", async () => {
    const env = { OCW_LLAMA_RELEASES_URL: `${base}/releases/latest` };
    const r = await pinnedRelease(env);
    expect(r.assets[0]!.sha256).toMatch(/^[0-9a-f]{64}$/);
    const progress: string[] = [];
    const out = await installPrebuilt({
      root: path.join(dir, "install"),
      platform: "linux",
      arch: "x64",
      gpus: [{ vendor: "nvidia" }],
      release: r,
      onProgress: (a) => progress.push(a),
      nvcc: true,
    });
    expect(out).toMatchObject({ variant: "cpu", tag: "b7000", asset: "llama-b7000-bin-ubuntu-x64.tar.gz", verified: "sha256" });
    expect(execFileSync(out.bin, ["--version"]).toString()).toMatch(/7000/);
    expect(progress).toContain("llama-b7000-bin-ubuntu-cuda-x64.tar.gz");
  });
  it("an installed prebuilt is found again, offline and without PATH (<state>/llama/<tag>-<variant>/)", async () => {
    const state = path.join(dir, "state");
    const r = await pinnedRelease({ OCW_LLAMA_RELEASES_URL: `${base}/releases/latest` });
    const out = await installPrebuilt({ root: path.join(state, "llama"), platform: "linux", arch: "x64", gpus: [], release: r });
    expect(findLlamaServer(undefined, { PATH: "", OCW_LLAMA_CACHE: path.join(dir, "no-cache"), OCW_STATE_DIR: state })).toBe(out.bin);
    expect(findLlamaServer(undefined, { PATH: "", OCW_LLAMA_CACHE: path.join(dir, "no-cache"), OCW_STATE_DIR: path.join(dir, "empty-state") })).toBeNull();
  });
  it("says what to do when nothing fits the platform", async () => {
    await expect(installPrebuilt({ root: path.join(dir, "i2"), platform: "linux", arch: "arm64", gpus: [], release: rel(base) })).rejects.toThrow(
      /build from source/,
    );
  });
  it("an asset with no pinned or published sha256 is refused, not installed unverified", async () => {
    await expect(installPrebuilt({ root: path.join(dir, "i3"), platform: "linux", arch: "x64", gpus: [], release: rel(base) })).rejects.toThrow(
      /no pinned or published sha256/,
    );
  });
  it("the pinned tag's hash wins over a listing's digest: a tampered asset is refused and deleted", async () => {
    // a mirror listing the pinned tag with other bytes (and a digest that matches those bytes)
    const name = `llama-${LLAMA_CPP_PIN.tag}-bin-ubuntu-x64.tar.gz`;
    const bad = files["llama-b7000-bin-ubuntu-x64.tar.gz"]!;
    const listing = {
      tag: LLAMA_CPP_PIN.tag,
      assets: [{ name, url: `${base}/llama-b7000-bin-ubuntu-x64.tar.gz`, size: bad.length, sha256: createHash("sha256").update(bad).digest("hex") }],
    };
    const pinnedListing = await pinnedRelease(
      { OCW_LLAMA_RELEASES_URL: "data:," },
      (async () =>
        new Response(
          JSON.stringify({
            tag_name: listing.tag,
            assets: listing.assets.map((a) => ({ name: a.name, browser_download_url: a.url, size: a.size, digest: `sha256:${a.sha256}` })),
          }),
        )) as unknown as typeof fetch,
    );
    expect(pinnedListing.assets[0]!.sha256).toBe(LLAMA_CPP_PIN.sha256[name]);
    const root = path.join(dir, "i4");
    await expect(installPrebuilt({ root, platform: "linux", arch: "x64", gpus: [], release: pinnedListing })).rejects.toThrow(/sha256|checksum/i);
    expect(existsSync(path.join(root, `${LLAMA_CPP_PIN.tag}-cpu`))).toBe(false);
  });
  it("without a mirror the pinned release needs no API call: GitHub's download URLs with the pinned hashes", async () => {
    let called = 0;
    const r = await pinnedRelease({}, (async () => {
      called++;
      return new Response("{}");
    }) as unknown as typeof fetch);
    expect(called).toBe(0);
    expect(r.tag).toBe(LLAMA_CPP_PIN.tag);
    expect(pickAsset(r, "linux", "x64", "vulkan")).toMatchObject({
      url: `https://github.com/ggml-org/llama.cpp/releases/download/${LLAMA_CPP_PIN.tag}/llama-${LLAMA_CPP_PIN.tag}-bin-ubuntu-vulkan-x64.tar.gz`,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(pickAsset(r, "linux", "x64", "cuda")).toBeNull();
  });
  it("Linux + NVIDIA with nvcc: a CUDA source build (GGML_CUDA=1), not the Vulkan download", async () => {
    const script = path.join(dir, "fake-build.sh");
    const built = path.join(dir, "built", "llama-server");
    mkdirSync(path.dirname(built), { recursive: true });
    writeFileSync(built, "#!/bin/sh\necho 'version: 1 (cuda)'\n");
    chmodSync(built, 0o755);
    writeFileSync(script, `#!/bin/sh\necho "GGML_CUDA=$GGML_CUDA" > ${path.join(dir, "build-env.txt")}\necho building >&2\necho ${built}\n`);
    const lines: string[] = [];
    const out = await installPrebuilt({
      root: path.join(dir, "i5"),
      platform: "linux",
      arch: "x64",
      gpus: [{ vendor: "nvidia" }],
      release: { ...rel(base), assets: rel(base).assets.filter((a) => !a.name.includes("ubuntu-cuda")) },
      nvcc: true,
      env: { ...process.env, OCW_LLAMA_BUILD_SCRIPT: script },
      onBuildLine: (l) => lines.push(l),
    });
    expect(out).toMatchObject({ variant: "cuda", verified: "source", bin: built });
    expect(readFileSync(path.join(dir, "build-env.txt"), "utf8")).toMatch(/GGML_CUDA=1/);
    expect(lines).toContain("building");
  });
  it("before any runtime is installed, Linux + NVIDIA without nvcc is planned as Vulkan", () => {
    expect(expectedLlamaBackend("linux", [{ vendor: "nvidia" }], false)).toMatchObject({ variant: "vulkan", prefix: { nvidia: "Vulkan" } });
    expect(expectedLlamaBackend("linux", [{ vendor: "nvidia" }], true)).toMatchObject({ variant: "cuda", prefix: {} });
  });
});
