// Attack pass 8 on "a verdict is evidence": forms of a check's command that run the project's harness and that grading's
// reading of the command (command-scripts.ts) did not follow: `make`/`npm test` run from inside a shell script the check
// runs, `xargs` and `find … -exec`, the `script -c` and `watch` wrappers, GNU `parallel`, and the recipes of a makefile a
// Makefile includes. A worker that rewrote such a harness to `exit 0` passed the check, and the verdict was built. Each
// grading case drives the engine's grade() on real git and a real shell; the parser's own cases read a folder.
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CALC_HARNESS, expectHarnessGuarded, gradedIn, folderIn } from "../../test/fixtures/graded";
import { commandScripts, simpleCommands } from "./command-scripts";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-gaming-8-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const graded = gradedIn(tmp);

const folder = folderIn(tmp);

const PKG = (scripts: Record<string, string>) => `${JSON.stringify({ name: "p", version: "1.0.0", scripts })}\n`;
type Case = { run: string; file: string; base?: Record<string, string> };
const guarded = (cases: Case[]) => {
  for (const c of cases)
    it(
      `\`${c.run}\`: the harness rewritten to pass passes the check, and it is a check-configuration violation`,
      () => expectHarnessGuarded(graded, c),
      120_000,
    );
};

describe("make or npm run from inside a shell script the check runs", () => {
  guarded([
    { run: "bash ci.sh", file: "scripts/test.sh", base: { "ci.sh": "set -e\nmake test\n", Makefile: "test:\n\tbash scripts/test.sh\n" } },
    { run: "sh ci/run.sh", file: "scripts/test.sh", base: { "ci/run.sh": "npm test --silent\n", "package.json": PKG({ test: "bash scripts/test.sh" }) } },
    {
      run: "bash ci.sh",
      file: "scripts/test.sh",
      base: {
        "ci.sh": "bash scripts/inner.sh\n",
        "scripts/inner.sh": "timeout 60 npm run unit --silent\n",
        "package.json": PKG({ unit: "bash scripts/test.sh" }),
      },
    },
  ]);
});

describe("a harness run through xargs or find -exec", () => {
  guarded([
    { run: "echo calc.py | xargs bash scripts/test.sh", file: "scripts/test.sh" },
    { run: "printf 'calc.py\\0' | xargs -0 -n 1 -P 2 timeout 60 sh scripts/test.sh", file: "scripts/test.sh" },
    { run: "ls calc.py | xargs -I{} sh -c 'bash scripts/test.sh {}'", file: "scripts/test.sh" },
    { run: "find . -maxdepth 1 -name calc.py -exec sh scripts/test.sh {} +", file: "scripts/test.sh" },
  ]);
});

describe("a harness run through script -c", () => {
  guarded([
    { run: "script -qec 'bash scripts/test.sh' /dev/null", file: "scripts/test.sh" },
    { run: 'script --quiet --return --command="sh scripts/test.sh" /dev/null', file: "scripts/test.sh" },
  ]);
});

describe("a harness in the recipes of a makefile the Makefile includes", () => {
  guarded([
    { run: "make test", file: "scripts/test.sh", base: { Makefile: "include ci/rules.mk\n", "ci/rules.mk": "test:\n\tbash scripts/test.sh\n" } },
    {
      run: "make",
      file: "scripts/test.sh",
      base: { Makefile: "-include local.mk\ninclude mk/a.mk\nall: check\n", "mk/a.mk": "include mk/b.mk\n", "mk/b.mk": "check:\n\tsh scripts/test.sh\n" },
    },
  ]);
});

describe("a harness run behind a shell's reserved word (`if`, `!`, `{ …; }`, `while`, `do`)", () => {
  guarded([
    { run: "if bash scripts/test.sh; then echo ok; else exit 1; fi", file: "scripts/test.sh" },
    { run: "{ sh scripts/test.sh; } 2>&1 | tail -n 5; exit ${PIPESTATUS[0]}", file: "scripts/test.sh" },
  ]);
});

describe("what the parser reads of these forms, and what it leaves unread", () => {
  const dir = folder({
    "a.sh": "true\n",
    "b.sh": "true\n",
    "scripts/test.sh": CALC_HARNESS,
    Makefile: "test:\n\tbash a.sh\n",
    "package.json": PKG({ test: "bash b.sh", unit: "sh scripts/test.sh" }),
  });
  const files = (run: string, at = dir) => commandScripts([run], "", at).map((s) => s.file);
  const inScript = (line: string) => {
    writeFileSync(path.join(dir, "ci.sh"), `${line}\n`);
    return files("bash ci.sh").filter((f) => f !== "ci.sh");
  };

  it("make, npm, yarn and pnpm inside a script: the recipe's and the package script's harnesses, as if the check named them", () => {
    expect(inScript("make test")).toEqual(["a.sh"]);
    expect(inScript("npm test")).toEqual(["b.sh"]);
    expect(inScript("CI=1 yarn unit")).toEqual(["scripts/test.sh"]);
    expect(inScript("pnpm run unit && make")).toEqual(["scripts/test.sh", "a.sh"]);
    // read as the check's own: no `via` (a recipe's program is judged by its own path, as with `make test` in the check)
    writeFileSync(path.join(dir, "ci.sh"), "npm run unit\n");
    expect(commandScripts(["bash ci.sh"], "", dir)).toEqual([
      { file: "ci.sh", command: "bash ci.sh" },
      { file: "scripts/test.sh", command: "bash ci.sh" },
    ]);
    // still nothing that expands, and a `cd` elsewhere ends the reading
    expect(inScript("make $T")).toEqual([]);
    expect(inScript("cd /tmp && npm test")).toEqual([]);
  });

  it("xargs: the command after its options, with the arguments it appends; a replacement string is unread", () => {
    expect(files("echo x | xargs bash a.sh")).toEqual(["a.sh"]);
    expect(files("xargs -0 -r -n1 -P 4 -a list.txt bash a.sh")).toEqual(["a.sh"]);
    expect(files("xargs --max-args=1 --delimiter '\\n' -- sh -e b.sh")).toEqual(["b.sh"]);
    expect(files("xargs -rn1 env CI=1 bash a.sh")).toEqual(["a.sh"]);
    expect(files("xargs -I F sh -c 'bash a.sh F; sh b.sh'")).toEqual(["a.sh", "b.sh"]);
    expect(files("xargs sh -c 'bash scripts/test.sh \"$@\"' _")).toEqual(["scripts/test.sh"]);
    expect(files("xargs -i bash a.sh {}")).toEqual(["a.sh"]);
    expect(files("xargs make test")).toEqual(["a.sh"]);
    for (const run of [
      "xargs bash",
      "xargs -I F bash F",
      "xargs -i bash {}",
      "xargs -IX sh X.sh",
      "xargs bash $S",
      "xargs --bogus bash a.sh",
      "xargs -n bash a.sh",
      "xargs",
    ])
      expect(files(run), run).toEqual([]);
  });

  it("find -exec CMD {} ; and {} +, each -exec of the line; -execdir, -ok and an unended -exec are unread", () => {
    expect(files("find . -name '*.py' -exec bash a.sh {} \\;")).toEqual(["a.sh"]);
    expect(files("find -L src -type f -exec sh b.sh '{}' ';'")).toEqual(["b.sh"]);
    expect(files("find . -exec bash a.sh {} + -exec sh -c 'bash b.sh' \\;")).toEqual(["a.sh", "b.sh"]);
    expect(files("find . -exec timeout 5 bash scripts/test.sh {} +")).toEqual(["scripts/test.sh"]);
    for (const run of [
      "find . -exec bash {} \\;",
      "find . -execdir bash a.sh {} \\;",
      "find . -ok bash a.sh {} \\;",
      "find . -exec bash a.sh",
      "find . -exec bash a.sh + x",
    ])
      expect(files(run), run).toEqual([]);
  });

  it("script -c and watch run a command line; parallel a command with its ::: arguments", () => {
    expect(files("script -qc 'bash a.sh' /dev/null")).toEqual(["a.sh"]);
    expect(files('script -q -e -c "sh b.sh; bash a.sh" /dev/null')).toEqual(["b.sh", "a.sh"]);
    expect(files("script --command='bash a.sh' -O /tmp/log")).toEqual(["a.sh"]);
    expect(files("script -qfcbash\\ a.sh")).toEqual(["a.sh"]);
    expect(files("watch -n1 bash a.sh")).toEqual(["a.sh"]);
    expect(files("watch -n 2 -d 'sh b.sh && bash a.sh'")).toEqual(["b.sh", "a.sh"]);
    expect(files("watch --interval=1 -x bash a.sh")).toEqual(["a.sh"]);
    expect(files("parallel bash a.sh ::: 1 2")).toEqual(["a.sh"]);
    expect(files("parallel -j2 -k sh b.sh {} ::: x y")).toEqual(["b.sh"]);
    expect(files("parallel ::: 'bash a.sh' 'sh b.sh'")).toEqual(["a.sh", "b.sh"]);
    for (const run of [
      "script /dev/null",
      "script -c $CMD",
      "watch $CMD",
      "watch -n1",
      "parallel bash {} ::: a.sh",
      "parallel bash a.sh -- x",
      "parallel --wd sub bash a.sh ::: x",
      "parallel ::: 'bash a.sh' ::: 1",
      "parallel -I X bash X ::: a.sh",
    ])
      expect(files(run), run).toEqual([]);
  });

  it("a makefile's include lines, read where they stand; an expansion, a path outside, a missing file or a loop: not read", () => {
    const d = folder({
      Makefile: "include mk/rules.mk\n-include nowhere.mk\nsinclude $(LOCAL)\ninclude ../up.mk /etc/x.mk\n",
      "mk/rules.mk": "all: check\ncheck:\n\tbash a.sh\ninclude mk/loop.mk\n",
      "mk/loop.mk": "include Makefile\ninclude mk/rules.mk\nlint:\n\tsh b.sh\n",
      "a.sh": "true\n",
      "b.sh": "true\n",
    });
    // the first target of the included file is make's default goal, as the include comes first
    expect(files("make", d)).toEqual(["a.sh"]);
    expect(files("make lint check", d)).toEqual(["b.sh", "a.sh"]);
    // a linked makefile that leads outside the checkout is not read
    const outside = folder({ "x.mk": "check:\n\tbash a.sh\n" });
    const e = folder({ Makefile: "include link.mk\n", "a.sh": "true\n" });
    symlinkSync(path.join(outside, "x.mk"), path.join(e, "link.mk"));
    expect(files("make check", e)).toEqual([]);
  });

  it("the reserved words before a command are passed over, at its start only", () => {
    expect(files("if ! bash a.sh; then sh b.sh; elif true; then :; fi")).toEqual(["a.sh", "b.sh"]);
    expect(files("while bash a.sh; do { sh b.sh; }; done")).toEqual(["a.sh", "b.sh"]);
    expect(files("until ! timeout 5 bash a.sh; do :; done")).toEqual(["a.sh"]);
    expect(files("env if bash a.sh")).toEqual([]);
    // a `cd` after one moves where the later words are read from, as a plain one does
    expect(files("if true; then cd scripts; fi; bash test.sh")).toEqual(["scripts/test.sh"]);
    expect(files("{ cd /tmp; }; bash a.sh")).toEqual([]);
  });

  it("`{}` and a lone `{` are words the shell leaves as written; `{a,b}` and `x{1..3}` expand", () => {
    expect(simpleCommands("echo {} -I{} x{ {a,b} x{1..3} '{c,d}'")).toEqual([["echo", "{}", "-I{}", "x{", null, null, "{c,d}"]]);
  });
});
