import { describe, expect, it } from "vitest";
import { checkScope } from "./scope";

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
});
