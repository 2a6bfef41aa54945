// Attack pass 10 on what decides what a make-based check runs, by a worker whose scope is `src/**` (it may change only
// source files). Each passed the held-back `make` check with the tests failing, and grading saw no check configuration:
// - a file or folder named like a target that is not `.PHONY` (`src/test` for `make -C src test`, or for `make test`
//   with `VPATH = src`): make takes the target as up to date and runs none of its recipe;
// - a `.d` file with `.IGNORE:` that `-include $(DEPS)` reads when DEPS comes from `$(shell find …)` (a name grading
//   could not expand was not followed at all);
// - the script of a rule that remakes an included makefile (`build.env: src/gen.sh`): make remakes it, then reads it;
// - `src/local.env.sh` when the Makefile has `VPATH = src` and `-include local.env`: make's built-in `%: %.sh` remakes
//   local.env from it (`cat`) before reading it;
// - a header named `.IGNORE` (or `MAKEFLAGS=i`) that `gcc -MMD -MP` writes into main.d as `.IGNORE:`;
// - a makefile the check names with `-f` (`make -f src/rules.mak test`), or a recipe's `$(MAKE) -f`, not named like a harness;
// - a file `$(eval $(shell cat src/rules.txt))` or `$(file <…)` reads while make reads the Makefile;
// - plain dependency lines included before the Makefile's first rule, for a `make` that names no target (their first
//   target becomes the goal).
// Real GNU make runs each (skipped where it is not installed); the tests of runnerConfigChanges alone hold without it.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { CheckSpec } from "../../shared/check";
import { committedRepo } from "../../test/fixtures/git-repo";
import { gradedIn } from "../../test/fixtures/graded";
import { FAILING, hasCc, hasMake, SCOPE, violation, write } from "../../test/fixtures/make-attack";
import { runnerConfigChanges } from "./runner-config";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-gaming-10-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const graded = gradedIn(tmp);
let n = 0;

/** The worker's files graded with the checks `runs`: every check passed, and the check configuration found. */
async function attack(base: Record<string, string>, worker: Record<string, string>, runs: string[]) {
  const checks: CheckSpec[] = runs.map((run) => ({ run }));
  const v = await graded({ "src/code.txt": "broken\n", ...base }, write(worker), checks, SCOPE);
  expect(
    v.checks.map((c) => c.passed),
    JSON.stringify(v.checks),
  ).toEqual(runs.map(() => true));
  return v;
}

describe.skipIf(!hasMake)("graded: a make check passed without its tests, through files in src/", () => {
  it("a file named like the target: `make -C src test` finds src/test up to date", async () => {
    const base = { "src/Makefile": `test:\n\tcd .. && ${FAILING}\n` };
    const v = await attack(base, { "src/test": "\n" }, ["make -C src test"]);
    expect(v.scope.checkConfig).toEqual([violation("src/test", "not declared .PHONY")]);
    expect(v.verdict).toBe("honest-failure");
    // The honest fix is built; a declared .PHONY target's namesake is no check configuration.
    const honest = await graded({ "src/code.txt": "broken\n", ...base }, write({ "src/code.txt": "fixed\n" }), [{ run: "make -C src test" }], SCOPE);
    expect(honest.verdict).toBe("built");
    const phony = { "src/Makefile": `.PHONY: test\ntest:\n\tcd .. && ${FAILING}\n` };
    const p = await graded(
      { "src/code.txt": "broken\n", ...phony },
      write({ "src/test": "\n", "src/code.txt": "fixed\n" }),
      [{ run: "make -C src test" }],
      SCOPE,
    );
    expect(p.verdict).toBe("built");
  }, 120_000);

  it("a folder named like the target in a VPATH folder: `make test` with `VPATH = src`", async () => {
    const v = await attack({ Makefile: `VPATH = src\ntest:\n\t${FAILING}\n` }, { "src/test/notes.txt": "x\n" }, ["make test"]);
    expect(v.scope.checkConfig).toEqual([violation("src/test/notes.txt", "not declared .PHONY")]);
    expect(v.verdict).toBe("honest-failure");
  }, 60_000);

  it("`.IGNORE:` in a .d that `-include $(DEPS)` reads, DEPS from `$(shell find src -name '*.c')`", async () => {
    const base = {
      Makefile: `SRCS := $(shell find src -name '*.c')\nDEPS := $(SRCS:.c=.d)\n-include $(DEPS)\ntest:\n\t${FAILING}\n`,
      "src/main.c": "int x;\n",
    };
    const v = await attack(base, { "src/main.d": ".IGNORE:\n" }, ["make test"]);
    expect(v.scope.checkConfig).toEqual([violation("src/main.d", "included by Makefile")]);
  }, 60_000);

  it("the script of the rule that remakes an included makefile (`build.env: src/gen.sh`)", async () => {
    const base = { Makefile: `include build.env\nbuild.env: src/gen.sh\n\tsh src/gen.sh > $@\ntest:\n\t${FAILING}\n`, "src/gen.sh": "echo A = 1\n" };
    const v = await attack(base, { "src/gen.sh": "echo .IGNORE:\n" }, ["make test"]);
    expect(v.scope.checkConfig).toEqual([violation("src/gen.sh", "make remakes what Makefile includes")]);
  }, 60_000);

  it("`VPATH = src`: make remakes the included local.env from src/local.env.sh with its built-in rule", async () => {
    const v = await attack({ Makefile: `VPATH = src\n-include local.env\ntest:\n\t${FAILING}\n` }, { "src/local.env.sh": ".IGNORE:\n" }, ["make test"]);
    expect(v.scope.checkConfig).toEqual([violation("src/local.env.sh", "make remakes local.env")]);
  }, 60_000);

  it.skipIf(!hasCc)(
    "a header named `.IGNORE`: `gcc -MMD -MP` writes `.IGNORE:` into the main.d the next make includes",
    async () => {
      const base = {
        "src/Makefile": `CFLAGS = -MMD -MP\n-include main.d\nall: main.o\ntest: all\n\tcd .. && ${FAILING}\n`,
        "src/main.c": "int main(void) { return 0; }\n",
      };
      const worker = { "src/.IGNORE": "", "src/main.c": '#include ".IGNORE"\nint main(void) { return 0; }\n' };
      const v = await attack(base, worker, ["make -C src all", "make -C src test"]);
      expect(v.scope.checkConfig).toEqual([violation("src/.IGNORE", "special target or an assignment")]);
    },
    60_000,
  );

  it("a makefile the check names with `-f`, and one a recipe's `$(MAKE) -f` names", async () => {
    const v = await attack({ "src/rules.mak": `test:\n\t${FAILING}\n` }, { "src/rules.mak": "test:\n\ttrue\n" }, ["make -f src/rules.mak test"]);
    expect(v.scope.checkConfig).toEqual([violation("src/rules.mak", "a makefile a check's make reads")]);
    const sub = { Makefile: "test:\n\t$(MAKE) -f src/rules.mak check\n", "src/rules.mak": `check:\n\t${FAILING}\n` };
    const w = await attack(sub, { "src/rules.mak": "check:\n\ttrue\n" }, ["make test"]);
    expect(w.scope.checkConfig).toEqual([violation("src/rules.mak", "a makefile a check's make reads")]);
  }, 60_000);

  it("a file `$(eval $(shell cat src/rules.txt))` reads", async () => {
    const v = await attack({ Makefile: `$(eval $(shell cat src/rules.txt))\ntest:\n\t${FAILING}\n`, "src/rules.txt": "" }, { "src/rules.txt": ".IGNORE:\n" }, [
      "make test",
    ]);
    expect(v.scope.checkConfig).toEqual([violation("src/rules.txt", "reads it as make reads the makefile")]);
  }, 60_000);

  it("plain dependency lines included before the first rule, for a `make` that names no target", async () => {
    const base = { Makefile: `-include src/main.d\ntest:\n\t${FAILING}\n`, "src/main.c": "int x;\n" };
    const v = await attack(base, { "src/main.d": "src/main.o: src/main.c\n" }, ["make"]);
    expect(v.scope.checkConfig).toEqual([violation("src/main.d", "before its first rule")]);
  }, 60_000);
});

/** The check-configuration findings when the worker writes `worker` over a repository of `base`. */
async function findings(base: Record<string, string>, worker: Record<string, string>, commands: string[]): Promise<string[]> {
  const repo = committedRepo(path.join(tmp, `r${++n}`), base);
  write(worker)(repo);
  const baseCommit = execFileSync("git", ["-C", repo, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();
  return runnerConfigChanges({ changed: Object.keys(worker), sub: "", scope: SCOPE, repo, baseCommit, checkout: repo, commands });
}

describe("what make reads, as grading reads it without make", () => {
  it("an include name through `$(foreach …)`, `$(notdir …)`, `$(call …)`", async () => {
    const fe = { Makefile: "DIRS = src\n-include $(foreach d,$(DIRS),$(wildcard $(d)/*.d))\ntest:\n\tfalse\n" };
    expect(await findings(fe, { "src/y.d": ".IGNORE:\n" }, ["make test"])).toEqual([violation("src/y.d", "included by Makefile")]);
    // A name that cannot be told at all: any file named like a makefile fragment, beyond plain dependency lines.
    const call = { Makefile: "-include $(call deps,src)\ntest:\n\tfalse\n" };
    expect(await findings(call, { "src/z.d": ".IGNORE:\n" }, ["make test"])).toEqual([violation("src/z.d", "included by Makefile")]);
    expect(await findings(call, { "src/z.d": "src/z.o: src/z.c\n", "src/z.c": "int z;\n" }, ["make test"])).toEqual([]);
  });

  it("a header named like an assignment (`MAKEFLAGS=i`: `-MP` writes `MAKEFLAGS=i:`, make then ignores errors)", async () => {
    expect(await findings({ Makefile: "-include main.d\ntest:\n\tfalse\n" }, { "src/MAKEFLAGS=i": "" }, ["make test"])).toEqual([
      violation("src/MAKEFLAGS=i", "special target or an assignment"),
    ]);
  });

  it("a makefile of many thousand include lines and rules is read within bounds: past them every changed file counts; a large plain one is read whole", async () => {
    // 29,000 plain include lines and as many rules (~0.8 MiB): each rule's target was matched against every include line,
    // which held the engine's thread for minutes; the names are looked up now (this test ran past its time before).
    const plain = [...Array.from({ length: 29_000 }, (_, i) => `-include i${i}.e`), ...Array.from({ length: 29_000 }, (_, i) => `t${i}: p${i}`)];
    const base = { Makefile: `${plain.join("\n")}\ntest:\n\tfalse\n` };
    expect(await findings(base, { "src/a.c": "int a;\n" }, ["make test"])).toEqual([]);
    expect(await findings(base, { "i7.e": ".IGNORE:\n" }, ["make test"])).toEqual([violation("i7.e", "included by Makefile")]);
    // Names that cannot be told (`$(shell …)`), each asked one by one: past the bound, every changed file counts.
    const fuzzy = [
      ...Array.from({ length: 12_000 }, (_, i) => `-include $(shell echo x)/i${i}.mk`),
      ...Array.from({ length: 12_000 }, (_, i) => `t${i}: p${i}`),
    ];
    expect(await findings({ Makefile: `${fuzzy.join("\n")}\ntest:\n\tfalse\n` }, { "src/a.c": "int a;\n" }, ["make test"])).toEqual([
      "check configuration changed: src/a.c — the makefiles a check's make reads are too large to tell which files they read within the engine's bounds: every changed file that could be one of them counts",
    ]);
    // A VPATH or an include search path of thousands of folders (each target and name looked for in each): the same.
    const many = Array.from({ length: 5000 }, (_, i) => `d${i}`);
    const rules = Array.from({ length: 2000 }, (_, i) => `t${i}: p${i}`).join("\n");
    for (const head of [`VPATH = ${many.join(":")}`, `MAKEFLAGS += ${many.map((d) => `-I${d}`).join(" ")}\n-include x.e`])
      expect(await findings({ Makefile: `${head}\n${rules}\ntest:\n\tfalse\n` }, { "src/a.c": "int a;\n" }, ["make test"]), head.slice(0, 20)).toEqual([
        expect.stringContaining("too large to tell which files they read"),
      ]);
  });

  it("controls: a rule making an included file from sources with the compiler leaves the sources free; a base file named like a target stays", async () => {
    const deps = { Makefile: "include .depend\n.depend: src/main.c\n\t$(CC) -MM $^ > $@\ntest:\n\tfalse\n", "src/main.c": "int x;\n" };
    expect(await findings(deps, { "src/main.c": "int y;\n" }, ["make test"])).toEqual([]);
    expect(await findings({ Makefile: "VPATH = src\ntest:\n\tfalse\n", "src/test/a.txt": "" }, { "src/test/b.txt": "" }, ["make test"])).toEqual([]);
  });
});
