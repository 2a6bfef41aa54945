// Checks that cannot be gamed from the workspace: the worker's own files cannot change what a check runs (a pytest.py
// that shadows the runner, a conftest.py hook, a package.json test script rewritten) without that being its own
// violation, and held-back files come from a folder the worker never saw, only at grading, never through a link.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CheckSpec } from "../../shared/check";
import { committedRepo } from "../../test/fixtures/git-repo";
import { gradedIn } from "../../test/fixtures/graded";
import { createWorkspace, inspectRepo } from "../workspace/workspace";
import { heldBackProblem } from "./checks";
import { grade } from "./grade";
import { runnerConfigReason, runnerPart } from "./runner-config";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-gaming-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;

/** A repository, the worker's workspace on it with `worker` written into it, graded with `checks`. */
const graded = gradedIn(tmp);

const PKG = (test: string, extra: Record<string, unknown> = {}) => JSON.stringify({ name: "p", version: "1.0.0", scripts: { test }, ...extra }, null, 2) + "\n";

describe("checks that cannot be gamed from the workspace", () => {
  it("a top-level pytest.py that shadows the runner passes the check, and is a check-configuration violation: not built", async () => {
    const v = await graded(
      { "calc.py": "def add(a, b):\n    return a - b\n" },
      (ws) => writeFileSync(path.join(ws, "pytest.py"), "import sys\nsys.exit(0)\n"),
      [{ run: "python3 -m pytest -q" }],
    );
    // The shadow works: the check itself passed without any test running.
    expect(v.checks[0]).toMatchObject({ passed: true });
    expect(v.scope.checkConfig).toEqual([expect.stringMatching(/^check configuration changed: pytest\.py — .*shadows/)]);
    expect(v.verdict).toBe("honest-failure");
  }, 60_000);

  it("a conftest.py hook is a check-configuration violation wherever it is", async () => {
    const v = await graded(
      { "tests/test_a.py": "def test_a():\n    assert False\n" },
      (ws) => writeFileSync(path.join(ws, "tests", "conftest.py"), "def pytest_runtest_call(item):\n    pass\n"),
      [{ run: "true" }],
    );
    expect(v.scope.violations).toContainEqual(expect.stringContaining("check configuration changed: tests/conftest.py"));
    expect(v.verdict).toBe("honest-failure");
  }, 60_000);

  it("a package.json test script rewritten is a violation; a new dependency is not", async () => {
    const base = { "package.json": PKG("node test.js"), "test.js": "process.exit(1)\n" };
    const rewritten = await graded(base, (ws) => writeFileSync(path.join(ws, "package.json"), PKG("exit 0")), [{ run: "sh -c 'exit 0'" }]);
    expect(rewritten.scope.checkConfig).toEqual(["check configuration changed: package.json (its scripts or test runner settings)"]);
    expect(rewritten.verdict).toBe("honest-failure");
    const dep = await graded(base, (ws) => writeFileSync(path.join(ws, "package.json"), PKG("node test.js", { dependencies: { left: "1.0.0" } })), [
      { run: "true" },
    ]);
    expect(dep.scope.checkConfig).toBeUndefined();
    expect(dep.verdict).toBe("built");
  }, 60_000);

  it("a task that must change one names it exactly in its scope", async () => {
    const v = await graded(
      { "package.json": PKG("node test.js") },
      (ws) => writeFileSync(path.join(ws, "package.json"), PKG("node test2.js")),
      [{ run: "true" }],
      ["package.json"],
    );
    expect(v.verdict).toBe("built");
  }, 60_000);

  it("held-back files: copied in only at grading, over the worker's own, never through its symlink", async () => {
    const held = path.join(tmp, "held");
    mkdirSync(path.join(held, "tests"), { recursive: true });
    writeFileSync(path.join(held, "tests", "check.sh"), 'grep -q "return a + b" calc.py\n');
    const outside = mkdtempSync(path.join(tmp, "outside-"));
    const fixed = await graded(
      { "calc.py": "def add(a, b):\n    return a - b\n" },
      (ws) => {
        writeFileSync(path.join(ws, "calc.py"), "def add(a, b):\n    return a + b\n");
      },
      [{ run: "sh tests/check.sh", files: held }],
    );
    expect(fixed.checks[0]).toMatchObject({ passed: true });
    // The worker's own tests/check.sh (exit 0) is replaced by the held-back one, which fails on unfixed code.
    const faked = await graded(
      { "calc.py": "def add(a, b):\n    return a - b\n" },
      (ws) => {
        mkdirSync(path.join(ws, "tests"));
        writeFileSync(path.join(ws, "tests", "check.sh"), "exit 0\n");
      },
      [{ run: "sh tests/check.sh", files: held }],
    );
    expect(faked.checks[0]).toMatchObject({ passed: false });
    // A committed symlink where the held-back folder goes is removed, not followed.
    const linked = await graded({ "calc.py": "x\n" }, (ws) => symlinkSync(outside, path.join(ws, "tests")), [
      { run: "test -f tests/check.sh && test ! -L tests", files: held },
    ]);
    expect(linked.checks[0]).toMatchObject({ passed: true });
    expect(() => readFileSync(path.join(outside, "check.sh"))).toThrow();
  }, 90_000);

  it("grading runs at the paths the worker saw: no `/grading/` in the check's folder, HOME or TMPDIR, and the grading folders are not there", async (ctx) => {
    const { sandboxStatus } = await import("../sandbox/sandbox");
    if (sandboxStatus().kind !== "bwrap") return ctx.skip(`no bubblewrap sandbox here: ${sandboxStatus().reason}`);
    const id = `w-${++n}`;
    const repo = committedRepo(path.join(tmp, `repo-${n}`), { "a.txt": "a\n", "test/check.sh": "exit 0\n" });
    const ws = await createWorkspace(path.join(tmp, "workspaces"), await inspectRepo(repo), id, path.join(tmp, "objects", `${id}.git`));
    const stateDir = path.join(tmp, `state-${n}`);
    const workerTmp = path.join(stateDir, "tmp", id);
    // Code that is right only where its path has no `/grading/` in it, and that looks for the grading folders.
    const check = `case "$(pwd -P)$HOME$TMPDIR" in *grading*) echo "GRADING SEEN: $(pwd -P) $HOME $TMPDIR"; exit 1;; esac; test "$(pwd -P)" = "${ws.cwd}" && test "$HOME" = "${workerTmp}/home" && test ! -e "${path.join(stateDir, "grading")}" && test -f test/check.sh && touch left-here && sh test/check.sh`;
    const v = await grade({
      workspace: ws,
      checks: [{ run: check }, { run: "printf 'exit 1\\n' > test/check.sh" }],
      scope: [],
      protect: ["test/**"],
      finalText: "OUTCOME: built",
      title: "t",
      checkoutDir: path.join(stateDir, "grading", id),
      sandbox: { kind: "bwrap", stateDir, tmpDir: path.join(stateDir, "grading", `${id}.tmp`), mountAs: { root: ws.worktree, tmp: workerTmp } },
    });
    expect(v.checks[0]!.output).toBe("");
    expect(v.checks[0]).toMatchObject({ passed: true });
    // Protected files stay read-only at the worker's paths too.
    expect(v.checks[1]).toMatchObject({ passed: false });
    expect(v.checks[1]!.output).toMatch(/Read-only file system/);
    // The check wrote into the checkout (mounted at the workspace's path), not into the worker's own workspace.
    expect(() => readFileSync(path.join(ws.worktree, "left-here"))).toThrow();
  }, 60_000);

  it("held-back folders must exist and be outside the repository", () => {
    const repo = committedRepo(path.join(tmp, `repo-hb`), { "a.txt": "a\n" });
    mkdirSync(path.join(repo, "held"));
    expect(heldBackProblem([{ run: "x", files: path.join(repo, "held") }], repo)).toMatch(/inside the repository/);
    expect(heldBackProblem([{ run: "x", files: path.join(tmp, "nope") }], repo)).toMatch(/does not exist/);
    mkdirSync(path.join(tmp, "held-beside"), { recursive: true });
    expect(heldBackProblem([{ run: "x", files: path.join(tmp, "held-beside") }, { run: "y" }], repo)).toBeNull();
  });

  it("the CheckSpec shape: `files` is additive, absolute, no `..`", () => {
    expect(CheckSpec.safeParse({ run: "x" }).success).toBe(true);
    expect(CheckSpec.safeParse({ run: "x", files: "/srv/held" }).success).toBe(true);
    expect(CheckSpec.safeParse({ run: "x", files: "held" }).success).toBe(false);
    expect(CheckSpec.safeParse({ run: "x", files: "/srv/../etc" }).success).toBe(false);
  });

  it("the verdict says what the checks cannot rule out", async () => {
    const v = await graded({ "a.txt": "a\n" }, () => undefined, [{ run: "true" }]);
    expect(v.caveats?.join("\n")).toMatch(/behaves differently when it is checked/);
    expect(v.caveats?.join("\n")).toMatch(/no held-back files/);
    // And what bound the check runs' processes and memory as a whole here.
    expect(v.limits).toMatch(/^(cgroup v[12] \(pids, memory|systemd-run scope|prlimit only|none: the checks ran unsandboxed)/);
  }, 60_000);

  it("which files count", () => {
    for (const f of [
      "conftest.py",
      "a/b/conftest.py",
      "pytest.ini",
      "tox.ini",
      ".npmrc",
      "vitest.config.ts",
      "jest.config.js",
      "node_modules/x/index.js",
      "pytest.py",
      "unittest.py",
      "sitecustomize.py",
      "x.pth",
      ".mocharc.yml",
      "Makefile",
    ])
      expect(runnerConfigReason(f), f).not.toBeNull();
    for (const f of ["src/pytest_helpers.py", "src/app.ts", "README.md", "lib/pytest.py", "docs/config.md"]) expect(runnerConfigReason(f), f).toBeNull();
    expect(runnerPart("pyproject.toml", "[project]\nname='x'\n[tool.pytest.ini_options]\naddopts='--collect-only'\n")).toContain("--collect-only");
    expect(runnerPart("pyproject.toml", "[project]\nname='y'\n")).toBe("");
  });

  it("a pyproject.toml section header with a trailing comment still configures pytest (`--co` collects, runs nothing): a violation", async () => {
    const v = await graded(
      { "pyproject.toml": "[project]\nname = 'p'\n", "test_calc.py": "def test_add():\n    assert 1 + 1 == 3\n" },
      (ws) => writeFileSync(path.join(ws, "pyproject.toml"), "[project]\nname = 'p'\n\n[tool.pytest.ini_options] # faster\naddopts = '--co'\n"),
      [{ run: "python3 -m pytest -q -p no:cacheprovider" }],
    );
    // The gaming works: pytest only collected, so the failing test passed the check.
    expect(v.checks[0]).toMatchObject({ passed: true });
    expect(v.scope.checkConfig).toEqual(["check configuration changed: pyproject.toml (its test runner sections)"]);
    expect(v.verdict).toBe("honest-failure");
  }, 60_000);
});

describe("snapshot caps at grading", () => {
  it("a worker over the snapshot caps: not built, the violation says why, no check runs, nothing reaches the person's repository", async () => {
    process.env.OCW_SNAPSHOT_MAX_FILES = "5";
    try {
      const v = await graded(
        { "a.txt": "a\n" },
        (ws) => {
          for (let i = 0; i < 6; i++) writeFileSync(path.join(ws, `gen${i}.txt`), "x\n");
        },
        [{ run: "touch ran && true" }],
      );
      expect(v.verdict).toBe("honest-failure");
      expect(v.scope).toMatchObject({ passed: false, snapshotCap: expect.stringMatching(/made 6 new files, over the snapshot cap of 5/) });
      expect(v.scope.violations).toEqual([expect.stringMatching(/^snapshot too large: /)]);
      expect(v.checks[0]).toMatchObject({ passed: false, output: expect.stringMatching(/^not run: /) });
      expect(v.commit).toBeNull();
    } finally {
      delete process.env.OCW_SNAPSHOT_MAX_FILES;
    }
  }, 60_000);
});

describe("runner configuration is parsed, not pattern-matched", () => {
  const changes = (file: string, before: string, after: string) => runnerPart(file, before) !== runnerPart(file, after);
  const PROJECT = "[project]\nname = 'p'\ndependencies = []\n";
  const PKG0 = { name: "p", version: "1.0.0", scripts: { test: "node test.js" } };
  const pkg = (extra: Record<string, unknown>) => JSON.stringify({ ...PKG0, ...extra }, null, 2);
  const CARGO = '[package]\nname = "p"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n';

  it.each([
    ["a header with a trailing comment", "pyproject.toml", PROJECT, `${PROJECT}[tool.pytest.ini_options] # faster\naddopts = "--co"\n`],
    ["a quoted, spaced header", "pyproject.toml", PROJECT, `${PROJECT}[ tool . "pytest" . ini_options ]\naddopts = "--co"\n`],
    ["a dotted key at the top level", "pyproject.toml", PROJECT, `tool.pytest.ini_options.addopts = "--co"\n${PROJECT}`],
    ["a dotted key under [tool]", "pyproject.toml", PROJECT, `${PROJECT}[tool]\npytest.ini_options.addopts = "--co"\n`],
    ["a quoted coverage table", "pyproject.toml", PROJECT, `${PROJECT}[tool.'coverage'.run]\nomit = ["*"]\n`],
    ["a pytest plugin entry point", "pyproject.toml", PROJECT, `${PROJECT}[project.entry-points.pytest11]\nx = "evil"\n`],
    ["an INI header with a trailing comment", "setup.cfg", "[metadata]\nname = p\n", "[metadata]\nname = p\n[tool:pytest] ; faster\naddopts = --co\n"],
    ["a spaced INI header", "setup.cfg", "[metadata]\nname = p\n", "[metadata]\nname = p\n[ tool:pytest ]\naddopts = --co\n"],
    [
      "a linter section",
      "setup.cfg",
      "[metadata]\nname = p\n[flake8]\nmax-line-length = 80\n",
      "[metadata]\nname = p\n[flake8]\nmax-line-length = 80\nselect = \n",
    ],
    ["package.json babel", "package.json", pkg({}), pkg({ babel: { plugins: ["./disarm-asserts.js"] } })],
    ["package.json exports", "package.json", pkg({}), pkg({ exports: { ".": "./fake.js" } })],
    ["package.json imports", "package.json", pkg({}), pkg({ imports: { "#calc": "./fake.js" } })],
    ["package.json jest", "package.json", pkg({}), pkg({ jest: { testMatch: [] } })],
    ["package.json mocha", "package.json", pkg({}), pkg({ mocha: { spec: "none" } })],
    ["package.json ava", "package.json", pkg({}), pkg({ ava: { files: [] } })],
    ["Cargo autotests = false", "Cargo.toml", CARGO, CARGO.replace('edition = "2021"', 'edition = "2021"\nautotests = false')],
    ["a Cargo [[test]] without the harness", "Cargo.toml", CARGO, `${CARGO}\n[[test]]\nname = "held"\npath = "tests/held.rs"\nharness = false\n`],
    ["a Cargo profile that disarms assertions", "Cargo.toml", CARGO, `${CARGO}\n[profile.dev]\ndebug-assertions = false\noverflow-checks = false\n`],
    ["a go.mod replace", "go.mod", "module m\n\ngo 1.22\n", "module m\n\ngo 1.22\n\nreplace github.com/stretchr/testify => ./fake\n"],
  ])("%s", (_what, file, before, after) => {
    expect(changes(file, before, after)).toBe(true);
  });

  it("what only describes the package (dependencies, metadata, version) may change freely", () => {
    expect(changes("pyproject.toml", PROJECT, PROJECT.replace("[]", '["requests"]'))).toBe(false);
    expect(
      changes("pyproject.toml", `${PROJECT}[tool.pytest.ini_options]\naddopts = "-q"\n`, `[tool.pytest.ini_options]\naddopts = "-q" # same\n${PROJECT}`),
    ).toBe(false);
    expect(changes("package.json", pkg({}), pkg({ dependencies: { left: "1.0.0" }, version: "1.0.1" }))).toBe(false);
    expect(changes("Cargo.toml", CARGO, `${CARGO}serde = "1"\n`)).toBe(false);
    expect(changes("setup.cfg", "[metadata]\nname = p\n", "[metadata]\nname = p\nversion = 2\n[options]\ninstall_requires = requests\n")).toBe(false);
    expect(changes("go.mod", "module m\n\ngo 1.22\n", "module m\n\ngo 1.22\n\nrequire github.com/x/y v1.0.0\n")).toBe(false);
    // Not parsable: any change counts.
    expect(changes("pyproject.toml", PROJECT, `${PROJECT}[tool.pytest\n`)).toBe(true);
  });

  it.each([
    ".cargo/config.toml",
    "sub/.cargo/config",
    "vendor/github.com/stretchr/testify/assert/assertions.go",
    ".rspec",
    "spec/spec_helper.rb",
    ".mocharc.jsonc",
    ".mocharc",
    "vitest.workspace.ts",
    "jest.setup.js",
    "src/setupTests.ts",
    "tsconfig.json",
    "pytest.toml",
    "go.work",
    // Case-insensitive, normalising file systems open these as the plain names.
    "ConfTest.py",
    "tests/CONFTEST.PY",
    ".NPMRC",
    "Pytest.ini",
    "PyTest.py",
    "Vitest.Config.ts",
  ])("%s changes what a check runs", (f) => {
    expect(runnerConfigReason(f)).not.toBeNull();
  });
});
