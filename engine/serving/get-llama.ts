/**
 * Getting llama-server when none is found: the official prebuilt release for the platform (CUDA / Vulkan / Metal /
 * CPU variant chosen from the hardware, with fallback), downloaded with progress and checksum, unpacked into
 * `<state>/llama/<tag>-<variant>/`. The release list comes from GitHub's API (`OCW_LLAMA_RELEASES_URL` overrides it,
 * e.g. a mirror or a test server). The source build is scripts/build-llama-server.sh.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { execa } from "execa";
import type { Gpu } from "../hardware/parse";
import { downloadFile, type DownloadProgress } from "../models/download";

export interface ReleaseAsset {
  name: string;
  url: string;
  size: number | null;
  sha256: string | null;
}

export interface Release {
  tag: string;
  assets: ReleaseAsset[];
}

export type Variant = "cuda" | "vulkan" | "metal" | "rocm" | "cpu";

const RELEASES = "https://api.github.com/repos/ggml-org/llama.cpp/releases/latest";

export async function latestRelease(env: NodeJS.ProcessEnv = process.env, fetchImpl: typeof fetch = fetch): Promise<Release> {
  const url = env.OCW_LLAMA_RELEASES_URL ?? RELEASES;
  const res = await fetchImpl(url, { headers: { accept: "application/vnd.github+json" } });
  if (!res.ok) throw new Error(`cannot list llama.cpp releases (${url} → HTTP ${res.status}); build from source with scripts/build-llama-server.sh`);
  const j = (await res.json()) as { tag_name: string; assets: { name: string; browser_download_url: string; size?: number; digest?: string }[] };
  return {
    tag: j.tag_name,
    assets: j.assets.map((a) => ({ name: a.name, url: a.browser_download_url, size: a.size ?? null, sha256: a.digest?.startsWith("sha256:") ? a.digest.slice(7) : null })),
  };
}

/** Variants to try, best first, for this platform and these GPUs. */
export function variantsFor(platform: NodeJS.Platform, arch: string, gpus: Pick<Gpu, "vendor">[]): Variant[] {
  const v: Variant[] = [];
  if (platform === "darwin") return arch === "arm64" ? ["metal", "cpu"] : ["cpu"];
  if (gpus.some((g) => g.vendor === "nvidia")) v.push("cuda", "vulkan");
  if (gpus.some((g) => g.vendor === "amd")) v.push(platform === "win32" ? "rocm" : "vulkan", "vulkan");
  if (gpus.some((g) => g.vendor === "intel" || g.vendor === "other")) v.push("vulkan");
  v.push("cpu");
  return [...new Set(v)];
}

/**
 * Picks the asset for a variant from the release's names, e.g. llama-b7000-bin-ubuntu-x64.zip (CPU),
 * -ubuntu-vulkan-x64, -win-cuda-12.4-x64 (+ cudart-…), -macos-arm64 (Metal is built in).
 */
export function pickAsset(rel: Release, platform: NodeJS.Platform, arch: string, variant: Variant): ReleaseAsset | null {
  const os = platform === "darwin" ? "macos" : platform === "win32" ? "win" : "ubuntu";
  const a = arch === "arm64" ? "arm64" : "x64";
  const bins = rel.assets.filter((x) => /^llama-.*-bin-/.test(x.name) && /\.(zip|tar\.gz|tgz)$/.test(x.name) && x.name.includes(`-${os}-`) && x.name.includes(a));
  const has = (x: ReleaseAsset, k: string) => x.name.includes(`-${k}`);
  const special = ["cuda", "vulkan", "hip", "rocm", "sycl", "opencl", "kompute", "openvino", "musa", "cann"];
  switch (variant) {
    case "cuda": return bins.filter((x) => has(x, "cuda")).sort((x, y) => y.name.localeCompare(x.name))[0] ?? null;
    case "vulkan": return bins.find((x) => has(x, "vulkan")) ?? null;
    case "rocm": return bins.find((x) => has(x, "hip") || has(x, "rocm")) ?? null;
    case "metal":
    case "cpu": return bins.find((x) => !special.some((k) => x.name.includes(`-${k}`))) ?? null;
  }
}

async function extract(archive: string, dest: string): Promise<void> {
  mkdirSync(dest, { recursive: true });
  const tries: [string, string[]][] = archive.endsWith(".zip")
    ? [["unzip", ["-q", "-o", archive, "-d", dest]], ["bsdtar", ["-xf", archive, "-C", dest]], ["python3", ["-m", "zipfile", "-e", archive, dest]], ["tar", ["-xf", archive, "-C", dest]]]
    : [["tar", ["-xzf", archive, "-C", dest]]];
  const errors: string[] = [];
  for (const [cmd, args] of tries) {
    const r = await execa(cmd, args, { reject: false, stdin: "ignore" });
    if (r.exitCode === 0) return;
    errors.push(`${cmd}: ${String(r.stderr || r.message).split("\n")[0]}`);
  }
  throw new Error(`cannot unpack ${path.basename(archive)} (${errors.join("; ")})`);
}

function findBinary(dir: string, name: string, depth = 0): string | null {
  if (depth > 4) return null;
  for (const e of readdirSync(dir)) {
    const p = path.join(dir, e);
    if (e === name || e === `${name}.exe`) return p;
    if (statSync(p).isDirectory()) {
      const f = findBinary(p, name, depth + 1);
      if (f) return f;
    }
  }
  return null;
}

export interface InstallResult {
  bin: string;
  variant: Variant;
  tag: string;
  asset: string;
  verified: "sha256" | "size" | "none";
}

/**
 * Downloads and unpacks the best variant that exists in the release and whose `llama-server --version` runs here
 * (a CUDA build without a driver fails that check and the next variant is tried).
 */
export async function installPrebuilt(o: {
  root: string;
  platform?: NodeJS.Platform;
  arch?: string;
  gpus: Pick<Gpu, "vendor">[];
  release?: Release;
  onProgress?: (asset: string, p: DownloadProgress) => void;
  env?: NodeJS.ProcessEnv;
}): Promise<InstallResult> {
  const platform = o.platform ?? process.platform;
  const arch = o.arch ?? process.arch;
  const rel = o.release ?? (await latestRelease(o.env));
  const problems: string[] = [];
  for (const variant of variantsFor(platform, arch, o.gpus)) {
    const asset = pickAsset(rel, platform, arch, variant);
    if (!asset) {
      problems.push(`${variant}: no asset`);
      continue;
    }
    const dir = path.join(o.root, `${rel.tag}-${variant}`);
    let bin = existsSync(dir) ? findBinary(dir, "llama-server") : null;
    let verified: InstallResult["verified"] = "none";
    if (!bin) {
      const archive = path.join(o.root, "downloads", asset.name);
      const d = await downloadFile({ url: asset.url, dest: archive, expectedSize: asset.size, sha256: asset.sha256, onProgress: (p) => o.onProgress?.(asset.name, p) });
      verified = d.verified;
      const tmp = `${dir}.tmp.${process.pid}`;
      rmSync(tmp, { recursive: true, force: true });
      await extract(archive, tmp);
      rmSync(dir, { recursive: true, force: true });
      renameSync(tmp, dir);
      bin = findBinary(dir, "llama-server");
      if (!bin) {
        problems.push(`${variant}: ${asset.name} holds no llama-server`);
        continue;
      }
    }
    const v = await execa(bin, ["--version"], { reject: false, timeout: 20_000, stdin: "ignore", env: { ...process.env, LD_LIBRARY_PATH: [path.dirname(bin), process.env.LD_LIBRARY_PATH].filter(Boolean).join(":") } });
    if (v.exitCode === 0) return { bin, variant, tag: rel.tag, asset: asset.name, verified };
    problems.push(`${variant}: ${asset.name} does not run here (${String(v.stderr).split("\n")[0]})`);
  }
  throw new Error(`no prebuilt llama-server works here (${problems.join("; ")}); build from source with scripts/build-llama-server.sh`);
}
