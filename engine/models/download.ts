/**
 * Model download: progress, resume (HTTP Range onto `<dest>.part`), size and SHA-256 verification where the Hub
 * gives one, cancel (AbortSignal; the partial file is kept for the next resume).
 */
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream, existsSync, mkdirSync, renameSync, statfsSync, statSync, unlinkSync } from "node:fs";
import { once } from "node:events";
import path from "node:path";
import { SetupError, type SetupErrorData } from "./errors";
import { describeFetchError } from "../net";

export interface DownloadProgress {
  received: number;
  total: number | null;
  resumedFrom: number;
  bytesPerSec: number;
}

interface DownloadOptions {
  url: string;
  dest: string;
  headers?: Record<string, string>;
  expectedSize?: number | null;
  /** Hex SHA-256 (the Hub's LFS oid). */
  sha256?: string | null;
  signal?: AbortSignal;
  onProgress?: (p: DownloadProgress) => void;
  fetchImpl?: typeof fetch;
}

export class DownloadError extends SetupError {
  constructor(message: string, data: SetupErrorData = {}) {
    super("download", message, data, "unavailable");
    this.name = "DownloadError";
  }
}

async function sha256File(file: string): Promise<string> {
  const h = createHash("sha256");
  for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  return h.digest("hex");
}

export async function downloadFile(o: DownloadOptions): Promise<{ path: string; bytes: number; resumedFrom: number; verified: "sha256" | "size" | "none" }> {
  const f = o.fetchImpl ?? fetch;
  mkdirSync(path.dirname(o.dest), { recursive: true });
  if (existsSync(o.dest) && o.expectedSize && statSync(o.dest).size === o.expectedSize) {
    if (!o.sha256 || (await sha256File(o.dest)) === o.sha256.toLowerCase())
      return { path: o.dest, bytes: o.expectedSize, resumedFrom: o.expectedSize, verified: o.sha256 ? "sha256" : "size" };
  }
  const part = `${o.dest}.part`;
  let start = existsSync(part) ? statSync(part).size : 0;
  if (o.expectedSize && start > o.expectedSize) {
    unlinkSync(part);
    start = 0;
  }
  if (o.expectedSize) {
    // disk space first: a 59 GiB download that fails at 90 % is the worst way to learn the disk is full
    const fs = statfsSync(path.dirname(o.dest));
    const free = Number(fs.bavail) * Number(fs.bsize);
    const need = o.expectedSize - start;
    if (need > free) {
      throw new DownloadError(
        `${path.basename(o.dest)} needs ${(need / 1024 ** 3).toFixed(1)} GiB but ${path.dirname(o.dest)} has ${(free / 1024 ** 3).toFixed(1)} GiB free; free some space or set OCW_STATE_DIR to a larger disk`,
      );
    }
  }
  const headers: Record<string, string> = { ...o.headers };
  if (start > 0) headers.Range = `bytes=${start}-`;
  let res: Response;
  try {
    res = await f(o.url, { headers, signal: o.signal, redirect: "follow" });
  } catch (e) {
    if (o.signal?.aborted) throw new DownloadError(`download cancelled; ${start} bytes kept in ${part} for resume`);
    // the root cause in words (offline: the name does not resolve), never undici's bare "fetch failed"
    throw new DownloadError(`cannot download ${o.url}: ${describeFetchError(e, o.url)}`);
  }
  if (res.status === 416 && o.expectedSize && start === o.expectedSize) {
    // already complete
  } else if (res.status === 200 && start > 0) {
    start = 0; // server ignored Range: restart
  } else if (res.status !== 200 && res.status !== 206) {
    throw new DownloadError(`GET ${o.url} answered HTTP ${res.status}${res.status === 401 || res.status === 403 ? " (gated or private: set HF_TOKEN)" : ""}`);
  }
  const lenHeader = Number(res.headers.get("content-length") ?? NaN);
  const total = o.expectedSize ?? (Number.isFinite(lenHeader) ? lenHeader + start : null);
  const out = createWriteStream(part, { flags: start > 0 ? "a" : "w" });
  let received = start;
  const t0 = performance.now();
  let lastTick = 0;
  let over = false;
  try {
    if (res.status !== 416 && res.body) {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        // A server sending more than the file's known size is not sending the file: stop reading (the disk is not
        // filled with it), and the partial file goes (it cannot be resumed from).
        if (total !== null && received + chunk.length > total) {
          over = true;
          break;
        }
        if (!out.write(chunk)) await once(out, "drain");
        received += chunk.length;
        const now = performance.now();
        if (o.onProgress && now - lastTick > 200) {
          lastTick = now;
          o.onProgress({ received, total, resumedFrom: start, bytesPerSec: ((received - start) / Math.max(1, now - t0)) * 1000 });
        }
      }
    }
  } catch (e) {
    out.end();
    await once(out, "finish").catch(() => {});
    if (o.signal?.aborted) throw new DownloadError(`download cancelled; ${received} bytes kept in ${part} for resume`);
    throw new DownloadError(`download of ${o.url} broke at ${received} bytes (${(e as Error).message}); run again to resume`);
  }
  out.end();
  await once(out, "finish");
  if (over) {
    unlinkSync(part);
    throw new DownloadError(`${o.url} sent more than the ${total} bytes expected: stopped and the partial file removed; run again`);
  }
  o.onProgress?.({ received, total, resumedFrom: start, bytesPerSec: ((received - start) / Math.max(1, performance.now() - t0)) * 1000 });
  const size = statSync(part).size;
  if (total !== null && size !== total) throw new DownloadError(`size mismatch for ${o.url}: got ${size} bytes, expected ${total}; run again to resume`);
  let verified: "sha256" | "size" | "none" = total !== null ? "size" : "none";
  if (o.sha256) {
    const got = await sha256File(part);
    if (got !== o.sha256.toLowerCase()) {
      unlinkSync(part);
      throw new DownloadError(
        `checksum mismatch for ${path.basename(o.dest)}: sha256 ${got.slice(0, 12)}… ≠ ${o.sha256.slice(0, 12)}…; the partial file was removed`,
      );
    }
    verified = "sha256";
  }
  renameSync(part, o.dest);
  return { path: o.dest, bytes: size, resumedFrom: start, verified };
}
