/**
 * Pure parsers for the outputs of GPU tools. Every parser returns what it could read and a list of problems;
 * none throws on garbage (a broken tool must not break `ocw doctor`).
 */

type GpuVendor = "nvidia" | "amd" | "apple" | "intel" | "other";

export interface Gpu {
  index: number;
  vendor: GpuVendor;
  name: string;
  uuid?: string;
  busId?: string;
  totalBytes: number;
  /** null when the tool could not tell. */
  freeBytes: number | null;
  usedBytes: number | null;
  driver?: string;
  computeCap?: string;
  /** Unified memory (Apple Silicon, AMD APU GTT): budget comes out of host RAM. */
  unified: boolean;
  /** Which probe reported it: nvidia-smi, rocm-smi, sysfs, sysctl, registry, llama-server. */
  source: string;
}

interface ParseResult<T> {
  items: T[];
  problems: string[];
}

const MiB = 1024 * 1024;

function numOrNull(s: string | undefined): number | null {
  if (s === undefined) return null;
  const t = s.trim();
  if (!t || /^\[?n\/?a\]?$/i.test(t) || /not supported/i.test(t) || /^\[.*\]$/.test(t)) return null;
  const n = Number(t);
  return Number.isFinite(n) ? n : null;
}

/**
 * `nvidia-smi --query-gpu=index,uuid,name,pci.bus_id,memory.total,memory.used,memory.free,driver_version,compute_cap
 *  --format=csv,noheader,nounits` (MiB; fields may be `[N/A]`).
 */
export const NVIDIA_SMI_ARGS = [
  "--query-gpu=index,uuid,name,pci.bus_id,memory.total,memory.used,memory.free,driver_version,compute_cap",
  "--format=csv,noheader,nounits",
];

export function parseNvidiaSmi(out: string): ParseResult<Gpu> {
  const items: Gpu[] = [];
  const problems: string[] = [];
  for (const raw of out.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line) continue;
    const f = line.split(",").map((x) => x.trim());
    if (f.length < 7) {
      problems.push(`nvidia-smi: unreadable line ${JSON.stringify(line.slice(0, 120))}`);
      continue;
    }
    const index = numOrNull(f[0]);
    const total = numOrNull(f[4]);
    if (index === null || total === null) {
      problems.push(`nvidia-smi: no index/memory.total in ${JSON.stringify(line.slice(0, 120))}`);
      continue;
    }
    const used = numOrNull(f[5]);
    let free = numOrNull(f[6]);
    if (free === null && used !== null) free = total - used;
    items.push({
      index,
      vendor: "nvidia",
      name: f[2] || "NVIDIA GPU",
      uuid: f[1] || undefined,
      busId: f[3] || undefined,
      totalBytes: total * MiB,
      freeBytes: free === null ? null : free * MiB,
      usedBytes: used === null ? null : used * MiB,
      driver: f[7] && !/n\/a/i.test(f[7]) ? f[7] : undefined,
      computeCap: f[8] && !/n\/a/i.test(f[8]) ? f[8] : undefined,
      unified: false,
      source: "nvidia-smi",
    });
  }
  return { items, problems };
}

/**
 * `rocm-smi --showmeminfo vram --showproductname --json` →
 * {"card0": {"VRAM Total Memory (B)": "…", "VRAM Total Used Memory (B)": "…", "Card series": "…"}}
 */
export function parseRocmSmi(out: string): ParseResult<Gpu> {
  const problems: string[] = [];
  let j: unknown;
  try {
    // rocm-smi sometimes prints warnings before the JSON
    const start = out.indexOf("{");
    j = JSON.parse(start >= 0 ? out.slice(start) : out);
  } catch {
    return { items: [], problems: ["rocm-smi: output is not JSON"] };
  }
  if (!j || typeof j !== "object") return { items: [], problems: ["rocm-smi: unexpected JSON"] };
  const items: Gpu[] = [];
  for (const [card, v] of Object.entries(j as Record<string, unknown>)) {
    const m = /^card(\d+)$/.exec(card);
    if (!m || !v || typeof v !== "object") continue;
    const o = v as Record<string, string>;
    const total = numOrNull(o["VRAM Total Memory (B)"]);
    const used = numOrNull(o["VRAM Total Used Memory (B)"]);
    if (total === null) {
      problems.push(`rocm-smi: ${card} has no VRAM Total Memory`);
      continue;
    }
    const name = o["Card series"] ?? o["Card Series"] ?? o["Card model"] ?? o["Device Name"] ?? "AMD GPU";
    items.push({
      index: Number(m[1]),
      vendor: "amd",
      name,
      totalBytes: total,
      usedBytes: used,
      freeBytes: used === null ? null : total - used,
      unified: false,
      source: "rocm-smi",
      busId: o["PCI Bus"] ?? undefined,
    });
  }
  if (!items.length && !problems.length) problems.push("rocm-smi: no cards in output");
  return { items, problems };
}

export interface SysfsCard {
  card: string;
  vendor?: string;
  vramTotal?: string;
  vramUsed?: string;
  gttTotal?: string;
  gttUsed?: string;
  name?: string;
}

/**
 * AMD sysfs: /sys/class/drm/cardN/device/{vendor,mem_info_vram_total,mem_info_vram_used,mem_info_gtt_total,mem_info_gtt_used}.
 * An APU reports a small VRAM carve-out (≤ 512 MiB–2 GiB) and a large GTT; its usable budget is the GTT.
 */
export function parseAmdSysfs(cards: SysfsCard[]): ParseResult<Gpu> {
  const items: Gpu[] = [];
  const problems: string[] = [];
  for (const c of cards) {
    if (c.vendor && c.vendor.trim().toLowerCase() !== "0x1002") continue;
    const vt = numOrNull(c.vramTotal);
    const vu = numOrNull(c.vramUsed);
    const gt = numOrNull(c.gttTotal);
    const gu = numOrNull(c.gttUsed);
    if (vt === null) {
      problems.push(`sysfs: ${c.card} has no mem_info_vram_total`);
      continue;
    }
    const apu = gt !== null && vt <= 2 * 1024 * MiB && gt > 4 * vt;
    const total = apu ? gt! : vt;
    const used = apu ? gu : vu;
    const idx = Number(/(\d+)$/.exec(c.card)?.[1] ?? items.length);
    items.push({
      index: idx,
      vendor: "amd",
      name: c.name?.trim() || (apu ? "AMD APU" : "AMD GPU"),
      totalBytes: total,
      usedBytes: used,
      freeBytes: used === null ? null : total - used,
      unified: apu,
      source: apu ? "sysfs (GTT)" : "sysfs",
    });
  }
  return { items, problems };
}

export interface ListedDevice {
  id: string;
  name: string;
  totalBytes: number;
  freeBytes: number;
}

/** `llama-server --list-devices`: lines like `  CUDA0: NVIDIA H100 80GB HBM3 (81089 MiB, 80514 MiB free)`. */
export function parseListDevices(out: string): ParseResult<ListedDevice> {
  const items: ListedDevice[] = [];
  const problems: string[] = [];
  for (const line of out.split(/\r?\n/)) {
    const m = /^\s*([A-Za-z][A-Za-z0-9_]*\d+):\s+(.+?)\s+\((\d+)\s+MiB,\s+(\d+)\s+MiB free\)\s*$/.exec(line);
    if (m) items.push({ id: m[1]!, name: m[2]!, totalBytes: Number(m[3]) * MiB, freeBytes: Number(m[4]) * MiB });
  }
  if (!items.length && !/Available devices/i.test(out)) problems.push("llama-server --list-devices: no device lines");
  return { items, problems };
}

/**
 * Windows: `reg query "HKLM\SYSTEM\CurrentControlSet\Control\Class\{4d36e968-e325-11ce-bfc1-08002be10318}" /s /v HardwareInformation.qwMemorySize`
 * plus `/v DriverDesc`. WMI's AdapterRAM is capped at 4 GiB; the registry QWORD is right.
 */
export function parseWindowsRegistry(out: string): ParseResult<Gpu> {
  const items: Gpu[] = [];
  const problems: string[] = [];
  const blocks = out.split(/\r?\n(?=HKEY_)/);
  for (const b of blocks) {
    const key = /^(HKEY_\S+)/m.exec(b)?.[1];
    if (!key || !/\\\d{4}$/.test(key)) continue;
    const mem = /HardwareInformation\.qwMemorySize\s+REG_QWORD\s+0x([0-9a-f]+)/i.exec(b);
    const desc = /DriverDesc\s+REG_SZ\s+(.+)/i.exec(b);
    if (!mem) continue;
    const name = desc?.[1]?.trim() ?? "GPU";
    const vendor: GpuVendor = /nvidia/i.test(name) ? "nvidia" : /amd|radeon/i.test(name) ? "amd" : /intel/i.test(name) ? "intel" : "other";
    items.push({
      index: Number(/(\d{4})$/.exec(key)![1]),
      vendor,
      name,
      totalBytes: Number(BigInt(`0x${mem[1]}`)),
      freeBytes: null,
      usedBytes: null,
      unified: false,
      source: "registry",
    });
  }
  if (!items.length) problems.push("registry: no adapter with HardwareInformation.qwMemorySize");
  return { items, problems };
}

/**
 * Apple Silicon: `sysctl -n hw.memsize` and `sysctl -n iogpu.wired_limit_mb` (0 = default).
 * Metal's recommendedMaxWorkingSetSize is ≈ 2/3 of RAM up to 36 GiB and ≈ 3/4 above (the documented default).
 */
export function appleGpuBudget(memsize: string, wiredLimitMb?: string, chip = "Apple Silicon"): ParseResult<Gpu> {
  const ram = numOrNull(memsize);
  if (ram === null || ram <= 0) return { items: [], problems: ["sysctl hw.memsize: unreadable"] };
  const wired = numOrNull(wiredLimitMb);
  const budget = wired && wired > 0 ? wired * MiB : Math.floor(ram * (ram <= 36 * 1024 * MiB ? 2 / 3 : 3 / 4));
  return {
    items: [
      {
        index: 0,
        vendor: "apple",
        name: chip,
        totalBytes: budget,
        freeBytes: null,
        usedBytes: null,
        unified: true,
        source: wired ? "sysctl iogpu.wired_limit_mb" : "sysctl (default Metal working set)",
      },
    ],
    problems: [],
  };
}

/** Parses a user GPU spec for `--gpus`: "cpu" | "24G,24G" | "CUDA0=24GiB,CUDA1=20GiB" | "81920M". */
export function parseGpuSpec(spec: string): Gpu[] {
  const s = spec.trim();
  if (!s || /^(cpu|none)$/i.test(s)) return [];
  return s.split(",").map((part, index) => {
    const m = /^(?:([^=:]+)[=:])?\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B)?$/i.exec(part.trim());
    if (!m) throw new Error(`cannot read GPU spec "${part}"; use sizes like 24G or NAME=24GiB, comma-separated, or "cpu"`);
    const unit = (m[3] ?? "B").toUpperCase()[0]!;
    const mult = { B: 1, K: 1024, M: MiB, G: 1024 * MiB, T: 1024 * 1024 * MiB }[unit] ?? 1;
    const bytes = Math.round(Number(m[2]) * mult);
    return {
      index,
      vendor: "other" as const,
      name: m[1]?.trim() || `GPU${index}`,
      totalBytes: bytes,
      freeBytes: bytes,
      usedBytes: 0,
      unified: false,
      source: "--gpus",
    };
  });
}

/** A memory pool a model can be placed on. `kind: "cpu"` is host RAM. */
export interface DeviceBudget {
  id: string;
  name: string;
  kind: "gpu" | "cpu";
  freeBytes: number;
  totalBytes: number;
  /** Unified memory (Apple, APU): the GPU budget is host RAM. */
  unified?: boolean;
}
