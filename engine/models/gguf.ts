/**
 * A small GGUF header reader: metadata key/values and tensor infos, from a local file or an HTTP(S) URL
 * (Range requests, so a multi-GB file is never downloaded to read its header). Spec: ggml/docs/gguf.md.
 */
import { open } from "node:fs/promises";
import { tensorBytes } from "./ggml-types";
import { SetupError, type SetupErrorData } from "./errors";
import { readPrefix } from "../net";

export type GgufValue = number | bigint | boolean | string | GgufValue[] | GgufArraySummary;

/** Large arrays (tokenizer vocab, merges) are summarized unless `fullArrays` is set. */
interface GgufArraySummary {
  readonly __gguf_array: true;
  itemType: number;
  length: number;
}

export interface GgufTensorInfo {
  name: string;
  /** ne0, ne1, … (ggml order: ne0 is the row length). */
  shape: number[];
  type: number;
  /** Offset relative to the start of the tensor data section. */
  offset: number;
  bytes: number;
}

export interface GgufFile {
  version: number;
  metadata: Record<string, GgufValue>;
  /** GGUF value type of each key (and item type for arrays), so a file can be copied faithfully. */
  types: Record<string, { type: number; itemType?: number }>;
  tensors: GgufTensorInfo[];
  /** Absolute file offset of the tensor data (after alignment). */
  dataOffset: number;
  alignment: number;
}

/** Random-access byte source. */
interface ByteSource {
  read(offset: number, length: number): Promise<Uint8Array>;
  close?(): Promise<void>;
  describe: string;
}

export class GgufError extends SetupError {
  constructor(message: string, data: SetupErrorData = {}) {
    super("gguf", message, data);
    this.name = "GgufError";
  }
}

const T = { U8: 0, I8: 1, U16: 2, I16: 3, U32: 4, I32: 5, F32: 6, BOOL: 7, STRING: 8, ARRAY: 9, U64: 10, I64: 11, F64: 12 } as const;
const FIXED: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

function fileSource(path: string): ByteSource {
  let fh: Awaited<ReturnType<typeof open>> | undefined;
  return {
    describe: path,
    async read(offset, length) {
      fh ??= await open(path, "r");
      const buf = Buffer.alloc(length);
      const { bytesRead } = await fh.read(buf, 0, length, offset);
      return buf.subarray(0, bytesRead);
    },
    async close() {
      await fh?.close();
      fh = undefined;
    },
  };
}

/** HTTP Range source. `headers` may carry an Authorization header for gated repos. */
export function urlSource(url: string, headers: Record<string, string> = {}, fetchImpl: typeof fetch = fetch): ByteSource {
  return {
    describe: url,
    async read(offset, length) {
      let res: Response;
      try {
        res = await fetchImpl(url, {
          headers: { ...headers, Range: `bytes=${offset}-${offset + length - 1}` },
          redirect: "follow",
        });
      } catch (e) {
        const cause = (e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message;
        throw new GgufError(
          `cannot reach ${new URL(url).host} (${cause}): offline, or a proxy/firewall blocks it; download the file by hand and pass its path`,
        );
      }
      if (res.status === 401 || res.status === 403)
        throw new GgufError(`GET ${url} answered HTTP ${res.status}: the repo is gated or private; accept its license on the Hub and set HF_TOKEN`);
      if (res.status === 404) throw new GgufError(`GET ${url} answered HTTP 404: no such file or repo (check the name and the quant)`);
      if (res.status !== 206 && res.status !== 200) {
        throw new GgufError(`GET ${url} (range ${offset}+${length}) answered HTTP ${res.status}`);
      }
      // A server that ignores Range sends the whole body from 0 (a model file: gigabytes): only what is asked for is
      // read, the rest of the connection is cancelled.
      if (res.status === 200) return new Uint8Array((await readPrefix(res, offset + length)).subarray(offset, offset + length));
      return new Uint8Array(await readPrefix(res, length));
    },
  };
}

/** Buffered sequential reader over a ByteSource. */
class Cursor {
  private buf = new Uint8Array(0);
  private bufStart = 0;
  pos = 0;
  constructor(
    private readonly src: ByteSource,
    private readonly chunk: number,
    private readonly maxBytes: number,
  ) {}

  private async ensure(n: number): Promise<void> {
    const have = this.bufStart + this.buf.length - this.pos;
    if (have >= n) return;
    if (this.pos + n > this.maxBytes) {
      throw new GgufError(`GGUF header of ${this.src.describe} exceeds ${this.maxBytes} bytes; the file is corrupt or not GGUF`);
    }
    const keepFrom = this.pos - this.bufStart;
    const kept = this.buf.subarray(keepFrom);
    const want = Math.max(n - kept.length, this.chunk);
    const more = await this.src.read(this.bufStart + this.buf.length, want);
    const next = new Uint8Array(kept.length + more.length);
    next.set(kept, 0);
    next.set(more, kept.length);
    this.buf = next;
    this.bufStart = this.pos;
    if (next.length < n) throw new GgufError(`unexpected end of ${this.src.describe} at byte ${this.pos}: truncated GGUF`);
  }

  async bytes(n: number): Promise<Uint8Array> {
    await this.ensure(n);
    const off = this.pos - this.bufStart;
    this.pos += n;
    return this.buf.subarray(off, off + n);
  }

  async view(n: number): Promise<DataView> {
    const b = await this.bytes(n);
    return new DataView(b.buffer, b.byteOffset, n);
  }

  async u32(): Promise<number> {
    return (await this.view(4)).getUint32(0, true);
  }

  async u64(): Promise<number> {
    const v = (await this.view(8)).getBigUint64(0, true);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new GgufError(`64-bit count ${v} too large: corrupt GGUF`);
    return Number(v);
  }

  async str(): Promise<string> {
    const n = await this.u64();
    if (n > 64 * 1024 * 1024) throw new GgufError(`string of ${n} bytes: corrupt GGUF`);
    return new TextDecoder().decode(await this.bytes(n));
  }

  async skip(n: number): Promise<void> {
    await this.bytes(n);
  }
}

async function peekItemType(src: ByteSource, pos: number): Promise<number> {
  const b = await src.read(pos, 4);
  return new DataView(b.buffer, b.byteOffset, 4).getUint32(0, true);
}

export const GGUF_VALUE_TYPE = T;

async function readScalar(c: Cursor, type: number): Promise<number | bigint | boolean | string> {
  switch (type) {
    case T.U8:
      return (await c.view(1)).getUint8(0);
    case T.I8:
      return (await c.view(1)).getInt8(0);
    case T.U16:
      return (await c.view(2)).getUint16(0, true);
    case T.I16:
      return (await c.view(2)).getInt16(0, true);
    case T.U32:
      return (await c.view(4)).getUint32(0, true);
    case T.I32:
      return (await c.view(4)).getInt32(0, true);
    case T.F32:
      return (await c.view(4)).getFloat32(0, true);
    case T.BOOL:
      return (await c.view(1)).getUint8(0) !== 0;
    case T.STRING:
      return c.str();
    case T.U64: {
      const v = (await c.view(8)).getBigUint64(0, true);
      return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
    }
    case T.I64: {
      const v = (await c.view(8)).getBigInt64(0, true);
      return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v;
    }
    case T.F64:
      return (await c.view(8)).getFloat64(0, true);
    default:
      throw new GgufError(`unknown GGUF value type ${type}: corrupt GGUF`);
  }
}

async function readValue(c: Cursor, type: number, fullArrays: boolean, arrayLimit: number): Promise<GgufValue> {
  if (type !== T.ARRAY) return readScalar(c, type);
  const itemType = await c.u32();
  const length = await c.u64();
  if (itemType === T.ARRAY) {
    const out: GgufValue[] = [];
    for (let i = 0; i < length; i++) out.push(await readValue(c, T.ARRAY, fullArrays, arrayLimit));
    return out;
  }
  if (!fullArrays && length > arrayLimit) {
    if (itemType === T.STRING) for (let i = 0; i < length; i++) await c.skip(await c.u64());
    else {
      const size = FIXED[itemType];
      if (size === undefined) throw new GgufError(`unknown GGUF array item type ${itemType}`);
      await c.skip(size * length);
    }
    return { __gguf_array: true, itemType, length };
  }
  const out: GgufValue[] = [];
  for (let i = 0; i < length; i++) out.push(await readScalar(c, itemType));
  return out;
}

interface ReadGgufOptions {
  /** Keep every array element (needed to copy a tokenizer). Default: arrays over `arrayLimit` are summarized. */
  fullArrays?: boolean;
  arrayLimit?: number;
  /** Read chunk: 2 MiB for URLs by default, 1 MiB for files. */
  chunk?: number;
  /** Header size cap (default 256 MiB; big vocabularies are tens of MB). */
  maxHeaderBytes?: number;
}

async function readGguf(src: ByteSource, opts: ReadGgufOptions = {}): Promise<GgufFile> {
  const c = new Cursor(src, opts.chunk ?? 1 << 20, opts.maxHeaderBytes ?? 256 * 1024 * 1024);
  try {
    // a read error (offline, 401, 404) is its own message, never "not a GGUF"; only a short file reads as empty
    const magic = new TextDecoder().decode(
      await c.bytes(4).catch((e: unknown) => {
        if (e instanceof GgufError && /truncated/.test(e.message)) return new Uint8Array();
        throw e;
      }),
    );
    if (magic !== "GGUF")
      throw new GgufError(`${src.describe} is not a GGUF file (magic ${JSON.stringify(magic)}): pass a .gguf model file (llama.cpp's format)`);
    const version = await c.u32();
    if (version < 2 || version > 3) throw new GgufError(`${src.describe}: unsupported GGUF version ${version}`);
    const nTensors = await c.u64();
    const nKv = await c.u64();
    if (nKv > 1_000_000 || nTensors > 10_000_000) throw new GgufError(`${src.describe}: implausible counts; corrupt GGUF`);
    const metadata: Record<string, GgufValue> = {};
    const types: GgufFile["types"] = {};
    for (let i = 0; i < nKv; i++) {
      const key = await c.str();
      const type = await c.u32();
      const pos = c.pos;
      metadata[key] = await readValue(c, type, opts.fullArrays ?? false, opts.arrayLimit ?? 1024);
      types[key] = { type };
      if (type === T.ARRAY) {
        const v = metadata[key];
        types[key].itemType = Array.isArray(v) ? undefined : (v as GgufArraySummary).itemType;
        if (types[key].itemType === undefined) types[key].itemType = await peekItemType(src, pos);
      }
    }
    const tensors: GgufTensorInfo[] = [];
    for (let i = 0; i < nTensors; i++) {
      const name = await c.str();
      const nDims = await c.u32();
      if (nDims > 8) throw new GgufError(`${src.describe}: tensor ${name} has ${nDims} dims; corrupt GGUF`);
      const shape: number[] = [];
      for (let d = 0; d < nDims; d++) shape.push(await c.u64());
      const type = await c.u32();
      const offset = await c.u64();
      let bytes: number;
      try {
        bytes = tensorBytes(type, shape);
      } catch {
        throw new GgufError(`${src.describe}: tensor ${name} has unknown type ${type}`);
      }
      tensors.push({ name, shape, type, offset, bytes });
    }
    const alignment = typeof metadata["general.alignment"] === "number" ? (metadata["general.alignment"] as number) : 32;
    const dataOffset = Math.ceil(c.pos / alignment) * alignment;
    return { version, metadata, types, tensors, dataOffset, alignment };
  } finally {
    await src.close?.();
  }
}

/** Reads a local path or http(s) URL. */
export async function readGgufFrom(pathOrUrl: string, opts: ReadGgufOptions & { headers?: Record<string, string> } = {}): Promise<GgufFile> {
  if (/^https?:\/\//i.test(pathOrUrl)) {
    return readGguf(urlSource(pathOrUrl, opts.headers), { chunk: 2 << 20, ...opts });
  }
  return readGguf(fileSource(pathOrUrl), opts);
}

/** `name-00001-of-00003.gguf` → the list of all shard names; a non-sharded name → [name]. */
export function shardNames(name: string): string[] {
  const m = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/.exec(name);
  if (!m) return [name];
  const n = Number(m[3]);
  return Array.from({ length: n }, (_, i) => `${m[1]}-${String(i + 1).padStart(5, "0")}-of-${m[3]}.gguf`);
}

/** Merges the shards of a split model: metadata of the first, tensors of all. */
export function mergeShards(files: GgufFile[]): GgufFile {
  const [first] = files;
  if (!first) throw new GgufError("no shards");
  return { ...first, tensors: files.flatMap((f) => f.tensors) };
}

export function isMmproj(f: Pick<GgufFile, "metadata">): boolean {
  return f.metadata["general.architecture"] === "clip";
}
