/**
 * The compute buffer llama.cpp reserves, by replaying how it is sized (llama.cpp 80fb11a):
 *  - src/llama-context.cpp sched_reserve(): the worst-case prompt graph with n_tokens = min(n_ctx, n_ubatch) rounded up
 *    to a multiple of n_seqs (graph_reserve), n_seqs = n_seq_max, n_outputs = min(n_tokens, n_outputs_max), where
 *    llama-server sets n_outputs_max = n_parallel (server-context.cpp); then the 1-token graph and the prompt graph
 *    again: the buffer is the largest of them, which is the prompt graph.
 *  - ggml/src/ggml-alloc.c ggml_gallocr_alloc_graph_impl(): graph inputs (token ids, positions, KV row indices, the KQ
 *    masks, the output ids) are allocated first; then every node in graph order, reusing a parent's memory in place when
 *    the op allows it (ADD, MUL, RMS_NORM, ROPE, SCALE, SOFT_MAX, UNARY …), the parent has no other use left and the
 *    layout is the same; a tensor is freed after its last consumer; graph outputs (the logits) are never freed.
 *  - ggml_dyn_tallocr: best-fit among the free blocks (the last block only when nothing else fits), 32-byte alignment
 *    (TENSOR_ALIGNMENT); the buffer is the highest offset ever reached. Fragmentation is why the buffer grows with the
 *    number of layers and is not a plain sum of the live tensors.
 * The graph below is the one llama.cpp builds for a decoder block (src/models/llama.cpp, gemma3.cpp, lfm2.cpp;
 * src/llama-graph.cpp build_attn / build_ffn), tensor by tensor, as dumped with GGML_SCHED_DEBUG=2. Views cost nothing
 * and are folded into the tensor they view. Weights and the KV cache live in other buffers and are not part of it.
 */
import type { ModelHparams } from "./hparams";

/** ggml_dyn_tallocr with one chunk (CPU and GPU buffers have no practical max size at these sizes). */
class DynAllocator {
  private free: { offset: number; size: number }[] = [{ offset: 0, size: Number.MAX_SAFE_INTEGER }];
  maxSize = 0;
  constructor(private readonly alignment: number) {}
  private align(n: number): number {
    return Math.ceil(n / this.alignment) * this.alignment;
  }
  alloc(bytes: number): number {
    const size = this.align(bytes);
    let best = -1;
    let bestSize = Infinity;
    // best fit among the blocks but the last; `<=` keeps the last equal one, as ggml does
    for (let i = 0; i < this.free.length - 1; i++) {
      const b = this.free[i]!;
      if (b.size >= size && b.size <= bestSize) {
        best = i;
        bestSize = b.size;
      }
    }
    if (best < 0) best = this.free.length - 1;
    const b = this.free[best]!;
    const offset = b.offset;
    b.offset += size;
    b.size -= size;
    if (b.size === 0) this.free.splice(best, 1);
    this.maxSize = Math.max(this.maxSize, offset + size);
    return offset;
  }
  release(offset: number, bytes: number): void {
    const size = this.align(bytes);
    for (let i = 0; i < this.free.length; i++) {
      const b = this.free[i]!;
      if (b.offset + b.size === offset) {
        b.size += size;
        const next = this.free[i + 1];
        if (next && b.offset + b.size === next.offset) {
          b.size += next.size;
          this.free.splice(i + 1, 1);
        }
        return;
      }
      if (offset + size === b.offset) {
        b.offset = offset;
        b.size += size;
        const prev = this.free[i - 1];
        if (prev && prev.offset + prev.size === b.offset) {
          prev.size += b.size;
          this.free.splice(i, 1);
        }
        return;
      }
    }
    let at = 0;
    while (at < this.free.length && this.free[at]!.offset < offset) at++;
    this.free.splice(at, 0, { offset, size });
  }
}

/** A graph of the tensors that the allocator places, in ggml's node order (flat arrays: models have thousands of nodes). */
export class ComputeGraph {
  private inputs: number[] = [];
  /** Per node: the tensor it produces (-1: none of its own, e.g. SET_ROWS into the cache), ggml_op_can_inplace(op),
   * and its srcs (tensor ids as given, a view's id and not its base) as srcAt[node]..srcAt[node + 1]. */
  private nodeId: number[] = [];
  private nodeInplace: boolean[] = [];
  private srcAt: number[] = [0];
  private srcs: number[] = [];
  /** Per tensor id: its size, whether it is a graph output, and the tensor whose memory it is (itself unless a view). */
  private bytes: number[] = [];
  private output: boolean[] = [];
  private base: number[] = [];
  private add(bytes: number, output: boolean, base?: number): number {
    const id = this.bytes.length;
    this.bytes.push(bytes);
    this.output.push(output);
    this.base.push(base ?? id);
    return id;
  }
  private node(id: number, inplace: boolean, srcs: number[]): void {
    this.nodeId.push(id);
    this.nodeInplace.push(inplace);
    for (const x of srcs) if (x >= 0) this.srcs.push(x);
    this.srcAt.push(this.srcs.length);
  }
  input(bytes: number): number {
    const id = this.add(bytes, false);
    this.inputs.push(id);
    return id;
  }
  /** A node; srcs that are -1 (weights, the KV cache: other buffers) are left out. */
  op(bytes: number, srcs: number[], o: { inplace?: boolean; output?: boolean } = {}): number {
    const id = this.add(bytes, !!o.output);
    this.node(id, !!o.inplace, srcs);
    return id;
  }
  /** A node with no result of its own (SET_ROWS / CPY into the cache): it only consumes its srcs. */
  sink(srcs: number[]): void {
    this.node(-1, false, srcs);
  }
  /** A view of `src` (reshape, permute, transpose, a slice): same memory. */
  view(src: number): number {
    return this.add(0, false, this.base[src]);
  }

  /** The buffer size ggml_gallocr reaches for this graph. */
  bufferSize(alignment = 32): number {
    const a = new DynAllocator(alignment);
    const { bytes, base, output, srcs, srcAt } = this;
    const left = new Int32Array(bytes.length);
    const addr = new Float64Array(bytes.length).fill(-1);
    for (const x of srcs) left[base[x]!]!++;
    for (const id of this.inputs) addr[id] = a.alloc(bytes[id]!);
    for (let i = 0; i < this.nodeId.length; i++) {
      const id = this.nodeId[i]!;
      const from = srcAt[i]!;
      const to = srcAt[i + 1]!;
      if (id >= 0 && bytes[id]! > 0) {
        let reused = false;
        if (this.nodeInplace[i]) {
          for (let j = from; j < to; j++) {
            const x = srcs[j]!;
            const r = base[x]!;
            // a view is never "own" memory to ggml_gallocr_is_own(), so a node on a view (ROPE on a reshaped Q)
            // always gets new memory; outputs are never reused; the layout must match; no other use may be left
            if (x !== r || addr[r]! < 0 || output[r] || bytes[r] !== bytes[id] || left[r] !== 1) continue;
            addr[id] = addr[r]!;
            addr[r] = -1; // the parent's memory is this node's now: it is not freed with the parent
            reused = true;
            break;
          }
        }
        if (!reused) addr[id] = a.alloc(bytes[id]!);
      }
      for (let j = from; j < to; j++) {
        const r = base[srcs[j]!]!;
        if (--left[r]! <= 0 && addr[r]! >= 0 && !output[r]) {
          a.release(addr[r]!, bytes[r]!);
          addr[r] = -1;
        }
      }
    }
    return a.maxSize;
  }
}

/** What the compute graph depends on: the model's shape per layer (as the hyperparameters give it), and the reserve's batch. */
interface ComputeShape
  extends Pick<
    ModelHparams,
    | "arch"
    | "nEmbd"
    | "nVocab"
    | "nHead"
    | "nHeadKv"
    | "nFf"
    | "headK"
    | "headV"
    | "headKSwa"
    | "headVSwa"
    | "isSwa"
    | "kvLayer"
    | "rsLayer"
    | "nLayer"
    | "nEmbdR"
  > {
  /** Reserve batch: tokens (already a multiple of nSeqs), sequences, outputs. */
  nTokens: number;
  nSeqs: number;
  nOutputs: number;
  /** KV cells per stream of the main and of the sliding-window cache (0: none). */
  nKv: number;
  nKvSwa: number;
  flashAttn: boolean;
  /** A quantized K / V cache: llama.cpp rotates Q and K (V and the attention output) by a Hadamard matrix when the head
   * size is a multiple of 64 (src/llama-kv-cache.cpp attn_rot_k / attn_rot_v, llama_mul_mat_hadamard). */
  quantK?: boolean;
  quantV?: boolean;
}

const F32 = 4;
// Archs whose attention normalises Q and K per head before RoPE (an RMS_NORM and a MUL on each, both in place).
const QK_NORM =
  /^(qwen3|qwen35|qwen3next|qwen3moe|gemma3|gemma3n|gemma4|lfm2|olmo2|olmoe|chameleon|cohere2|exaone4|smollm3|granite|hunyuan|ernie|seed_oss|apertus)/;
// Gemma: the input embedding is scaled (SCALE) and attention / FFN outputs get a post-norm.
const GEMMA = /^gemma/;
const LFM2 = /^lfm2/;

/** Every field of a ComputeShape, in one order: a shape's key (the type check below fails when one is missing). */
const SHAPE_FIELDS = [
  "arch",
  "nEmbd",
  "nVocab",
  "nHead",
  "nHeadKv",
  "nFf",
  "headK",
  "headV",
  "headKSwa",
  "headVSwa",
  "isSwa",
  "kvLayer",
  "rsLayer",
  "nLayer",
  "nEmbdR",
  "nTokens",
  "nSeqs",
  "nOutputs",
  "nKv",
  "nKvSwa",
  "flashAttn",
  "quantK",
  "quantV",
] as const satisfies readonly (keyof ComputeShape)[];
const everyField: [Exclude<keyof ComputeShape, (typeof SHAPE_FIELDS)[number]>] extends [never] ? true : never = true;
void everyField;

/** Buffer sizes by shape: a plan asks for the same few dozen shapes ~1,000 times (every candidate, slot count, context). */
const computed = new Map<string, number>();
const COMPUTED_MAX = 1024;

/**
 * The prompt-graph compute buffer llama.cpp reserves for this shape. Architectures other than the llama/qwen/gemma/lfm2
 * families are built with the same decoder block (attention or a short-conv layer, then a gated FFN), which is what most
 * of them are; MoE FFNs and other recurrent layers (Mamba, gated delta-net) have wider intermediates and are counted
 * as dense FFN / short-conv layers. Worked out once per shape (the graph of a large model is thousands of nodes).
 */
export function computeBufferBytes(s: ComputeShape): number {
  const key = JSON.stringify(SHAPE_FIELDS.map((f) => s[f] ?? null));
  let bytes = computed.get(key);
  if (bytes === undefined) {
    bytes = graphBufferBytes(s);
    if (computed.size >= COMPUTED_MAX) computed.delete(computed.keys().next().value!);
    computed.set(key, bytes);
  }
  return bytes;
}

function graphBufferBytes(s: ComputeShape): number {
  const g = new ComputeGraph();
  const T = s.nTokens;
  const E = s.nEmbd;
  const hasAttn = s.kvLayer.some(Boolean);
  const hasSwa = hasAttn && s.nKvSwa > 0 && s.isSwa.some((x, il) => x && s.kvLayer[il]);
  const vWidthMax = Math.max(0, ...s.kvLayer.map((k, il) => (k ? (s.isSwa[il] ? s.headVSwa : s.headV) * (s.nHeadKv[il] ?? 0) : 0)));
  const maskBytes = (nKv: number) => nKv * T * (s.flashAttn ? 2 : F32);
  const vIdxBytes = s.flashAttn ? 8 * T : 8 * T * vWidthMax;

  // graph inputs, allocated before any node
  const tokens = g.input(4 * T);
  // build_inp_embd() also declares the embeddings input of the other path (a batch of vectors instead of tokens);
  // ggml_build_forward_select() keeps it in the graph, so it is allocated too
  g.input(E * T * F32);
  const pos = g.input(4 * T);
  let kIdx = -1,
    vIdx = -1,
    mask = -1,
    kIdxSwa = -1,
    vIdxSwa = -1,
    maskSwa = -1;
  // each cache's Hadamard matrices (quantized caches), row indices and mask, in the order ggml first meets them (the
  // cache of the first attention layer first)
  const first = s.kvLayer.findIndex(Boolean);
  const caches = hasSwa && s.isSwa[first] ? ["swa", "main"] : hasSwa ? ["main", "swa"] : hasAttn ? ["main"] : [];
  const rot = { main: { k: -1, v: -1 }, swa: { k: -1, v: -1 } };
  for (const c of caches as ("main" | "swa")[]) {
    const dk = c === "swa" ? s.headKSwa : s.headK;
    const dv = c === "swa" ? s.headVSwa : s.headV;
    if (s.quantK && dk > 0 && dk % 64 === 0 && s.headK % 64 === 0) {
      let nrot = 64;
      while (dk % (nrot * 2) === 0) nrot *= 2; // the largest power of two that divides the head size
      rot[c].k = g.input(nrot * nrot * F32);
    }
    if (s.quantV && dv > 0 && dv % 64 === 0 && s.headV % 64 === 0) rot[c].v = g.input(64 * 64 * F32);
    const k = g.input(8 * T);
    const v = g.input(vIdxBytes);
    const m = g.input(maskBytes(c === "swa" ? s.nKvSwa : s.nKv));
    if (c === "swa") [kIdxSwa, vIdxSwa, maskSwa] = [k, v, m];
    else [kIdx, vIdx, mask] = [k, v, m];
  }
  const outIds = g.input(4 * s.nOutputs);

  let x = g.op(E * T * F32, [tokens]); // GET_ROWS token_embd
  if (GEMMA.test(s.arch)) x = g.op(E * T * F32, [x], { inplace: true }); // SCALE by sqrt(n_embd)
  const qkNorm = QK_NORM.test(s.arch);
  const gemma = GEMMA.test(s.arch);
  const lastLayer = s.nLayer - 1;
  let n = T; // tokens flowing through the block (the last layer keeps only the outputs after attention)
  // short-conv layers read their conv state with a GET_ROWS per sequence; the first one before layer 0 runs
  const stateBytes = Math.max(0, s.nEmbdR) * s.nSeqs * F32;
  const fetchState = () => g.op(stateBytes, []);
  const isConv = (il: number) => il < s.nLayer && !!s.rsLayer[il] && !s.kvLayer[il];
  let nextState = isConv(0) ? fetchState() : -1;
  // llama.cpp expands each layer's cache writes (and the attention) into the graph as it builds the layer, and the next
  // layer's state read right after them: so a short-conv layer's state is read before the previous layer has finished
  const prefetch = (il: number) => {
    nextState = isConv(il + 1) ? fetchState() : -1;
  };

  for (let il = 0; il < s.nLayer; il++) {
    const last = il === lastLayer;
    let cur = g.op(E * n * F32, [x], { inplace: true }); // RMS_NORM
    cur = g.op(E * n * F32, [cur], { inplace: true }); // MUL attn_norm
    let mixed: number;
    if (s.kvLayer[il]) {
      const swa = s.isSwa[il] && hasSwa;
      const dk = swa ? s.headKSwa : s.headK;
      const dv = swa ? s.headVSwa : s.headV;
      const h = s.nHead[il] ?? 0;
      const hkv = s.nHeadKv[il] ?? 0;
      const nKv = swa ? s.nKvSwa : s.nKv;
      const rope = (t: number, bytes: number) => {
        // ROPE on the reshaped projection (a view: new memory), or in place on the output of the per-head norm
        if (!qkNorm) return g.op(bytes, [g.view(t), pos], { inplace: true });
        let r = g.op(bytes, [g.view(t)], { inplace: true }); // RMS_NORM per head, on the reshaped projection
        r = g.op(bytes, [r], { inplace: true }); // MUL q/k_norm
        return g.op(bytes, [r, pos], { inplace: true }); // ROPE
      };
      const r = rot[swa ? "swa" : "main"];
      // llama_mul_mat_hadamard: a MUL_MAT by the rotation on a reshaped view (new memory of the same size)
      const hadamard = (t: number, bytes: number, by: number) => (by >= 0 ? g.op(bytes, [by, g.view(t)]) : t);
      let q = rope(g.op(dk * h * n * F32, [cur]), dk * h * n * F32);
      if (gemma) q = g.op(dk * h * n * F32, [q], { inplace: true }); // SCALE by 1/sqrt(d)
      q = hadamard(q, dk * h * n * F32, r.k);
      let k: number, v: number;
      if (gemma || qkNorm) {
        k = hadamard(rope(g.op(dk * hkv * n * F32, [cur]), dk * hkv * n * F32), dk * hkv * n * F32, r.k);
        v = hadamard(g.op(dv * hkv * n * F32, [cur]), dv * hkv * n * F32, r.v);
      } else {
        v = hadamard(g.op(dv * hkv * n * F32, [cur]), dv * hkv * n * F32, r.v);
        k = hadamard(rope(g.op(dk * hkv * n * F32, [cur]), dk * hkv * n * F32), dk * hkv * n * F32, r.k);
      }
      g.sink([g.view(k), swa ? kIdxSwa : kIdx]); // SET_ROWS into the K cache
      g.sink([g.view(v), swa ? vIdxSwa : vIdx]); // SET_ROWS into the V cache
      const m = swa ? maskSwa : mask;
      let o: number;
      if (s.flashAttn)
        o = g.op(dv * h * n * F32, [g.view(q), m]); // FLASH_ATTN_EXT
      else {
        const kq = g.op(nKv * n * h * F32, [g.view(q)]); // MUL_MAT K·Q
        const sm = g.op(nKv * n * h * F32, [kq, m], { inplace: true }); // SOFT_MAX_EXT
        const kqv = g.op(dv * n * h * F32, [sm]); // MUL_MAT V·KQ
        o = g.op(dv * h * n * F32, [g.view(kqv)]); // CONT of the permuted result
      }
      o = hadamard(o, dv * h * n * F32, r.v); // the output is rotated back when V was rotated
      prefetch(il);
      mixed = g.op(E * n * F32, [g.view(o)]); // MUL_MAT attn_output
    } else {
      // a short-conv (LFM2) layer: in_proj to B, C, x; B·x; concat with the conv state; conv; C·conv; out_proj
      const bcx = g.op(3 * E * n * F32, [cur]);
      const bx = g.op(E * n * F32, [g.view(bcx), g.view(bcx)], { inplace: true });
      const state = nextState >= 0 ? nextState : fetchState();
      const cat = g.op((E * n + stateBytes / F32) * F32, [g.view(state), g.view(bx)]); // CONCAT
      g.sink([g.view(cat)]); // CPY of the new state into the cache
      prefetch(il);
      const conv = g.op(E * n * F32, [cat]); // SSM_CONV
      const y = g.op(E * n * F32, [g.view(bcx), conv], { inplace: true }); // MUL C·conv
      mixed = g.op(E * n * F32, [y]); // MUL_MAT out_proj
    }
    if (last) {
      // only the rows that produce logits go on: GET_ROWS of the attention output and of the residual
      mixed = g.op(E * s.nOutputs * F32, [mixed, outIds]);
      x = g.op(E * s.nOutputs * F32, [x, outIds]);
      n = s.nOutputs;
    }
    if (gemma) {
      mixed = g.op(E * n * F32, [mixed], { inplace: true }); // RMS_NORM post-attention
      mixed = g.op(E * n * F32, [mixed], { inplace: true }); // MUL
    }
    // ADD of the residual: llama and gemma write add(branch, residual), lfm2 add(residual, branch); in-place on the first
    // that has no other use left
    const residualFirst = LFM2.test(s.arch);
    const add = (branch: number, residual: number) => g.op(E * n * F32, residualFirst ? [residual, branch] : [branch, residual], { inplace: true });
    const ffnInp = add(mixed, x);
    const ff = s.nFf[il] ?? 0;
    let out: number;
    if (ff > 0) {
      let c = g.op(E * n * F32, [ffnInp], { inplace: true }); // RMS_NORM
      c = g.op(E * n * F32, [c], { inplace: true }); // MUL ffn_norm
      const gate = g.op(ff * n * F32, [c]);
      const up = g.op(ff * n * F32, [c]);
      const glu = g.op(ff * n * F32, [gate, up]); // SWIGLU / GEGLU (not in place)
      let down = g.op(E * n * F32, [glu]);
      if (gemma) {
        down = g.op(E * n * F32, [down], { inplace: true }); // RMS_NORM post-FFN
        down = g.op(E * n * F32, [down], { inplace: true }); // MUL
      }
      out = add(down, ffnInp);
    } else out = ffnInp;
    x = out;
  }
  let c = g.op(E * n * F32, [x], { inplace: true }); // RMS_NORM output_norm
  c = g.op(E * n * F32, [c], { inplace: true }); // MUL
  g.op(s.nVocab * s.nOutputs * F32, [c], { output: true }); // MUL_MAT lm_head: the logits, a graph output
  return g.bufferSize();
}
