import { detectHardware } from "./detect";

const GiB = 1024 ** 3;
const round = (n: number) => Math.round(n * 10) / 10;

let cached: ReturnType<typeof detect> | null = null;

async function detect() {
  const hw = await Promise.race([detectHardware({ llamaServer: null }), new Promise<null>((r) => setTimeout(() => r(null), 12_000).unref())]);
  if (!hw) return null;
  return {
    cpu: hw.cpu.model,
    cores: hw.cpu.cores,
    ramGiB: round(hw.ram.totalBytes / GiB),
    gpus: hw.gpus.map((g) => ({
      name: g.name,
      vendor: String(g.vendor),
      vramGiB: round(g.totalBytes / GiB),
      freeGiB: g.freeBytes === null ? null : round(g.freeBytes / GiB),
      unified: g.unified,
    })),
    problems: hw.problems.slice(0, 10),
  };
}

/** A short hardware summary (setup_status, the wizard), detected once per process. */
export function hardwareSummary() {
  cached ??= detect().catch(() => null);
  return cached;
}
