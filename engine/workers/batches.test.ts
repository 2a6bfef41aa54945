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
