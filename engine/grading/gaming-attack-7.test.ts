// Attack pass 7 on "a verdict is evidence": a check's command that names its harness through a variable it sets itself
// (`S=scripts/test.sh; bash "$S"`, `export D=ci && sh $D/run.sh`), a form people write to keep a long path in one place.
// Grading did not read the variable, so the harness was no harness to it: a worker that rewrote it to `exit 0` passed the
// check, and the verdict was built. Also `eval`, `su -c` and `flock`. Each case drives the engine's grade() on real git and a
// real shell.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CALC_HARNESS, expectHarnessGuarded, gradedIn } from "../../test/fixtures/graded";
import { commandScripts, simpleCommands } from "./command-scripts";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-gaming-7-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;
const graded = gradedIn(tmp);

describe("a harness a check's command names through a variable it sets", () => {
  const cases: { run: string; file: string; base?: Record<string, string> }[] = [
    { run: "S=scripts/test.sh; bash $S", file: "scripts/test.sh" },
    { run: 'S=scripts/test.sh && bash "$S"', file: "scripts/test.sh" },
    { run: "export D=ci; sh ${D}/run.sh --fast", file: "ci/run.sh" },
    { run: "declare -x T=test.sh; bash scripts/$T", file: "scripts/test.sh" },
    // Inside the script the check runs: its own variable names the script it runs in turn.
    { run: "bash ci/main.sh", file: "ci/inner.sh", base: { "ci/main.sh": 'INNER=ci/inner.sh\nbash "$INNER"\n' } },
  ];
  for (const c of cases) {
    it(
      `\`${c.run}\`: the harness rewritten to pass passes the check, and it is a check-configuration violation`,
      () => expectHarnessGuarded(graded, c),
      120_000,
    );
  }
});

describe("what a variable is read as: the shell's value where it is plain, nothing otherwise", () => {
  const dir = path.join(tmp, `dir-${++n}`);
  for (const f of ["scripts/test.sh", "x.sh", "y.sh", "a.sh"]) {
    mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    writeFileSync(path.join(dir, f), "true\n");
  }
  const files = (run: string) => commandScripts([run], "", dir).map((s) => s.file);
  it("a value set by a command of assignments only, plain or quoted, braced or not", () => {
    expect(files("S=scripts/test.sh; bash $S")).toEqual(["scripts/test.sh"]);
    expect(files("S='scripts/test.sh'; bash \"${S}\"")).toEqual(["scripts/test.sh"]);
    expect(files("readonly S=x.sh T=y.sh; bash $S; bash $T")).toEqual(["x.sh", "y.sh"]);
  });
  it("an assignment before a command is not yet the value its words expand to (the shell expands them first)", () => {
    expect(files("S=x.sh bash $S")).toEqual([]);
    expect(files("S=x.sh; S=y.sh bash $S")).toEqual(["x.sh"]);
    expect(files("env S=x.sh bash $S")).toEqual([]);
  });
  it("a value that expands, a glob, an unset variable, one set elsewhere or escaped: nothing is guessed", () => {
    expect(files("S=$(pwd)/x.sh; bash $S")).toEqual([]);
    expect(files("S=*.sh; bash $S")).toEqual([]);
    expect(files("S=x.sh; unset S; bash $S")).toEqual([]);
    expect(files("bash $SCRIPT")).toEqual([]);
    expect(simpleCommands('S=a.sh; bash "\\$S"')[1]).toEqual(["bash", "$S"]);
  });
  it("the options of `declare` are no assignments; `make CC=gcc` and `--opt=x` set nothing", () => {
    expect(files("declare -x S=a.sh; bash $S")).toEqual(["a.sh"]);
    expect(simpleCommands("make CC=gcc test; bash $CC")[1]).toEqual(["bash", null]);
    expect(simpleCommands("tool --opt=x.sh; bash $opt")[1]).toEqual(["bash", null]);
  });
});

describe("a harness run through eval, su -c or flock", () => {
  const cases: { run: string; file: string }[] = [
    { run: "eval 'bash scripts/test.sh'", file: "scripts/test.sh" },
    { run: "flock /tmp/ocw-check.lock bash scripts/test.sh", file: "scripts/test.sh" },
    { run: "flock -w 5 /tmp/ocw-check.lock -c 'sh scripts/test.sh'", file: "scripts/test.sh" },
    { run: "bash <<'EOF'\nbash scripts/test.sh\nEOF", file: "scripts/test.sh" },
  ];
  for (const c of cases) {
    it(`\`${c.run.replaceAll("\n", "⏎")}\`: the harness rewritten to pass is a check-configuration violation`, () => expectHarnessGuarded(graded, c), 120_000);
  }
  it("`su -c` and `su user --command=…` name the command they run (su itself is not run here)", () => {
    const dir = path.join(tmp, `dir-${++n}`);
    mkdirSync(path.join(dir, "scripts"), { recursive: true });
    writeFileSync(path.join(dir, "scripts/test.sh"), CALC_HARNESS);
    for (const run of ["su -c 'bash scripts/test.sh'", "su nobody --command='sh scripts/test.sh'", "eval bash scripts/test.sh"])
      expect(
        commandScripts([run], "", dir).map((s) => s.file),
        run,
      ).toEqual(["scripts/test.sh"]);
    for (const run of ["su nobody", "eval $CMD", "flock x.lock -c $CMD"]) expect(commandScripts([run], "", dir), run).toEqual([]);
  });
});
