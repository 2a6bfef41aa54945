/**
 * Hugging Face Hub: list a repo's GGUF files (with sizes and LFS sha256) through
 * `GET /api/models/{repo}/tree/{rev}?recursive=true` (paginated by the Link header), group shards and mmproj
 * files, and build resolve URLs. The endpoint can be pointed elsewhere with OCW_HF_ENDPOINT (tests, mirrors).
 */
import { config } from "../config";
import { quantFromName } from "./source";
import { SetupError } from "./errors";
import { BodyTooLarge, readJsonBounded } from "../net";

export interface HubFile {
  path: string;
  size: number;
  sha256: string | null;
}

export interface QuantFile {
  quant: string;
  /** All shards, in order. */
  files: HubFile[];
  totalBytes: number;
}

interface RepoGgufs {
  repo: string;
  rev: string;
  quants: QuantFile[];
  mmproj: HubFile[];
}

export const hubEndpoint = (env: NodeJS.ProcessEnv = process.env) => (config(env).OCW_HF_ENDPOINT ?? "https://huggingface.co").replace(/\/+$/, "");

export function hubHeaders(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const t = env.HF_TOKEN ?? env.HUGGING_FACE_HUB_TOKEN;
  return t ? { authorization: `Bearer ${t}` } : {};
}

export function resolveUrl(repo: string, file: string, rev = "main", env: NodeJS.ProcessEnv = process.env): string {
  return `${hubEndpoint(env)}/${repo}/resolve/${encodeURIComponent(rev)}/${file.split("/").map(encodeURIComponent).join("/")}`;
}

const MIB = 1024 * 1024;
/** The most read of one page of the Hub's tree listing (1,000 entries, a few hundred KiB; a large repo's is paged). */
export const HUB_LISTING_MAX_BYTES = 16 * MIB;
/** The most read of a model's config.json (a few KiB; quantization configs listing modules run to hundreds). */
export const HUB_CONFIG_MAX_BYTES = 4 * MIB;

/**
 * A Hub (or mirror: OCW_HF_ENDPOINT) answer's JSON, read to `maxBytes` at most and parsed off the engine's thread when
 * large; over the cap a coded error (kind model-source, data.maxBytes), never read whole. null: not JSON.
 */
export async function readHubJson<T>(res: Response, url: string, what: string, maxBytes: number): Promise<T | null> {
  try {
    return await readJsonBounded<T>(res, url, maxBytes);
  } catch (e) {
    if (e instanceof BodyTooLarge)
      throw new SetupError(
        "model-source",
        `${url} answered more than ${maxBytes / MIB} MiB for ${what}: not read (the Hub's answer is far smaller; check OCW_HF_ENDPOINT)`,
        { url, maxBytes, tooLarge: true },
        "unavailable",
      );
    throw new SetupError("model-source", `${url}: the answer for ${what} broke off (${(e as Error).message})`, { url }, "unavailable");
  }
}

type TreeEntry = { type: string; path: string; size: number; lfs?: { oid?: string; size?: number } };

export async function listRepoFiles(repo: string, rev = "main", fetchImpl: typeof fetch = fetch, env: NodeJS.ProcessEnv = process.env): Promise<HubFile[]> {
  if (!/^[\w.-]+\/[\w.-]+$/.test(repo)) throw new SetupError("model-source", `"${repo}" is not a Hugging Face repo id (owner/name)`, { repo });
  let url: string | null = `${hubEndpoint(env)}/api/models/${repo}/tree/${encodeURIComponent(rev)}?recursive=true`;
  const out: HubFile[] = [];
  for (let page = 0; url && page < 50; page++) {
    const res: Response = await fetchImpl(url, { headers: hubHeaders(env) });
    if (res.status === 401 || res.status === 403)
      throw new SetupError("model-source", `${repo} is gated or private: set HF_TOKEN`, { repo, status: res.status });
    if (res.status === 404) throw new SetupError("model-source", `no Hugging Face repo ${repo} (revision ${rev})`, { repo, rev, status: 404 }, "not-found");
    if (!res.ok) throw new SetupError("model-source", `Hub tree API for ${repo} answered HTTP ${res.status}`, { repo, status: res.status }, "unavailable");
    const entries = await readHubJson<TreeEntry[]>(res, url, `${repo}'s file listing`, HUB_LISTING_MAX_BYTES);
    if (!Array.isArray(entries))
      throw new SetupError("model-source", `Hub tree API for ${repo} did not answer a file list (check OCW_HF_ENDPOINT)`, { repo }, "unavailable");
    for (const e of entries) if (e.type === "file") out.push({ path: e.path, size: e.lfs?.size ?? e.size, sha256: e.lfs?.oid ?? null });
    const link = res.headers.get("link");
    const next = link && /<([^>]+)>;\s*rel="next"/.exec(link);
    url = next ? new URL(next[1]!, url).toString() : null;
  }
  return out;
}

export function groupGgufs(repo: string, rev: string, files: HubFile[]): RepoGgufs {
  const ggufs = files.filter((f) => f.path.toLowerCase().endsWith(".gguf"));
  const mmproj = ggufs.filter((f) => /mmproj/i.test(f.path));
  const byQuant = new Map<string, HubFile[]>();
  for (const f of ggufs) {
    if (mmproj.includes(f)) continue;
    const m = /-(\d{5})-of-(\d{5})\.gguf$/i.exec(f.path);
    if (m && m[1] !== "00001") continue; // collected through the first shard below
    const q = quantFromName(f.path.split("/").pop()!) ?? f.path;
    const shards = m
      ? ggufs
          .filter((g) => g.path.replace(/-\d{5}-of-\d{5}\.gguf$/i, "") === f.path.replace(/-\d{5}-of-\d{5}\.gguf$/i, ""))
          .sort((a, b) => a.path.localeCompare(b.path))
      : [f];
    byQuant.set(q, shards);
  }
  const quants = [...byQuant.entries()]
    .map(([quant, fs]) => ({ quant, files: fs, totalBytes: fs.reduce((a, x) => a + x.size, 0) }))
    .sort((a, b) => b.totalBytes - a.totalBytes);
  return { repo, rev, quants, mmproj };
}

export async function repoGgufs(repo: string, rev = "main", fetchImpl: typeof fetch = fetch, env: NodeJS.ProcessEnv = process.env): Promise<RepoGgufs> {
  return groupGgufs(repo, rev, await listRepoFiles(repo, rev, fetchImpl, env));
}
