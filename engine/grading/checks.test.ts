import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runChecks, shellSyntaxProblem } from "./checks";

const dir = () => mkdtempSync(path.join(os.tmpdir(), "ocw-checks-"));

describe("runChecks", () => {
  it("runs commands in the workspace and compares the exit code", async () => {
    const d = dir();
    writeFileSync(path.join(d, "a.txt"), "alpha\n");
    const [ok, bad, expected] = await runChecks([{ run: "cat a.txt" }, { name: "fails", run: "exit 3" }, { run: "exit 3", expectExit: 3 }], d);
    expect(ok).toMatchObject({ name: "cat a.txt", passed: true, exitCode: 0, output: "alpha" });
    expect(bad).toMatchObject({ name: "fails", passed: false, exitCode: 3 });
    expect(expected!.passed).toBe(true);
  });
  it("kills a hanging check and everything it started at its timeout", async () => {
    const started = Date.now();
    const [r] = await runChecks([{ run: "sleep 30 & sleep 30; wait", timeoutSec: 1 }], dir());
    expect(r).toMatchObject({ passed: false, timedOut: true, exitCode: null });
    expect(r!.output).toMatch(/timed out after 1s/);
    // Ended well before the 30 s its sleeps would take unkilled: the bound is what it must tell apart, not the machine's
    // speed (a check left running cannot end sooner, however loaded the machine).
    expect(Date.now() - started).toBeLessThan(25_000);
  }, 60_000);
  it("checks files: exists, equals (ignoring a final newline), matches, absent", async () => {
    const d = dir();
    writeFileSync(path.join(d, "f.txt"), "hello 42\n");
    const rs = await runChecks(
      [
        { file: "f.txt" },
        { file: "f.txt", equals: "hello 42" },
        { file: "f.txt", equals: "hello" },
        { file: "f.txt", matches: "\\d+$" },
        { file: "nope.txt", exists: false },
        { file: "nope.txt" },
      ],
      d,
    );
    expect(rs.map((r) => r.passed)).toEqual([true, true, false, true, true, false]);
    expect(rs[2]!.output).toMatch(/differs/);
  });
  it("a file that must not exist is not absent when its name is a symlink to nothing", async () => {
    const d = dir();
    // The worker "deleted" gone.txt by pointing its name at a missing file: git commits the link, a checkout gets it.
    symlinkSync("nowhere.txt", path.join(d, "gone.txt"));
    const [r] = await runChecks([{ file: "gone.txt", exists: false }], d);
    expect(r).toMatchObject({ passed: false });
    expect(r!.output).toMatch(/gone\.txt is a symlink \(to "nowhere\.txt", which is missing\) but should not exist/);
  });
});

describe("protected files while the checks run", () => {
  it("are read-only to a check in the sandbox, and a check that changed one fails; the next check reads the original", async (ctx) => {
    const { sandboxStatus } = await import("../sandbox/sandbox");
    if (sandboxStatus().kind !== "bwrap") return ctx.skip(`no bubblewrap sandbox here: ${sandboxStatus().reason}`);
    const root = dir();
    const state = dir();
    mkdirSync(path.join(root, "test"));
    writeFileSync(path.join(root, "test", "check.sh"), "exit 1\n");
    const guard = [path.join(root, "test", "check.sh")];
    const [rewrite, check] = await runChecks(
      [{ run: "printf 'exit 0\\n' > test/check.sh" }, { run: "sh test/check.sh" }],
      root,
      { kind: "bwrap", stateDir: state, tmpDir: path.join(state, "tmp"), root },
      guard,
    );
    expect(rewrite!.passed).toBe(false);
    expect(check!.passed).toBe(false);
    expect(readFileSync(guard[0]!, "utf8")).toBe("exit 1\n");
  });

  it("unconfined, a check that rewrote one fails with its name", async () => {
    const root = dir();
    mkdirSync(path.join(root, "test"));
    writeFileSync(path.join(root, "test", "check.sh"), "exit 1\n");
    const [rewrite] = await runChecks([{ run: "printf 'exit 0\\n' > test/check.sh" }], root, undefined, [path.join(root, "test", "check.sh")]);
    expect(rewrite!.passed).toBe(false);
    expect(rewrite!.output).toContain("changed 1 protected file: test/check.sh");
  });
});

describe("shellSyntaxProblem", () => {
  // The shell the checks run in (bash here) reads each command with -n: nothing runs.
  it("a command its shell cannot read: which check, and the shell's words", async () => {
    const marker = path.join(os.tmpdir(), `ocw-syntax-${process.pid}`);
    expect(await shellSyntaxProblem([{ file: "a.txt" }, { run: `touch ${marker} && (` }])).toBe(
      "check 2's command is not valid shell (bash reads: line 2: syntax error: unexpected end of file): close its quotes and parentheses, or quote it whole where your shell took part of it (`touch " +
        marker +
        " && (`)",
    );
    expect(existsSync(marker)).toBe(false);
    expect(await shellSyntaxProblem([{ run: 'echo "unclosed' }])).toMatch(
      /^check 1's command is not valid shell \(bash reads: line 1: unexpected EOF while looking for matching `"'\)/,
    );
    expect(await shellSyntaxProblem([{ run: "for f in *.py; do python $f" }])).toMatch(/^check 1's command is not valid shell/);
  });

  it("what a shell reads: pipes, here-documents, several lines, functions, extglob after shopt, $(…) and quotes of every kind", async () => {
    const good = [
      "npm test",
      "pytest -q tests/ | tee out.txt; test ${PIPESTATUS[0]} -eq 0",
      "cat <<'EOF' > x.txt\nhello\nEOF\ngrep -q hello x.txt",
      "f() { echo \"$1\"; }\nf 'a b' && [[ -n $(f x) ]]",
      "shopt -s extglob; ls !(node_modules) >/dev/null",
      "node -e 'console.log(\"(\")'",
    ];
    for (const run of good) expect(await shellSyntaxProblem([{ run }]), run).toBeNull();
  });
});
