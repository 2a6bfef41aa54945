// Process-tree helpers (Linux /proc): the `opencode serve` under an engine (inside bubblewrap or not), its RSS and the
// environment it really runs with, so the bench can show that both sides of a comparison run opencode the same way.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import { OFFLINE_ENV } from "../engine/harness/config";
import { round } from "./stats";

function parentOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return null;
  }
}

function cmdline(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  } catch {
    return [];
  }
}

/** Every live descendant of `pid`. */
export function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const ppid = parentOf(Number(name));
    if (ppid !== null) children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) out.push(c), walk(c);
  };
  walk(pid);
  return out;
}

/** The `opencode serve` process itself under `root` (or `root` itself): not the bubblewrap around it. */
export function opencodeServeUnder(root: number): number | null {
  for (const pid of [root, ...descendants(root)]) {
    const argv = cmdline(pid);
    if (argv.length >= 2 && /opencode(\.exe)?$/.test(argv[0]!) && argv[1] === "serve") return pid;
  }
  return null;
}

/**
 * The engine's command helper (engine/process/run.ts: a bare Node that starts the engine's git and scripts), a direct
 * child of the engine; null for a build without one. Its CPU and that of what it ran are the engine's.
 */
export function commandHelperUnder(engine: number): number | null {
  for (const pid of descendants(engine)) {
    const argv = cmdline(pid);
    if (parentOf(pid) === engine && argv[1] === "-e" && argv[2]?.includes('process.on("disconnect"')) return pid;
  }
  return null;
}

export function rssMbOf(pid: number | null): number | null {
  if (pid === null) return null;
  try {
    return round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024);
  } catch {
    return null;
  }
}

/** Samples a process's RSS every `everyMs` (tolerates its exit) and keeps the peak. */
export function samplePeak(pid: number | null, everyMs = 250) {
  let peak = rssMbOf(pid) ?? 0;
  const t = setInterval(() => (peak = Math.max(peak, rssMbOf(pid) ?? 0)), everyMs);
  return { stop: () => (clearInterval(t), peak) };
}

export function environOf(pid: number): Record<string, string> {
  const env: Record<string, string> = {};
  for (const kv of readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")) {
    const i = kv.indexOf("=");
    if (i > 0) env[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return env;
}

/** Variables that differ by design between two opencode serves, and why. */
const PER_INSTANCE: Record<string, string> = {
  HOME: "each serve's own opencode home",
  XDG_DATA_HOME: "under that home",
  XDG_CONFIG_HOME: "under that home",
  XDG_STATE_HOME: "under that home",
  XDG_CACHE_HOME: "under that home",
  TMPDIR: "under that home",
  OPENCODE_MODELS_PATH: "the same empty models catalog (seedModelsCatalog), a file in that home",
  OPENCODE_SERVER_PASSWORD: "a random password per serve",
  PWD: "bubblewrap sets it to the serve's working directory (its home; the bare serve runs in its own home too, with no PWD set)",
  SHELL: "the engine's worker shell (each bash command in its own sandbox); the bare side keeps the user's shell",
};

/** The engine's egress proxy (engine/net/egress.ts): set on the engine's side only, by design. */
const EGRESS: Record<string, string> = Object.fromEntries(
  ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy"].map((k) => [
    k,
    "the engine's egress proxy (keyed, on loopback) for a worker's webfetches; NO_PROXY names the model's endpoint, so model requests go direct on both sides",
  ]),
);

const PLUGIN_WHY =
  "the workspace plugin, which names each session's workspace to the worker shell and checks file tools' paths; its cost is the engine's own, and the sandbox part's on ÷ off ratio measures it";

/**
 * The file name of the one plugin the engine's opencode config adds, when that is all that differs between the two
 * configs (JSON, key order aside); else null, and the configs' difference stays a fairness problem.
 */
export function engineOnlyPlugin(engine: string | undefined, bare: string | undefined): string | null {
  try {
    const e = JSON.parse(engine ?? "") as Record<string, unknown>;
    const b = JSON.parse(bare ?? "") as Record<string, unknown>;
    const { plugin, ...rest } = e;
    if (!Array.isArray(plugin) || plugin.length !== 1 || typeof plugin[0] !== "string" || "plugin" in b) return null;
    // Key order aside (isDeepStrictEqual does not compare it).
    return isDeepStrictEqual(rest, b) ? path.basename(plugin[0]) : null;
  } catch {
    return null;
  }
}

export interface EnvComparison {
  /** No variable differs except the per-instance ones above. */
  identical: boolean;
  /** Variables with the same value on both sides (OFFLINE_ENV, Malloc=1 and the opencode config among them). */
  same: string[];
  /** Variables that differ by design, with the reason. */
  perInstance: Record<string, string>;
  /** Anything else that differs: a fairness problem. */
  unexpected: Record<string, { engine: string | null; bare: string | null }>;
  /** OFFLINE_ENV (engine/harness/config.ts) as found on each side. */
  offline: { engine: Record<string, string | null>; bare: Record<string, string | null> };
}

/** A value as the report shows it: a URL's credentials (a proxy's key) never, and at most 80 characters. */
const short = (v: string | undefined) => {
  if (v === undefined) return null;
  const s = v.replace(/\/\/[^/@\s]*@/g, "//…@");
  return s.length > 80 ? `${s.slice(0, 77)}…` : s;
};

/** Compares the environment of the engine's opencode serve with the bare side's, as the kernel holds them. */
export function compareEnv(engine: Record<string, string>, bare: Record<string, string>): EnvComparison {
  const same: string[] = [];
  const perInstance: Record<string, string> = {};
  const unexpected: EnvComparison["unexpected"] = {};
  const plugin = engineOnlyPlugin(engine.OPENCODE_CONFIG_CONTENT, bare.OPENCODE_CONFIG_CONTENT);
  for (const k of [...new Set([...Object.keys(engine), ...Object.keys(bare)])].sort()) {
    if (engine[k] === bare[k]) same.push(k);
    else if (PER_INSTANCE[k] && (!["SHELL", "PWD"].includes(k) || engine[k] !== undefined)) perInstance[k] = PER_INSTANCE[k]!;
    else if (EGRESS[k] && bare[k] === undefined) perInstance[k] = EGRESS[k]!;
    else if (plugin && k === "OPENCODE_CONFIG_CONTENT") perInstance[k] = `the same config but for the engine's one plugin (${plugin}): ${PLUGIN_WHY}`;
    else if (plugin && k === "OPENCODE_PURE" && engine[k] === undefined && bare[k] === "1")
      perInstance[k] = "unset on the engine's side, which loads that one plugin (OPENCODE_PURE would skip it); set on the bare side, which loads none";
    else unexpected[k] = { engine: short(engine[k]), bare: short(bare[k]) };
  }
  const pick = (env: Record<string, string>) => Object.fromEntries(Object.keys(OFFLINE_ENV).map((k) => [k, env[k] ?? null]));
  return { identical: Object.keys(unexpected).length === 0, same, perInstance, unexpected, offline: { engine: pick(engine), bare: pick(bare) } };
}
