// Attack pass 14 on pass 13's namesakes (the removal before a later make, the intermediates watched), by a worker whose
// scope is `src/**`. Each confirmed with GNU make 4.3 and gcc 12:
// - a prerequisite list written with a substitution reference (`test: $(SRCS:.c=.o)`, `${SRCS:%.c=%.o}`): the `=` inside the reference read the rule as a target-specific variable, so `test` reached no
//   prerequisite and the `src/test.o` the worker's program wrote (compiled from its own passing test) went unwatched;
//   the later `make -C src test` linked it in place of the held-back test.c, and the worker was graded built;
// - a prerequisite list from `$(wildcard *.c)` (`$(patsubst %.c,%.o,$(wildcard *.c))`): watched as the file `src/*.o`,
//   which no program writes: the same stale `src/test.o` went unwatched;
// - a target with a trailing slash (`out/:`, the usual folder rule): its namesake `src/out/`, when it was to be removed
//   before the later make, was removed by its name with the slash, which resolves a link the worker's program put there
//   (`src/out -> ../../..`): Node 20 threw (the grading failed with the engine's error), and a `rm` that walks what such a
//   name resolves to would empty the folder outside the checkout.
// - a makefile of over 4,096 variables (a generated one): the MAKEFILES it set after them, which make exports to the
//   sub-makes its recipes run, was dropped with the variables past the bound, and the worker's file those read first
//   went unseen.
// Held, and tested where cheap: a link as the last component (removed, never followed); a link on the way (pass 13).
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { gradedIn } from "../../test/fixtures/graded";
import { committedRepo } from "../../test/fixtures/git-repo";
import {
  COMPILES_PASSING_TEST,
  FAILING,
  FIXED,
  hasCc,
  hasMake,
  heldTest,
  honestIn,
  SCOPE,
  stale,
  UNFIXED,
  violation,
  write,
} from "../../test/fixtures/make-attack";
import { checkGoals, runnerConfigChanges } from "./runner-config";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-gaming-14-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const graded = gradedIn(tmp);
const honest = honestIn(graded);
let n = 0;

describe.skipIf(!hasMake || !hasCc)("graded: an intermediate named through a substitution reference or a wildcard", () => {
  /** Each a makefile's lines before its rules, and the prerequisite list of `all` and `test`. */
  const lists = [
    ["SRCS = test.c impl.c", "$(SRCS:.c=.o)"],
    ["SRCS = test.c impl.c", "${SRCS:%.c=%.o}"],
    ["OBJS = $(patsubst %.c,%.o,$(wildcard *.c))", "$(OBJS)"],
    ["SRCS := $(wildcard *.c)", "$(SRCS:.c=.o)"],
  ] as const;
  const makefile = ([head, list]: readonly [string, string]) => `${head}\nall: ${list}\n\t@true\ntest: ${list}\n\t$(CC) -o $@ $^\n\t./$@\n`;

  it("`python3 src/app.py` writes src/test.o from its own passing test: the later `make -C src test` would link it; flagged", async () => {
    for (const list of lists) {
      const v = await graded(
        { ...UNFIXED, "src/Makefile": makefile(list) },
        write(COMPILES_PASSING_TEST),
        [{ run: "python3 src/app.py" }, { run: "make -C src test", files: heldTest(tmp) }],
        SCOPE,
      );
      expect(v.scope.checkConfig, `${list[1]} ${JSON.stringify(v.checks)}`).toEqual([stale("src/test.o", "test.o")]);
      expect(v.checks[1]!.output).toMatch(/^not run: the check ".*" wrote check configuration/);
      expect(v.verdict, list[1]).toBe("honest-failure");
    }
  }, 120_000);

  it("honest: `make -C src` builds every object (test.o too), then `make -C src test`: built; beside a program: rebuilt, built", async () => {
    for (const list of lists)
      for (const first of ["make -C src", "make -C src && python3 src/app.py"]) {
        await honest(
          { ...UNFIXED, "src/Makefile": makefile(list) },
          FIXED,
          [{ run: first }, { run: "make -C src test", files: heldTest(tmp) }],
          `${list[1]} / ${first}`,
        );
      }
  }, 120_000);
});

describe.skipIf(!hasMake)("graded: what is removed for a later make to build it again", () => {
  const OUT_DIR = {
    "src/Makefile": `all: out/\n\t@true\nout/:\n\tmkdir -p $@\ntest: out/\n\tcd .. && ${FAILING}\n`,
    "src/app.py": "print('hi')\n",
    "src/code.txt": "broken\n",
  };

  it("a folder target `out/` the worker's program turned into a link outside: the link is removed, never what it leads to", async () => {
    // The relative link is written as it resolves from the checkout's src/ (state/grading/g-N/src): to tmp's folder.
    for (const label of ["absolute", "relative"]) {
      const outside = path.join(tmp, `outside-${++n}`);
      mkdirSync(outside);
      writeFileSync(path.join(outside, "keep.txt"), "keep\n");
      const link = label === "absolute" ? outside : path.join("..", "..", "..", "..", path.basename(outside));
      const swap = `import os, shutil\nshutil.rmtree("src/out")\nos.symlink(${JSON.stringify(link)}, "src/out")\n`;
      const v = await graded(OUT_DIR, write({ "src/app.py": swap }), [{ run: "make -C src && python3 src/app.py" }, { run: "make -C src test" }], SCOPE);
      expect(readFileSync(path.join(outside, "keep.txt"), "utf8"), label).toBe("keep\n");
      expect(v.checks[0]!.output, label).toContain("[this check's own build wrote src/out/ beside a program of the worker's");
      // Built again by the later make, whose recipe then ran (and failed on the unfixed code).
      expect(v.checks[1], `${label} ${JSON.stringify(v.checks)}`).toMatchObject({ passed: false });
      expect(v.checks[1]!.output, label).toMatch(/mkdir -p out\//);
      expect(v.verdict, label).toBe("honest-failure");
    }
  }, 120_000);

  it("control: the same folder target, honestly built beside the program: built", async () => {
    const v = await graded(OUT_DIR, write({ "src/code.txt": "fixed\n" }), [{ run: "make -C src && python3 src/app.py" }, { run: "make -C src test" }], SCOPE);
    expect(v.scope.checkConfig ?? [], JSON.stringify(v.checks)).toEqual([]);
    expect(v.verdict).toBe("built");
  }, 60_000);
});

describe("the intermediates a goal reaches, as grading reads them", () => {
  /** checkGoals' intermediates for `make -C src test`, with a Makefile of `mk` and the files `files` in src/. */
  const of = (mk: string, files: string[] = []) => {
    const dir = path.join(tmp, `d${++n}`);
    write({ "src/Makefile": mk, ...Object.fromEntries(files.map((f) => [`src/${f}`, ""])) })(dir);
    return checkGoals(dir, "", "make -C src test")
      .intermediates.map((i) => i.path)
      .sort();
  };

  it("a substitution reference in a prerequisite list is a list, not a target-specific variable", () => {
    expect(of("SRCS = test.c impl.c\ntest: $(SRCS:.c=.o)\n\t$(CC) -o $@ $^\n")).toEqual(["src/impl.o", "src/test.o"]);
    expect(of("N = test impl\ntest: ${N:=.o} x.txt\n\t$(CC) -o $@ $^\nx.txt:\n\techo > $@\n")).toEqual(["src/impl.o", "src/test.o", "src/x.txt"]);
    // A target-specific variable still names no prerequisite (its value holds a reference too).
    expect(of("test: OBJS = $(SRCS:.c=.o)\ntest: a.o\n\t$(CC) -o $@ $^\n")).toEqual(["src/a.o"]);
  });

  it("a wildcard in a prerequisite list names the files there now", () => {
    const files = ["test.c", "impl.c", "notes.txt", "sub/x.c"];
    expect(of("test: $(patsubst %.c,%.o,$(wildcard *.c))\n\t$(CC) -o $@ $^\n", files)).toEqual(["src/impl.o", "src/test.o"]);
    expect(of("S := $(wildcard *.c sub/*.c)\ntest: $(S:.c=.o)\n\t$(CC) -o $@ $^\n", files)).toEqual(["src/impl.o", "src/sub/x.o", "src/test.o"]);
  });
});

describe("what a makefile of many variables tells its sub-makes to read", () => {
  it("MAKEFILES set after 4,096 other variables still counts for the makes its recipes run", async () => {
    const many = Array.from({ length: 4200 }, (_, i) => `V${i} = ${i}`).join("\n");
    const base = { "tests.make": "check:\n\tfalse\n", Makefile: `${many}\nMAKEFILES = src/x.rules\ncheck:\n\t$(MAKE) -f tests.make check\n` };
    const repo = committedRepo(path.join(tmp, `r${++n}`), base);
    write({ "src/x.rules": ".IGNORE:\n" })(repo);
    const baseCommit = execFileSync("git", ["-C", repo, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();
    const found = await runnerConfigChanges({ changed: ["src/x.rules"], sub: "", scope: SCOPE, repo, baseCommit, checkout: repo, commands: ["make check"] });
    expect(found).toEqual([violation("src/x.rules", "a makefile a check's make reads before its own")]);
  });
});
