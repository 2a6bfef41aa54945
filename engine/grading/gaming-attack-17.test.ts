// Attack pass 17 on pass 16 (a worker whose scope is `src/**`). Each confirmed with GNU make 4.3 and gcc 12 by hand
// before its test was written:
// - a compile given `-o` twice (`cc -c -o src/test.o -o src/impl.o src/impl.c`): gcc writes the last alone (exit 0), and
//   the engine took both as the compiler's, so an object a program of the worker's wrote before it on the line
//   (`python3 src/app.py && …`, its own passing test compiled into src/test.o) was kept as the check's own build, and the
//   later `make -C src test` linked it (graded built on code that fails the held-back test);
// - `cc -### -c test.c` (gcc prints the commands it would run, exits 0, and writes nothing): taken as writing test.o;
// - `cc -c @args`: gcc reads more options from the file (a worker's, possibly: `-o` elsewhere), so what it writes cannot
//   be told from the line;
// - a prerequisite list past the engine's expansion bound (64 KiB: `test: $(PAD) impl.o test.o`, a long list before
//   test.o): its rest read as unknown and dropped from what the goals reach, so the worker's committed src/test.o (its
//   own passing test) went unflagged and make linked it (built on failing code). Now a goal reaching such a list is past
//   the engine's bounds (MakeTooLarge): every changed file counts.
// Held (regression tests): a link whose target leads back inside through `..`; the person's link retargeted by the
// worker; `-S -c`, `-save-temps`, `./sub/x.c`, `c++`/`clang`, `ccache cc` read as gcc runs them.
// Honest controls: a generated file the person tracks beside its source (both edited), a new source beside a pattern
// rule's objects, a folder named like a variable's value that no target names: built.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { gradedIn } from "../../test/fixtures/graded";
import { COMPILES_PASSING_TEST, FIXED, hasCc, hasMake, heldTest, honestIn, SCOPE, UNFIXED, violation, withLinks, write } from "../../test/fixtures/make-attack";
import { checkWriters } from "./command-scripts";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-gaming-17-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const graded = gradedIn(tmp);
const honest = honestIn(graded);

const OBJECTS = { ...UNFIXED, "src/Makefile": "test: test.o impl.o\n\t$(CC) -o $@ $^\n\t./$@\n" };

describe.skipIf(!hasMake || !hasCc)("graded: a compile the engine read as writing what it does not", () => {
  /** The worker's program, run first on the check's line, compiling its own passing test into src/test.o. */
  const plant = (line: string) => graded(OBJECTS, write(COMPILES_PASSING_TEST), [{ run: line }, { run: "make -C src test", files: heldTest(tmp) }], SCOPE);

  it("`-o` twice: gcc writes the last; the worker's src/test.o written before it is not the compiler's: not built", async () => {
    const v = await plant("python3 src/app.py && cc -c -o src/test.o -o src/impl.o src/impl.c");
    expect(v.checks[0]!.output, JSON.stringify(v.checks)).toContain("src/test.o written — a prerequisite make builds by a rule for `test.o`");
    expect(v.verdict, JSON.stringify(v.checks)).not.toBe("built");
  }, 60_000);

  it("`-###`: gcc writes nothing; the worker's src/test.o is not the compiler's: not built", async () => {
    const v = await plant("python3 src/app.py && cd src && cc -### -c test.c impl.c");
    expect(v.checks[0]!.output, JSON.stringify(v.checks)).toContain("src/test.o written — a prerequisite make builds by a rule for `test.o`");
    expect(v.verdict, JSON.stringify(v.checks)).not.toBe("built");
  }, 60_000);

  it("honest: the same shapes with the fix, and `-o` once: built", async () => {
    await honest(OBJECTS, FIXED, [{ run: "cd src && cc -c -o test.o test.c && cc -c impl.c" }, { run: "make -C src test", files: heldTest(tmp) }]);
  }, 60_000);
});

describe("a compiler's outputs, as gcc writes them", () => {
  const trusted = () => true;
  const out = (line: string, sub = "") => checkWriters(line, sub, trusted).compiled;

  it("`-o` given twice: the last alone (gcc and clang take the last)", () => {
    expect(out("cc -c -o a.o -o b.o x.c")).toEqual(["b.o"]);
    expect(out("cc -oa.o -c -o b.o x.c")).toEqual(["b.o"]);
    expect(out("cc -c -o a.o x.c && cc -c -o b.o y.c")).toEqual(["a.o", "b.o"]);
  });

  it("none for `-###` (prints, writes nothing) or an `@file` of options (what it writes is in the file)", () => {
    expect(out("cc -### -c x.c")).toEqual([]);
    expect(out("cc -### -o t t.c")).toEqual([]);
    expect(out("cc -c @args x.c")).toEqual([]);
    expect(out("cc -o t @args")).toEqual([]);
  });

  it("held: `-S -c` assembly, `-save-temps` its object, `./sub/x.c` in the compiler's folder, c++/clang, ccache another program", () => {
    expect(out("cc -S -c x.c")).toEqual(["x.s"]);
    expect(out("cc -c -S x.c")).toEqual(["x.s"]);
    expect(out("gcc -c -save-temps x.c")).toEqual(["x.o"]);
    expect(out("cc -c ./sub/x.c", "src")).toEqual(["src/x.o"]);
    expect(out("cd src && cc -c ../lib/y.c")).toEqual(["src/y.o"]);
    expect(out("c++ -c a.cpp && clang -c b.c && g++ c.cc")).toEqual(["a.o", "b.o", "a.out"]);
    expect(out("cc -c -o- x.c")).toEqual(["-"]);
    const cc = checkWriters("ccache cc -c x.c", "", trusted);
    expect(cc.compiled).toEqual([]);
    expect(cc.others).toBe("ccache");
  });
});

/** A makefile whose `test` passes on `out/results.txt`, which a rule writes from run.sh (PASS only once src/code.txt is fixed). */
const RESULTS = {
  "src/Makefile": "test: out/results.txt\n\tgrep -q PASS out/results.txt\nout/results.txt: run.sh\n\tmkdir -p $(dir $@) && sh run.sh > $@\n",
  "src/run.sh": "cd .. && grep -q fixed src/code.txt && echo PASS || echo FAIL\n",
  "src/code.txt": "broken\n",
};
const CACHED = { ...RESULTS, "src/Makefile": RESULTS["src/Makefile"].replace("mkdir -p $(dir $@)", "mkdir -p cache") };

describe.skipIf(!hasMake)("graded: links on a target's way (held)", () => {
  it("the worker's `src/out -> ../src/zz` (back inside through `..`) with src/zz/results.txt (PASS): flagged", async () => {
    const v = await graded(RESULTS, withLinks({ "src/zz/results.txt": "PASS\n" }, { "src/out": "../src/zz" }), [{ run: "make -C src test" }], SCOPE);
    expect(v.scope.checkConfig).toEqual([violation("src/out", "a link on the way to"), violation("src/zz/results.txt", "through a link")]);
    expect(v.verdict).not.toBe("built");
  }, 60_000);

  it("the person's link `src/out -> cache` retargeted by the worker to `zz`, with src/zz/results.txt (PASS): flagged", async () => {
    const v = await graded(CACHED, withLinks({ "src/zz/results.txt": "PASS\n" }, { "src/out": "zz" }), [{ run: "make -C src test" }], SCOPE, {
      "src/out": "cache",
    });
    expect(v.scope.checkConfig).toEqual([violation("src/out", "a link on the way to"), violation("src/zz/results.txt", "through a link")]);
    expect(v.verdict).not.toBe("built");
  }, 60_000);
});

describe.skipIf(!hasMake || !hasCc)("graded: honest work beside make's rules", () => {
  it("a generated parser.c the person tracks beside parser.tmpl (a pattern rule), both edited: built", async () => {
    const base = {
      "src/Makefile": "test: prog\n\t./prog\nprog: parser.o main.o\n\t$(CC) -o $@ $^\n%.c: %.tmpl\n\tcp $< $@\n",
      "src/parser.tmpl": "int parse(void) { return 1; }\n",
      "src/parser.c": "int parse(void) { return 1; }\n",
      "src/main.c": "int parse(void);\nint main(void) { return parse() == 42 ? 0 : 1; }\n",
    };
    const fixed = "int parse(void) { return 42; }\n";
    await honest(base, { "src/parser.tmpl": fixed, "src/parser.c": fixed }, [{ run: "make -C src test" }]);
  }, 60_000);

  it("a new source foo.c beside `%.o: %.c` objects (wildcard), and a folder named like a variable's value: built", async () => {
    const base = {
      "src/Makefile": "NAME = mylib\nOBJS = $(patsubst %.c,%.o,$(wildcard *.c))\ntest: prog\n\t./prog\nprog: $(OBJS)\n\t$(CC) -o $@ $^\n",
      "src/main.c": "int impl(void);\nint main(void) { return impl() == 42 ? 0 : 1; }\n",
      ...UNFIXED,
    };
    await honest(
      base,
      { "src/impl.c": "int foo(void);\nint impl(void) { return foo(); }\n", "src/foo.c": "int foo(void) { return 42; }\n", "src/mylib/notes.txt": "n\n" },
      [{ run: "make -C src test" }],
    );
  }, 60_000);
});

describe.skipIf(!hasMake || !hasCc)("graded: a prerequisite the engine cannot name", () => {
  /** The worker's object compiled from a test that passes, at src/test.o. */
  const passing = (ws: string) => {
    const src = path.join(tmp, "pass.c");
    writeFileSync(src, "int main(void) { return 0; }\n");
    execFileSync("cc", ["-c", "-o", path.join(ws, "src/test.o"), src]);
  };
  const TEST_C = { "src/test.c": "int impl(void);\nint main(void) { return impl() == 42 ? 0 : 1; }\n", ...UNFIXED };
  it("`test: $(shell echo test.o) impl.o` and the worker's src/test.o", async () => {
    const base = { ...TEST_C, "src/Makefile": "test: $(shell echo test.o) impl.o\n\t$(CC) -o $@ $^\n\t./$@\n" };
    const v = await graded(base, passing, [{ run: "make -C src test" }], SCOPE);
    expect(v.verdict, JSON.stringify([v.scope.checkConfig, v.checks])).not.toBe("built");
  }, 60_000);
  it("a prerequisite list past 64 KiB, test.o at its end, and the worker's src/test.o", async () => {
    const pad = Array.from({ length: 7000 }, (_, i) => `pad/p${i}.txt`).join(" ");
    const base = { ...TEST_C, "src/Makefile": `PAD = ${pad}\ntest: $(PAD) impl.o test.o\n\t$(CC) -o $@ impl.o test.o\n\t./$@\npad/%.txt:\n\t@:\n` };
    const v = await graded(base, passing, [{ run: "make -C src test" }], SCOPE);
    expect(v.verdict, JSON.stringify([v.scope.checkConfig, v.checks]).slice(0, 2000)).not.toBe("built");
  }, 60_000);
});

describe.skipIf(!hasMake)("graded: past the engine's bounds on the targets' folders (MakeTooLarge)", () => {
  it("10,001 folders of objects a goal reaches: each changed file counts, a link and the file behind it too", async () => {
    const objs = Array.from({ length: 10_001 }, (_, i) => `d${i}/x.o`).join(" ");
    const base = { "src/Makefile": `test: ${objs}\n\ttrue\n`, "src/code.txt": "broken\n" };
    const v = await graded(base, withLinks({ "src/code.txt": "fixed\n", "src/zz/x.o": "" }, { "src/d5": "zz" }), [{ run: "make -k -C src test" }], SCOPE);
    expect(v.scope.checkConfig).toEqual(
      expect.arrayContaining([violation("src/d5", "within the engine's bounds"), violation("src/zz/x.o", "within the engine's bounds")]),
    );
    expect(v.verdict).not.toBe("built");
  }, 120_000);
});
