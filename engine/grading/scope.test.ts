import { describe, expect, it } from "vitest";
import { checkScope, fromTaskFolder, globProblem, protectMatcher } from "./scope";

describe("checkScope", () => {
  it("passes files inside scope and outside protect", () => {
    expect(checkScope(["src/a.ts", "src/deep/b.ts"], ["src/**"], ["test/**"])).toEqual({
      passed: true,
      violations: [],
      changedFiles: ["src/a.ts", "src/deep/b.ts"],
    });
  });
  it("names every violation: protected first, then out of scope", () => {
    const r = checkScope(["test/a.test.ts", "README.md", "src/x.ts"], ["src/**"], ["test/**"]);
    expect(r.passed).toBe(false);
    expect(r.violations).toEqual(["protected file changed: test/a.test.ts", "outside scope: README.md"]);
  });
  it("treats an empty scope as everything, dotfiles included", () => {
    expect(checkScope([".github/ci.yml"], [], []).passed).toBe(true);
    expect(checkScope([".env"], [], [".env"]).passed).toBe(false);
  });
  it("protect globs match case-folded names (NFC, case, trailing dots and spaces), on every platform", () => {
    for (const file of ["Tests/Test_x.py", "TESTS/x", "tests./x.py", "tests /x.py", "tEsTs/a/b.py"]) {
      for (const platform of ["linux", "darwin", "win32"] as const)
        expect(checkScope([file], [], ["tests/**"], platform).violations, `${file} on ${platform}`).toEqual([`protected file changed: ${file}`]);
    }
    // Written upper-case, the glob still holds the lower-case name (both sides are folded).
    expect(checkScope([".env"], [], [".ENV"]).violations).toEqual(["protected file changed: .env"]);
    expect(checkScope(["src/x.ts"], [], ["tests/**"]).passed).toBe(true);
  });
  it("scope globs match case-folded names where the platform's file systems fold them (macOS, Windows), as written elsewhere", () => {
    expect(checkScope(["SRC/x.ts"], ["src/**"], [], "darwin").passed).toBe(true);
    expect(checkScope(["Src/x.ts"], ["src/**"], [], "win32").passed).toBe(true);
    // On Linux SRC/ is another folder than src/: outside the scope.
    expect(checkScope(["SRC/x.ts"], ["src/**"], [], "linux").violations).toEqual(["outside scope: SRC/x.ts"]);
    expect(checkScope(["src/x.ts"], ["src/**"], [], "linux").passed).toBe(true);
  });
});

describe("fromTaskFolder", () => {
  it("writes a path from the root as `cd` reaches it from the task's folder, as an ask's path is read at approval", () => {
    expect(fromTaskFolder("", "packages/b/x.ts")).toBe("packages/b/x.ts");
    expect(fromTaskFolder("packages/a", "packages/a/src/x.ts")).toBe("src/x.ts");
    // It read `../packages/b/x.ts` and `../README.md`: `--protect "../b/**"` from packages/a guarded nothing at grading,
    // while the same glob flagged the ask at approval.
    expect(fromTaskFolder("packages/a", "packages/b/x.ts")).toBe("../b/x.ts");
    expect(fromTaskFolder("packages/a", "README.md")).toBe("../../README.md");
    expect(fromTaskFolder("pkg", "pkg2/x")).toBe("../pkg2/x");
    expect(protectMatcher(["../b/**"])(fromTaskFolder("packages/a", "packages/b/x.ts"))).toBe(true);
  });
});

describe("globProblem", () => {
  it("refuses a glob that can never match a path of the repository (absolute, or above it), with the relative glob to give", () => {
    expect(globProblem(["/home/me/repo/src/**"], [], "/home/me/repo")).toBe(
      'scope glob "/home/me/repo/src/**" is an absolute path: globs are relative to the task\'s folder and this one matches no file of it; give "src/**"',
    );
    // relative to the folder the task names, where that is a subfolder; `../` reaches the rest of the repository there
    expect(globProblem(["/home/me/repo/pkg/a/src/x.ts"], [], "/home/me/repo", "pkg/a")).toMatch(/give "src\/x\.ts"$/);
    expect(globProblem(["../../package-lock.json", "../b/**"], [], "/home/me/repo", "pkg/a")).toBeNull();
    expect(globProblem(["../../../x"], [], "/home/me/repo", "pkg/a")).toMatch(/^scope glob "\.\.\/\.\.\/\.\.\/x" points above the repository: .*\(pkg\/a\)/);
    expect(globProblem([], ["/elsewhere/x"], "/home/me/repo")).toMatch(/^protect glob "\/elsewhere\/x" is an absolute path: .*give one such as "src\/\*\*"$/);
    expect(globProblem(["../x"], [], "/r")).toMatch(/^scope glob "\.\.\/x" points above the repository/);
    expect(globProblem(["src/**", "./cli.js", "**/*.ts", "a..b", "..x"], ["test/**"], "/r")).toBeNull();
  });
  it("takes a glob's escapes for what they are: a leading backslash escapes a character (`\\[id\\].tsx`), it is no Windows path", () => {
    expect(globProblem(["\\[id\\].tsx", "\\!notes.md", "\\#x"], [], "/r")).toBeNull();
    expect(globProblem([], ["C:\\repo\\x", "\\\\srv\\share\\x", "C:/repo/x"], "/r")).toMatch(/is an absolute path/);
  });
  it("refuses a protect that matches nothing behind `./` or a `..` segment inside it (paths are compared normalised)", () => {
    expect(globProblem([], ["./../secret"], "/r")).toMatch(/^protect glob "\.\/\.\.\/secret" points above the repository/);
    expect(globProblem([], ["tests/../conftest.py"], "/r")).toMatch(/^protect glob "tests\/\.\.\/conftest\.py" has a `\.\.` segment/);
    expect(globProblem([], ["../b/../x"], "/r", "pkg/a")).toMatch(/has a `\.\.` segment/);
    expect(globProblem([], ["./tests/**", "../b/**", "./../../x"], "/r", "pkg/a")).toBeNull();
  });
});
