import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { detectHardware, budgetsFromReport, type Runner } from "./detect";
import { appleGpuBudget, parseAmdSysfs, parseGpuSpec, parseListDevices, parseNvidiaSmi, parseRocmSmi, parseWindowsRegistry } from "./parse";

const FIX = path.join(__dirname, "../../test/fixtures/hardware");
const fx = (f: string) => readFileSync(path.join(FIX, f), "utf8");
const MiB = 1024 * 1024;

describe("nvidia-smi", () => {
  it("reads several GPUs with free and total", () => {
    const { items, problems } = parseNvidiaSmi(fx("nvidia-smi-2gpu.csv"));
    expect(problems).toEqual([]);
    expect(items.map((g) => [g.index, g.name, g.totalBytes / MiB, g.freeBytes! / MiB, g.computeCap])).toEqual([
      [0, "NVIDIA GeForce RTX 4090", 24564, 22513, "8.9"],
      [1, "NVIDIA GeForce RTX 3090", 24576, 23906, "8.6"],
    ]);
  });
  it("keeps [N/A] fields as unknown, derives free from used when it can", () => {
    const { items } = parseNvidiaSmi(fx("nvidia-smi-na.csv"));
    expect(items[0]).toMatchObject({ name: "NVIDIA GH200 480GB", freeBytes: null, usedBytes: null, computeCap: "9.0" });
    expect(items[1]).toMatchObject({ freeBytes: (81920 - 40960) * MiB, computeCap: undefined });
  });
  it("reads the output recorded on an NVIDIA H200 (driver 580, CUDA 13): free is not total − used", () => {
    // `nvidia-smi --query-gpu=<NVIDIA_SMI_ARGS> --format=csv,noheader,nounits` as detect.ts runs it, on a real H200 with
    // nothing loaded: memory.used 0 yet 615 MiB below total, the driver's reservation (`nvidia-smi -q -d MEMORY`: Reserved
    // 616 MiB); `nvidia-smi -L` of the same machine beside it
    const { items, problems } = parseNvidiaSmi(fx("nvidia-smi-h200-recorded.csv"));
    expect(problems).toEqual([]);
    expect(items).toEqual([
      {
        index: 0,
        vendor: "nvidia",
        name: "NVIDIA H200",
        uuid: "GPU-cfa28a2a-3890-e0d7-5440-347748ee7367",
        busId: "00000000:00:06.0",
        totalBytes: 143771 * MiB,
        usedBytes: 0,
        freeBytes: 143156 * MiB,
        driver: "580.159.04",
        computeCap: "9.0",
        unified: false,
        source: "nvidia-smi",
      },
    ]);
    expect(fx("nvidia-smi-h200-recorded-L.txt")).toContain(`GPU 0: NVIDIA H200 (UUID: ${items[0]!.uuid})`);
  });
  it("garbage gives no GPUs and a problem, never a throw", () => {
    const r = parseNvidiaSmi(fx("nvidia-smi-garbage.txt"));
    expect(r.items).toEqual([]);
    expect(r.problems.length).toBeGreaterThan(0);
  });
});

describe("AMD", () => {
  it("rocm-smi JSON after a warning line", () => {
    const { items } = parseRocmSmi(fx("rocm-smi-2gpu.json"));
    expect(items.map((g) => [g.index, g.name, g.totalBytes, g.freeBytes])).toEqual([
      [0, "Radeon RX 7900 XTX", 25753026560, 25753026560 - 1102827520],
      [1, "AMD Instinct MI210", 68702699520, 68702699520 - 12582912],
    ]);
  });
  it("rocm-smi garbage", () => {
    expect(parseRocmSmi(fx("rocm-smi-garbage.txt"))).toEqual({ items: [], problems: ["rocm-smi: output is not JSON"] });
  });
  it("sysfs APU uses the GTT budget and ignores other vendors", () => {
    const { items } = parseAmdSysfs([
      { card: "card0", vendor: "0x1002", vramTotal: "536870912", vramUsed: "0", gttTotal: "33554432000", gttUsed: "1073741824" },
      { card: "card1", vendor: "0x8086" },
    ]);
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ unified: true, totalBytes: 33554432000, freeBytes: 33554432000 - 1073741824 });
  });
});

describe("other sources", () => {
  it("llama-server --list-devices", () => {
    expect(parseListDevices(fx("list-devices-cuda2.txt")).items).toEqual([
      { id: "CUDA0", name: "NVIDIA GeForce RTX 4090", totalBytes: 24077 * MiB, freeBytes: 22476 * MiB },
      { id: "CUDA1", name: "NVIDIA GeForce RTX 3090", totalBytes: 24135 * MiB, freeBytes: 23860 * MiB },
    ]);
    expect(parseListDevices(fx("list-devices-cpu.txt"))).toEqual({ items: [], problems: [] });
    expect(parseListDevices(fx("list-devices-metal.txt")).items.map((d) => d.id)).toEqual(["MTL0"]);
  });
  it("Windows registry QWORD (not the 4 GiB-capped WMI field)", () => {
    const { items } = parseWindowsRegistry(fx("reg-query-windows.txt"));
    expect(items.map((g) => [g.vendor, g.totalBytes])).toEqual([
      ["nvidia", 16 * 1024 * MiB],
      ["amd", 512 * MiB],
    ]);
  });
  it("Apple unified memory budget", () => {
    expect(appleGpuBudget(String(32 * 1024 * MiB)).items[0]!.totalBytes).toBe(Math.floor(32 * 1024 * MiB * (2 / 3)));
    expect(appleGpuBudget(String(128 * 1024 * MiB), "120000").items[0]!.totalBytes).toBe(120000 * MiB);
    expect(appleGpuBudget("garbage").items).toEqual([]);
  });
  it("--gpus spec", () => {
    expect(parseGpuSpec("cpu")).toEqual([]);
    expect(parseGpuSpec("24G,CUDA1=16GiB").map((g) => [g.name, g.freeBytes])).toEqual([
      ["GPU0", 24 * 1024 * MiB],
      ["CUDA1", 16 * 1024 * MiB],
    ]);
    expect(() => parseGpuSpec("lots")).toThrow(/GPU spec/);
  });
});

describe("detectHardware with recorded tool outputs", () => {
  const cpuRam = async () => ({ model: "Test CPU", cores: 8, physicalCores: 4, ram: { totalBytes: 64 * 1024 * MiB, freeBytes: 60 * 1024 * MiB } });
  const runner =
    (outputs: Record<string, string | null>): Runner =>
    async (cmd) => {
      const out = outputs[cmd];
      if (out === undefined || out === null) return { ok: false, missing: true, stdout: "", stderr: `spawn ${cmd} ENOENT`, code: null };
      return { ok: true, missing: false, stdout: out, stderr: "", code: 0 };
    };
  it("linux with two NVIDIA GPUs; missing rocm-smi is not an error", async () => {
    const r = await detectHardware({ platform: "linux", run: runner({ "nvidia-smi": fx("nvidia-smi-2gpu.csv") }), sysfsRoot: "/nonexistent", cpuRam });
    expect(r.gpus).toHaveLength(2);
    expect(r.probes.find((p) => p.name === "rocm-smi")?.note).toBe("not installed");
    const b = budgetsFromReport(r);
    expect(b.gpus.map((g) => g.freeBytes / MiB)).toEqual([22513, 23906]);
  });
  it("CPU-only machine: no GPUs, RAM reported", async () => {
    const r = await detectHardware({ platform: "linux", run: runner({}), sysfsRoot: "/nonexistent", cpuRam });
    expect(r.gpus).toEqual([]);
    expect(r.ram.totalBytes).toBe(64 * 1024 * MiB);
  });
  it("in a container with a memory limit (cgroup v2 memory.max, v1 limit_in_bytes) the host RAM is the cgroup's, not the machine's", async () => {
    const { mkdtempSync, mkdirSync, writeFileSync } = await import("node:fs");
    const os = await import("node:os");
    const GiB = 1024 * MiB;
    // v2: the process's cgroup (as /proc/self/cgroup names it) limits memory to 8 GiB; 3 GiB used, 1 GiB of it inactive file cache
    const v2 = mkdtempSync(path.join(os.tmpdir(), "ocw-cg2-"));
    mkdirSync(path.join(v2, "pod/ctr"), { recursive: true });
    writeFileSync(path.join(v2, "pod/ctr/memory.max"), `${8 * GiB}\n`);
    writeFileSync(path.join(v2, "pod/ctr/memory.current"), `${3 * GiB}\n`);
    writeFileSync(path.join(v2, "pod/ctr/memory.stat"), `anon ${2 * GiB}\nfile ${GiB}\ninactive_file ${GiB}\nactive_file 0\n`);
    const r = await detectHardware({ platform: "linux", run: runner({}), sysfsRoot: "/nonexistent", cpuRam, cgroupRoot: v2, procCgroup: "0::/pod/ctr\n" });
    expect(r.ram).toEqual({ totalBytes: 8 * GiB, freeBytes: 6 * GiB });
    expect(r.problems.join(" ")).toMatch(/cgroup limits this process to 8\.0 GiB/);
    // cgroup namespace: the container sees its own cgroup at the root of the mount
    const ns = await detectHardware({
      platform: "linux",
      run: runner({}),
      sysfsRoot: "/nonexistent",
      cpuRam,
      cgroupRoot: path.join(v2, "pod/ctr"),
      procCgroup: "0::/\n",
    });
    expect(ns.ram.totalBytes).toBe(8 * GiB);
    // v1, and unlimited (max / 2^63-ish): nothing changes
    const v1 = mkdtempSync(path.join(os.tmpdir(), "ocw-cg1-"));
    mkdirSync(path.join(v1, "memory"), { recursive: true });
    writeFileSync(path.join(v1, "memory/memory.limit_in_bytes"), `${4 * GiB}\n`);
    writeFileSync(path.join(v1, "memory/memory.usage_in_bytes"), `${GiB}\n`);
    writeFileSync(path.join(v1, "memory/memory.stat"), "total_inactive_file 0\n");
    const r1 = await detectHardware({
      platform: "linux",
      run: runner({}),
      sysfsRoot: "/nonexistent",
      cpuRam,
      cgroupRoot: v1,
      procCgroup: "4:memory:/docker/abc\n",
    });
    expect(r1.ram).toEqual({ totalBytes: 4 * GiB, freeBytes: 3 * GiB });
    writeFileSync(path.join(v1, "memory/memory.limit_in_bytes"), "9223372036854771712\n");
    const un = await detectHardware({ platform: "linux", run: runner({}), sysfsRoot: "/nonexistent", cpuRam, cgroupRoot: v1, procCgroup: "4:memory:/\n" });
    expect(un.ram).toEqual({ totalBytes: 64 * GiB, freeBytes: 60 * GiB });
  });
  it("AMD APU through sysfs when rocm-smi is absent", async () => {
    const r = await detectHardware({ platform: "linux", run: runner({}), sysfsRoot: path.join(FIX, "sysfs-apu"), cpuRam });
    expect(r.gpus).toEqual([expect.objectContaining({ vendor: "amd", unified: true, totalBytes: 33554432000 })]);
  });
  it("llama-server --list-devices fills unknown free memory", async () => {
    const r = await detectHardware({
      platform: "linux",
      sysfsRoot: "/nonexistent",
      cpuRam,
      llamaServer: "/x/llama-server",
      run: runner({
        "nvidia-smi": "0, GPU-x, NVIDIA GeForce RTX 4090, 0:1:0, 24564, [N/A], [N/A], 550, 8.9\n",
        "/x/llama-server": fx("list-devices-cuda2.txt"),
      }),
    });
    expect(r.gpus[0]!.freeBytes).toBe(22476 * MiB);
    expect(r.llamaDevices).toHaveLength(2);
  });
  it("Apple: Metal's working-set size from llama-server replaces the documented fraction", async () => {
    const r = await detectHardware({
      platform: "darwin",
      cpuRam,
      llamaServer: "/x/llama-server",
      run: runner({ sysctl: String(64 * 1024 * MiB), "/x/llama-server": fx("list-devices-metal.txt") }),
    });
    expect(r.gpus).toEqual([expect.objectContaining({ vendor: "apple", unified: true, totalBytes: 49152 * MiB, source: "llama-server (Metal)" })]);
  });
  it("windows uses the registry for non-NVIDIA adapters", async () => {
    const r = await detectHardware({ platform: "win32", run: runner({ reg: fx("reg-query-windows.txt") }), cpuRam });
    expect(r.gpus.map((g) => g.source)).toEqual(["registry", "registry"]);
  });
  it("real detection on this machine finishes and reports RAM", async () => {
    const r = await detectHardware();
    expect(r.ram.totalBytes).toBeGreaterThan(0);
    expect(r.cpu.cores).toBeGreaterThan(0);
  });
});
