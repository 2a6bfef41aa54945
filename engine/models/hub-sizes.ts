/**
 * Real file sizes from the Hugging Face Hub's tree listing, when online (issue 27): the catalog's quant and weights
 * sizes are partly derived from parameter counts; `refreshHubSizes` lists each repo once
 * (`GET /api/models/{repo}/tree/main?recursive=true`, OCW_HF_ENDPOINT for mirrors and tests) and keeps what it read in
 * `<state>/hub-sizes.json`; `withHubSizes` lays the kept sizes over the catalog (derived: false, the sizeNote naming
 * the listing and its date). Planning reads only the kept file — never the network — so a plan is the same offline
 * and online once a listing was read; a failed listing (offline, a missing repo) leaves the catalog's figures.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { stateDir } from "../store";
import type { CatalogEntry } from "./catalog";
import { groupGgufs, listRepoFiles } from "./hf";

interface HubSizesFile {
  version: 1;
  repos: Record<string, { at: number; ggufs: Record<string, number>; safetensors: number | null }>;
}

/** How long a kept listing is used (a repo's files rarely change; a re-upload changes a few percent). */
const HUB_SIZES_MAX_AGE_MS = 30 * 24 * 3600_000;
/** How old a listing may be before `refreshHubSizes` asks again. */
const REFRESH_AFTER_MS = 24 * 3600_000;

const file = (env: NodeJS.ProcessEnv) => path.join(stateDir(env), "hub-sizes.json");

export function readHubSizes(env: NodeJS.ProcessEnv = process.env): HubSizesFile {
  try {
    const f = file(env);
    if (!existsSync(f)) return { version: 1, repos: {} };
    const j = JSON.parse(readFileSync(f, "utf8")) as HubSizesFile;
    return j?.version === 1 && j.repos && typeof j.repos === "object" ? j : { version: 1, repos: {} };
  } catch {
    return { version: 1, repos: {} };
  }
}

function writeHubSizes(data: HubSizesFile, env: NodeJS.ProcessEnv): void {
  const f = file(env);
  const tmp = `${f}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(data), { mode: 0o600 });
  renameSync(tmp, f);
}

/**
 * Lists the catalog's repos (GGUF repos and safetensors repos) on the Hub and keeps their sizes. Stops at the first
 * failure that is not a missing or gated repo (offline): the rest keep their catalog figures. Returns what it did.
 */
/** After a listing failed for want of a network, refreshes wait this long (the wizard asks on every visit). */
const OFFLINE_BACKOFF_MS = 10 * 60_000;
let offlineUntil = 0;

export async function refreshHubSizes(
  entries: readonly CatalogEntry[],
  o: { env?: NodeJS.ProcessEnv; fetchImpl?: typeof fetch; now?: number; force?: boolean; timeoutMs?: number } = {},
): Promise<{ listed: string[]; failed: string[]; offline: boolean }> {
  const env = o.env ?? process.env;
  const now = o.now ?? Date.now();
  const timeout = o.timeoutMs ?? 8000;
  const fetchImpl: typeof fetch = o.fetchImpl ?? ((u, init) => fetch(u, { ...init, signal: AbortSignal.timeout(timeout) }));
  if (!o.force && !o.fetchImpl && Date.now() < offlineUntil) return { listed: [], failed: [], offline: true };
  const data = readHubSizes(env);
  const repos = [...new Set(entries.flatMap((e) => [...(e.quants.length ? [e.repo] : []), ...(e.weights ?? []).map((w) => w.repo)]))];
  const listed: string[] = [];
  const failed: string[] = [];
  let offline = false;
  for (const repo of repos) {
    const kept = data.repos[repo];
    if (!o.force && kept && now - kept.at < REFRESH_AFTER_MS) continue;
    try {
      const files = await listRepoFiles(repo, "main", fetchImpl, env);
      const g = groupGgufs(repo, "main", files);
      const st = files.filter((f) => /\.safetensors$/i.test(f.path)).reduce((a, f) => a + f.size, 0);
      data.repos[repo] = { at: now, ggufs: Object.fromEntries(g.quants.map((q) => [q.quant.toUpperCase(), q.totalBytes])), safetensors: st || null };
      listed.push(repo);
    } catch (e) {
      failed.push(repo);
      if (!/no Hugging Face repo|gated/.test((e as Error).message)) {
        offline = true;
        break;
      }
    }
  }
  if (listed.length) writeHubSizes(data, env);
  if (offline && !o.fetchImpl) offlineUntil = Date.now() + OFFLINE_BACKOFF_MS;
  return { listed, failed, offline };
}

/**
 * A listed size this far from the catalog's figure is not the same file (a renamed quant, a partial upload, a mirror
 * that answers every repo): it is kept out and the catalog's figure stands.
 */
const PLAUSIBLE = [0.6, 1.6] as const;
const plausible = (listed: number, figure: number) => listed >= figure * PLAUSIBLE[0] && listed <= figure * PLAUSIBLE[1];

/**
 * The catalog with the kept Hub sizes laid over its figures (derived: false); listings older than a month, and sizes
 * implausibly far from the catalog's figure, are ignored.
 */
export function withHubSizes(entries: readonly CatalogEntry[], data: HubSizesFile, now = Date.now()): CatalogEntry[] {
  const fresh = (repo: string) => {
    const r = data.repos[repo];
    return r && now - r.at < HUB_SIZES_MAX_AGE_MS ? r : null;
  };
  const day = (at: number) => new Date(at).toISOString().slice(0, 10);
  return entries.map((e) => {
    const g = fresh(e.repo);
    const quants = e.quants.map((q) => {
      const bytes = g?.ggufs[q.quant.toUpperCase()];
      return bytes && plausible(bytes, q.bytes) ? { ...q, bytes, derived: false, sizeNote: `the Hub's listing of ${e.repo} (${day(g!.at)})` } : q;
    });
    const weights = e.weights?.map((w) => {
      const r = fresh(w.repo);
      return r?.safetensors && plausible(r.safetensors, w.bytes)
        ? { ...w, bytes: r.safetensors, derived: false, sizeNote: `the Hub's listing of ${w.repo} (${day(r.at)})` }
        : w;
    });
    return { ...e, quants, ...(weights ? { weights } : {}) };
  });
}
