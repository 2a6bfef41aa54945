// make's search path for included makefiles, as the check's command gives it: `make -I conf test` reads `include
// config.env` from conf/ when the folder make runs in has none (GNU make's manual, "Including Other Makefiles"), and so
// do `--include-dir=conf`, `MAKEFLAGS=-Iconf make test`, a sub-make in a recipe (MAKEFLAGS passes `-I` on, read from the
// sub-make's folder) and, in GNU make 4.4, `MAKEFLAGS += -I conf` in the Makefile itself. A worker's conf/config.env with
// `.IGNORE:` is the Makefile's own, as a file beside it is. And `make -C app` and `make -f ci.make` read other makefiles
// than the checks' folder's: their include lines count too.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { CheckSpec } from "../../shared/check";
import { committedRepo } from "../../test/fixtures/git-repo";
import { gradedIn, heldBackIn } from "../../test/fixtures/graded";
import { commandScripts, makeRuns } from "./command-scripts";
import { makeIncludes } from "./make-includes";
import { runnerConfigChanges } from "./runner-config";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-make-include-path-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;

/** A folder holding `files`. */
function folder(files: Record<string, string>): string {
  const dir = path.join(tmp, `f${++n}`);
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    writeFileSync(path.join(dir, f), text);
  }
  return dir;
}

/**
 * The check-configuration findings when the worker writes `worker` over a repository of `base`, and the checks run
 * `commands` in the repository's root.
 */
async function findings(base: Record<string, string>, worker: Record<string, string>, commands: string[], sub = ""): Promise<string[]> {
  const repo = committedRepo(path.join(tmp, `r${++n}`), base);
  for (const [f, text] of Object.entries(worker)) {
    mkdirSync(path.dirname(path.join(repo, f)), { recursive: true });
    writeFileSync(path.join(repo, f), text);
  }
  const baseCommit = execFileSync("git", ["-C", repo, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();
  return runnerConfigChanges({ changed: Object.keys(worker), sub, scope: [], repo, baseCommit, checkout: repo, commands });
}

const MAKEFILE = "include config.env\n\ntest:\n\tpython3 -m pytest -q tests\n";
const IGNORE = ".IGNORE:\n";
const included = (file: string, line = "include config.env", makefile = "Makefile") =>
  expect.stringContaining(`check configuration changed: ${file} — included by ${makefile} (\`${line}\`)`);

describe("a file make finds through the check's `-I DIR`", () => {
  for (const command of [
    "make -I conf test",
    "make -Iconf test",
    "make -kIconf test",
    "make --include-dir=conf test",
    "make --include-dir conf test",
    "make --inc=conf test",
  ])
    it(`\`${command}\`: conf/config.env with \`.IGNORE:\` is check configuration`, async () => {
      expect(await findings({ Makefile: MAKEFILE, "conf/config.env": "A = 1\n" }, { "conf/config.env": IGNORE }, [command])).toEqual([
        included("conf/config.env"),
      ]);
    });

  it("`MAKEFLAGS=-Iconf make test` and `env GNUMAKEFLAGS='-I conf' make test`: the same", async () => {
    for (const command of ["MAKEFLAGS=-Iconf make test", "env GNUMAKEFLAGS='-I conf' make test", "MAKEFLAGS='kI conf' make test"])
      expect(await findings({ Makefile: MAKEFILE, "conf/config.env": "A = 1\n" }, { "conf/config.env": IGNORE }, [command]), command).toEqual([
        included("conf/config.env"),
      ]);
  });

  it("`make -C app -I conf test`: `-I` is read from the folder make moved to (app/conf), whatever the order", async () => {
    const base = { "app/Makefile": MAKEFILE, "app/conf/config.env": "A = 1\n", "conf/config.env": "A = 1\n" };
    for (const command of ["make -C app -I conf test", "make -I conf -C app test"]) {
      expect(await findings(base, { "app/conf/config.env": IGNORE }, [command]), command).toEqual([
        included("app/conf/config.env", "include config.env", "app/Makefile"),
      ]);
      expect(await findings(base, { "conf/config.env": IGNORE }, [command]), command).toEqual([]);
    }
  });

  it("a name with a folder (`include rules/local.env`) is looked for under the `-I` folder too", async () => {
    const base = { Makefile: "-include rules/local.env\ntest:\n\ttrue\n", "shared/rules/local.env": "A = 1\n" };
    expect(await findings(base, { "shared/rules/local.env": IGNORE }, ["make -I shared test"])).toEqual([
      included("shared/rules/local.env", "-include rules/local.env"),
    ]);
  });

  it("a sub-make in a recipe takes the `-I` on (MAKEFLAGS), read from its own folder", async () => {
    const base = { Makefile: "test:\n\tmake -C app test\n", "app/Makefile": MAKEFILE, "app/conf/config.env": "A = 1\n" };
    expect(await findings(base, { "app/conf/config.env": IGNORE }, ["make -I conf test"])).toEqual([
      included("app/conf/config.env", "include config.env", "app/Makefile"),
    ]);
  });

  it("`MAKEFLAGS += -I conf` in the Makefile (GNU make 4.4 reads it at once), and `$(CURDIR)/conf`", async () => {
    for (const flags of ["MAKEFLAGS += -I conf", "MAKEFLAGS += --include-dir=$(CURDIR)/conf", "override MAKEFLAGS += -Iconf"]) {
      const base = { Makefile: `${flags}\n${MAKEFILE}`, "conf/config.env": "A = 1\n" };
      expect(await findings(base, { "conf/config.env": IGNORE }, ["make test"]), flags).toEqual([included("conf/config.env")]);
    }
  });

  it("`include $(CURDIR)/config.env`: the folder make runs in", async () => {
    const base = { "app/Makefile": "include $(CURDIR)/config.env\ntest:\n\ttrue\n", "app/config.env": "A = 1\n" };
    expect(await findings(base, { "app/config.env": IGNORE }, ["make -C app test"])).toEqual([
      included("app/config.env", "include $(CURDIR)/config.env", "app/Makefile"),
    ]);
  });

  it("controls: without `-I` conf/config.env is not read; plain dependency lines there are not counted", async () => {
    const base = { Makefile: MAKEFILE, "config.env": "A = 1\n", "conf/config.env": "A = 1\n" };
    expect(await findings(base, { "conf/config.env": IGNORE }, ["make test"])).toEqual([]);
    expect(await findings(base, { "conf/config.env": "x.o: x.c\n" }, ["make -I conf test"])).toEqual([]);
  });
});

describe("the makefiles `make -C DIR` and `make -f FILE` read", () => {
  it("`make -C app test`: what app/Makefile includes counts", async () => {
    const base = { "app/Makefile": "-include local.env\ntest:\n\ttrue\n", "app/local.env": "A = 1\n" };
    expect(await findings(base, { "app/local.env": IGNORE }, ["make -C app test"])).toEqual([included("app/local.env", "-include local.env", "app/Makefile")]);
    expect(await findings(base, { "app/local.env": IGNORE }, ["cd app && make test"])).toEqual([
      included("app/local.env", "-include local.env", "app/Makefile"),
    ]);
  });

  it("`make -f ci/test.make test`: what it includes counts, read from the folder make runs in", async () => {
    const base = { "ci/test.make": "include settings.env\ntest:\n\ttrue\n", "settings.env": "A = 1\n" };
    for (const command of ["make -f ci/test.make test", "make --fi=ci/test.make test", "make --makefile ci/test.make"])
      expect(await findings(base, { "settings.env": IGNORE }, [command]), command).toEqual([included("settings.env", "include settings.env", "ci/test.make")]);
  });
});

describe("the make runs a check's commands start, as makeIncludes takes them", () => {
  it("folder, makefiles and `-I` folders from the repository's root; a sub-make's own and inherited ones", () => {
    const dir = folder({ Makefile: "test:\n\tmake -C app -I ../shared check\n", "app/Makefile": "check:\n\ttrue\n" });
    expect(makeRuns(["make -I conf test", "make -C app -f x.make", "cd app; make -I .. check"], "", dir)).toEqual([
      { dir: "", makefiles: [], includeDirs: ["conf"] },
      { dir: "app", makefiles: [], includeDirs: ["app/conf", "shared"] },
      { dir: "app", makefiles: ["app/x.make"], includeDirs: [], defaultGoal: true },
      { dir: "app", makefiles: [], includeDirs: [""] },
    ]);
  });

  it("recipes of a file found through `-I` are read for the scripts they run", () => {
    const dir = folder({
      Makefile: "include rules.inc\n",
      "conf/rules.inc": "test:\n\tbash scripts/test.sh\n",
      "scripts/test.sh": "exit 1\n",
    });
    expect(commandScripts(["make -I conf test"], "", dir).map((s) => s.file)).toContain("scripts/test.sh");
    expect(commandScripts(["make test"], "", dir).map((s) => s.file)).not.toContain("scripts/test.sh");
  });
});

// GNU make itself, where it is installed: each makefile a make reads (MAKEFILE_LIST, printed with the folder it runs in)
// but its first is one an include line names, as makeIncludes reads the same command. (The tests above hold without it.)
const make = spawnSync("make", ["--version"], { encoding: "utf8" });
describe.skipIf(make.status !== 0)("what GNU make reads, against makeIncludes", () => {
  const SHOW = "\nshow:\n\t@echo $(CURDIR) $(MAKEFILE_LIST)\n";
  const cases: [string, Record<string, string>, string][] = [
    ["-I", { Makefile: `include config.env${SHOW}`, "conf/config.env": "A = 1\n" }, "make -s -I conf show"],
    ["-C and -I", { "app/Makefile": `include config.env${SHOW}`, "app/conf/config.env": "A = 1\n" }, "make -s -I conf -C app show"],
    ["a folder in the name", { Makefile: `-include rules/x.env${SHOW}`, "shared/rules/x.env": "A = 1\n" }, "make -s --include-dir=shared show"],
    ["nested, through -I", { Makefile: `include a.env${SHOW}`, "conf/a.env": "include b.env\n", "conf/b.env": "B = 1\n" }, "make -s -Iconf show"],
    ["-f, read from make's folder", { "ci/test.make": `include settings.env${SHOW}`, "settings.env": "A = 1\n" }, "make -s -f ci/test.make show"],
    ["the folder's own first", { Makefile: `include config.env${SHOW}`, "config.env": "A = 1\n", "conf/config.env": "A = 2\n" }, "make -s -I conf show"],
    ["MAKEFLAGS and GNUMAKEFLAGS", { Makefile: `include a.env b.env${SHOW}`, "x/a.env": "", "y/b.env": "" }, "MAKEFLAGS=-Ix GNUMAKEFLAGS='-I y' make -s show"],
    ["an abbreviation", { Makefile: `include config.env${SHOW}`, "conf/config.env": "" }, "make -s --inc=conf show"],
    [
      "a sub-make, given -I by MAKEFLAGS",
      { Makefile: "show:\n\tmake -C app show\n", "app/Makefile": `include config.env${SHOW}`, "app/conf/config.env": "" },
      "make -s -I conf show",
    ],
  ];
  for (const [name, files, command] of cases)
    it(name, () => {
      const dir = folder(files);
      const out = execFileSync("sh", ["-c", command], { cwd: dir, encoding: "utf8" });
      const incs = makeIncludes(dir, makeRuns([command], "", dir));
      const read = out
        .trim()
        .split("\n")
        .flatMap((line) => {
          const [cwd, , ...included] = line.trim().split(/\s+/);
          return included.map((f) => path.posix.normalize(path.posix.join(path.relative(dir, cwd!), f)));
        });
      expect(read.length).toBeGreaterThan(0);
      for (const f of read)
        expect(
          incs.some((i) => i.names(f)),
          f,
        ).toBe(true);
    });
});

describe("graded: `make -I conf test` with the worker's conf/config.env", () => {
  const graded = gradedIn(tmp);
  const heldBack = heldBackIn(tmp);
  const TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n";
  const BASE = { "calc.py": "def add(a, b):\n    return 0\n", Makefile: MAKEFILE, "conf/config.env": "A = 1\n" };
  const check = (held: string): CheckSpec[] => [{ run: "make -I conf test", files: held }];

  it.skipIf(make.status !== 0)(
    "`.IGNORE:` there passes the check, and it is a check-configuration violation",
    async () => {
      const v = await graded(BASE, (ws) => writeFileSync(path.join(ws, "conf", "config.env"), IGNORE), check(heldBack(TEST)));
      expect(v.checks[0]).toMatchObject({ passed: true });
      expect(v.scope.checkConfig).toEqual([included("conf/config.env")]);
      expect(v.verdict).toBe("honest-failure");
    },
    120_000,
  );
});
