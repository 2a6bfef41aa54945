/**
 * Hardware detection: GPUs (NVIDIA, AMD, Apple, Windows registry), CPU and RAM, and — when a llama.cpp binary
 * is present — `llama-server --list-devices` as confirmation of what llama.cpp itself will see.
 */
import { config } from "../config";
import { readFileSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import {
  appleGpuBudget,
  type DeviceBudget,
  type Gpu,
  type ListedDevice,
  NVIDIA_SMI_ARGS,
  parseAmdSysfs,
  parseListDevices,
  parseNvidiaSmi,
  parseRocmSmi,
  parseWindowsRegistry,
  type SysfsCard,
} from "./parse";
import { counted } from "../../shared/words";

interface RunResult {
  ok: boolean;
  /** The executable was not found. */
  missing: boolean;
  stdout: string;
  stderr: string;
  code: number | null;
}
export type Runner = (cmd: string, args: string[], timeoutMs: number) => Promise<RunResult>;

const defaultRunner: Runner = async (cmd, args, timeoutMs) => {
  try {
    const r = await execa(cmd, args, { timeout: timeoutMs, reject: false, stdin: "ignore", env: { ...process.env, LC_ALL: "C" } });
    const missing = (r as { code?: string }).code === "ENOENT" || /ENOENT/.test(String(r.message ?? ""));
    return { ok: r.exitCode === 0, missing, stdout: String(r.stdout ?? ""), stderr: String(r.stderr ?? ""), code: r.exitCode ?? null };
  } catch (err) {
    return { ok: false, missing: (err as NodeJS.ErrnoException).code === "ENOENT", stdout: "", stderr: String(err), code: null };
  }
};

interface Probe {
  name: string;
  ok: boolean;
  ms: number;
  note: string;
}

export interface HardwareReport {
  platform: NodeJS.Platform;
  arch: string;
  cpu: { model: string; cores: number; physicalCores: number | null };
  ram: { totalBytes: number; freeBytes: number };
  gpus: Gpu[];
  /** What llama-server --list-devices reported (null when no binary was given or it failed). */
  llamaDevices: ListedDevice[] | null;
  probes: Probe[];
  problems: string[];
  ms: number;
}

interface DetectOptions {
  platform?: NodeJS.Platform;
  run?: Runner;
  /** A llama-server binary to confirm with. */
  llamaServer?: string | null;
  sysfsRoot?: string;
  /** Skip systeminformation (tests). */
  cpuRam?: () => Promise<HardwareReport["cpu"] & { ram: HardwareReport["ram"] }>;
  /** Where the cgroup file system is mounted (default /sys/fs/cgroup), and this process's /proc/self/cgroup text (tests). */
  cgroupRoot?: string;
  procCgroup?: string;
}

const readText = (f: string): string | null => {
  try {
    return readFileSync(f, "utf8");
  } catch {
    return null;
  }
};
const statValue = (stat: string | null, key: string): number => Number(new RegExp(`^${key} (\\d+)$`, "m").exec(stat ?? "")?.[1] ?? 0);

/**
 * The memory limit of the cgroup this process (and so the llama-server it starts) runs in, and what the cgroup uses
 * less its inactive file cache (what the kernel reclaims first; the working set as kubelet and `docker stats` count
 * it) — or null when there is none. A container's limit (docker --memory, a pod's limits.memory) is invisible to
 * MemAvailable: planned on the machine's RAM, a CPU model is OOM-killed at load. cgroup v2 (memory.max) and v1
 * (memory.limit_in_bytes); the process's own cgroup directory, else the mount's root (a cgroup namespace shows the
 * container's cgroup there).
 */
function cgroupMemory(root = "/sys/fs/cgroup", self: string | null = readText("/proc/self/cgroup")): { limitBytes: number; usedBytes: number } | null {
  const lines = (self ?? "").split("\n");
  const v2 = lines.map((l) => /^0::(\/.*)$/.exec(l.trim())?.[1]).find((x) => x !== undefined);
  const v1 = lines.map((l) => /^\d+:(?:[^:]*,)?memory(?:,[^:]*)?:(\/.*)$/.exec(l.trim())?.[1]).find((x) => x !== undefined);
  const read = (dir: string, limitFile: string, usageFile: string, inactive: string) => {
    const limit = readText(path.join(dir, limitFile))?.trim();
    if (limit === undefined) return undefined;
    const n = Number(limit);
    // "max" (v2) or the page-rounded 2^63 (v1): no limit
    if (!Number.isFinite(n) || n <= 0 || n >= 2 ** 60) return null;
    const usage = Number(readText(path.join(dir, usageFile))?.trim() ?? 0) || 0;
    const used = Math.max(0, usage - statValue(readText(path.join(dir, "memory.stat")), inactive));
    return { limitBytes: n, usedBytes: used };
  };
  const tries: [string, string, string, string][] = [];
  if (v1 !== undefined)
    for (const d of [path.join(root, "memory", v1), path.join(root, "memory")])
      tries.push([d, "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"]);
  if (v2 !== undefined) for (const d of [path.join(root, v2), root]) tries.push([d, "memory.max", "memory.current", "inactive_file"]);
  for (const t of tries) {
    const r = read(...t);
    if (r !== undefined) return r;
  }
  return null;
}

async function cpuRamDefault(): Promise<HardwareReport["cpu"] & { ram: HardwareReport["ram"] }> {
  try {
    const si = await import("systeminformation");
    const [cpu, mem] = await Promise.all([si.cpu(), si.mem()]);
    return {
      model: `${cpu.manufacturer} ${cpu.brand}`.trim() || os.cpus()[0]?.model || "unknown",
      cores: cpu.cores || os.cpus().length,
      physicalCores: cpu.physicalCores || null,
      ram: { totalBytes: mem.total, freeBytes: mem.available || os.freemem() },
    };
  } catch {
    return {
      model: os.cpus()[0]?.model ?? "unknown",
      cores: os.cpus().length,
      physicalCores: null,
      ram: { totalBytes: os.totalmem(), freeBytes: os.freemem() },
    };
  }
}

async function readSysfs(root: string): Promise<SysfsCard[]> {
  const base = path.join(root, "class/drm");
  let names: string[];
  try {
    names = (await readdir(base)).filter((n) => /^card\d+$/.test(n));
  } catch {
    return [];
  }
  const rd = (card: string, f: string) =>
    readFile(path.join(base, card, "device", f), "utf8")
      .then((s) => s.trim())
      .catch(() => undefined);
  return Promise.all(
    names.map(async (card) => ({
      card,
      vendor: await rd(card, "vendor"),
      vramTotal: await rd(card, "mem_info_vram_total"),
      vramUsed: await rd(card, "mem_info_vram_used"),
      gttTotal: await rd(card, "mem_info_gtt_total"),
      gttUsed: await rd(card, "mem_info_gtt_used"),
      name: await rd(card, "product_name"),
    })),
  );
}

export async function detectHardware(opts: DetectOptions = {}): Promise<HardwareReport> {
  const t0 = performance.now();
  const platform = opts.platform ?? process.platform;
  const run = opts.run ?? defaultRunner;
  const probes: Probe[] = [];
  const problems: string[] = [];
  const gpus: Gpu[] = [];
  const probe = async (name: string, cmd: string, args: string[], timeout = 8000): Promise<RunResult> => {
    const t = performance.now();
    const r = await run(cmd, args, timeout);
    probes.push({
      name,
      ok: r.ok,
      ms: Math.round(performance.now() - t),
      note: r.missing ? "not installed" : r.ok ? "ok" : `exit ${r.code}: ${r.stderr.trim().split("\n")[0] ?? ""}`.slice(0, 200),
    });
    return r;
  };
  const cpuRamP = (opts.cpuRam ?? cpuRamDefault)();

  // NVIDIA (all platforms)
  const nv = await probe("nvidia-smi", "nvidia-smi", NVIDIA_SMI_ARGS);
  if (nv.ok) {
    const p = parseNvidiaSmi(nv.stdout);
    gpus.push(...p.items);
    problems.push(...p.problems);
  }

  if (platform === "linux") {
    const rocm = await probe("rocm-smi", "rocm-smi", ["--showmeminfo", "vram", "--showproductname", "--json"]);
    let amd: Gpu[] = [];
    if (rocm.ok) {
      const p = parseRocmSmi(rocm.stdout);
      amd = p.items;
      problems.push(...p.problems);
    }
    if (!amd.length) {
      const t = performance.now();
      const cards = await readSysfs(opts.sysfsRoot ?? "/sys");
      const p = parseAmdSysfs(cards);
      amd = p.items;
      probes.push({
        name: "sysfs amdgpu",
        ok: amd.length > 0,
        ms: Math.round(performance.now() - t),
        note: amd.length ? `${counted(amd.length, "card")}` : "no AMD cards",
      });
    }
    gpus.push(...amd);
  } else if (platform === "darwin") {
    const mem = await probe("sysctl hw.memsize", "sysctl", ["-n", "hw.memsize"]);
    const wired = await probe("sysctl iogpu.wired_limit_mb", "sysctl", ["-n", "iogpu.wired_limit_mb"]);
    const chip = await probe("sysctl machdep.cpu.brand_string", "sysctl", ["-n", "machdep.cpu.brand_string"]);
    if (mem.ok && !/intel/i.test(chip.stdout)) {
      const p = appleGpuBudget(mem.stdout, wired.ok ? wired.stdout : undefined, chip.stdout.trim() || "Apple Silicon");
      gpus.push(...p.items);
      problems.push(...p.problems);
    }
  } else if (platform === "win32") {
    const reg = await probe(
      "registry",
      "reg",
      ["query", "HKLM\\SYSTEM\\CurrentControlSet\\Control\\Class\\{4d36e968-e325-11ce-bfc1-08002be10318}", "/s"],
      10000,
    );
    if (reg.ok) {
      const p = parseWindowsRegistry(reg.stdout);
      // nvidia-smi already gave NVIDIA cards with free memory; keep registry entries for the others.
      for (const g of p.items) if (!(g.vendor === "nvidia" && gpus.some((x) => x.vendor === "nvidia"))) gpus.push(g);
    }
  }

  let llamaDevices: ListedDevice[] | null = null;
  if (opts.llamaServer) {
    const r = await probe("llama-server --list-devices", opts.llamaServer, ["--list-devices"], 15000);
    if (r.ok || r.stdout) {
      const p = parseListDevices(r.stdout + "\n" + r.stderr);
      llamaDevices = p.items;
      problems.push(...p.problems);
      // llama.cpp's own numbers are the ones it will allocate against: prefer its free figure when names match
      for (const d of p.items) {
        if (/^(MTL|Metal)\d/.test(d.id)) {
          // Metal reports recommendedMaxWorkingSetSize: the real GPU budget of unified memory
          const apple = gpus.find((x) => x.vendor === "apple");
          if (apple) Object.assign(apple, { totalBytes: d.totalBytes, freeBytes: d.freeBytes, source: "llama-server (Metal)" });
          continue;
        }
        const g = gpus.find((x) => x.name && d.name.includes(x.name));
        if (g && g.freeBytes === null) g.freeBytes = d.freeBytes;
      }
      if (!gpus.length) {
        p.items.forEach((d, i) =>
          gpus.push({
            index: i,
            vendor: /^CUDA/.test(d.id) ? "nvidia" : /^ROCm|^HIP/.test(d.id) ? "amd" : /^Metal|^MTL/.test(d.id) ? "apple" : "other",
            name: d.name,
            totalBytes: d.totalBytes,
            freeBytes: d.freeBytes,
            usedBytes: d.totalBytes - d.freeBytes,
            unified: /^Metal|^MTL/.test(d.id),
            source: "llama-server",
          }),
        );
      }
    }
  }

  const cr = await cpuRamP;
  // a container's memory limit binds the server this machine starts (read on Linux; tests name their cgroup files)
  const cg = platform === "linux" && (!opts.cpuRam || opts.cgroupRoot) ? cgroupMemory(opts.cgroupRoot, opts.procCgroup) : null;
  if (cg && cg.limitBytes < cr.ram.totalBytes) {
    const free = Math.max(0, cg.limitBytes - cg.usedBytes);
    cr.ram = { totalBytes: cg.limitBytes, freeBytes: Math.min(cr.ram.freeBytes, free) };
    problems.push(
      `host RAM: a cgroup limits this process to ${(cg.limitBytes / 1024 ** 3).toFixed(1)} GiB (${(free / 1024 ** 3).toFixed(1)} GiB free in it) — planned with that, not the machine's RAM`,
    );
  }
  // OCW_RAM_BYTES sets the host memory ocw plans with (a container's limit, a machine shared with other work,
  // or planning for another machine); a problem line says it is in force
  const ramOverride = Number(config().OCW_RAM_BYTES);
  if (Number.isFinite(ramOverride) && ramOverride > 0) {
    cr.ram = { totalBytes: ramOverride, freeBytes: ramOverride };
    problems.push(`host RAM taken as ${(ramOverride / 1024 ** 3).toFixed(1)} GiB from OCW_RAM_BYTES`);
  }
  return {
    platform,
    arch: os.arch(),
    cpu: { model: cr.model, cores: cr.cores, physicalCores: cr.physicalCores },
    ram: cr.ram,
    gpus,
    llamaDevices,
    probes,
    problems,
    ms: Math.round(performance.now() - t0),
  };
}

/** Memory pools for the fit: discrete GPUs by free memory (total − 10 % when free is unknown); unified GPUs by budget. */
export function budgetsFromReport(r: Pick<HardwareReport, "gpus" | "ram">): { gpus: DeviceBudget[]; hostFreeBytes: number } {
  const gpus: DeviceBudget[] = r.gpus.map((g) => ({
    id: `${g.vendor}${g.index}`,
    name: g.name,
    kind: "gpu",
    freeBytes: g.unified ? Math.min(g.totalBytes, r.ram.freeBytes) : (g.freeBytes ?? Math.floor(g.totalBytes * 0.9)),
    totalBytes: g.totalBytes,
    unified: g.unified,
  }));
  return { gpus, hostFreeBytes: r.ram.freeBytes };
}

/**
 * What one llama-server build lists (`--list-devices`): the device names its --device flag accepts. Null when the
 * binary did not answer. Run after setup installs a build, to plan on that build's devices.
 */
export async function listLlamaDevices(bin: string): Promise<ListedDevice[] | null> {
  const r = await execa(bin, ["--list-devices"], {
    reject: false,
    timeout: 15_000,
    stdin: "ignore",
    env: { ...process.env, LD_LIBRARY_PATH: [path.dirname(bin), process.env.LD_LIBRARY_PATH].filter(Boolean).join(":") },
  }).catch(() => null);
  if (!r || (r.exitCode !== 0 && !r.stdout)) return null;
  return parseListDevices(`${r.stdout}\n${r.stderr}`).items;
}
