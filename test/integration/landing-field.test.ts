// Landing in the field, through the real engine (`ocw serve` bundle, real opencode, real git, scripted model) and the
// `ocw` CLI: a remote whose pre-receive hook refuses the push; a worker pushed twice (its pull request already open: gh's
// "already exists"); pushed again after a review round (the branch follows its latest round; anyone else's commit there
// is still refused); a merge into a dirty working tree (an untracked file where the worker adds one, staged and modified
// files of the person's it does not touch); the person on another branch; the branch moved on (with and without a
// conflict, for a worker and for a batch's integration); two workers on one file; a submodule and an LFS-tracked file;
// merge and push after an engine kill -9; a worker graded not built; a batch's integration after a review round or a
// discard (it runs again before anything lands; push --batch again follows it); attempts (one lands); a dependent task's
// worker merged alone (its dependency comes in with it, said and recorded). Every refusal says what to do next, names no
// internal class, and leaves the person's checkout and the worker's branch as they were.
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedModel, writeFile, writesAsTold, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, runOcw, scriptedTarget, settle, startEngine, tempDir, type TestEngine } from "../helpers";

let model: ScriptedModel;
let engine: TestEngine;
let fakeBin: string;
let ghLog: string;
const dirs: string[] = [];

const ocw = (args: string[]) => runOcw(engine.stateDir, args, 170_000);
/** `ocw run --batch` of a batch file holding `batch`, asks approved once, with JSON out. */
const runBatch = (batch: unknown) => {
  const bf = path.join(tempDir("batchfile"), "batch.json");
  dirs.push(path.dirname(bf));
  writeFileSync(bf, JSON.stringify(batch));
  return ocw(["run", "--batch", bf, "--json", "--approve", "once"]);
};
const git = (dir: string, ...args: string[]) => execFileSync("git", ["-C", dir, ...args], { encoding: "utf8", stdio: "pipe" }).trim();
const CLASS_NAMES = /\b(InputError|GitError|OcwError|TRPCError|Error:|TypeError|undefined)\b/;

function bareRemote(dir: string, preReceive?: string): string {
  const remote = tempDir("remote");
  dirs.push(remote);
  git(remote, "init", "-q", "--bare", "-b", "main");
  git(dir, "remote", "add", "origin", "https://github.example/acme/app.git");
  git(dir, "config", `url.${remote}.insteadOf`, "https://github.example/acme/app.git");
  git(dir, "push", "-q", "origin", "main");
  if (preReceive) {
    writeFileSync(path.join(remote, "hooks", "pre-receive"), preReceive);
    chmodSync(path.join(remote, "hooks", "pre-receive"), 0o755);
  }
  return remote;
}

async function built(dir: string, task: string, file: string) {
  const { workerId } = await engine.client.workers.start.mutate({ task, directory: dir, checks: [{ name: "written", file, exists: true }] });
  const w = (await settle(engine.client, [workerId], () => "once")).get(workerId)!;
  expect(w.state).toBe("built");
  return w;
}

beforeAll(async () => {
  model = await startScriptedModel({
    scripts: [
      {
        // A review round: "LF-AGAIN file=F text=T" in the latest message writes T to F.
        name: "again",
        match: (c) => /LF-AGAIN file=\S+ text=\S+/.test(c.lastUserText),
        script: (c) => {
          const [, file, text] = /LF-AGAIN file=(\S+) text=(\S+)/.exec(c.lastUserText)!;
          return c.turnStep === 0 ? writeFile(file!, `${text}\n`) : { text: `Rewrote ${file}.\nOUTCOME: built` };
        },
      },
      writesAsTold("LF-WRITE"),
      {
        // "LF-WHOLE file=F text=BASE64": the whole file F, several lines.
        name: "whole",
        match: /LF-WHOLE file=\S+ text=\S+/,
        script: (c) => {
          const [, file, text] = /LF-WHOLE file=(\S+) text=(\S+)/.exec(c.firstUserText)!;
          return c.turnStep === 0 ? writeFile(file!, `${Buffer.from(text!, "base64").toString("utf8")}\n`) : { text: "Done.\nOUTCOME: built" };
        },
      },
    ],
  });
  fakeBin = tempDir("fakebin");
  ghLog = path.join(fakeBin, "gh.log");
  dirs.push(fakeBin);
  // gh as it answers: `pr create` opens #7 once; asked again for the same head, it says so as gh does (exit 1, the
  // existing pull request's URL on the last line).
  writeFileSync(
    path.join(fakeBin, "gh"),
    `#!/bin/sh
for a in "$@"; do printf '%s\\n' "$a" >> "${ghLog}"; done
printf -- '----\\n' >> "${ghLog}"
if [ "$1" = auth ]; then exit 0; fi
if [ "$1" = pr ] && [ "$2" = create ]; then
  head="$4"
  if [ -f "${fakeBin}/opened-$(echo "$head" | tr / _)" ]; then
    echo "a pull request for branch \\"$head\\" into branch \\"main\\" already exists:" >&2
    echo "https://github.example/acme/app/pull/7" >&2
    exit 1
  fi
  touch "${fakeBin}/opened-$(echo "$head" | tr / _)"
  echo "https://github.example/acme/app/pull/7"
  exit 0
fi
exit 1
`,
  );
  chmodSync(path.join(fakeBin, "gh"), 0o755);
  engine = await startEngine(undefined, { PATH: `${fakeBin}:${process.env.PATH}` });
  await engine.client.targets.save.mutate({ target: scriptedTarget(model.url, 4), activate: true });
}, 60_000);

afterAll(async () => {
  await engine?.kill();
  await model?.close();
  cleanup(engine?.stateDir ?? "", ...dirs);
});

describe("pushing in the field", () => {
  it("a pre-receive hook's refusal is reported as the remote's refusal, with its words, not as a branch that needs another name", async () => {
    const dir = makeRepo();
    dirs.push(dir);
    const remote = bareRemote(dir, `#!/bin/sh\necho "policy: branches named ocw/* need a ticket number" >&2\nexit 1\n`);
    const w = await built(dir, "LF-WRITE file=a.txt text=alpha", "a.txt");
    const r = await ocw(["push", w.id, "--remote", "origin"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/origin refused the push/);
    expect(r.stderr).toContain("policy: branches named ocw/* need a ticket number");
    expect(r.stderr).not.toMatch(/never forces|with other commits/);
    expect(r.stderr).not.toMatch(CLASS_NAMES);
    expect(git(remote, "branch", "--list")).toBe("* main");
    // The worker is still built, nothing was lost: once the hook lets it through, the same push goes.
    writeFileSync(path.join(remote, "hooks", "pre-receive"), "#!/bin/sh\nexit 0\n");
    const again = await ocw(["push", w.id, "--remote", "origin"]);
    expect(again.code, again.stderr).toBe(0);
    expect(git(remote, "rev-parse", `refs/heads/ocw/${w.id}`)).toBe(w.verdict!.commit);
  });

  it("pushed twice with --pr: the second push is up to date and names the pull request already open (gh's 422)", async () => {
    const dir = makeRepo();
    dirs.push(dir);
    const remote = bareRemote(dir);
    const w = await built(dir, "LF-WRITE file=b.txt text=beta", "b.txt");
    const first = await ocw(["push", w.id, "--remote", "origin", "--pr", "--json"]);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ pr: { url: "https://github.example/acme/app/pull/7" }, prProblem: null });
    const second = await ocw(["push", w.id, "--remote", "origin", "--pr", "--json"]);
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ commit: w.verdict!.commit, pr: { url: "https://github.example/acme/app/pull/7" } });
    expect(git(remote, "rev-parse", `refs/heads/ocw/${w.id}`)).toBe(w.verdict!.commit);
  });

  it("pushed, reviewed (a new round), pushed again: the branch follows the worker's latest graded commit; another's commit there is still never overwritten", async () => {
    const dir = makeRepo();
    dirs.push(dir);
    const remote = bareRemote(dir);
    const w = await built(dir, "LF-WRITE file=c.txt text=gamma", "c.txt");
    const first = await ocw(["push", w.id, "--remote", "origin"]);
    expect(first.code, first.stderr).toBe(0);
    const round1 = w.verdict!.commit!;
    await engine.client.workers.continue.mutate({ workerId: w.id, message: "LF-AGAIN file=c.txt text=gamma2" });
    const w2 = (await settle(engine.client, [w.id], () => "once")).get(w.id)!;
    expect(w2.state).toBe("built");
    expect(w2.verdict!.commit).not.toBe(round1);
    const second = await ocw(["push", w.id, "--remote", "origin"]);
    expect(second.code, second.stderr).toBe(0);
    expect(git(remote, "rev-parse", `refs/heads/ocw/${w.id}`)).toBe(w2.verdict!.commit);
    expect(git(remote, "show", `refs/heads/ocw/${w.id}:c.txt`)).toBe("gamma2");
    // Someone else's commit on that branch: refused, theirs kept.
    const other = git(dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit-tree", "main^{tree}", "-p", "main", "-m", "someone else's");
    git(dir, "push", "-q", "--force", "origin", `${other}:refs/heads/ocw/${w.id}`);
    const third = await ocw(["push", w.id, "--remote", "origin"]);
    expect(third.code).toBe(1);
    expect(third.stderr).toMatch(/never forces a push/);
    expect(git(remote, "rev-parse", `refs/heads/ocw/${w.id}`)).toBe(other);
  });
});

describe("merging in the field", () => {
  it("an untracked file of the person's where the worker adds one: refused, their file kept, what to do said", async () => {
    const dir = makeRepo();
    dirs.push(dir);
    const w = await built(dir, "LF-WRITE file=d.txt text=delta", "d.txt");
    writeFileSync(path.join(dir, "d.txt"), "mine, not committed\n");
    const head = git(dir, "rev-parse", "HEAD");
    const r = await ocw(["merge", w.id]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/d\.txt/);
    expect(r.stderr).not.toMatch(CLASS_NAMES);
    expect(readFileSync(path.join(dir, "d.txt"), "utf8")).toBe("mine, not committed\n");
    expect(git(dir, "rev-parse", "HEAD")).toBe(head);
    expect(git(dir, "status", "--porcelain")).toBe("?? d.txt");
    // Moved away, the merge goes.
    execFileSync("mv", [path.join(dir, "d.txt"), path.join(dir, "..", `${path.basename(dir)}-d.txt`)]);
    const ok = await ocw(["merge", w.id]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(readFileSync(path.join(dir, "d.txt"), "utf8")).toBe("delta\n");
  });

  it("a dirty file the merge does not touch stays dirty; the branch moved on (no conflict): a merge commit over both", async () => {
    const dir = makeRepo({ "README.md": "# r\n", "notes.txt": "n\n" });
    dirs.push(dir);
    const w = await built(dir, "LF-WRITE file=e.txt text=epsilon", "e.txt");
    writeFileSync(path.join(dir, "other.txt"), "theirs\n");
    git(dir, "add", "other.txt");
    git(dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "moved on");
    writeFileSync(path.join(dir, "notes.txt"), "n, edited\n");
    const r = await ocw(["merge", w.id]);
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(path.join(dir, "notes.txt"), "utf8")).toBe("n, edited\n");
    expect(readFileSync(path.join(dir, "e.txt"), "utf8")).toBe("epsilon\n");
    expect(git(dir, "status", "--porcelain")).toBe("M notes.txt");
    expect(git(dir, "rev-list", "--parents", "-n1", "HEAD").split(" ").length).toBe(3);
  });

  it("a worker graded not built is not landed; the refusal says what to do next", async () => {
    const dir = makeRepo();
    dirs.push(dir);
    const { workerId } = await engine.client.workers.start.mutate({
      task: "LF-WRITE file=f.txt text=phi",
      directory: dir,
      checks: [{ name: "never", file: "g.txt", exists: true }],
    });
    const w = (await settle(engine.client, [workerId], () => "once")).get(workerId)!;
    expect(w.state).toBe("honest-failure");
    for (const args of [
      ["merge", workerId],
      ["push", workerId, "--remote", "origin"],
      ["publish", workerId],
    ]) {
      const r = await ocw(args);
      expect(r.code, args.join(" ")).toBe(1);
      expect(r.stderr).toMatch(
        /is failed \(its held-back checks did not pass\): only a built worker's graded commit is \w+; continue it with a review \(a new round, graded again\) or retry its task/,
      );
      expect(r.stderr).not.toMatch(CLASS_NAMES);
    }
    expect(existsSync(path.join(dir, "f.txt"))).toBe(false);
    expect(git(dir, "branch", "--list", "ocw/*")).toBe("");
  });
});

describe("merging in the field, round two", () => {
  it("the person switched to another branch since the worker started: refused with both ways on (check out the base, or publish and merge where they are); their checkout and branch untouched", async () => {
    const dir = makeRepo({ "README.md": "# r\n" });
    dirs.push(dir);
    const w = await built(dir, "LF-WRITE file=h.txt text=eta", "h.txt");
    git(dir, "switch", "-q", "-c", "feature");
    writeFileSync(path.join(dir, "README.md"), "# r, being edited on feature\n");
    const featureTip = git(dir, "rev-parse", "feature");
    const r = await ocw(["merge", w.id]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /is on feature, not main: check out main first, or bring the work in as branch ocw\/\S+ \(ocw publish \S+\) and merge it where you are \(git merge ocw\/\S+\) \(nothing was changed\)/,
    );
    expect(git(dir, "rev-parse", "main")).toBe(git(dir, "rev-parse", "feature"));
    const pub = await ocw(["publish", w.id]);
    expect(pub.code, pub.stderr).toBe(0);
    expect(git(dir, "show", `ocw/${w.id}:h.txt`)).toBe("eta");
    expect(git(dir, "rev-parse", "--abbrev-ref", "HEAD")).toBe("feature");
    expect(git(dir, "rev-parse", "feature")).toBe(featureTip);
    expect(existsSync(path.join(dir, "h.txt"))).toBe(false);
    expect(readFileSync(path.join(dir, "README.md"), "utf8")).toBe("# r, being edited on feature\n");
  });

  it("two workers change the same file: other lines merge both; the same line refuses the second (rebase offered), nothing lost, and it can still be published", async () => {
    const lines = Array.from({ length: 12 }, (_, i) => `line ${i}`).join("\n");
    const dir = makeRepo({ "s.txt": `${lines}\n` });
    dirs.push(dir);
    // Both write the whole file: one changes its first line, the other its last, a third its first line too.
    const ids = await Promise.all(
      [
        ["s.txt", lines.replace("line 0", "TOP")],
        ["s.txt", lines.replace("line 11", "BOTTOM")],
        ["s.txt", lines.replace("line 0", "OTHER-TOP")],
      ].map(async ([file, text]) => {
        const { workerId } = await engine.client.workers.start.mutate({
          task: `LF-WHOLE file=${file} text=${Buffer.from(text!).toString("base64")}`,
          directory: dir,
          checks: [{ name: "written", file: file!, exists: true }],
        });
        return workerId;
      }),
    );
    const ws = await settle(engine.client, ids, () => "once");
    for (const id of ids) expect(ws.get(id)!.state).toBe("built");
    const [top, bottom, otherTop] = ids as [string, string, string];
    expect((await ocw(["merge", top])).code).toBe(0);
    const m2 = await ocw(["merge", bottom]);
    expect(m2.code, m2.stderr).toBe(0);
    const merged = readFileSync(path.join(dir, "s.txt"), "utf8");
    expect(merged.startsWith("TOP\n")).toBe(true);
    expect(merged.endsWith("BOTTOM\n")).toBe(true);
    const head = git(dir, "rev-parse", "HEAD");
    const m3 = await ocw(["merge", otherTop]);
    expect(m3.code).toBe(1);
    expect(m3.stderr).toMatch(/s\.txt/);
    expect(m3.stderr).toMatch(/ocw rebase/);
    expect(m3.stderr).not.toMatch(CLASS_NAMES);
    expect(git(dir, "rev-parse", "HEAD")).toBe(head);
    expect(git(dir, "status", "--porcelain")).toBe("");
    const pub = await ocw(["publish", otherTop]);
    expect(pub.code, pub.stderr).toBe(0);
    expect(git(dir, "show", `ocw/${otherTop}:s.txt`).startsWith("OTHER-TOP")).toBe(true);
  });

  it("a repository with a submodule and an LFS-tracked file (its filter installed): the merge lands the worker's file; the submodule and the LFS file stay as they were, the checkout clean", async () => {
    const sub = makeRepo({ "lib.txt": "lib\n" });
    dirs.push(sub);
    const dir = makeRepo({ "README.md": "# r\n" });
    dirs.push(dir);
    git(dir, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "vendor/lib");
    git(dir, "lfs", "install", "--local");
    git(dir, "lfs", "track", "*.bin");
    writeFileSync(path.join(dir, "big.bin"), "binary-ish payload\n");
    git(dir, "add", ".gitattributes", "big.bin");
    git(dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "submodule and lfs");
    expect(git(dir, "show", "HEAD:big.bin")).toMatch(/^version https:\/\/git-lfs/);
    const w = await built(dir, "LF-WRITE file=k.txt text=kappa", "k.txt");
    const r = await ocw(["merge", w.id]);
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(path.join(dir, "k.txt"), "utf8")).toBe("kappa\n");
    expect(readFileSync(path.join(dir, "big.bin"), "utf8")).toBe("binary-ish payload\n");
    expect(readFileSync(path.join(dir, "vendor/lib/lib.txt"), "utf8")).toBe("lib\n");
    expect(git(dir, "status", "--porcelain")).toBe("");
    // " SHA vendor/lib (…)": checked out at the recorded commit (git() trims the leading space).
    expect(git(dir, "submodule", "status")).toMatch(/^[0-9a-f]{40} vendor\/lib/);
  });
});

describe("a worker that rewrites a file the person's git-lfs stores", () => {
  it("its plain bytes there are flagged on the verdict (merge needs --accept-flagged, nothing changed without it)", async () => {
    const dir = makeRepo({ "README.md": "# r\n" });
    dirs.push(dir);
    git(dir, "lfs", "install", "--local");
    git(dir, "lfs", "track", "*.bin");
    writeFileSync(path.join(dir, "data.bin"), "real payload\n");
    git(dir, "add", ".gitattributes", "data.bin");
    git(dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "lfs");
    const w = await built(dir, "LF-WRITE file=data.bin text=regenerated", "data.bin");
    expect(w.verdict!.flags).toEqual([{ path: "data.bin", kind: "git-config", detail: expect.stringMatching(/through git-lfs/) }]);
    const head = git(dir, "rev-parse", "HEAD");
    const r = await ocw(["merge", w.id]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/data\.bin \(written as plain content where your \.gitattributes stores it through git-lfs/);
    expect(r.stderr).toMatch(/merge with --accept-flagged \(nothing was changed\)/);
    expect(git(dir, "rev-parse", "HEAD")).toBe(head);
    expect(readFileSync(path.join(dir, "data.bin"), "utf8")).toBe("real payload\n");
  });
});

describe("after an engine restart", () => {
  it("a built worker from before the restart (kill -9) is merged and pushed as before", async () => {
    const dir = makeRepo();
    dirs.push(dir);
    const remote = bareRemote(dir);
    const a = await built(dir, "LF-WRITE file=m.txt text=mu", "m.txt");
    const b = await built(dir, "LF-WRITE file=n.txt text=nu", "n.txt");
    await engine.kill("SIGKILL");
    engine = await startEngine(engine.stateDir, { PATH: `${fakeBin}:${process.env.PATH}` });
    const m = await ocw(["merge", a.id]);
    expect(m.code, m.stderr).toBe(0);
    expect(readFileSync(path.join(dir, "m.txt"), "utf8")).toBe("mu\n");
    const p = await ocw(["push", b.id, "--remote", "origin", "--pr", "--json"]);
    expect(p.code, p.stderr).toBe(0);
    expect(git(remote, "rev-parse", `refs/heads/ocw/${b.id}`)).toBe(b.verdict!.commit);
    const m2 = await ocw(["merge", b.id]);
    expect(m2.code, m2.stderr).toBe(0);
    expect(readFileSync(path.join(dir, "n.txt"), "utf8")).toBe("nu\n");
  });
});

describe("a batch's integration after a review round", () => {
  it("integration failed; a worker continued with a review and built again: the integration runs again on its latest round, and merge --batch lands that", async () => {
    const dir = makeRepo({ "README.md": "# r\n" });
    dirs.push(dir);
    const r = await runBatch({
      tasks: [
        { id: "a", task: "LF-WRITE file=a.txt text=draft", dir, checks: [{ file: "a.txt", exists: true }] },
        { id: "b", task: "LF-WRITE file=b.txt text=bee", dir, checks: [{ file: "b.txt", exists: true }] },
      ],
      integration: { checks: [{ name: "a is final", run: "grep -q final a.txt && test -f b.txt" }] },
    });
    const out = JSON.parse(r.stdout);
    expect(out.integration).toMatchObject({ passed: false });
    const [a] = out.workers.map((w: { workerId: string }) => w.workerId) as [string, string];
    const refused = await ocw(["merge", "--batch", out.batchId]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /integration did not pass \(integration check failed: a is final\): nothing was merged\. Continue a worker of it with a review \(ocw continue WORKER_ID --message TEXT\): once its new round is graded the integration runs again by itself/,
    );
    await engine.client.workers.continue.mutate({ workerId: a, message: "LF-AGAIN file=a.txt text=final" });
    const wa = (await settle(engine.client, [a], () => "once")).get(a)!;
    expect(wa.state).toBe("built");
    // The integration of the earlier round is not what lands: it runs again on the latest graded commits.
    let summary = await engine.client.workers.batch.query({ batchId: out.batchId });
    for (let i = 0; i < 100 && !(summary.integration?.state === "done" && summary.integration.result?.passed); i++) {
      await new Promise((res) => setTimeout(res, 200));
      summary = await engine.client.workers.batch.query({ batchId: out.batchId });
    }
    expect(summary.integration).toMatchObject({ state: "done", result: { passed: true } });
    const m = await ocw(["merge", "--batch", out.batchId]);
    expect(m.code, m.stderr).toBe(0);
    expect(readFileSync(path.join(dir, "a.txt"), "utf8")).toBe("final\n");
    expect(readFileSync(path.join(dir, "b.txt"), "utf8")).toBe("bee\n");
  });

  it("integration passed, then a worker of it discarded: merge --batch refuses the combination that holds it (saying why), the integration runs again without it, and that lands", async () => {
    const dir = makeRepo({ "README.md": "# r\n" });
    dirs.push(dir);
    const r = await runBatch({
      tasks: [
        { id: "a", task: "LF-WRITE file=p.txt text=pi", dir, checks: [{ file: "p.txt", exists: true }] },
        { id: "b", task: "LF-WRITE file=q.txt text=qoppa", dir, checks: [{ file: "q.txt", exists: true }] },
      ],
      integration: { checks: [{ name: "p", run: "test -f p.txt" }] },
    });
    const out = JSON.parse(r.stdout);
    expect(out.integration).toMatchObject({ passed: true });
    const [a, b] = out.workers.map((w: { workerId: string }) => w.workerId) as [string, string];
    expect((await ocw(["discard", b])).code).toBe(0);
    const head = git(dir, "rev-parse", "HEAD");
    const refused = await ocw(["merge", "--batch", out.batchId]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`${b} is not at the graded commit it combined any more (continued or discarded since)`);
    expect(refused.stderr).toMatch(/It runs again once every task is at rest; merge once it passed \(nothing was changed\)/);
    expect(refused.stderr).not.toMatch(CLASS_NAMES);
    expect(git(dir, "rev-parse", "HEAD")).toBe(head);
    let summary = await engine.client.workers.batch.query({ batchId: out.batchId });
    for (let i = 0; i < 100 && !(summary.integration?.state === "done" && summary.integration.result?.passed); i++) {
      await new Promise((res) => setTimeout(res, 200));
      summary = await engine.client.workers.batch.query({ batchId: out.batchId });
    }
    expect(summary.integration!.result).toMatchObject({ passed: true, workers: [a] });
    const m = await ocw(["merge", "--batch", out.batchId]);
    expect(m.code, m.stderr).toBe(0);
    expect(readFileSync(path.join(dir, "p.txt"), "utf8")).toBe("pi\n");
    expect(existsSync(path.join(dir, "q.txt"))).toBe(false);
  });
});

describe("a batch whose base branch moved on", () => {
  it("a conflicting move refuses merge --batch naming the files and the ways on; a non-conflicting one lands the integration as one merge commit", async () => {
    const dir = makeRepo({ "README.md": "# r\n" });
    dirs.push(dir);
    const out = JSON.parse(
      (
        await runBatch({
          tasks: [{ id: "a", task: "LF-WRITE file=c1.txt text=batch", dir, checks: [{ file: "c1.txt", exists: true }] }],
          integration: { checks: [{ name: "c1", run: "test -f c1.txt" }] },
        })
      ).stdout,
    );
    expect(out.integration).toMatchObject({ passed: true });
    writeFileSync(path.join(dir, "c1.txt"), "mine\n");
    git(dir, "add", "c1.txt");
    git(dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "mine");
    const head = git(dir, "rev-parse", "HEAD");
    const refused = await ocw(["merge", "--batch", out.batchId]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/conflicts in .*c1\.txt.*nothing was changed/);
    expect(refused.stderr).toMatch(/run the batch again from the current HEAD .*or merge its workers one by one \(ocw merge WORKER_ID; ocw rebase WORKER_ID/);
    expect(refused.stderr).not.toMatch(CLASS_NAMES);
    expect(git(dir, "rev-parse", "HEAD")).toBe(head);
    expect(readFileSync(path.join(dir, "c1.txt"), "utf8")).toBe("mine\n");
    // Moved on elsewhere instead: one merge commit over the integration commit.
    git(dir, "-c", "user.name=t", "-c", "user.email=t@t", "reset", "-q", "--hard", "HEAD~1");
    writeFileSync(path.join(dir, "other.txt"), "o\n");
    git(dir, "add", "other.txt");
    git(dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "other");
    const ok = await ocw(["merge", "--batch", out.batchId]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(readFileSync(path.join(dir, "c1.txt"), "utf8")).toBe("batch\n");
    expect(git(dir, "rev-list", "--parents", "-n1", "HEAD").split(" ")).toHaveLength(3);
  });
});

describe("attempts picked by the checks", () => {
  it("the winner merges; a losing attempt of the same task is not landed on top of it (revert the winner to take it instead)", async () => {
    const dir = makeRepo({ "README.md": "# r\n" });
    dirs.push(dir);
    const r = await ocw([
      "run",
      "--dir",
      dir,
      "--task",
      "LF-WRITE file=t.txt text=tau",
      "--check",
      "test -f t.txt",
      "--attempts",
      "2",
      "--all-attempts",
      "--json",
      "--approve",
      "once",
    ]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    const winner = out.winner as string;
    const loser = out.attempts.map((a: { workerId: string }) => a.workerId).find((id: string) => id !== winner) as string;
    const m = await ocw(["merge", winner]);
    expect(m.code, m.stderr).toBe(0);
    const head = git(dir, "rev-parse", "HEAD");
    const l = await ocw(["merge", loser]);
    expect(l.code).toBe(1);
    expect(l.stderr).toContain(`worker ${loser} is another attempt at the task of ${winner}, which was merged into main`);
    expect(l.stderr).toMatch(
      new RegExp(`revert that merge first \\(ocw revert ${winner}\\), then merge ${loser}; or discard ${loser} \\(nothing was changed\\)`),
    );
    expect(l.stderr).not.toMatch(CLASS_NAMES);
    expect(git(dir, "rev-parse", "HEAD")).toBe(head);
    // Reverted, the winner no longer stands in the way (here both attempts wrote the same bytes at the same second:
    // one graded commit, so nothing new lands).
    expect((await ocw(["revert", winner])).code).toBe(0);
    const taken = await ocw(["merge", loser]);
    expect(taken.code, taken.stderr).toBe(0);
  });

  it("merge --batch of a batch whose task has attempts lands the winner only; the other attempts are skipped, saying why", async () => {
    const dir = makeRepo({ "README.md": "# r\n" });
    dirs.push(dir);
    const r = await runBatch([{ task: "LF-WRITE file=u.txt text=upsilon", dir, checks: [{ file: "u.txt", exists: true }], attempts: 2, allAttempts: true }]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    const group = out.groups[0];
    const winner = group.winner as string;
    const m = await ocw(["merge", "--batch", out.batchId, "--json"]);
    expect(m.code, m.stderr).toBe(0);
    const res = JSON.parse(m.stdout);
    expect(res.merged.map((x: { workerId: string }) => x.workerId)).toEqual([winner]);
    expect(res.skipped).toEqual([
      { workerId: expect.not.stringMatching(winner), reason: expect.stringMatching(/an attempt the checks did not pick \(its task's winner is /) },
    ]);
    expect(git(dir, "rev-list", "--merges", "--count", "HEAD")).toBe("1");
  });
});

describe("more field cases", () => {
  it("staged changes of the person's to other files stay staged through a merge; a merged worker can still be pushed for review", async () => {
    const dir = makeRepo({ "README.md": "# r\n", "notes.txt": "n\n" });
    dirs.push(dir);
    const remote = bareRemote(dir);
    const w = await built(dir, "LF-WRITE file=v.txt text=vee", "v.txt");
    writeFileSync(path.join(dir, "notes.txt"), "n, staged\n");
    writeFileSync(path.join(dir, "new.txt"), "new, staged\n");
    git(dir, "add", "notes.txt", "new.txt");
    const m = await ocw(["merge", w.id]);
    expect(m.code, m.stderr).toBe(0);
    expect(git(dir, "status", "--porcelain").split("\n").sort()).toEqual(["A  new.txt", "M  notes.txt"]);
    expect(git(dir, "show", "HEAD:v.txt")).toBe("vee");
    const p = await ocw(["push", w.id, "--remote", "origin"]);
    expect(p.code, p.stderr).toBe(0);
    expect(git(remote, "rev-parse", `refs/heads/ocw/${w.id}`)).toBe(w.verdict!.commit);
  });
});

describe("a batch pushed, reviewed, pushed again", () => {
  it("the batch's branch moves from its earlier integration commit to the new one (a lease on it); anyone else's commit there is refused", async () => {
    const dir = makeRepo({ "README.md": "# r\n" });
    dirs.push(dir);
    const remote = bareRemote(dir);
    const out = JSON.parse(
      (
        await runBatch({
          tasks: [
            { id: "a", task: "LF-WRITE file=w.txt text=one", dir, checks: [{ file: "w.txt", exists: true }] },
            { id: "b", task: "LF-WRITE file=x.txt text=two", dir, checks: [{ file: "x.txt", exists: true }] },
          ],
          integration: { checks: [{ name: "both", run: "test -f w.txt && test -f x.txt" }] },
        })
      ).stdout,
    );
    expect(out.integration).toMatchObject({ passed: true });
    const first = await ocw(["push", "--batch", out.batchId, "--remote", "origin"]);
    expect(first.code, first.stderr).toBe(0);
    const [a] = out.workers.map((w: { workerId: string }) => w.workerId) as [string];
    await engine.client.workers.continue.mutate({ workerId: a, message: "LF-AGAIN file=w.txt text=one-reviewed" });
    await settle(engine.client, [a], () => "once");
    let summary = await engine.client.workers.batch.query({ batchId: out.batchId });
    for (let i = 0; i < 100 && !(summary.integration?.state === "done" && summary.integration.result?.passed); i++) {
      await new Promise((res) => setTimeout(res, 200));
      summary = await engine.client.workers.batch.query({ batchId: out.batchId });
    }
    const second = await ocw(["push", "--batch", out.batchId, "--remote", "origin"]);
    expect(second.code, second.stderr).toBe(0);
    expect(git(remote, "rev-parse", `refs/heads/ocw/${out.batchId}`)).toBe(summary.integration!.result!.commit);
    expect(git(remote, "show", `refs/heads/ocw/${out.batchId}:w.txt`)).toBe("one-reviewed");
    expect(second.stdout).toMatch(/in place of its earlier integration commit [0-9a-f]{12}/);
    // Someone else's commit there, on the same base: refused, theirs kept.
    const base = summary.integration!.result!.base;
    const other = git(dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit-tree", `${base}^{tree}`, "-p", base, "-m", "someone else's");
    git(dir, "push", "-q", "--force", "origin", `${other}:refs/heads/ocw/${out.batchId}`);
    const third = await ocw(["push", "--batch", out.batchId, "--remote", "origin"]);
    expect(third.code).toBe(1);
    expect(third.stderr).toMatch(/never forces a push; name another --branch \(nothing was pushed, the batch's integration commit is unchanged\)/);
    expect(git(remote, "rev-parse", `refs/heads/ocw/${out.batchId}`)).toBe(other);
  });
});

describe("a dependent task's worker merged alone", () => {
  it("b after a, merged on its own, brings a's graded commit too and says so; a then counts as merged (no empty merge commit for it)", async () => {
    const dir = makeRepo({ "README.md": "# r\n" });
    dirs.push(dir);
    const out = JSON.parse(
      (
        await runBatch({
          tasks: [
            { id: "a", task: "LF-WRITE file=y.txt text=ypsilon", dir, checks: [{ file: "y.txt", exists: true }] },
            { id: "b", after: ["a"], task: "LF-WRITE file=z.txt text=zeta", dir, checks: [{ file: "z.txt", exists: true }] },
          ],
        })
      ).stdout,
    );
    const [a, b] = out.workers.map((w: { workerId: string }) => w.workerId) as [string, string];
    const show = await ocw(["show", b]);
    expect(show.stdout).toContain(`(from main)`);
    expect(show.stdout).toMatch(
      /started from [0-9a-f]{12}: the graded work of the tasks it comes after \(its diff is its own; merged alone, it brings theirs in too\)/,
    );
    const m = await ocw(["merge", b]);
    expect(m.code, m.stderr).toBe(0);
    expect(m.stdout).toContain(`; it started from ${a}'s graded work, which came in with it (recorded as merged)`);
    expect(readFileSync(path.join(dir, "y.txt"), "utf8")).toBe("ypsilon\n");
    expect((await engine.client.workers.get.query({ workerId: a })).merged).toMatchObject({ into: "main" });
    const head = git(dir, "rev-parse", "HEAD");
    const ma = await ocw(["merge", a]);
    expect(ma.code).toBe(1);
    expect(ma.stderr).toMatch(new RegExp(`worker ${a} was already merged into main`));
    expect(git(dir, "rev-parse", "HEAD")).toBe(head);
    expect(git(dir, "rev-list", "--merges", "--count", "HEAD")).toBe("1");
  });

  it("a worker whose graded commit is already in the branch (brought in by hand: published, then git merge) is recorded as merged, with no empty merge commit", async () => {
    const dir = makeRepo({ "README.md": "# r\n" });
    dirs.push(dir);
    const w = await built(dir, "LF-WRITE file=aa.txt text=alpha2", "aa.txt");
    expect((await ocw(["publish", w.id])).code).toBe(0);
    git(dir, "-c", "user.name=t", "-c", "user.email=t@t", "merge", "-q", "--no-ff", "-m", "by hand", `ocw/${w.id}`);
    const head = git(dir, "rev-parse", "HEAD");
    const m = await ocw(["merge", w.id]);
    expect(m.code, m.stderr).toBe(0);
    expect(m.stdout).toContain(`${w.id} was already in main`);
    expect(git(dir, "rev-parse", "HEAD")).toBe(head);
    expect((await engine.client.workers.get.query({ workerId: w.id })).merged).toMatchObject({ into: "main", commit: head });
  });
});
