/**
 * Getting llama-server when none is found: the pinned llama.cpp release for the platform (CUDA / Vulkan / Metal /
 * CPU variant chosen from the hardware, with fallback), downloaded with progress and checked against its pinned
 * sha256, unpacked into `<state>/llama/<tag>-<variant>/`; on Linux + NVIDIA a CUDA source build when nvcc is here
 * (scripts/build-llama-server.sh, GGML_CUDA=1). `OCW_LLAMA_RELEASES_URL` lists a mirror's (or a test's) release.
 */
import { config } from "../config";
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { execa } from "execa";
import type { Gpu } from "../hardware";
import { downloadFile, type DownloadProgress, SetupError } from "../models";
import { projectRoot } from "../paths";
import { BodyTooLarge, readJsonBounded } from "../net";

/** The most read of a GitHub release's JSON (tens of KiB with every asset). */
const RELEASE_MAX_BYTES = 8 * 1024 * 1024;

interface ReleaseAsset {
  name: string;
  url: string;
  size: number | null;
  sha256: string | null;
}

export interface Release {
  tag: string;
  assets: ReleaseAsset[];
}

type Variant = "cuda" | "vulkan" | "metal" | "rocm" | "cpu";

/**
 * The llama.cpp release setup installs: pinned, never `latest` (an auto-updated build changed behaviour under Jan's
 * users). Every asset's sha256 is pinned here; a download that does not match is deleted and refused. Source of the
 * hashes: the GitHub release API's per-asset digests of b9631 as recorded (and re-hashed after download) in
 * SubtitleEdit/subtitleedit#11615 (2026-06-14) — re-check them when bumping the tag. llama.cpp publishes no Linux
 * CUDA build: Linux + NVIDIA gets a CUDA source build (scripts/build-llama-server.sh, GGML_CUDA=1) when `nvcc` is
 * here, else the Vulkan build, planned as Vulkan. OCW_LLAMA_TAG installs another tag (its assets must carry the
 * release's own sha256 digests); OCW_LLAMA_RELEASES_URL lists a mirror's (or a test's) release JSON.
 */
export const LLAMA_CPP_PIN = {
  tag: "b9631",
  sha256: {
    "llama-b9631-bin-ubuntu-x64.tar.gz": "50310eb22203feea9555a397c7a4cdf8a5e56992fced78fb42f4e01998a10e9a",
    "llama-b9631-bin-ubuntu-vulkan-x64.tar.gz": "1231ece844b6244a7c5d0848351829e0e498c04a7c9d76f2320673b745bb601a",
    "llama-b9631-bin-ubuntu-arm64.tar.gz": "75375d17ad786b8fec6e3174addae1bbbe38146c516a84edb935d705232d8a29",
    "llama-b9631-bin-ubuntu-vulkan-arm64.tar.gz": "22f07bbc77ac644375bd624387bb7de2f5f2a3064f473948c4dbc403d2ce3a4e",
    "llama-b9631-bin-macos-arm64.tar.gz": "b7854a7b018ead1ced816f5b14c03fe01ccdab92165a979d7aa62060a0bdb33c",
    "llama-b9631-bin-macos-x64.tar.gz": "a36772608ce75ff836a1a0f383ee5a5226c1fb822ff73aa5babf4ee08f2a67d0",
    "llama-b9631-bin-win-cpu-x64.zip": "e9e8207067fda14779cc2fb93b247ebc6b957ae9e91a93ac0e3d02327ad9041f",
    "llama-b9631-bin-win-vulkan-x64.zip": "1a83d4a49dfdefa7dff73abfead4f2f8971525722bb175936e6957c5a5f44bcd",
    "llama-b9631-bin-win-cuda-12.4-x64.zip": "7e87a20889f0a6988b7c6d566264d5dc88bdce031bbc62dff57b6792838100af",
  } as Record<string, string>,
};

const DOWNLOAD = "https://github.com/ggml-org/llama.cpp/releases/download";

/**
 * The release to install: the pinned tag's assets with their pinned sha256 (no API call), or — with
 * OCW_LLAMA_RELEASES_URL — that listing, each pinned asset's hash still the pin's (a listing's digest that
 * disagrees with the pin loses), others with the listing's own digest.
 */
export async function pinnedRelease(env: NodeJS.ProcessEnv = process.env, fetchImpl: typeof fetch = fetch): Promise<Release> {
  const tag = config(env).OCW_LLAMA_TAG || LLAMA_CPP_PIN.tag;
  const pins = tag === LLAMA_CPP_PIN.tag ? LLAMA_CPP_PIN.sha256 : {};
  const url = config(env).OCW_LLAMA_RELEASES_URL ?? (tag === LLAMA_CPP_PIN.tag ? null : `https://api.github.com/repos/ggml-org/llama.cpp/releases/tags/${tag}`);
  if (!url) return { tag, assets: Object.entries(pins).map(([name, sha256]) => ({ name, url: `${DOWNLOAD}/${tag}/${name}`, size: null, sha256 })) };
  const res = await fetchImpl(url, { headers: { accept: "application/vnd.github+json" } });
  if (!res.ok)
    throw new SetupError(
      "runtime",
      `cannot list llama.cpp release ${tag} (${url} → HTTP ${res.status}); build from source with scripts/build-llama-server.sh`,
      { tag, url, status: res.status },
      "unavailable",
    );
  // A release's listing is tens of KiB: read 8 MiB at most (a larger answer is a coded error, not read whole).
  const j = await readJsonBounded<{ tag_name: string; assets: { name: string; browser_download_url: string; size?: number; digest?: string }[] }>(
    res,
    url,
    RELEASE_MAX_BYTES,
  ).catch((e: unknown) => {
    throw new SetupError(
      "runtime",
      e instanceof BodyTooLarge
        ? `${url} answered more than ${RELEASE_MAX_BYTES / 1024 / 1024} MiB for llama.cpp release ${tag}: not read; build from source with scripts/build-llama-server.sh`
        : `cannot read llama.cpp release ${tag} from ${url} (${(e as Error).message})`,
      { tag, url, maxBytes: RELEASE_MAX_BYTES },
      "unavailable",
    );
  });
  if (!j || typeof j.tag_name !== "string" || !Array.isArray(j.assets))
    throw new SetupError(
      "runtime",
      `${url} did not answer a GitHub release for ${tag}; build from source with scripts/build-llama-server.sh`,
      { tag, url },
      "unavailable",
    );
  const relPins = j.tag_name === LLAMA_CPP_PIN.tag ? LLAMA_CPP_PIN.sha256 : {};
  return {
    tag: j.tag_name,
    assets: j.assets.map((a) => ({
      name: a.name,
      url: a.browser_download_url,
      size: a.size ?? null,
      sha256: relPins[a.name] ?? (a.digest?.startsWith("sha256:") ? a.digest.slice(7) : null),
    })),
  };
}

/** Where nvcc is (OCW_NVCC, PATH, CUDA_HOME, /usr/local/cuda), or null: a CUDA source build needs it. OCW_NVCC="" = none. */
export function findNvcc(env: NodeJS.ProcessEnv = process.env): string | null {
  const given = config(env).OCW_NVCC;
  if (given !== undefined) return given && existsSync(given) ? given : null;
  const cands = [
    ...(env.PATH ?? "")
      .split(path.delimiter)
      .filter(Boolean)
      .map((d) => path.join(d, "nvcc")),
    ...(env.CUDA_HOME ? [path.join(env.CUDA_HOME, "bin", "nvcc")] : []),
    "/usr/local/cuda/bin/nvcc",
  ];
  return cands.find((c) => existsSync(c)) ?? null;
}

/** Variants to try, best first, for this platform and these GPUs. */
export function variantsFor(platform: NodeJS.Platform, arch: string, gpus: Pick<Gpu, "vendor">[], o: { nvcc?: boolean } = {}): Variant[] {
  const v: Variant[] = [];
  if (platform === "darwin") return arch === "arm64" ? ["metal", "cpu"] : ["cpu"];
  // Linux has no prebuilt CUDA build: CUDA only as a source build, and only where nvcc can compile it
  if (gpus.some((g) => g.vendor === "nvidia")) v.push(...(platform === "win32" || o.nvcc ? ["cuda" as const] : []), "vulkan");
  if (gpus.some((g) => g.vendor === "amd")) v.push(platform === "win32" ? "rocm" : "vulkan", "vulkan");
  if (gpus.some((g) => g.vendor === "intel" || g.vendor === "other")) v.push("vulkan");
  v.push("cpu");
  return [...new Set(v)];
}

/**
 * The llama.cpp device names a plan should use before any llama-server is installed: those of the build setup will
 * install first (variantsFor), with a note when that is not the GPU's own API. After the runtime phase the installed
 * build's `--list-devices` replaces this guess (the start job plans again).
 */
export function expectedLlamaBackend(
  platform: string,
  gpus: Pick<Gpu, "vendor">[],
  nvcc?: boolean,
): { prefix: Record<string, string>; variant: Variant; note: string | null } {
  const first = variantsFor(platform as NodeJS.Platform, process.arch, gpus, { nvcc: nvcc ?? !!findNvcc() })[0]!;
  if (first === "vulkan") {
    const nv = gpus.some((g) => g.vendor === "nvidia");
    return {
      prefix: { nvidia: "Vulkan", amd: "Vulkan", intel: "Vulkan", other: "Vulkan" },
      variant: first,
      note: nv
        ? "no llama-server here yet: llama.cpp publishes no Linux CUDA build and nvcc is not installed, so setup installs the Vulkan build and plans its devices (Vulkan0 …); install the CUDA toolkit (nvcc) for a CUDA source build, or pass --llama-server"
        : null,
    };
  }
  return { prefix: {}, variant: first, note: null };
}

/**
 * Picks the asset for a variant from the release's names, e.g. llama-b7000-bin-ubuntu-x64.zip (CPU),
 * -ubuntu-vulkan-x64, -win-cuda-12.4-x64 (+ cudart-…), -macos-arm64 (Metal is built in).
 */
export function pickAsset(rel: Release, platform: NodeJS.Platform, arch: string, variant: Variant): ReleaseAsset | null {
  const os = platform === "darwin" ? "macos" : platform === "win32" ? "win" : "ubuntu";
  const a = arch === "arm64" ? "arm64" : "x64";
  const bins = rel.assets.filter(
    (x) => /^llama-.*-bin-/.test(x.name) && /\.(zip|tar\.gz|tgz)$/.test(x.name) && x.name.includes(`-${os}-`) && x.name.includes(a),
  );
  const has = (x: ReleaseAsset, k: string) => x.name.includes(`-${k}`);
  const special = ["cuda", "vulkan", "hip", "rocm", "sycl", "opencl", "kompute", "openvino", "musa", "cann"];
  switch (variant) {
    case "cuda":
      return bins.filter((x) => has(x, "cuda")).sort((x, y) => y.name.localeCompare(x.name))[0] ?? null;
    case "vulkan":
      return bins.find((x) => has(x, "vulkan")) ?? null;
    case "rocm":
      return bins.find((x) => has(x, "hip") || has(x, "rocm")) ?? null;
    case "metal":
    case "cpu":
      return bins.find((x) => !special.some((k) => x.name.includes(`-${k}`))) ?? null;
  }
}

async function extract(archive: string, dest: string): Promise<void> {
  mkdirSync(dest, { recursive: true });
  const tries: [string, string[]][] = archive.endsWith(".zip")
    ? [
        ["unzip", ["-q", "-o", archive, "-d", dest]],
        ["bsdtar", ["-xf", archive, "-C", dest]],
        ["python3", ["-m", "zipfile", "-e", archive, dest]],
        ["tar", ["-xf", archive, "-C", dest]],
      ]
    : [["tar", ["-xzf", archive, "-C", dest]]];
  const errors: string[] = [];
  for (const [cmd, args] of tries) {
    const r = await execa(cmd, args, { reject: false, stdin: "ignore" });
    if (r.exitCode === 0) return;
    errors.push(`${cmd}: ${String(r.stderr || r.message).split("\n")[0]}`);
  }
  throw new SetupError("runtime", `cannot unpack ${path.basename(archive)} (${errors.join("; ")})`, { archive }, "unavailable");
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

interface InstallResult {
  bin: string;
  variant: Variant;
  tag: string;
  asset: string;
  /** sha256: the download matched its pinned hash; installed: found from an earlier verified install; source: built here. */
  verified: "sha256" | "installed" | "source";
}

/** scripts/build-llama-server.sh of this install (OCW_LLAMA_BUILD_SCRIPT overrides it), or null. */
export function buildScript(env: NodeJS.ProcessEnv = process.env): string | null {
  const given = config(env).OCW_LLAMA_BUILD_SCRIPT;
  if (given) return existsSync(given) ? given : null;
  try {
    const f = path.join(projectRoot(), "scripts", "build-llama-server.sh");
    return existsSync(f) ? f : null;
  } catch {
    return null;
  }
}

/** A CUDA llama-server built here from source (nvcc present): the script's last stdout line is its path. */
async function buildCuda(env: NodeJS.ProcessEnv, onLine?: (line: string) => void): Promise<string> {
  const script = buildScript(env);
  if (!script) throw new SetupError("runtime", "scripts/build-llama-server.sh is not part of this install", {}, "unavailable");
  const p = execa("bash", [script], { reject: false, stdin: "ignore", env: { ...env, GGML_CUDA: "1" }, timeout: 3 * 3600_000 });
  p.stderr?.on("data", (d: Buffer) => {
    for (const l of String(d).split("\n")) if (l.trim()) onLine?.(l.trim());
  });
  const r = await p;
  const bin = String(r.stdout ?? "")
    .trim()
    .split("\n")
    .at(-1)
    ?.trim();
  if (r.exitCode !== 0 || !bin || !existsSync(bin))
    throw new SetupError(
      "runtime",
      `the CUDA source build failed (${
        String(r.stderr ?? "")
          .trim()
          .split("\n")
          .at(-1) ?? `exit ${r.exitCode}`
      })`,
      { exitCode: r.exitCode ?? null },
      "unavailable",
    );
  return bin;
}

/**
 * Installs the best variant for this machine whose `llama-server --version` runs here (a CUDA build without a driver
 * fails that check and the next variant is tried): the pinned release's asset, its sha256 checked against the pin
 * (an asset with no pinned or published hash is refused), or on Linux + NVIDIA with nvcc a CUDA source build.
 */
export async function installPrebuilt(o: {
  root: string;
  platform?: NodeJS.Platform;
  arch?: string;
  gpus: Pick<Gpu, "vendor">[];
  release?: Release;
  onProgress?: (asset: string, p: DownloadProgress) => void;
  /** A line of the source build's log (it takes minutes). */
  onBuildLine?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
  /** Test seam: whether nvcc is here (default: looked up). */
  nvcc?: boolean;
}): Promise<InstallResult> {
  const env = o.env ?? process.env;
  const platform = o.platform ?? process.platform;
  const arch = o.arch ?? process.arch;
  const nvcc = o.nvcc ?? !!findNvcc(env);
  let rel: Release | null = o.release ?? null;
  const problems: string[] = [];
  for (const variant of variantsFor(platform, arch, o.gpus, { nvcc })) {
    rel ??= await pinnedRelease(env);
    const asset = pickAsset(rel, platform, arch, variant);
    if (!asset) {
      if (variant === "cuda" && platform === "linux" && nvcc) {
        try {
          const bin = await buildCuda(env, o.onBuildLine);
          return { bin, variant, tag: "source", asset: "scripts/build-llama-server.sh (GGML_CUDA=1)", verified: "source" };
        } catch (e) {
          problems.push(`cuda: ${(e as Error).message}`);
          continue;
        }
      }
      problems.push(`${variant}: no asset`);
      continue;
    }
    const dir = path.join(o.root, `${rel.tag}-${variant}`);
    let bin = existsSync(dir) ? findBinary(dir, "llama-server") : null;
    let verified: InstallResult["verified"] = "installed";
    if (!bin) {
      if (!asset.sha256) {
        problems.push(`${variant}: ${asset.name} has no pinned or published sha256, so it cannot be verified`);
        continue;
      }
      const archive = path.join(o.root, "downloads", asset.name);
      try {
        await downloadFile({ url: asset.url, dest: archive, expectedSize: asset.size, sha256: asset.sha256, onProgress: (p) => o.onProgress?.(asset.name, p) });
      } catch (e) {
        problems.push(`${variant}: ${asset.name}: ${(e as Error).message}`);
        continue;
      }
      verified = "sha256";
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
    const v = await execa(bin, ["--version"], {
      reject: false,
      timeout: 20_000,
      stdin: "ignore",
      env: { ...process.env, LD_LIBRARY_PATH: [path.dirname(bin), process.env.LD_LIBRARY_PATH].filter(Boolean).join(":") },
    });
    if (v.exitCode === 0) return { bin, variant, tag: rel.tag, asset: asset.name, verified };
    problems.push(`${variant}: ${asset.name} does not run here (${String(v.stderr).split("\n")[0]})`);
  }
  throw new SetupError(
    "runtime",
    `no llama-server build works here (${problems.join("; ")}); build from source with scripts/build-llama-server.sh`,
    { problems: problems.length },
    "unavailable",
  );
}
