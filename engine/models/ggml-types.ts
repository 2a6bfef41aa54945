/** ggml tensor types as stored in GGUF files: id → [name, block size, bytes per block] (ggml/src/ggml.c type_traits). */
import { SetupError } from "./errors";
const GGML_TYPES: Record<number, readonly [name: string, blck: number, size: number]> = {
  0: ["f32", 1, 4],
  1: ["f16", 1, 2],
  2: ["q4_0", 32, 18],
  3: ["q4_1", 32, 20],
  6: ["q5_0", 32, 22],
  7: ["q5_1", 32, 24],
  8: ["q8_0", 32, 34],
  9: ["q8_1", 32, 36],
  10: ["q2_K", 256, 84],
  11: ["q3_K", 256, 110],
  12: ["q4_K", 256, 144],
  13: ["q5_K", 256, 176],
  14: ["q6_K", 256, 210],
  15: ["q8_K", 256, 292],
  16: ["iq2_xxs", 256, 66],
  17: ["iq2_xs", 256, 74],
  18: ["iq3_xxs", 256, 98],
  19: ["iq1_s", 256, 50],
  20: ["iq4_nl", 32, 18],
  21: ["iq3_s", 256, 110],
  22: ["iq2_s", 256, 82],
  23: ["iq4_xs", 256, 136],
  24: ["i8", 1, 1],
  25: ["i16", 1, 2],
  26: ["i32", 1, 4],
  27: ["i64", 1, 8],
  28: ["f64", 1, 8],
  29: ["iq1_m", 256, 56],
  30: ["bf16", 1, 2],
  34: ["tq1_0", 256, 54],
  35: ["tq2_0", 256, 66],
  39: ["mxfp4", 32, 17],
  40: ["nvfp4", 64, 36],
  41: ["q1_0", 128, 18],
  42: ["q2_0", 64, 18],
};

const BY_NAME = new Map(Object.entries(GGML_TYPES).map(([id, [name]]) => [name.toLowerCase(), Number(id)]));

export function ggmlTypeId(name: string): number | undefined {
  return BY_NAME.get(name.toLowerCase());
}

/** Bytes of a row of `n` elements (ggml_row_size). Throws on an unknown type. */
export function rowBytes(type: number, n: number): number {
  const t = GGML_TYPES[type];
  if (!t) throw new SetupError("gguf", `unknown ggml type id ${type}`, { type });
  return Math.ceil(n / t[1]) * t[2];
}

/** Bytes of a whole tensor: ceil(ne0/blck)*size*ne1*ne2*ne3. */
export function tensorBytes(type: number, shape: readonly number[]): number {
  const [ne0 = 1, ...rest] = shape;
  return rowBytes(type, ne0) * rest.reduce((a, b) => a * b, 1);
}

/** KV cache types llama.cpp accepts for -ctk/-ctv (common/arg.cpp kv_cache_types). */
const KV_CACHE_TYPES = ["f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"] as const;
export type KvCacheType = (typeof KV_CACHE_TYPES)[number];

export function isKvCacheType(s: string): s is KvCacheType {
  return (KV_CACHE_TYPES as readonly string[]).includes(s);
}
