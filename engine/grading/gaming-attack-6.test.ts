// Attack pass 6 on "a verdict is evidence": the harness forms a check's command may take that grading did not follow
// (`cat scripts/test.sh | bash`, `sudo bash x`, `busybox sh x`, `make -f ci.mk test`, `sh -ec '…'`), and check
// configuration a check could rewrite for a later check with nothing watching it (the pytest plugin modules the
// project loads, Yarn's `.yarn/` files). Each case drives the engine's grade() on real git and a real runner where this
// machine has one, shows the trick works on the check, and that the verdict says so. Before the fixes each case here
// but the controls was built with no word of it.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { CheckSpec } from "../../shared/check";
import { committedRepo } from "../../test/fixtures/git-repo";
import { CALC_ASSERT, CALC_BASE, CALC_FIXED, CALC_HARNESS, expectHarnessGuarded, gradedIn, harnessViolation, folderIn } from "../../test/fixtures/graded";
import { createWorkspace, inspectRepo } from "../workspace/workspace";
import { runChecks } from "./checks";
import { commandScripts } from "./command-scripts";
import { grade } from "./grade";
import { guardedConfigFiles, harnessScripts } from "./runner-config";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-gaming-6-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const graded = gradedIn(tmp);

let n = 0;
const folder = folderIn(tmp);

const ASSERT = CALC_ASSERT;
const SH = CALC_HARNESS;
const BASE = CALC_BASE;
const FIXED = CALC_FIXED;
const violation = harnessViolation;

describe("a harness a check's command runs in a form grading did not follow", () => {
  // The check feeds the project's harness to a shell on its standard input, through a wrapper, or names the makefile:
  // the harness is what the check really runs, as with `bash scripts/test.sh`. A worker that rewrites it to `exit 0`
  // passed the check, and the verdict was built.
  const cases: { run: string; file: string; base?: Record<string, string> }[] = [
    { run: "cat scripts/test.sh | bash", file: "scripts/test.sh" },
    { run: "cat scripts/test.sh | sh", file: "scripts/test.sh" },
    { run: "cat ci/env.sh ci/run.sh | sh -s -- --fast", file: "ci/run.sh", base: { "ci/env.sh": "export X=1\n" } },
    { run: "sh -ec 'bash scripts/test.sh'", file: "scripts/test.sh" },
    { run: "bash -o pipefail -c 'bash scripts/test.sh | cat'", file: "scripts/test.sh" },
    { run: "stdbuf -o 0 bash scripts/test.sh", file: "scripts/test.sh" },
    { run: "make -f ci.mk test", file: "scripts/test.sh", base: { "ci.mk": "test:\n\tbash scripts/test.sh\n" } },
    { run: "CI=1 timeout 60 make --file=build/rules.make test", file: "scripts/test.sh", base: { "build/rules.make": "test:\n\t@bash scripts/test.sh\n" } },
  ];
  for (const c of cases) {
    it(
      `\`${c.run}\`: the harness rewritten to pass passes the check, and it is a check-configuration violation`,
      () => expectHarnessGuarded(graded, c),
      120_000,
    );
  }

  it("a check that rewrites the harness a later `cat … | bash` check runs fails", async () => {
    const base = { ...BASE, "scripts/test.sh": SH };
    const v = await graded(base, (ws) => writeFileSync(path.join(ws, "gen.py"), "open('scripts/test.sh', 'w').write('exit 0\\n')\n"), [
      { run: "python3 gen.py" },
      { run: "cat scripts/test.sh | bash" },
    ]);
    expect(v.checks[0]).toMatchObject({ passed: false, output: expect.stringContaining("changed 1 protected file: scripts/test.sh") });
    expect(v.verdict).toBe("honest-failure");
  }, 120_000);

  it("the makefile `-f` names is the command's own: a harness by its name (ci/test.mk, Makefile.ci), its rewrite a violation", async () => {
    const base = { ...BASE, "Makefile.ci": `test:\n\t${SH}` };
    const check: CheckSpec[] = [{ run: "make -f Makefile.ci test" }];
    const v = await graded(base, (ws) => writeFileSync(path.join(ws, "Makefile.ci"), "test:\n\ttrue\n"), check);
    expect(v.checks[0]).toMatchObject({ passed: true });
    expect(v.scope.checkConfig).toEqual([violation("Makefile.ci")]);
    const dir = folder({
      "ci/test.mk": "test: lint\n\tbash scripts/test.sh\nlint:\n\tpython3 app.py\nother:\n\tbash scripts/other.sh\n",
      "sub/x.mk": "t:\n\t./run.sh\n",
    });
    expect(harnessScripts(["make -f ci/test.mk test"], "", dir).map((s) => s.file)).toEqual(["ci/test.mk", "scripts/test.sh"]);
    expect(commandScripts(["make -f ci/test.mk test"], "", dir).map((s) => s.file)).toEqual(["ci/test.mk", "app.py", "scripts/test.sh"]);
    // -f is read from the folder -C moves to, as make reads it; several are read in order
    expect(commandScripts(["make -C sub -f x.mk t"], "", dir).map((s) => s.file)).toEqual(["sub/x.mk", "sub/run.sh"]);
    expect(commandScripts(["make -fci/test.mk -f sub/x.mk t other"], "", dir).map((s) => s.file)).toEqual([
      "ci/test.mk",
      "sub/x.mk",
      "run.sh",
      "scripts/other.sh",
    ]);
    for (const run of ["make -f $(F) test", "make -f /etc/x.mk", "make -f ../up.mk", "make -f - test"]) expect(commandScripts([run], "", dir), run).toEqual([]);
  }, 120_000);

  it("the forms, read from the command's words into the same harness marking", () => {
    const dir = folder({ "scripts/test.sh": "true\n", "ci/env.sh": "true\n", "run.sh": "true\n" });
    const files = (run: string) => commandScripts([run], "", dir).map((s) => s.file);
    const harness = (run: string) => harnessScripts([run], "", dir).map((s) => s.file);
    for (const run of [
      // a shell reading its script from standard input
      "cat scripts/test.sh | bash",
      "cat scripts/test.sh | sh",
      "cat -- scripts/test.sh |& bash -s -- arg",
      "cat scripts/test.sh |\n  bash -e",
      "cat scripts/test.sh | sudo -E bash",
      "bash < scripts/test.sh",
      "sh -s < scripts/test.sh",
      "busybox sh < scripts/test.sh",
      "sh -c 'cat scripts/test.sh | bash'",
      // wrappers
      "sudo bash scripts/test.sh",
      "sudo -E sh scripts/test.sh",
      "sudo -u ci -H -- bash scripts/test.sh",
      "sudo --preserve-env=PATH FOO=1 bash scripts/test.sh",
      "doas -u ci sh scripts/test.sh",
      "busybox sh scripts/test.sh",
      "busybox ash -e scripts/test.sh",
      "env bash scripts/test.sh",
      "env -i FOO=1 bash scripts/test.sh",
      "nice bash scripts/test.sh",
      "nice -n 10 bash scripts/test.sh",
      "timeout 60 bash scripts/test.sh",
      "timeout -k 5 --signal=KILL 60s bash scripts/test.sh",
      "time -p bash scripts/test.sh",
      "stdbuf -oL -e 0 bash scripts/test.sh",
      "ionice -c 3 bash scripts/test.sh",
      "taskset -c 0,1 bash scripts/test.sh",
      "setsid -w bash scripts/test.sh",
      "/usr/bin/sudo /usr/bin/env bash scripts/test.sh",
      // a shell's command line
      "bash -c 'bash scripts/test.sh'",
      "sh -ec 'bash scripts/test.sh'",
      "bash -xc 'bash scripts/test.sh'",
      "bash -o pipefail -c 'bash scripts/test.sh'",
      "bash -e -c 'bash scripts/test.sh' name arg",
      "bash - scripts/test.sh",
    ]) {
      expect(files(run), run).toEqual(["scripts/test.sh"]);
      expect(harness(run), run).toEqual(["scripts/test.sh"]);
    }
    expect(files("cat ci/env.sh scripts/test.sh | bash")).toEqual(["ci/env.sh", "scripts/test.sh"]);
    expect(files("cd scripts && cat test.sh | bash")).toEqual(["scripts/test.sh"]);
    expect(files("< scripts/test.sh cat | bash")).toEqual(["scripts/test.sh"]);
    // a shell given a script reads its standard input as data; what else feeds it, or an `||`, is not followed
    expect(files("cat scripts/test.sh | bash run.sh")).toEqual(["run.sh"]);
    expect(files("bash run.sh < scripts/test.sh")).toEqual(["run.sh"]);
    for (const run of [
      "cat scripts/test.sh || bash",
      "cat scripts/test.sh; bash",
      "cat scripts/test.sh | python3",
      "cat - | bash",
      "cat $F | bash",
      "echo scripts/test.sh | bash",
      "sed s/x/y/ scripts/test.sh | bash",
      "cat scripts/test.sh | bash -c 'true'",
      "cat scripts/test.sh | . /dev/stdin",
      "sudo $CMD scripts/test.sh",
      "busybox",
      "bash -c",
    ])
      expect(files(run), run).toEqual([]);
  });

  it("control: the code under test run through the new forms (`cat input | python3 calc.py`, `sudo sh build.sh`) is no harness; the worker fixing it is built", async () => {
    const base = { "calc.py": "import sys\nprint(int(sys.stdin.read().split()[0]) - 3)\n", "build.sh": "#!/bin/sh\necho broken > out.txt\n", "in.txt": "2\n" };
    const dir = folder(base);
    expect(harnessScripts(["cat in.txt | python3 calc.py", "timeout 60 sh build.sh", "cat build.sh | sh"], "", dir)).toEqual([]);
    const v = await graded(
      base,
      (ws) => {
        writeFileSync(path.join(ws, "calc.py"), "import sys\nprint(int(sys.stdin.read().split()[0]) + 3)\n");
        writeFileSync(path.join(ws, "build.sh"), "#!/bin/sh\necho ok > out.txt\n");
        chmodSync(path.join(ws, "build.sh"), 0o755);
      },
      [{ run: "cat in.txt | python3 calc.py | grep -qx 5" }, { run: "cat build.sh | sh && grep -q ok out.txt" }],
    );
    expect(v.scope.checkConfig ?? []).toEqual([]);
    expect(v.verdict).toBe("built");
  }, 120_000);
});

describe("a check that rewrites a pytest plugin module the project's configuration loads, for a later check", () => {
  // The project's conftest.py loads helpers/plug.py as a plugin. The worker's commit leaves it alone (the rule would
  // count a change to it), but the first check runs the worker's gen.py, which adds a report hook to the plugin module
  // (or writes the package helpers/plug/__init__.py, which Python imports in its place): the later pytest check passes
  // every failing test. Nothing watched those files between checks.
  const HOOK =
    "import pytest\\n\\n@pytest.fixture\\ndef two():\\n    return 2\\n\\n@pytest.hookimpl(hookwrapper=True)\\ndef pytest_runtest_makereport(item, call):\\n    outcome = yield\\n    outcome.get_result().outcome = 'passed'\\n";
  const PLUG = "import pytest\n\n@pytest.fixture\ndef two():\n    return 2\n";
  const TEST = "from calc import add\n\ndef test_add(two):\n    assert add(two, 3) == 5\n";
  const base = { ...BASE, "helpers/__init__.py": "", "helpers/plug.py": PLUG, "conftest.py": 'pytest_plugins = ["helpers.plug"]\n' };
  const held = () => folder({ "tests/test_hidden.py": TEST });

  for (const [name, target] of [
    ["the module rewritten", "helpers/plug.py"],
    ["a package written in its place", "helpers/plug/__init__.py"],
  ] as const) {
    it(`${name} (${target}): the check that wrote it fails; the pytest check alone would have passed`, async () => {
      const gen = `import os\nos.makedirs(os.path.dirname('${target}'), exist_ok=True)\nopen('${target}', 'w').write("${HOOK}")\n`;
      const checks: CheckSpec[] = [{ run: "python3 gen.py" }, { run: "python3 -m pytest -q -p no:cacheprovider tests", files: held() }];
      const v = await graded(base, (ws) => writeFileSync(path.join(ws, "gen.py"), gen), checks);
      expect(v.checks[0]).toMatchObject({ passed: false, output: expect.stringContaining(`changed 1 protected file: ${target}`) });
      expect(v.verdict).toBe("honest-failure");
    }, 120_000);
  }

  it("control: a check that builds or writes elsewhere (an __init__.py of its own, __pycache__) leaves the fix built", async () => {
    const checks: CheckSpec[] = [
      { run: "mkdir -p build/pkg && touch build/pkg/__init__.py && python3 -c 'import helpers.plug'" },
      { run: "python3 -m pytest -q -p no:cacheprovider tests", files: held() },
    ];
    const v = await graded(base, (ws) => writeFileSync(path.join(ws, "calc.py"), FIXED), checks);
    expect(v.checks.map((c) => c.passed)).toEqual([true, true]);
    expect(v.verdict).toBe("built");
  }, 120_000);

  it("the files guarded: the plugin modules the checkout holds, and the package init that would stand in for one", () => {
    const dir = folder({
      ...base,
      "pytest.ini": "[pytest]\naddopts = -p tools.hooks\n",
      "tools/hooks/__init__.py": "",
      "app/conftest.py": 'pytest_plugins = ("app.fixtures",)\n',
      "app/fixtures.py": "",
      "build.py": "",
    });
    expect(guardedConfigFiles(dir, "", ["python3 -m pytest tests"], ["tests"]).sort()).toEqual([
      "helpers/plug.py",
      "helpers/plug/__init__.py",
      "tools/hooks/__init__.py",
    ]);
    // a held-back folder's conftest.py as committed names its plugins too; `-p` counts in a pytest command only
    expect(guardedConfigFiles(dir, "", ["mkdir -p build && python3 -m pytest -p app.fixtures app"], ["app"]).sort()).toEqual([
      "app/fixtures.py",
      "app/fixtures/__init__.py",
      "helpers/plug.py",
      "helpers/plug/__init__.py",
      "tools/hooks/__init__.py",
    ]);
  });
});

describe("a check that rewrites Yarn's own files for a later check", () => {
  // A project on Yarn 2+ commits its release (.yarnrc.yml's yarnPath: .yarn/releases/yarn-4.1.0.cjs), its plugins and,
  // with Plug'n'Play, the zipped packages a test's `require('chai')` loads (.yarn/cache). The rule counts a worker's
  // change to them; a check's code that rewrites one (the release made to `process.exit(0)`) went unseen, and the
  // later `yarn test` passed. (No yarn on the test machine: the release is run with node, as yarn's shim runs it.)
  const RELEASE = `const r = require("node:child_process").spawnSync("python3", ["-c", ${JSON.stringify(ASSERT)}], { stdio: "inherit" });\nprocess.exit(r.status);\n`;
  const base = {
    ...BASE,
    ".yarnrc.yml": "yarnPath: .yarn/releases/yarn-4.1.0.cjs\nnodeLinker: pnp\n",
    ".yarn/releases/yarn-4.1.0.cjs": RELEASE,
    ".yarn/cache/chai-npm-4.3.0-abc.zip": "PK zipped chai\n",
    ".yarn/plugins/@yarnpkg/plugin-x.cjs": "module.exports = {};\n",
  };
  const yarnTest: CheckSpec = { run: "node .yarn/releases/yarn-4.1.0.cjs test" };

  it("the release rewritten by an earlier check (`process.exit(0)`): that check fails", async () => {
    const gen = "require('node:fs').writeFileSync('.yarn/releases/yarn-4.1.0.cjs', 'process.exit(0);\\n');\n";
    const v = await graded(base, (ws) => writeFileSync(path.join(ws, "gen.js"), gen), [{ run: "node gen.js" }, yarnTest]);
    expect(v.checks[0]).toMatchObject({ passed: false, output: expect.stringContaining("changed 1 protected file: .yarn/releases/yarn-4.1.0.cjs") });
    expect(v.verdict).toBe("honest-failure");
  }, 120_000);

  it("a cached package rewritten by a check: the same", async () => {
    const gen = "require('node:fs').writeFileSync('.yarn/cache/chai-npm-4.3.0-abc.zip', 'PK no-op chai\\n');\n";
    const v = await graded(
      base,
      (ws) => {
        writeFileSync(path.join(ws, "calc.py"), FIXED);
        writeFileSync(path.join(ws, "gen.js"), gen);
      },
      [{ run: "node gen.js" }, yarnTest],
    );
    expect(v.checks[0]).toMatchObject({ passed: false, output: expect.stringContaining("changed 1 protected file: .yarn/cache/chai-npm-4.3.0-abc.zip") });
    expect(v.verdict).toBe("honest-failure");
  }, 120_000);

  it("control: what Yarn's own install writes there (its state, unplugged packages, a new cache entry) leaves the fix built", async () => {
    const install =
      "const fs = require('node:fs');\nfs.writeFileSync('.yarn/install-state.gz', 'state');\nfs.writeFileSync('.yarn/build-state.yml', 'x: 1');\nfs.mkdirSync('.yarn/unplugged/esbuild-npm-0.19.0/node_modules/esbuild', { recursive: true });\nfs.writeFileSync('.yarn/unplugged/esbuild-npm-0.19.0/node_modules/esbuild/bin', 'built');\nfs.writeFileSync('.yarn/cache/left-pad-npm-1.3.0-xyz.zip', 'PK');\n";
    const v = await graded(
      { ...base, ".yarn/install-state.gz": "old", ".yarn/unplugged/esbuild-npm-0.19.0/node_modules/esbuild/bin": "old" },
      (ws) => {
        writeFileSync(path.join(ws, "calc.py"), FIXED);
        writeFileSync(path.join(ws, "install.js"), install);
      },
      [{ run: "node install.js" }, yarnTest],
    );
    expect(v.checks.map((c) => c.passed)).toEqual([true, true]);
    expect(v.verdict).toBe("built");
  }, 120_000);

  it("the files guarded: .yarn/ of the checks' folder and those above it, less Yarn's own state", () => {
    const dir = folder({
      ...base,
      ".yarn/install-state.gz": "",
      ".yarn/build-state.yml": "",
      ".yarn/unplugged/x/node_modules/x/index.js": "",
      "web/.yarn/releases/yarn-4.cjs": "",
      "web/pkg/.yarn/releases/yarn-3.cjs": "",
    });
    const yarn = (sub: string) => guardedConfigFiles(dir, sub, ["yarn test"], []).sort();
    const top = [".yarn/cache/chai-npm-4.3.0-abc.zip", ".yarn/plugins/@yarnpkg/plugin-x.cjs", ".yarn/releases/yarn-4.1.0.cjs"];
    expect(yarn("")).toEqual(top);
    expect(yarn("web")).toEqual([...top, "web/.yarn/releases/yarn-4.cjs"]);
  });

  it("in the sandbox the guarded files are read-only at the worker's paths: the rewrite is refused and the release stays", async (ctx) => {
    const { sandboxStatus } = await import("../sandbox/sandbox");
    if (sandboxStatus().kind !== "bwrap") return ctx.skip(`no bubblewrap sandbox here: ${sandboxStatus().reason}`);
    const id = `bw-${++n}`;
    // 301 cached zips (chai's and 300 more): the first ones (after the plugin module, its package init, the release and
    // the plugin) are bound read-only, the rest compared only (CONFIG_BINDS, 250 in all: 55 zips past it).
    const zips = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`.yarn/cache/pkg-${i}-npm-1.0.0-abc.zip`, "PK\n"]));
    const repo = committedRepo(path.join(tmp, `repo-${id}`), {
      ...base,
      ...zips,
      "calc.py": FIXED,
      "helpers/__init__.py": "",
      "helpers/plug.py": "X = 1\n",
      "conftest.py": 'pytest_plugins = ["helpers.plug"]\n',
    });
    const ws = await createWorkspace(path.join(tmp, "workspaces"), await inspectRepo(repo), id, path.join(tmp, "objects", `${id}.git`));
    writeFileSync(path.join(ws.worktree, "notes.txt"), "x\n");
    const stateDir = path.join(tmp, `state-${id}`);
    const v = await grade({
      workspace: ws,
      checks: [
        { run: "printf 'process.exit(0)\\n' > .yarn/releases/yarn-4.1.0.cjs" },
        { run: "printf 'X = 2\\n' > helpers/plug.py" },
        { run: "cat .yarn/releases/yarn-4.1.0.cjs | grep -q spawnSync && node .yarn/releases/yarn-4.1.0.cjs test" },
        { run: "for f in .yarn/cache/*.zip; do printf x > $f; done 2>/dev/null; true" },
      ],
      scope: [],
      protect: [],
      finalText: "OUTCOME: built",
      title: "t",
      checkoutDir: path.join(stateDir, "grading", id),
      sandbox: {
        kind: "bwrap",
        stateDir,
        tmpDir: path.join(stateDir, "grading", `${id}.tmp`),
        mountAs: { root: ws.worktree, tmp: path.join(stateDir, "tmp", id) },
      },
    });
    expect(v.checks[0]!.output).toMatch(/Read-only file system/);
    expect(v.checks[1]!.output).toMatch(/Read-only file system/);
    expect(v.checks.map((c) => c.passed)).toEqual([false, false, true, false]);
    expect(v.checks[3]!.output).toMatch(/changed 55 protected files: /);
  }, 60_000);
});

it("past READ_ONLY_CAP protected files, the sandbox binds the first ones read-only (held-back files first) and compares the rest", async (ctx) => {
  // bubblewrap takes at most 9000 words: 3000 binds failed every check ("Exceeded maximum number of arguments").
  const { sandboxStatus } = await import("../sandbox/sandbox");
  if (sandboxStatus().kind !== "bwrap") return ctx.skip(`no bubblewrap sandbox here: ${sandboxStatus().reason}`);
  const root = folder({ "a.txt": "a\n" });
  const state = path.join(tmp, `state-cap-${++n}`);
  mkdirSync(path.join(root, "data"), { recursive: true });
  const many = Array.from({ length: 3000 }, (_, i) => path.join(root, "data", `f-${i}.txt`));
  for (const f of many) writeFileSync(f, "a\n");
  const held = folder({ "tests/check.sh": "exit 0\n" });
  const [r] = await runChecks(
    [{ run: "printf z > tests/check.sh; printf x > data/f-0.txt; printf y > data/f-2999.txt; true", files: held }],
    root,
    { kind: "bwrap", stateDir: state, tmpDir: path.join(state, "tmp"), root },
    many,
  );
  expect(r!.output).toMatch(/tests\/check\.sh: Read-only file system/);
  expect(r!.output).toMatch(/data\/f-0\.txt: Read-only file system/);
  expect(r!.output).toContain("changed 1 protected file: data/f-2999.txt");
  expect(readFileSync(many[0]!, "utf8")).toBe("a\n");
}, 120_000);
