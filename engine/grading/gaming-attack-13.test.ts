// Attack pass 13 on the namesakes of make's goals a check's run writes (pass 12), by a worker whose scope is `src/**`,
// and on what a makefile tells its sub-makes to read. Each confirmed with GNU make 4.3 (and gcc 12):
// - `make -C src test; python3 src/app.py` (or `python3 src/app.py && make -C src test`): the check's own make has the
//   goal `test`, so pass 12 took the `src/test` the worker's program wrote as make's own; the later `make -C src test`
//   found it up to date and ran no test. Such a namesake (the check's own build could have made it, a program of the
//   worker's beside it could have too) is now removed before the later make, which builds it again: flagging it failed
//   honest work (`make && ./app`, then `make test` reaching what that build made);
// - a stale intermediate prerequisite: the worker's program writes `src/results.txt` (or `src/test.o`), which a later
//   check's goal depends on through a rule; make takes it as newer than its sources and does not remake it from the
//   held-back ones;
// - a makefile that sets MAKEFILES, or MAKEFLAGS' `-I` (exported or not, target-specific too), for its sub-makes: the
//   sub-make reads the worker's file before its own makefile, or includes it from the worker's folder.
// Honest namesakes that are not flagged: a compiler's `-o` output the check's own command line names (`cc -o src/test
// src/test.c`, then `make -C src test`).
// Real GNU make runs each (skipped where it is not installed); the tests of the readers alone hold without it.
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { CheckSpec } from "../../shared/check";
import { committedRepo } from "../../test/fixtures/git-repo";
import { gradedIn } from "../../test/fixtures/graded";
import { FAILING, hasCc, hasMake, honestIn, SCOPE, stale, violation, write, written } from "../../test/fixtures/make-attack";
import { checkGoals, runnerConfigChanges } from "./runner-config";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-gaming-13-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const graded = gradedIn(tmp);
const honest = honestIn(graded);
let n = 0;

/** The worker's program: writes `at` with `text` when a check runs it, then exits 0. */
const app = (at: string, text = "\\n") => `open(${JSON.stringify(at)}, "w").write("${text}")\n`;

/** Graded with `checks`: the first check wrote `finding`'s file, failed, and the later ones were not run. */
async function flagged(base: Record<string, string>, worker: Record<string, string>, checks: CheckSpec[], finding: unknown) {
  const v = await graded({ "src/code.txt": "broken\n", ...base }, write(worker), checks, SCOPE);
  expect(v.scope.checkConfig, JSON.stringify(v.checks)).toEqual([finding]);
  expect(v.checks[0]).toMatchObject({ passed: false });
  expect(v.checks[0]!.output).toMatch(/this check wrote check configuration/);
  for (const c of v.checks.slice(1)) expect(c.output).toMatch(/^not run: the check ".*" wrote check configuration/);
  expect(v.verdict).toBe("honest-failure");
  return v;
}

/**
 * Graded with `checks`: nothing flagged; the first check's own build wrote `file` beside the worker's program, so it was
 * removed before the later check, whose make built it again from the commit (and failed on the unfixed work).
 */
async function rebuilt(base: Record<string, string>, worker: Record<string, string>, checks: CheckSpec[], file: string) {
  const v = await graded({ "src/code.txt": "broken\n", ...base }, write(worker), checks, SCOPE);
  expect(v.scope.checkConfig ?? [], JSON.stringify(v.checks)).toEqual([]);
  expect(v.checks[0]!.output).toContain(`[this check's own build wrote ${file} beside a program of the worker's`);
  expect(v.checks[1], "the later make ran its recipe").toMatchObject({ passed: false });
  expect(v.verdict).toBe("honest-failure");
  return v;
}

const TEST_GOAL = { "src/Makefile": `test:\n\tcd .. && ${FAILING}\n`, "src/app.py": "print('hi')\n" };

describe.skipIf(!hasMake)("graded: the check's own make has the goal, and another command of the check wrote it", () => {
  it("`make -C src test; python3 src/app.py`: make fails, the program writes src/test, the check passes; removed, the later make runs the recipe", async () => {
    await rebuilt(TEST_GOAL, { "src/app.py": app("src/test") }, [{ run: "make -C src test; python3 src/app.py" }, { run: "make -C src test" }], "src/test");
  }, 60_000);

  it("`python3 src/app.py && make -C src test`: the program writes src/test first; removed, the later make runs the recipe", async () => {
    await rebuilt(TEST_GOAL, { "src/app.py": app("src/test") }, [{ run: "python3 src/app.py && make -C src test" }, { run: "make -C src test" }], "src/test");
  }, 60_000);

  // What pass 13 first did with these (flag them as planted) failed honest work: a build and a run of its program, then
  // a later make that reaches what that build made.
  const SHARED = {
    "src/Makefile": "all: out.txt\n\t@true\nout.txt: gen.sh\n\tsh gen.sh > $@\ntest: out.txt\n\tgrep -q ok out.txt\n",
    "src/gen.sh": "grep -q fixed code.txt && echo ok || echo no\n",
    "src/app.py": "print('hi')\n",
    "src/code.txt": "broken\n",
  };
  it("honest: `make -C src && python3 src/app.py`, then `make -C src test` reaching the out.txt that build made: built", async () => {
    const v = await honest(SHARED, { "src/code.txt": "fixed\n" }, [{ run: "make -C src && python3 src/app.py" }, { run: "make -C src test" }]);
    expect(v.checks[0]!.output).toContain("[this check's own build wrote src/out.txt beside a program of the worker's");
  }, 60_000);

  it("the same with the worker's program overwriting out.txt with `ok` after the build: removed, rebuilt from the unfixed code, not built", async () => {
    await rebuilt(
      SHARED,
      { "src/app.py": app("src/out.txt", "ok\\n") },
      [{ run: "make -C src && python3 src/app.py" }, { run: "make -C src test" }],
      "src/out.txt",
    );
  }, 60_000);

  it("a link the worker's program put on the way to what is to be removed: nothing outside the checkout is removed, and it counts as planted", async () => {
    const outside = path.join(tmp, `outside-${++n}`);
    mkdirSync(outside);
    writeFileSync(path.join(outside, "out.txt"), "keep\n");
    const base = {
      "src/Makefile": "all: sub/out.txt\n\t@true\nsub/out.txt: gen.sh\n\tmkdir -p sub && sh gen.sh > $@\ntest: sub/out.txt\n\tgrep -q ok sub/out.txt\n",
      "src/gen.sh": "echo no\n",
      "src/app.py": "print('hi')\n",
    };
    const swap = `import os\nos.rename("src/sub", "src/sub-away")\nos.symlink(${JSON.stringify(outside)}, "src/sub")\n`;
    const v = await graded(
      { "src/code.txt": "broken\n", ...base },
      write({ "src/app.py": swap }),
      [{ run: "make -C src && python3 src/app.py" }, { run: "make -C src test" }],
      SCOPE,
    );
    expect(readFileSync(path.join(outside, "out.txt"), "utf8")).toBe("keep\n");
    expect(v.scope.checkConfig).toEqual([
      expect.stringMatching(/^check configuration written by a check: src\/sub\/out\.txt written, and a link now on its way/),
    ]);
    expect(v.checks[1]!.output).toMatch(/^not run: the check ".*" wrote check configuration/);
    expect(v.verdict).toBe("honest-failure");
  }, 60_000);
});

describe.skipIf(!hasMake)("graded: a stale intermediate prerequisite a check's run wrote", () => {
  const RESULTS = {
    "src/Makefile": "test: results.txt\n\tgrep -q PASS results.txt\nresults.txt: run.sh\n\tsh run.sh > $@\n",
    "src/run.sh": "cd .. && grep -q fixed src/code.txt && echo PASS || echo FAIL\n",
    "src/app.py": "print('hi')\n",
  };

  it("`python3 src/app.py` writes src/results.txt, which `test` depends on: `make -C src test` does not remake it from run.sh", async () => {
    await flagged(
      RESULTS,
      { "src/app.py": app("src/results.txt", "PASS\\n") },
      [{ run: "python3 src/app.py" }, { run: "make -C src test" }],
      stale("src/results.txt", "results.txt"),
    );
  }, 60_000);

  it.skipIf(!hasCc)(
    "`python3 src/app.py` compiles the worker's passing test into src/test.o: make links it in place of the held-back test.c",
    async () => {
      const held = path.join(tmp, "held-test-c");
      mkdirSync(path.join(held, "src"), { recursive: true });
      writeFileSync(path.join(held, "src", "test.c"), "int main(void) { return 1; }\n");
      const base = { "src/Makefile": "test: test.o\n\t$(CC) -o $@ $^\n\t./$@\n", "src/app.py": "print('hi')\n" };
      const worker = {
        "src/pass.c": "int main(void) { return 0; }\n",
        "src/app.py": 'import subprocess\nsubprocess.run(["cc", "-c", "-o", "src/test.o", "src/pass.c"], check=True)\n',
      };
      await flagged(base, worker, [{ run: "python3 src/app.py" }, { run: "make -C src test", files: held }], stale("src/test.o", "test.o"));
    },
    60_000,
  );
});

describe.skipIf(!hasMake)("graded: a makefile that tells its sub-makes to read the worker's file", () => {
  /** Every check passed, with the finding. */
  async function passed(base: Record<string, string>, worker: Record<string, string>, run: string, finding: unknown) {
    const v = await graded({ "src/code.txt": "broken\n", ...base }, write(worker), [{ run }], SCOPE);
    expect(v.checks[0], JSON.stringify(v.checks)).toMatchObject({ passed: true });
    expect(v.scope.checkConfig, run).toEqual([finding]);
    expect(v.verdict).toBe("honest-failure");
  }

  it("`MAKEFILES = src/extra.rules` in the Makefile (exported by make itself): its `$(MAKE) -f tests.make check` reads it first", async () => {
    const tests = { "tests.make": `check:\n\t${FAILING}\n`, "src/extra.rules": "A = 1\n" };
    for (const line of ["MAKEFILES = src/extra.rules", "export MAKEFILES += src/extra.rules", "test: MAKEFILES = src/extra.rules"])
      await passed(
        { ...tests, Makefile: `${line}\ntest:\n\t$(MAKE) -f tests.make check\n` },
        { "src/extra.rules": ".IGNORE:\n" },
        "make test",
        violation("src/extra.rules", "a makefile a check's make reads before its own"),
      );
  }, 120_000);

  it("`MAKEFLAGS += -I$(D)` or `export MAKEFLAGS = -Isrc` in the Makefile: the sub-make includes src/config.env", async () => {
    const tests = { "tests.make": `-include config.env\ncheck:\n\t${FAILING}\n` };
    for (const line of ["D = src\nMAKEFLAGS += -I$(D)", "export MAKEFLAGS = -Isrc", "GNUMAKEFLAGS = -I src"])
      await passed(
        { ...tests, Makefile: `${line}\ntest:\n\t$(MAKE) -f tests.make check\n` },
        { "src/config.env": ".IGNORE:\n" },
        "make test",
        violation("src/config.env", "included by tests.make"),
      );
  }, 120_000);
});

describe.skipIf(!hasMake)("graded: namesakes the person's own command line names as a compiler's output", () => {
  const TEST_C = { "src/Makefile": "test: test.c\n\t$(CC) -o $@ $<\n\t./$@\n", "src/test.c": "int main(void) { return 1; }\n" };
  const FIXED = { "src/test.c": "int main(void) { return 0; }\n" };

  it.skipIf(!hasCc)(
    "`cc -o src/test src/test.c` (gcc, `cd src && cc`, `-osrc/test`, `&& ./src/test`), then `make -C src test`: built",
    async () => {
      for (const first of [
        "cc -o src/test src/test.c",
        "gcc -Wall -O2 -o src/test src/test.c",
        "cd src && cc -o test test.c",
        "cc -osrc/test src/test.c",
        "timeout 60 cc -o src/test src/test.c && ./src/test",
        "mkdir -p build && CFLAGS=-O2 cc -o src/test src/test.c && make -C src test",
      ])
        await honest(TEST_C, FIXED, [{ run: first }, { run: "make -C src test" }], first);
    },
    120_000,
  );

  it.skipIf(!hasCc)(
    "the exemption is needed: the same namesake, written by the same compile in a worker's script or named through a variable, is flagged",
    async () => {
      const script = { ...FIXED, "src/build.sh": "cc -o src/test src/test.c\n" };
      const base = { ...TEST_C, "src/build.sh": "true\n", "src/build.env": "OUT=src/other\n" };
      for (const [first, worker] of [
        ["sh src/build.sh", script],
        [". src/build.env; cc -o src/test src/test.c", { ...FIXED, "src/build.env": 'cc() { command cc "$@"; }\n' }],
        ['. src/build.env; cc -o "$OUT" src/test.c', { ...FIXED, "src/build.env": "OUT=src/test\n" }],
      ] as const)
        await flagged(base, worker, [{ run: first }, { run: "make -C src test" }], written("src/test", "test"));
    },
    120_000,
  );

  it.skipIf(!hasCc)(
    "the worker's program writes the namesake beside a compile of another file: flagged; beside a compile of it not surely run last: removed and built again",
    async () => {
      const base = { ...TEST_C, "src/app.py": "print('hi')\n", "src/other.c": "int main(void) { return 0; }\n" };
      const worker = { "src/app.py": app("src/test"), "src/test.c": "int main(void) { return 0 }\n" };
      await flagged(base, worker, [{ run: "cc -o src/other src/other.c && python3 src/app.py" }, { run: "make -C src test" }], written("src/test", "test"));
      for (const first of ["python3 src/app.py; cc -o src/test src/test.c; true", "cc -o src/test src/test.c || python3 src/app.py"])
        await rebuilt(base, worker, [{ run: first }, { run: "make -C src test" }], "src/test");
    },
    120_000,
  );

  it.skipIf(!hasCc)(
    "controls: a check of makes alone keeps pass 12's exemption; a leaf prerequisite the worker's program writes is its output, not make's",
    async () => {
      const all = { "src/Makefile": "all: test.o\ntest: test.o\n\t$(CC) -o $@ $^\n\t./$@\n", "src/test.c": "int main(void) { return 1; }\n" };
      await honest(all, FIXED, [{ run: "mkdir -p build && make -C src all" }, { run: "make -C src test" }]);
      const leaf = { "src/Makefile": "test: out.txt\n\tgrep -q ok out.txt\n", "src/app.py": "print('hi')\n" };
      await honest(leaf, { "src/app.py": app("src/out.txt", "ok\\n") }, [{ run: "python3 src/app.py" }, { run: "make -C src test" }]);
    },
    120_000,
  );
});

describe("what a check's command line writes besides its makes, as grading reads it", () => {
  /** checkGoals for `command` run in the root of a folder of `files`. */
  const of = (files: Record<string, string>, command: string, pathEnv?: string) => {
    const dir = path.join(tmp, `d${++n}`);
    write(files)(dir);
    const g = checkGoals(dir, "", command, pathEnv);
    return { compiled: [...g.compiled].sort(), others: g.others, made: [...g.made].sort(), intermediates: g.intermediates.map((i) => i.path) };
  };
  const mk = { "src/Makefile": "test: test.o\n\t$(CC) -o $@ $^\n" };

  it("a trusted compiler's `-o` output, from the folder it runs in; go build and rustc too", () => {
    // The system's compilers, as stand-ins outside the checkout (this machine may lack some).
    const bin = path.join(tmp, "system-bin");
    for (const name of ["cc", "g++", "clang-15", "go", "rustc"]) {
      mkdirSync(bin, { recursive: true });
      writeFileSync(path.join(bin, name), "#!/bin/sh\n");
      chmodSync(path.join(bin, name), 0o755);
    }
    expect(of(mk, "cc -o src/test src/test.c", bin).compiled).toEqual(["src/test"]);
    expect(of(mk, "cd src && g++ -c x.cc -o x.o && clang-15 -obin x.o", bin).compiled).toEqual(["src/bin", "src/x.o"]);
    expect(of(mk, "go build -o src/test ./cmd/test && rustc -o out/t src/main.rs", bin).compiled).toEqual(["out/t", "src/test"]);
    // Not a compiler's: `go vet -o`, a program by path, a word that expands, an output outside the checkout, a compiler
    // the checks' PATH does not have.
    expect(of(mk, 'go vet -o src/test; ./cc -o src/a a.c; cc -o "$OUT" a.c; cc -o /tmp/x a.c; cc -o ../x a.c; gcc -o src/b b.c', bin).compiled).toEqual([]);
  });

  it("none where the line can change what `cc` is: a sourced file, eval, alias, a function, PATH set, a compiler on PATH in the checkout", () => {
    for (const line of [
      ". ./env.sh; cc -o src/test a.c",
      "source env.sh && cc -o src/test a.c",
      "eval x; cc -o src/test a.c",
      "alias cc=true; cc -o src/test a.c",
    ])
      expect(of(mk, line).compiled, line).toEqual([]);
    for (const line of ["cc() { true; }; cc -o src/test a.c", "PATH=src:/usr/bin cc -o src/test a.c", "export PATH=src; cc -o src/test a.c"])
      expect(of(mk, line).compiled, line).toEqual([]);
    const dir = path.join(tmp, `d${++n}`);
    write({ "bin/cc": "#!/bin/sh\n" })(dir);
    chmodSync(path.join(dir, "bin", "cc"), 0o755);
    expect([...checkGoals(dir, "", "cc -o src/test a.c", `${dir}/bin:/usr/bin`).compiled]).toEqual([]);
    expect([...checkGoals(dir, "", "cc -o src/test a.c", "/usr/bin").compiled]).toEqual(["src/test"]);
  });

  it("what runs besides makes and compilers: a program, a script, a substitution; not cd, echo, mkdir or an assignment", () => {
    expect(of(mk, "mkdir -p b && cd src && echo hi && X=1 make test && cc -o t t.c").others).toBeNull();
    for (const [line, other] of [
      ["make test; python3 gen.py", "python3"],
      ["./build.sh && make test", "./build.sh"],
      ["make test $(python3 gen.py)", "a command substitution"],
      ["cc -o t t.c && ./t", "./t"],
      ["make test & sleep 1", null],
    ] as const)
      expect(of(mk, line).others, line).toBe(other);
  });

  it("intermediates: the prerequisites a goal reaches that a rule builds (an explicit rule with a recipe, a pattern rule's, a `.o`); not a leaf, not `.PHONY`", () => {
    const files = {
      Makefile: "test: a.o b.txt c.out leaf.txt d\n\t./run\nb.txt: gen.sh\n\tsh gen.sh > $@\n%.out: %.in\n\tcp $< $@\nd: d.h\n.PHONY: d\n",
    };
    expect(of(files, "make test").intermediates.sort()).toEqual(["a.o", "b.txt", "c.out"]);
  });

  it("past the bound on intermediates: the checks are not run, too large to watch", () => {
    // 21,000 object files as prerequisites of `test`, a thousand a line.
    const lines = Array.from({ length: 21 }, (_, k) => `test: ${Array.from({ length: 1000 }, (_, i) => `o${k * 1000 + i}.o`).join(" ")}`);
    const dir = path.join(tmp, `d${++n}`);
    write({ Makefile: `${lines.join("\n")}\ntest:\n\t./run\n` })(dir);
    expect(() => checkGoals(dir, "", "make test")).toThrow(/too many files to watch/);
  });
});

describe("what a makefile tells its sub-makes to read, as grading reads it without make", () => {
  /** The check-configuration findings when the worker writes `worker` over a repository of `base`. */
  async function findings(base: Record<string, string>, worker: Record<string, string>, commands: string[]): Promise<string[]> {
    const repo = committedRepo(path.join(tmp, `r${++n}`), base);
    write(worker)(repo);
    const baseCommit = execFileSync("git", ["-C", repo, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();
    return runnerConfigChanges({ changed: Object.keys(worker), sub: "", scope: SCOPE, repo, baseCommit, checkout: repo, commands });
  }
  const sub = { "tests.make": "-include config.env\ncheck:\n\tfalse\n" };

  it("MAKEFILES set in a makefile, however it is set, counts for the makes its recipes run", async () => {
    for (const line of [
      "MAKEFILES = src/x.rules",
      "override MAKEFILES := src/x.rules",
      "X = src/x.rules\nexport MAKEFILES ?= $(X)",
      "check: MAKEFILES += src/x.rules",
    ])
      expect(
        await findings({ ...sub, Makefile: `${line}\ncheck:\n\t$(MAKE) -f tests.make check\n` }, { "src/x.rules": ".IGNORE:\n" }, ["make check"]),
        line,
      ).toEqual([violation("src/x.rules", "a makefile a check's make reads before its own")]);
    // A recipe's shell that runs make, and a make two levels down.
    const deep = { ...sub, Makefile: "MAKEFILES = src/x.rules\ncheck:\n\tbash -c 'make -C app'\n", "app/Makefile": "all:\n\t$(MAKE) -f ../tests.make check\n" };
    expect(await findings(deep, { "app/src/x.rules": ".IGNORE:\n" }, ["make check"])).toEqual([
      violation("app/src/x.rules", "a makefile a check's make reads before its own"),
    ]);
  });

  it("MAKEFLAGS or GNUMAKEFLAGS set in a makefile: its `-I` folders count for the sub-makes' include lines", async () => {
    for (const line of ["MAKEFLAGS += -Isrc", "export MAKEFLAGS = -I src", "GNUMAKEFLAGS := --include-dir=src", "D = src\nMAKEFLAGS += -I$(D)"])
      expect(
        await findings({ ...sub, Makefile: `${line}\ncheck:\n\t$(MAKE) -f tests.make check\n` }, { "src/config.env": ".IGNORE:\n" }, ["make check"]),
        line,
      ).toEqual([violation("src/config.env", "included by tests.make")]);
  });

  it("control: other variables of a makefile name nothing make reads", async () => {
    const plain = { ...sub, Makefile: "CFLAGS = -Isrc\nOTHER = src/x.rules\ncheck:\n\t$(MAKE) -f tests.make check\n" };
    expect(await findings(plain, { "src/x.rules": ".IGNORE:\n", "src/config.env": ".IGNORE:\n" }, ["make check"])).toEqual([]);
  });
});
