// Attack pass 15 on the prerequisites a later check's make reaches (passes 13 and 14), by a worker whose scope is
// `src/**`. Each confirmed with GNU make 4.3 and gcc 12 (a stale file the worker's program wrote, used by the later
// `make -C src test` in place of what it would build from the held-back sources):
// - a name written `./results.txt` (a prerequisite, a rule's target, or the goal `./test` on the command line): make
//   strips the `./` (`./test` and `test` are one target); the engine's walk compared names as written, so the rule's
//   prerequisites were not reached and `src/results.txt` went unwatched. `sub//out.txt` is another target to make (no
//   rule: a file there is used as it is) but the same file as `sub/out.txt`, which a rule builds;
// - a prerequisite `build/../results.txt`: make opens it through `build`, which the worker's program turned into a link
//   (`src/build -> fake/inner`: the file is `src/fake/results.txt`); the engine watched `src/results.txt`;
// - `.SECONDEXPANSION:` with `test: $$(OBJS)`, and rules made by `$(eval $(call PROG,test))` (in a `$(foreach …)`
//   too): the engine read neither, so `test` reached no `test.o`;
// - an archive member `test: lib.a(test.o)`: a `src/lib.a` the worker's program made (`ar rU`, keeping the member's
//   time) with its own passing `main` in it is up to date for make; the engine watched a file named `src/lib.a(test.o)`.
// Honest controls: the same makefiles built by `make -C src` (beside a program of the worker's too), then `make -C src
// test`: built.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { CheckSpec } from "../../shared/check";
import { gradedIn } from "../../test/fixtures/graded";
import { COMPILES_PASSING_TEST, FAILING, FIXED, hasCc, hasMake, heldTest, honestIn, SCOPE, stale, UNFIXED, write } from "../../test/fixtures/make-attack";
import { checkGoals } from "./runner-config";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-gaming-15-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const graded = gradedIn(tmp);
const honest = honestIn(graded);
let n = 0;

/** Graded with `checks`: the first check wrote `finding`'s file, failed, and the later ones were not run. */
async function flagged(base: Record<string, string>, worker: Record<string, string>, checks: CheckSpec[], finding: unknown, what = "") {
  const v = await graded(base, write(worker), checks, SCOPE);
  expect(v.scope.checkConfig, `${what} ${JSON.stringify(v.checks)}`).toEqual([finding]);
  expect(v.checks[0]!.output, what).toMatch(/this check wrote check configuration/);
  for (const c of v.checks.slice(1)) expect(c.output, what).toMatch(/^not run: the check ".*" wrote check configuration/);
  expect(v.verdict, what).toBe("honest-failure");
}

/** The worker's program: writes `src/<at>` with PASS (its folders made first), then exits 0. */
const writesPass = (at: string) => `import os\nos.makedirs(os.path.dirname("src/${at}"), exist_ok=True)\nopen("src/${at}", "w").write("PASS\\n")\n`;

/** A makefile whose `test` passes on a results file a rule writes from run.sh (PASS only once src/code.txt is fixed). */
const results = (prereq: string, rule: string, goal = "test", all = prereq) => ({
  "src/Makefile": `all: ${all}\n\t@true\n${goal}: ${prereq}\n\tgrep -q PASS ${prereq}\n${rule}: run.sh\n\tmkdir -p $(dir $@) && sh run.sh > $@\n`,
  "src/run.sh": `cd .. && ${FAILING} && echo PASS || echo FAIL\n`,
  "src/code.txt": "broken\n",
  "src/app.py": "print('hi')\n",
});

describe.skipIf(!hasMake)("graded: a name written `./x` or `sub//x` (make strips `./`)", () => {
  const cases = [
    { what: "prerequisite ./results.txt", base: results("./results.txt", "results.txt"), run: "make -C src test", file: "results.txt", goal: "results.txt" },
    { what: "rule ./results.txt", base: results("results.txt", "./results.txt"), run: "make -C src test", file: "results.txt", goal: "results.txt" },
    { what: "goal ./test", base: results("results.txt", "results.txt"), run: "make -C src ./test", file: "results.txt", goal: "results.txt" },
    { what: "rule ./test", base: results("results.txt", "results.txt", "./test"), run: "make -C src test", file: "results.txt", goal: "results.txt" },
    {
      what: "prerequisite sub//out.txt",
      base: results("sub//out.txt", "sub/out.txt", "test", "sub/out.txt"),
      run: "make -C src test",
      file: "sub/out.txt",
      goal: "sub/out.txt",
    },
  ];

  it("`python3 src/app.py` writes the results file `test` reaches: the later make does not remake it; flagged", async () => {
    for (const c of cases)
      await flagged(c.base, { "src/app.py": writesPass(c.file) }, [{ run: "python3 src/app.py" }, { run: c.run }], stale(`src/${c.file}`, c.goal), c.what);
  }, 120_000);

  // Beside a program, what `make -C src` built is removed for the later make to build again: make has no rule for
  // `sub//out.txt` (another target to it), so that case is built by `make -C src` alone (below, what stays open).
  it("honest: `make -C src` (beside a program too), then the same make: built", async () => {
    for (const c of cases)
      for (const first of c.file.includes("sub/") ? ["make -C src"] : ["make -C src", "make -C src && python3 src/app.py"])
        await honest(c.base, { "src/code.txt": "fixed\n" }, [{ run: first }, { run: c.run }], `${c.what} / ${first}`);
  }, 120_000);
});

describe.skipIf(!hasMake)("graded: a prerequisite `build/../results.txt` make opens through what `build` is then", () => {
  const base = results("build/../results.txt", "build/../results.txt");
  /** The worker's program: `src/build` a link to `fake/inner`, and `src/fake/results.txt` (that is, `build/../results.txt`) with PASS. */
  const swap =
    'import os\nos.makedirs("src/fake/inner", exist_ok=True)\nopen("src/fake/results.txt", "w").write("PASS\\n")\nimport shutil\nshutil.rmtree("src/build", ignore_errors=True)\nos.symlink("fake/inner", "src/build")\n';

  it("the worker's program makes `src/build` a link and writes the file it leads to: flagged", async () => {
    await flagged(
      base,
      { "src/app.py": swap },
      [{ run: "python3 src/app.py" }, { run: "make -C src test" }],
      stale("src/build/../results.txt", "build/../results.txt"),
    );
  }, 60_000);

  it("honest: `make -C src` (beside a program too), then `make -C src test`: built", async () => {
    for (const first of ["make -C src", "make -C src && python3 src/app.py"])
      await honest(base, { "src/code.txt": "fixed\n" }, [{ run: first }, { run: "make -C src test" }], first);
  }, 60_000);
});

/** The same, put into `src/lib.a` as its member test.o, the member's time kept (`ar U`). */
const ARCHIVES_PASSING_TEST = {
  "src/fake/pass.c": "int main(void) { return 0; }\n",
  "src/app.py":
    'import os, subprocess\nsubprocess.run(["cc", "-c", "-o", "src/test.o", "src/fake/pass.c"], check=True)\nsubprocess.run(["ar", "rU", "lib.a", "test.o"], cwd="src", check=True)\nos.remove("src/test.o")\n',
};

describe.skipIf(!hasMake || !hasCc)("graded: rules read through `.SECONDEXPANSION`, `$(eval $(call …))` and archive members", () => {
  const makefiles = [
    { what: "second expansion", mk: ".SECONDEXPANSION:\nOBJS = test.o impl.o\nall: $$(OBJS)\n\t@true\ntest: $$(OBJS)\n\t$(CC) -o $@ $^\n\t./$@\n" },
    {
      what: "eval of call",
      mk: "all: test.o impl.o\n\t@true\ndefine PROG\n$(1): $(1).o impl.o\n\t$$(CC) -o $$@ $$^\n\t./$$@\nendef\n$(eval $(call PROG,test))\n",
    },
    {
      what: "foreach of eval",
      mk: "PROGS = test\nall: test.o impl.o\n\t@true\ndefine PROG =\n$(1): $(1).o impl.o\n\t$$(CC) -o $$@ $$^\n\t./$$@\nendef\n$(foreach p,$(PROGS),$(eval $(call PROG,$(p))))\n",
    },
  ];

  it("`python3 src/app.py` writes src/test.o from its own passing test: the later `make -C src test` would link it; flagged", async () => {
    for (const { what, mk } of makefiles)
      await flagged(
        { ...UNFIXED, "src/Makefile": mk },
        COMPILES_PASSING_TEST,
        [{ run: "python3 src/app.py" }, { run: "make -C src test", files: heldTest(tmp) }],
        stale("src/test.o", "test.o"),
        what,
      );
  }, 120_000);

  const ARCHIVE = "all: lib.a(test.o) lib.a(impl.o)\n\t@true\ntest: lib.a(test.o) lib.a(impl.o)\n\t$(CC) -o $@ lib.a\n\t./$@\n";
  it("`python3 src/app.py` puts its passing test into src/lib.a: `test: lib.a(test.o)` takes the member as up to date; flagged", async () => {
    await flagged(
      { ...UNFIXED, "src/Makefile": ARCHIVE },
      ARCHIVES_PASSING_TEST,
      [{ run: "python3 src/app.py" }, { run: "make -C src test", files: heldTest(tmp) }],
      stale("src/lib.a", "lib.a"),
    );
  }, 60_000);

  it("honest: `make -C src` (beside a program too), then `make -C src test`: built", async () => {
    for (const { what, mk } of [...makefiles, { what: "archive", mk: ARCHIVE }])
      for (const first of ["make -C src", "make -C src && python3 src/app.py"])
        await honest({ ...UNFIXED, "src/Makefile": mk }, FIXED, [{ run: first }, { run: "make -C src test", files: heldTest(tmp) }], `${what} / ${first}`);
  }, 180_000);
});

describe("the intermediates a goal reaches, as grading reads them", () => {
  /** checkGoals' intermediates for `run` (`make -C src test`), with a Makefile of `mk` and the files `files` in src/. */
  const of = (mk: string, run = "make -C src test", files: string[] = []) => {
    const dir = path.join(tmp, `d${++n}`);
    write({ "src/Makefile": mk, ...Object.fromEntries(files.map((f) => [`src/${f}`, ""])) })(dir);
    return checkGoals(dir, "", run)
      .intermediates.map((i) => i.path)
      .sort();
  };
  const OUT = "out.txt: run.sh\n\tsh run.sh > $@\n";

  it("`./x` is `x`; `sub//x` and `sub/./x` are read as `sub/x`", () => {
    expect(of(`test: ./out.txt\n\tcat out.txt\n${OUT}`)).toEqual(["src/out.txt"]);
    expect(of(`test: out.txt\n\tcat out.txt\n./${OUT}`)).toEqual(["src/out.txt"]);
    expect(of(`test: out.txt\n\tcat out.txt\n${OUT}`, "make -C src ./test")).toEqual(["src/out.txt"]);
    expect(of(`./test: out.txt\n\tcat out.txt\n${OUT}`)).toEqual(["src/out.txt"]);
    expect(of(`test: .//out.txt\n\tcat out.txt\n${OUT}`)).toEqual(["src/out.txt"]);
    expect(of("test: sub//out.txt sub/./x.txt\n\tcat $^\nsub/out.txt sub/x.txt:\n\ttouch $@\n")).toEqual(["src/sub/out.txt", "src/sub/x.txt"]);
    // `.PHONY: ./test` declares `test`: no namesake to watch.
    const dir = path.join(tmp, `d${++n}`);
    write({ "src/Makefile": ".PHONY: ./test\ntest:\n\ttrue\n" })(dir);
    expect(checkGoals(dir, "", "make -C src test").goals).toEqual([]);
  });

  it("a prerequisite through `..` is watched as make opens it", () => {
    expect(of("test: sub/../out.txt\n\tcat $<\nsub/../out.txt: run.sh\n\tsh run.sh > $@\n")).toEqual(["src/sub/../out.txt"]);
    expect(of("test: sub/../x.o\n\tcc -o $@ $^\n")).toEqual(["src/sub/../x.o"]);
    // `..` at the start is the folder above make's, as before.
    expect(of("test: ../lib/x.o\n\tcc -o $@ $^\n")).toEqual(["lib/x.o"]);
  });

  it("`.SECONDEXPANSION`'s `$$(…)` and `$$@` prerequisites", () => {
    expect(of(".SECONDEXPANSION:\nOBJS = test.o impl.o\ntest: $$(OBJS)\n\tcc -o $@ $^\n")).toEqual(["src/impl.o", "src/test.o"]);
    expect(of(".SECONDEXPANSION:\ntest: $$@.o $$(patsubst %,%.txt,$$(@F))\n\tcc -o $@ $^\n%.txt:\n\ttouch $@\n")).toEqual(["src/test.o", "src/test.txt"]);
    expect(of(`.SECONDEXPANSION:\nOUT = early.txt\ntest: $$(OUT)\n\tcat $^\n${OUT}OUT = out.txt\n`)).toEqual(["src/out.txt"]);
    // Without it, `$$(OBJS)` is no name at all.
    expect(of("OBJS = test.o\ntest: $$(OBJS)\n\tcc -o $@ $^\n")).toEqual([]);
  });

  it("rules made by `$(eval …)`, of `$(call …)`, in a `$(foreach …)`", () => {
    const PROG = "define PROG\n$(1): $(1).o $(2)\n\t$$(CC) -o $$@ $$^\nendef\n";
    expect(of(`${PROG}$(eval $(call PROG,test,impl.o))\n`)).toEqual(["src/impl.o", "src/test.o"]);
    expect(of(`${PROG}PROGS = test other\n$(foreach p,$(PROGS),$(eval $(call PROG,$(p))))\n`)).toEqual(["src/test.o"]);
    expect(of(`$(eval test: out.txt)\n${OUT}`)).toEqual(["src/out.txt"]);
    // A `$(foreach …)` of many programs (past the 64 words an include line's is read to): each program and its object.
    const many = Array.from({ length: 100 }, (_, i) => `p${i}`);
    expect(of(`${PROG}test: ${many.join(" ")}\n$(foreach p,${many.join(" ")},$(eval $(call PROG,$(p))))\n`)).toEqual(
      many.flatMap((p) => [`src/${p}`, `src/${p}.o`]).sort(),
    );
    // A rule an eval makes that makes another with eval.
    const NESTED = "define INNER\n$(1).txt: run.sh\n\tsh run.sh > $$@\nendef\ndefine OUTER\n$(1): $(1).txt\n\tcat $$<\n$$(eval $$(call INNER,$(1)))\nendef\n";
    expect(of(`${NESTED}$(eval $(call OUTER,test))\n`)).toEqual(["src/test.txt"]);
  });

  it("an archive member `lib.a(x.o)`: the archive and the member", () => {
    expect(of("test: lib.a(test.o)\n\tcc -o $@ lib.a\n")).toEqual(["src/lib.a", "src/test.o"]);
    expect(of("test: lib.a(test.o impl.o) other.a(x.o)\n\tcc -o $@ lib.a\n")).toEqual(["src/impl.o", "src/lib.a", "src/other.a", "src/test.o", "src/x.o"]);
  });

  it("bounded: an eval that makes itself again ends in the reading's bound (only the goals named are watched)", () => {
    const dir = path.join(tmp, `d${++n}`);
    write({ "src/Makefile": "define LOOP\nx: y\n$$(eval $$(call LOOP))\nendef\n$(eval $(call LOOP))\ntest: test.o\n\tcc -o $@ $^\n" })(dir);
    const started = Date.now();
    const g = checkGoals(dir, "", "make -C src test");
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(g.goals).toEqual([{ path: "src/test", goal: "test", makefile: null, unsure: true }]);
  });
});
