/**
 * Where model metadata comes from: a metadata JSON file, a local GGUF (and its shards), an http(s) URL, or a
 * Hugging Face reference (`hf:owner/repo/path/file.gguf[@rev]`, or `owner/repo:QUANT` via the Hub tree API).
 */
import { config } from "../config";
import { existsSync, readFileSync, type Stats, statSync } from "node:fs";
import path from "node:path";
import { ggmlTypeId, tensorBytes } from "./ggml-types";
import { type GgufFile, type GgufTensorInfo, isMmproj, mergeShards, readGgufFrom, shardNames } from "./gguf";
import { SetupError, type SetupErrorData } from "./errors";

export interface ModelInfo {
  source: string;
  metadata: Record<string, unknown>;
  tensors: GgufTensorInfo[] | null;
  /** Sum of file sizes where known. */
  fileBytes: number | null;
  /** Quant label from general.file_type or the file name (Q4_K_M …). */
  quant: string | null;
  shards: number;
}

export class ModelSourceError extends SetupError {
  constructor(message: string, data: SetupErrorData = {}) {
    super("model-source", message, data);
    this.name = "ModelSourceError";
  }
}

const hfBase = () => (config().OCW_HF_ENDPOINT ?? "https://huggingface.co").replace(/\/+$/, "");

/** general.file_type → label (llama.h llama_ftype). */
const FTYPE: Record<number, string> = {
  0: "F32",
  1: "F16",
  2: "Q4_0",
  3: "Q4_1",
  7: "Q8_0",
  8: "Q5_0",
  9: "Q5_1",
  10: "Q2_K",
  11: "Q3_K_S",
  12: "Q3_K_M",
  13: "Q3_K_L",
  14: "Q4_K_S",
  15: "Q4_K_M",
  16: "Q5_K_S",
  17: "Q5_K_M",
  18: "Q6_K",
  19: "IQ2_XXS",
  20: "IQ2_XS",
  21: "Q2_K_S",
  22: "IQ3_XS",
  23: "IQ3_XXS",
  24: "IQ1_S",
  25: "IQ4_NL",
  26: "IQ3_S",
  27: "IQ3_M",
  28: "IQ2_S",
  29: "IQ2_M",
  30: "IQ4_XS",
  31: "IQ1_M",
  32: "BF16",
  36: "TQ1_0",
  37: "TQ2_0",
  38: "MXFP4_MOE",
};

export function quantFromName(name: string): string | null {
  const m = /[-_.](I?Q\d_[A-Z0-9_]+?|I?Q\d_\d|BF16|F16|F32|MXFP4(?:_MOE)?)(?:-\d{5}-of-\d{5})?\.gguf$/i.exec(name);
  return m ? m[1]!.toUpperCase() : null;
}

function quantOf(meta: Record<string, unknown>, name: string): string | null {
  const ft = meta["general.file_type"];
  if (typeof ft === "number" && FTYPE[ft]) return FTYPE[ft]!;
  return quantFromName(name);
}

/** Parses tensor infos given in a metadata JSON (shape/dims, type as id or name). */
function tensorsFromJson(raw: unknown): GgufTensorInfo[] | null {
  if (!Array.isArray(raw)) return null;
  return raw.map((t, i) => {
    const o = t as Record<string, unknown>;
    const name = String(o.name ?? `tensor${i}`);
    const shape = (o.shape ?? o.dims ?? o.ne) as unknown;
    if (!Array.isArray(shape)) throw new ModelSourceError(`tensor info ${name} has no shape array`);
    const rawType = o.type ?? o.dtype ?? o.ggml_type;
    const type = typeof rawType === "number" ? rawType : ggmlTypeId(String(rawType ?? ""));
    if (type === undefined) throw new ModelSourceError(`tensor info ${name} has unknown type ${String(rawType)}`);
    const dims = shape.map(Number);
    return { name, shape: dims, type, offset: Number(o.offset ?? 0), bytes: tensorBytes(type, dims) };
  });
}

/** The most a metadata JSON file may hold: a real one (every key of a GGUF's header, tensors included) is a few MB. */
const METADATA_MAX_BYTES = 64 * 1024 * 1024;

/**
 * Refuses a local path that is not a regular file (a link to one is followed: the person's own), in words: a folder; a
 * FIFO, whose read waits for a writer for good (read whole, it stopped the engine, every client with it); a device or
 * socket (/dev/zero read whole takes the engine's memory). `what`: what to pass instead.
 */
function regularFile(file: string, what: string): Stats {
  const st = statSync(file, { throwIfNoEntry: false });
  if (!st) throw new ModelSourceError(`no such file: ${file} (${what})`);
  if (st.isDirectory()) throw new ModelSourceError(`${file} is a folder, not a file (${what})`);
  if (!st.isFile()) throw new ModelSourceError(`${file} is not a regular file (a FIFO, socket or device): ${what}`);
  return st;
}

export function loadMetadataFile(file: string): ModelInfo {
  const what = "pass a JSON object of GGUF metadata keys";
  if (regularFile(file, what).size > METADATA_MAX_BYTES)
    throw new ModelSourceError(`${file} is over ${METADATA_MAX_BYTES / 1024 / 1024} MB: not a metadata file (${what})`);
  let j: unknown;
  try {
    j = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw new ModelSourceError(`${file} is not valid JSON: ${(e as Error).message}`);
  }
  if (!j || typeof j !== "object" || Array.isArray(j)) throw new ModelSourceError(`${file} must hold a JSON object of GGUF metadata keys → values`);
  let obj = j as Record<string, unknown>;
  // accept {metadata:{…}, tensorInfos:[…]} (the @huggingface/gguf shape) as well as a flat object
  let tensorsRaw: unknown = obj.tensors ?? obj.tensor_infos ?? obj.tensorInfos;
  if (obj.metadata && typeof obj.metadata === "object") obj = obj.metadata as Record<string, unknown>;
  const meta: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) if (!["tensors", "tensor_infos", "tensorInfos"].includes(k)) meta[k] = v;
  tensorsRaw ??= undefined;
  return { source: file, metadata: meta, tensors: tensorsFromJson(tensorsRaw), fileBytes: null, quant: quantOf(meta, file), shards: 1 };
}

/** `hf:owner/repo/dir/file.gguf@rev` → resolve URL. */
export function hfUrl(ref: string): string | null {
  const m = /^hf:([^/\s]+)\/([^/\s]+)\/(.+?\.gguf)(?:@([\w.\-/]+))?$/i.exec(ref);
  if (!m) return null;
  return `${hfBase()}/${m[1]}/${m[2]}/resolve/${m[4] ?? "main"}/${m[3]}`;
}

export async function loadGguf(ref: string, headers: Record<string, string> = {}): Promise<ModelInfo> {
  const url = hfUrl(ref) ?? (/^https?:\/\//i.test(ref) ? ref : null);
  if (url) {
    const base = url.slice(0, url.lastIndexOf("/") + 1);
    const name = url.slice(url.lastIndexOf("/") + 1).replace(/\?.*$/, "");
    const names = shardNames(name);
    const files: GgufFile[] = [];
    for (const n of names) {
      try {
        files.push(await readGgufFrom(base + n, { headers }));
      } catch (e) {
        throw new ModelSourceError(`cannot read GGUF header from ${base + n}: ${(e as Error).message}`);
      }
    }
    const f = mergeShards(files);
    if (isMmproj(f)) throw new ModelSourceError(`${ref} is an mmproj (vision) file; pass the language model GGUF`);
    return { source: ref, metadata: f.metadata, tensors: f.tensors, fileBytes: null, quant: quantOf(f.metadata, name), shards: names.length };
  }
  if (!existsSync(ref)) throw new ModelSourceError(`no such file: ${ref} (pass a .gguf path, an http(s) URL or hf:owner/repo/file.gguf)`);
  const names = shardNames(path.basename(ref)).map((n) => path.join(path.dirname(ref), n));
  for (const n of names) if (!existsSync(n)) throw new ModelSourceError(`missing shard ${n} of ${ref}`);
  for (const n of names) regularFile(n, "pass a .gguf file, an http(s) URL or hf:owner/repo/file.gguf");
  const files: GgufFile[] = [];
  for (const n of names) {
    try {
      files.push(await readGgufFrom(n));
    } catch (e) {
      // the reader's message names the file already (it said it three times with the prefixes above it)
      const m = (e as Error).message;
      throw new ModelSourceError(m.includes(n) ? m : `${n}: ${m}`);
    }
  }
  const f = mergeShards(files);
  if (isMmproj(f)) throw new ModelSourceError(`${ref} is an mmproj (vision) file; pass the language model GGUF`);
  const fileBytes = names.reduce((a, n) => a + statSync(n).size, 0);
  return { source: ref, metadata: f.metadata, tensors: f.tensors, fileBytes, quant: quantOf(f.metadata, ref), shards: names.length };
}
