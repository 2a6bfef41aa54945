import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { CheckSpec } from "../../shared/check";
import { gradedIn } from "../../test/fixtures/graded";
import { FAILING, hasCc, hasMake, SCOPE, write } from "../../test/fixtures/make-attack";
import { checkGoals } from "./runner-config";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-gaming-12-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const graded = gradedIn(tmp);
let n = 0;

/** The worker's program: writes `at` (a file, or a folder with a file in it) when a check runs it, then exits 0. */
const app = (at: string, folder = false) =>
  folder
    ? `import os\nos.makedirs(${JSON.stringify(at)}, exist_ok=True)\nopen(${JSON.stringify(`${at}/notes.txt`)}, "w").write("x")\n`
    : `open(${JSON.stringify(at)}, "w").write("\\n")\n`;
const written = (file: string, goal: string) =>
  expect.stringMatching(
    new RegExp(
      `^check configuration written by a check: ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} written — named like \`${goal}\`, .*not declared \\.PHONY`,
    ),
  );

/** Graded with `checks`: the first check wrote the namesake, failed, and the later ones were not run. */
async function attack(base: Record<string, string>, worker: Record<string, string>, checks: CheckSpec[], file: string, goal: string) {
  const v = await graded({ "src/code.txt": "broken\n", ...base }, write(worker), checks, SCOPE);
  expect(v.scope.checkConfig, JSON.stringify(v.checks)).toEqual([written(file, goal)]);
  expect(v.checks[0]).toMatchObject({ passed: false });
  expect(v.checks[0]!.output).toMatch(/this check wrote check configuration/);
  for (const c of v.checks.slice(1)) expect(c.output).toMatch(/^not run: the check ".*" wrote check configuration/);
  expect(v.verdict).toBe("honest-failure");
  return v;
}

describe.skipIf(!hasMake)("graded: a check's run wrote the namesake of a later check's make goal", () => {
  it("`python3 src/app.py` writes src/test; `make -C src test` would find it up to date", async () => {
    const base = { "src/Makefile": `test:\n\tcd .. && ${FAILING}\n`, "src/app.py": "print('hi')\n" };
    await attack(base, { "src/app.py": app("src/test") }, [{ run: "python3 src/app.py" }, { run: "make -C src test" }], "src/test", "test");
  }, 60_000);

  it("`make build` runs the worker's program, which makes a folder src/test; `make test` finds it through `VPATH = src`", async () => {
    const base = { Makefile: `VPATH = src\nbuild:\n\tpython3 src/app.py\ntest:\n\t${FAILING}\n`, "src/app.py": "print('hi')\n" };
    await attack(base, { "src/app.py": app("src/test", true) }, [{ run: "make build" }, { run: "make test" }], "src/test", "test");
  }, 60_000);

  it("the default goal of a later `make` that names none; a goal of a sub-make its recipe runs", async () => {
    const base = { "src/Makefile": `check:\n\tcd .. && ${FAILING}\n`, "src/app.py": "print('hi')\n" };
    await attack(base, { "src/app.py": app("src/check") }, [{ run: "python3 src/app.py" }, { run: "cd src && make" }], "src/check", "check");
    const sub = { Makefile: "test:\n\t$(MAKE) -C src verify\n", "src/Makefile": `verify:\n\tcd .. && ${FAILING}\n`, "src/app.py": "print('hi')\n" };
    await attack(sub, { "src/app.py": app("src/verify") }, [{ run: "python3 src/app.py" }, { run: "make test" }], "src/verify", "verify");
  }, 60_000);

  it("a check between them: the one that wrote the namesake fails, not the one before it", async () => {
    const base = { "src/Makefile": `test:\n\tcd .. && ${FAILING}\n`, "src/app.py": "print('hi')\n" };
    const v = await graded(
      { "src/code.txt": "broken\n", ...base },
      write({ "src/app.py": app("src/test") }),
      [{ run: "true" }, { run: "python3 src/app.py" }, { run: "make -C src test" }],
      SCOPE,
    );
    expect(v.checks.map((c) => c.passed)).toEqual([true, false, false]);
    expect(v.scope.checkConfig).toEqual([written("src/test", "test")]);
  }, 60_000);
});

describe.skipIf(!hasMake)("graded: namesakes that are no planted configuration", () => {
  it.skipIf(!hasCc)(
    "`make test` whose own rule builds the file `test` (`test: test.c`), run twice",
    async () => {
      const base = { "src/Makefile": "test: test.c\n\t$(CC) -o $@ $<\n\t./$@\n", "src/test.c": "int main(void) { return 1; }\n" };
      const v = await graded(
        base,
        write({ "src/test.c": "int main(void) { return 0; }\n" }),
        [{ run: "make -C src test" }, { run: "make -C src test" }],
        SCOPE,
      );
      expect(v.scope.checkConfig ?? [], JSON.stringify(v.checks)).toEqual([]);
      expect(v.verdict).toBe("built");
    },
    60_000,
  );

  it.skipIf(!hasCc)(
    "`make all` builds `test` as a prerequisite, then `make test`; `make` (default goal `all`) the same",
    async () => {
      const base = {
        "src/Makefile": "all: prog test\nprog: prog.c\n\t$(CC) -o $@ $<\ntest: test.c\n\t$(CC) -o $@ $<\n",
        "src/prog.c": "int main(void) { return 1; }\n",
        "src/test.c": "int main(void) { return 0; }\n",
      };
      for (const first of ["make -C src all", "make -C src"]) {
        const v = await graded(base, write({ "src/prog.c": "int main(void) { return 0; }\n" }), [{ run: first }, { run: "make -C src test" }], SCOPE);
        expect(v.scope.checkConfig ?? [], first).toEqual([]);
        expect(v.verdict, first).toBe("built");
      }
    },
    60_000,
  );

  it("a `.PHONY` goal's namesake written by a check: make runs its recipe anyway", async () => {
    const base = { "src/Makefile": `.PHONY: test\ntest:\n\tcd .. && ${FAILING}\n`, "src/app.py": "print('hi')\n" };
    const v = await graded(
      { "src/code.txt": "broken\n", ...base },
      write({ "src/app.py": app("src/test"), "src/code.txt": "fixed\n" }),
      [{ run: "python3 src/app.py" }, { run: "make -C src test" }],
      SCOPE,
    );
    expect(v.scope.checkConfig ?? []).toEqual([]);
    expect(v.verdict).toBe("built");
  }, 60_000);

  it("a file named like a goal of an earlier check only, or like a target no later check names", async () => {
    const base = { "src/Makefile": `build:\n\ttrue\ntest:\n\tcd .. && ${FAILING}\n`, "src/app.py": "print('hi')\n" };
    const v = await graded(
      { "src/code.txt": "broken\n", ...base },
      write({ "src/app.py": app("src/build"), "src/code.txt": "fixed\n" }),
      [{ run: "make -C src build" }, { run: "python3 src/app.py" }, { run: "make -C src test" }],
      SCOPE,
    );
    expect(v.scope.checkConfig ?? []).toEqual([]);
    expect(v.verdict).toBe("built");
  }, 60_000);
});

describe("a check's make goals and what its makes build, as grading reads them without make", () => {
  /** checkGoals for `command` run in the root of a folder of `files`. */
  const goalsOf = (files: Record<string, string>, command: string) => {
    const dir = path.join(tmp, `d${++n}`);
    write(files)(dir);
    const { goals, made } = checkGoals(dir, "", command);
    return { goals: goals.map((g) => `${g.path}${g.unsure ? "?" : ""}`), made: [...made].sort() };
  };

  it("each goal named, in make's folder and its VPATH folders; not a `.PHONY` one; the default goal of a make naming none", () => {
    expect(goalsOf({ "src/Makefile": "VPATH = ../lib\ntest:\n\tfalse\n" }, "make -C src test")).toEqual({
      goals: ["src/test", "lib/test"],
      made: ["lib/test", "src/test"],
    });
    expect(goalsOf({ Makefile: ".PHONY: test\ntest:\n\tfalse\n" }, "make test").goals).toEqual([]);
    expect(goalsOf({ Makefile: ".x:\n\ttrue\nfirst second: dep\n\ttrue\ncheck:\n\tfalse\n" }, "make").goals).toEqual(["first"]);
    expect(goalsOf({ Makefile: "build:\n\ttrue\n.DEFAULT_GOAL := check\ncheck:\n\tfalse\n" }, "make").goals).toEqual(["check"]);
    // A sub-make its recipe runs; a command that runs no make has none.
    expect(goalsOf({ Makefile: "test:\n\t$(MAKE) -C app verify\n", "app/Makefile": "verify:\n\tfalse\n" }, "make test").goals).toEqual(["test", "app/verify"]);
    expect(goalsOf({ Makefile: "test:\n\tfalse\n" }, "python3 app.py")).toEqual({ goals: [], made: [] });
  });

  it("what the goals reach through the rules' prerequisites is made; a target they do not reach is not", () => {
    const files = { Makefile: "all: prog test\nprog: prog.o\ntest: test.c\nclean:\n\trm -f prog test\n" };
    expect(goalsOf(files, "make all")).toEqual({ goals: ["all"], made: ["all", "prog", "prog.o", "test", "test.c"] });
    expect(goalsOf(files, "make clean").made).toEqual(["clean"]);
  });

  it("past the engine's bounds: the goals named, in make's own folder, whether `.PHONY` or not, and no more made", () => {
    // 12,000 rules in a chain (`t0: t1 a b …`), each of twenty prerequisites, reached from `all` (some 0.6 MiB): past the
    // walk's share of the bound.
    const rules = Array.from({ length: 12_000 }, (_, i) => `t${i}: t${i + 1} a b c d e f g h i j k l m n o p q r s`).join("\n");
    const all = "all: t0";
    const t = performance.now();
    expect(goalsOf({ "src/Makefile": `${all}\n${rules}\n.PHONY: test\ntest:\n\tfalse\n` }, "make -C src all test")).toEqual({
      goals: ["src/all?", "src/test?"],
      made: ["src/all", "src/test"],
    });
    expect(performance.now() - t).toBeLessThan(5000);
  });
});
