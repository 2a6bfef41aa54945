import { describe, expect, it } from "vitest";
import { ComputeGraph } from "./compute-graph";

// The rules of ggml/src/ggml-alloc.c that the compute estimate depends on, on hand-made graphs.
describe("ComputeGraph (ggml_gallocr replay)", () => {
  it("inputs are allocated before any node and a tensor is freed after its last consumer", () => {
    const g = new ComputeGraph();
    const a = g.input(1000); // 1024 aligned to 32
    const b = g.op(2048, [a]);
    g.op(2048, [b]);
    // a is freed once b is placed, but its 1024-byte hole cannot hold the next 2048 bytes
    expect(g.bufferSize()).toBe(1024 + 2048 + 2048);
  });
  it("an in-place op takes over its parent's memory when that was the parent's last use", () => {
    const g = new ComputeGraph();
    const x = g.op(4096, []);
    const y = g.op(4096, [x], { inplace: true });
    g.op(4096, [y], { inplace: true });
    expect(g.bufferSize()).toBe(4096);
  });
  it("no in-place reuse while the parent has another use left, nor through a view (a view is not own memory)", () => {
    const twoUses = new ComputeGraph();
    const x = twoUses.op(4096, []);
    const y = twoUses.op(4096, [x], { inplace: true });
    twoUses.op(4096, [y, x], { inplace: true }); // reuses y (its last use), x is freed after
    expect(twoUses.bufferSize()).toBe(8192);
    const viaView = new ComputeGraph();
    const q = viaView.op(4096, []);
    viaView.op(4096, [viaView.view(q)], { inplace: true }); // ROPE on a reshaped projection
    expect(viaView.bufferSize()).toBe(8192);
  });
  it("graph outputs are never freed and never reused", () => {
    const g = new ComputeGraph();
    const o = g.op(1024, [], { output: true });
    g.op(1024, [o], { inplace: true });
    g.op(1024, []);
    expect(g.bufferSize()).toBe(3072);
  });
  it("best fit among free blocks: a hole that is too small is skipped (fragmentation grows the buffer)", () => {
    const g = new ComputeGraph();
    const a = g.op(1024, []);
    const b = g.op(4096, []);
    g.op(32, [a]); // frees a: a 1024-byte hole at offset 0
    g.op(2048, [b]); // does not fit the hole: placed at the end
    expect(g.bufferSize()).toBe(1024 + 4096 + 32 + 2048);
  });
});
