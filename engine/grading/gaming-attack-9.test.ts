// Attack pass 9 on grading's reading of a check's command (command-scripts.ts): worker-written files that made that
// reading crash the engine, read outside the checkout, or block the engine for seconds to minutes. A script, a
// package.json or a Makefile linked to /dev/zero was read whole (the engine ran out of memory and died); one linked out
// of the checkout was read and followed; a recipe of `make` lines read the Makefile again for each, three levels deep;
// a long line of spaces in a Makefile, a long `{,,,` word or a long `script` command took quadratic time; a long chain of
// prerequisites overflowed the stack. And `make -kC sub` / `make -sf ci.mk` (getopt clusters) read the wrong makefile.
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { expectHarnessGuarded, gradedIn, folderIn } from "../../test/fixtures/graded";
import { commandScripts } from "./command-scripts";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-gaming-9-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const graded = gradedIn(tmp);

const folder = folderIn(tmp);

/** commandScripts's files, and how long it took (ms). */
function timed(commands: string[], dir: string): { files: string[]; ms: number } {
  const t = Date.now();
  const files = commandScripts(commands, "", dir).map((s) => s.file);
  return { files, ms: Date.now() - t };
}

describe("a file grading reads, linked to a device", () => {
  for (const [link, command] of [
    ["scripts/test.sh", "bash scripts/test.sh"],
    ["package.json", "npm test"],
    ["Makefile", "make test"],
    ["ci.mk", "make -f ci.mk test"],
  ] as const)
    it(`${link} -> /dev/zero (\`${command}\`): not read`, () => {
      const dir = folder({}, { [link]: "/dev/zero" });
      expect(timed([command], dir).ms).toBeLessThan(2000);
    });
});

describe("a file grading reads, linked out of the checkout", () => {
  const outside = (dir: string, f: string, text: string) => writeFileSync(path.join(dir, "..", f), text);
  it("a shell script: its lines are not read", () => {
    const dir = folder({ "scripts/x.sh": "exit 1\n" }, { "ci.sh": "../out.sh" });
    outside(dir, "out.sh", "bash scripts/x.sh\n");
    expect(timed(["bash ci.sh"], dir).files).not.toContain("scripts/x.sh");
  });
  it("package.json: its scripts are not read", () => {
    const dir = folder({ "scripts/x.sh": "exit 1\n" }, { "package.json": "../out.json" });
    outside(dir, "out.json", JSON.stringify({ scripts: { test: "bash scripts/x.sh" } }));
    expect(timed(["npm test"], dir).files).not.toContain("scripts/x.sh");
  });
  it("a Makefile, or a makefile -f names: its recipes are not read", () => {
    const dir = folder({ "scripts/x.sh": "exit 1\n" }, { Makefile: "../out.mk", "ci.mk": "../out.mk" });
    outside(dir, "out.mk", "test:\n\tbash scripts/x.sh\n");
    expect(timed(["make test"], dir).files).not.toContain("scripts/x.sh");
    expect(timed(["make -f ci.mk test"], dir).files).not.toContain("scripts/x.sh");
  });
});

describe("worker-written text that took grading seconds to minutes", () => {
  it("a recipe of `make` lines (each read the Makefile again, three levels deep)", () => {
    const dir = folder({ Makefile: `test:\n${"\tmake\n".repeat(300)}\tbash scripts/test.sh\n`, "scripts/test.sh": "exit 1\n" });
    const r = timed(["make test"], dir);
    expect(r.files).toContain("scripts/test.sh");
    expect(r.ms).toBeLessThan(3000);
  }, 600_000);
  it("a shell script of `npm test` lines", () => {
    const pkg = JSON.stringify({ scripts: { test: `bash scripts/test.sh${" && npm test".repeat(200)}` } });
    const dir = folder({ "ci.sh": "npm test\n".repeat(300), "package.json": pkg, "scripts/test.sh": "exit 1\n" });
    const r = timed(["bash ci.sh"], dir);
    expect(r.files).toContain("scripts/test.sh");
    expect(r.ms).toBeLessThan(3000);
  }, 600_000);
  it("a Makefile line of spaces", () => {
    const dir = folder({ Makefile: `x${" ".repeat(200_000)}y\ntest:\n\tbash scripts/test.sh\n`, "scripts/test.sh": "exit 1\n" });
    const r = timed(["make test"], dir);
    expect(r.files).toContain("scripts/test.sh");
    expect(r.ms).toBeLessThan(3000);
  }, 600_000);
  it("a word of an open brace and commas", () => {
    const dir = folder({ "ci.sh": `echo {${",".repeat(200_000)}\nbash scripts/test.sh\n`, "scripts/test.sh": "exit 1\n" });
    const r = timed(["bash ci.sh"], dir);
    expect(r.files).toContain("scripts/test.sh");
    expect(r.ms).toBeLessThan(3000);
  }, 600_000);
  it("a `script` command of many words", () => {
    const dir = folder({ "ci.sh": `script ${"a ".repeat(100_000)}\nbash scripts/test.sh\n`, "scripts/test.sh": "exit 1\n" });
    const r = timed(["bash ci.sh"], dir);
    expect(r.files).toContain("scripts/test.sh");
    expect(r.ms).toBeLessThan(3000);
  }, 600_000);
  it("a long chain of prerequisites", () => {
    const chain = Array.from({ length: 50_000 }, (_, i) => `t${i}: t${i + 1}\n`).join("");
    const dir = folder({ Makefile: `${chain}t50000:\n\tbash scripts/test.sh\n`, "scripts/test.sh": "exit 1\n" });
    const r = timed(["make t0"], dir);
    expect(r.files).toContain("scripts/test.sh");
    expect(r.ms).toBeLessThan(3000);
  }, 600_000);
});

describe("make's options in a getopt cluster", () => {
  it("`make -kC sub test` reads sub/Makefile; `make -sf ci.mk test` reads ci.mk", () => {
    const dir = folder({
      Makefile: "test:\n\techo root\n",
      "sub/Makefile": "test:\n\tbash scripts/test.sh\n",
      "sub/scripts/test.sh": "exit 1\n",
      "ci.mk": "test:\n\tsh scripts/check.sh\n",
      "scripts/check.sh": "exit 1\n",
    });
    expect(timed(["make -kC sub test"], dir).files).toContain("sub/scripts/test.sh");
    expect(timed(["make -sfci.mk test"], dir).files).toContain("scripts/check.sh");
    expect(timed(["make -sf ci.mk test"], dir).files).toContain("scripts/check.sh");
  });
  it(
    "graded: `make -sC sub test`, its harness rewritten to pass, is a check-configuration violation",
    () =>
      expectHarnessGuarded(graded, {
        run: "make -sC sub test",
        file: "sub/scripts/test.sh",
        base: { "sub/Makefile": "test:\n\tcd .. && bash sub/scripts/test.sh\n" },
      }),
    120_000,
  );
});

// The rest of grading's reads of the worker's files (runner-config.ts, make-includes.ts, checks.ts): a runner's settings
// file, a makefile the Makefile includes, a conftest.py, each linked by the worker to /dev/zero or out of the checkout,
// was read through the link (/dev/zero whole: the engine's memory, then the engine). Each is now not read: a
// check-configuration change, and the grading ends.
describe("grading's other reads of the worker's files, linked to a device", () => {
  const linked = (files: Record<string, string>) => (ws: string) => {
    for (const [f, to] of Object.entries(files)) {
      rmSync(path.join(ws, f), { force: true });
      symlinkSync(to, path.join(ws, f));
    }
  };
  for (const [name, base, link, run] of [
    ["a runner's settings (setup.cfg)", { "setup.cfg": "[tool:pytest]\naddopts = -q\n" }, "setup.cfg", "true"],
    ["a makefile the Makefile includes", { Makefile: "include dep.mk\ntest:\n\ttrue\n", "dep.mk": "x.o: x.c\n" }, "dep.mk", "true"],
    ["a conftest.py", { "conftest.py": "import os\n", "tests/test_a.py": "def test_a():\n    pass\n" }, "conftest.py", "python3 -m pytest -q tests"],
  ] as const)
    it(`${name} -> /dev/zero: not read; a check-configuration change`, async () => {
      const v = await graded({ ...base, "a.txt": "a\n" }, (ws) => (linked({ [link]: "/dev/zero" })(ws), writeFileSync(path.join(ws, "a.txt"), "b\n")), [
        { run },
      ]);
      expect(v.verdict).toBe("honest-failure");
      expect(v.scope.violations.join("\n")).toContain(link);
    }, 60_000);
});
