// The integration checks of a batch run in a fresh checkout of the combined commit, in the folder the batch names. That
// folder must stay a folder of the checkout: a combined commit that turns it (or a part of its path) into a symlink
// would send the checks, and the held-back files copied in for them, to wherever the link points.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { CheckResult, CheckSpec } from "../../shared/check";
import { committedRepo } from "../../test/fixtures/git-repo";
import { Batches, type BatchRecord } from "./batches";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-batches-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const g = (dir: string, ...args: string[]) =>
  execFileSync("git", ["-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", ...args], { encoding: "utf8" }).trim();

function batches(stateDir: string) {
  const b = new Batches({
    stateDir,
    sandbox: { kind: "none" },
    get: () => undefined,
    create: () => "w",
    changed: () => undefined,
    log: () => undefined,
  });
  return b as unknown as { runIntegrationChecks(r: BatchRecord, commit: string, checks: CheckSpec[]): Promise<CheckResult[]> };
}

describe("integration checks' folder", () => {
  it("a combined commit that turns the batch's folder into a symlink: the checks fail with the reason, nothing is written through the link", async () => {
    const repo = committedRepo(path.join(tmp, "repo"), { "app/a.txt": "a\n" });
    const outside = mkdtempSync(path.join(tmp, "outside-"));
    const held = path.join(tmp, "held");
    mkdirSync(held);
    writeFileSync(path.join(held, "check.sh"), "exit 0\n");
    // A task's commit replaces app/ with a link to a folder outside the checkout.
    g(repo, "rm", "-q", "-r", "app");
    symlinkSync(outside, path.join(repo, "app"));
    g(repo, "add", "-A");
    g(repo, "commit", "-q", "-m", "link");
    const commit = g(repo, "rev-parse", "HEAD");
    const record: BatchRecord = { id: "b-1", createdAt: 0, repo, base: commit, branch: "main", subdir: "app", tasks: [], integration: null };
    const results = await batches(path.join(tmp, "state")).runIntegrationChecks(record, commit, [
      { name: "held", run: "sh check.sh && touch ran-here", files: held },
    ]);
    expect(results).toEqual([expect.objectContaining({ name: "held", passed: false, output: expect.stringMatching(/app is a symlink in the graded commit/) })]);
    // Neither the held-back file nor the check's write went through the link.
    expect(readdirSync(outside)).toEqual([]);
    expect(existsSync(path.join(held, "ran-here"))).toBe(false);
  }, 60_000);

  it("the batch's folder as a plain folder: the held-back files come in and the checks run there", async () => {
    const repo = committedRepo(path.join(tmp, "repo2"), { "app/a.txt": "a\n" });
    const held = path.join(tmp, "held2");
    mkdirSync(held);
    writeFileSync(path.join(held, "check.sh"), "test -f a.txt\n");
    const commit = g(repo, "rev-parse", "HEAD");
    const record: BatchRecord = { id: "b-2", createdAt: 0, repo, base: commit, branch: "main", subdir: "app", tasks: [], integration: null };
    const results = await batches(path.join(tmp, "state2")).runIntegrationChecks(record, commit, [{ name: "held", run: "sh check.sh", files: held }]);
    expect(results).toEqual([expect.objectContaining({ name: "held", passed: true })]);
  }, 60_000);
});

// A task whose own checks are file checks (or none) is graded without the check-configuration rule (it applies to
// command checks): its worker may commit a conftest.py that reports every test passed, and be built. The batch's
// integration checks then ran pytest on the combined commit with that hook in it: the held-back test failed, and the
// integration passed (and could land). Now the combined commit's changes are read as grading reads a worker's.
describe("integration checks and check configuration in the combined commit", () => {
  const HOOK =
    "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    outcome.get_result().outcome = 'passed'\n";
  const held = () => {
    const dir = mkdtempSync(path.join(tmp, "held-cfg-"));
    mkdirSync(path.join(dir, "tests"));
    writeFileSync(path.join(dir, "tests", "test_hidden.py"), "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n");
    return dir;
  };
  const combined = (name: string, files: Record<string, string>) => {
    const repo = committedRepo(path.join(tmp, name), { "calc.py": "def add(a, b):\n    return a - b\n" });
    const base = g(repo, "rev-parse", "HEAD");
    for (const [f, text] of Object.entries(files)) writeFileSync(path.join(repo, f), text);
    g(repo, "add", "-A");
    g(repo, "commit", "-q", "-m", "the workers' changes");
    return { repo, base, commit: g(repo, "rev-parse", "HEAD") };
  };
  const task = (scope: string[]) => ({ id: "t", after: [], spec: { task: "x", scope } as never, workerId: null, skipped: null });

  it("a conftest.py hook in the combined commit: the integration check is not run and fails, naming it", async () => {
    const { repo, base, commit } = combined("cfg-1", { "conftest.py": HOOK, "out.txt": "done\n" });
    const record: BatchRecord = { id: "b-c1", createdAt: 0, repo, base, branch: "main", subdir: "", tasks: [task(["out.txt"])], integration: null };
    const results = await batches(path.join(tmp, "state-c1")).runIntegrationChecks(record, commit, [
      { name: "held", run: "python3 -m pytest -q -p no:cacheprovider tests", files: held() },
    ]);
    expect(results).toEqual([expect.objectContaining({ name: "held", passed: false, output: expect.stringMatching(/check configuration .*conftest\.py/) })]);
  }, 60_000);

  it("controls: a real fix passes; a conftest.py a task's scope names exactly runs (the person allowed it)", async () => {
    const fixed = combined("cfg-2", { "calc.py": "def add(a, b):\n    return a + b\n" });
    const r1: BatchRecord = {
      id: "b-c2",
      createdAt: 0,
      repo: fixed.repo,
      base: fixed.base,
      branch: "main",
      subdir: "",
      tasks: [task(["calc.py"])],
      integration: null,
    };
    const check: CheckSpec[] = [{ name: "held", run: "python3 -m pytest -q -p no:cacheprovider tests", files: held() }];
    expect(await batches(path.join(tmp, "state-c2")).runIntegrationChecks(r1, fixed.commit, check)).toEqual([
      expect.objectContaining({ name: "held", passed: true }),
    ]);
    const named = combined("cfg-3", { "conftest.py": "import os\n" });
    const r2: BatchRecord = {
      id: "b-c3",
      createdAt: 0,
      repo: named.repo,
      base: named.base,
      branch: "main",
      subdir: "",
      tasks: [task(["conftest.py"])],
      integration: null,
    };
    expect(await batches(path.join(tmp, "state-c3")).runIntegrationChecks(r2, named.commit, check)).toEqual([
      expect.objectContaining({ name: "held", passed: false, output: expect.stringMatching(/assert -1 == 5/) }),
    ]);
  }, 60_000);
});
