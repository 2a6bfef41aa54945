// The include words of a Makefile matched against the worker's file names: make's wildcard, in linear time, with
// picomatch's answer on every word both read alike (a worker's Makefile may hold any word).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import picomatch from "picomatch";
import { afterAll, describe, expect, it } from "vitest";
import { makeIncludes } from "./make-includes";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-make-includes-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;

/** The include lines of a checkout whose Makefile holds `lines`, and a function naming the files they include. */
function includes(lines: string): (file: string) => boolean {
  const root = path.join(tmp, `c${n++}`);
  mkdirSync(root, { recursive: true });
  writeFileSync(path.join(root, "Makefile"), lines);
  const incs = makeIncludes(root, [""]);
  return (f) => incs.some((i) => i.names(f));
}

describe("a Makefile's include words against file names", () => {
  it("a word of many `*` takes linear time on a long name (picomatch's expression backtracked for minutes)", () => {
    const names = includes(`include ${"*a".repeat(12)}*b.mk\n`);
    const t = performance.now();
    expect(names("a".repeat(250))).toBe(false);
    expect(names(`${"xa".repeat(12)}b.mk`)).toBe(true);
    expect(names(`d/${"xa".repeat(12)}b.mk`)).toBe(false); // `*` stays inside a name
    // Generous for a loaded machine: the old matcher took seconds at a third of this length.
    expect(performance.now() - t).toBeLessThan(2000);
  });

  it("reads `*`, `?` and `[…]` name by name as picomatch does, on random words and names", () => {
    const ch = fc.constantFrom("a", "b", ".", "-");
    // A name of a git path: never "." or "..".
    const name = fc
      .array(ch, { minLength: 1, maxLength: 6 })
      .map((c) => c.join(""))
      .filter((x) => x !== "." && x !== "..");
    const part = fc.oneof(ch, fc.constant("*"), fc.constant("?"), fc.constant("[ab]"), fc.constant("[^a]"), fc.constant("[a-b]"));
    const word = fc
      .array(
        fc.array(part, { minLength: 1, maxLength: 5 }).map((p) => p.join("")),
        { minLength: 1, maxLength: 2 },
      )
      .map((s) => s.join("/"));
    const file = fc.array(name, { minLength: 1, maxLength: 2 }).map((s) => s.join("/"));
    fc.assert(
      fc.property(word, fc.array(file, { minLength: 1, maxLength: 8 }), (w, files) => {
        // A word of wildcards alone, or one path normalises, is not what this compares (makeIncludes leaves those out).
        fc.pre(!w.includes("**") && /[^*?[\]]/.test(path.posix.basename(w)) && path.posix.normalize(w) === w && !w.startsWith("../") && w !== "..");
        const names = includes(`include ${w}\n`);
        for (const f of files) expect(names(f), `${w} against ${f}`).toBe(picomatch.isMatch(f, w, { dot: true }));
      }),
      { seed: 20261207, numRuns: 300 },
    );
  });

  it("`[!…]` is a negated set, as make's wildcard reads it (picomatch reads it as the set of `!` and the rest)", () => {
    const names = includes("include x[!a].mk\n");
    expect(names("xb.mk")).toBe(true);
    expect(names("xa.mk")).toBe(false);
  });

  it("a word in other glob syntax with several `*` names every file: read as an included one", () => {
    const names = includes(`include {x,${"*a".repeat(6)}}*b.mk\n`);
    expect(names("anything.txt")).toBe(true);
    // One run of `*` still goes to picomatch: braces as it reads them.
    const one = includes("include {x,y}*.mk\n");
    expect(one("x1.mk")).toBe(true);
    expect(one("z1.mk")).toBe(false);
  });
});
