// A worker plants every command-running git setting it can in its own repository's .git (hooks and core.hooksPath,
// core.fsmonitor, clean and smudge filters, textconv, diff.external, merge drivers, pager, editors, gpg.program, ssh and
// credential helpers, alternateRefsCommand, an ext:: remote, gc.auto) plus .gitattributes naming them. They may run in
// its own command sandbox (its own git), never outside it: not in the engine's grading, diff, publish or merge, nor in
// opencode serve (a new round boots its instance in that workspace again). Each command leaves a mark with its
// environment: serve's holds OPENCODE_SERVER_PASSWORD, the engine's OCW_STATE_DIR; the engine alone can write the
// marks folder outside. A guard of a route found closed (escape pass, December 2026).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { sandboxStatus } from "../../engine/sandbox/sandbox";
import { bash, writeFile, turnSteps } from "../fixtures/scripted-model";
import { cleanup, settle, tempDir } from "../helpers";
import { scriptedEngineRig } from "./scripted-engine";

const marks = tempDir("git-marks");

const HOOK = `#!/bin/sh
name=$1
d=$(cd "$(dirname "$0")" && pwd -P)
mkdir -p "$d/.marks" 2>/dev/null
{ echo "ARGS $*"; echo "PWD $(pwd)"; env; } > "$d/.marks/$name-$$" 2>/dev/null
{ echo "ARGS $*"; echo "PWD $(pwd)"; env; } > "${marks}/$name-$$" 2>/dev/null
case "$2" in cat) cat ;; file) cat "$3" ;; esac
exit 0
`;

const PLANT = `set -x
W=$(pwd -P)
chmod +x hook.sh
H="$W/hook.sh"
mkdir -p hooks
for h in pre-commit prepare-commit-msg commit-msg post-commit post-checkout post-merge pre-push reference-transaction post-index-change pre-auto-gc post-rewrite pre-rebase pre-merge-commit push-to-checkout; do printf '#!/bin/sh\\nexec %s hook-%s\\n' "$H" "$h" > hooks/$h; chmod +x hooks/$h; cp hooks/$h .git/hooks/$h 2>/dev/null; done
git config core.hooksPath "$W/hooks"
git config core.fsmonitor "$H fsmonitor"
git config filter.x.clean "$H filter-clean cat"
git config filter.x.smudge "$H filter-smudge cat"
git config diff.x.textconv "$H textconv file"
git config diff.external "$H diff-external"
git config merge.x.driver "$H merge-driver"
git config core.pager "$H pager cat"
git config core.editor "$H editor"
git config sequence.editor "$H seqeditor"
git config gpg.program "$H gpg"
git config commit.gpgsign true
git config core.sshCommand "$H ssh"
git config credential.helper "!$H cred"
git config core.askPass "$H askpass"
git config core.alternateRefsCommand "$H altrefs"
git config uploadpack.packObjectsHook "$H packhook"
git config gc.auto 1
git config remote.origin.url "ext::$H ext"
git config protocol.allow always
git config lfs.standalonetransferagent x
printf '* filter=x diff=x merge=x\\n' > .gitattributes
mkdir -p .git/info; printf '* filter=x diff=x merge=x\\n' > .git/info/attributes
cat .git/config
echo planted
`;

const rig = scriptedEngineRig("probe", 2, { OCW_COMMAND_TIMEOUT_SEC: "30" });
afterAll(() => cleanup(marks));

describe.skipIf(sandboxStatus().kind === "none")("git settings a worker plants in its own .git", () => {
  it("run in its command sandbox only: never in grading, diff, publish, merge or opencode serve (a second round too)", async () => {
    const r = rig.repo({ "README.md": "# r\n", "a.txt": "a\n" });
    rig.model.addScript(
      /PROBE-GIT/,
      turnSteps(
        writeFile("hook.sh", HOOK),
        writeFile("plant.sh", PLANT),
        bash("sh plant.sh 2>&1 | tail -5"),
        writeFile("a.txt", "changed\n"),
        bash("git status --short; echo ok"),
      ),
      "probe",
    );
    const { workerId } = await rig.engine.client.workers.start.mutate({ task: "PROBE-GIT", directory: r, checks: [{ run: "true" }] });
    const w = (await settle(rig.engine.client, [workerId], () => "once", 240_000)).get(workerId)!;
    expect(w.state).toBe("built");
    await rig.engine.client.workers.diff.query({ workerId });
    await rig.engine.client.workers.publish.mutate({ workerId });
    rig.model.addScript(/ROUND-TWO/, (c) => (c.turnStep === 0 ? bash("echo round2 >> a.txt; git status --short; echo ok") : { text: "OUTCOME: built" }), "r2");
    await rig.engine.client.workers.continue.mutate({ workerId, message: "ROUND-TWO" });
    await settle(rig.engine.client, [workerId], () => "once", 240_000);
    const inWorkspace = (): string[] => {
      const d = path.join(w.worktree!, ".marks");
      return existsSync(d) ? readdirSync(d).map((f) => readFileSync(path.join(d, f), "utf8")) : [];
    };
    const ran = inWorkspace();
    // The planting worked: the worker's own git ran its settings, in its sandbox.
    expect(ran.length).toBeGreaterThan(0);
    for (const t of ran) {
      expect(t, "a planted git setting ran inside opencode serve").not.toContain("OPENCODE_SERVER_PASSWORD");
      expect(t, "a planted git setting ran in the engine").not.toContain("OCW_STATE_DIR");
    }
    // What the person's own git would run there (an editor or terminal opened on the workspace): told, so the desktop
    // app opens no editor or terminal there (electron/open-worker.ts).
    const open = await rig.engine.client.workers.workspace.query({ workerId });
    expect(open.gitRuns.join("\n")).toContain('"core.fsmonitor"');
    expect(open.gitRuns.join("\n")).toContain('"filter.x.clean"');
    await rig.engine.client.workers.merge.mutate({ workerId, acceptFlagged: true });
    expect(readdirSync(marks), "a planted git setting ran outside every sandbox").toEqual([]);
  }, 300_000);

  it("a worker whose git use is ordinary (add, commit, a branch): nothing said, so an editor or terminal opens there", async () => {
    const r = rig.repo({ "README.md": "# r\n" });
    rig.model.addScript(
      /PLAIN-GIT/,
      turnSteps(bash("echo b > b.txt && git add -A && git commit -qm 'add b' && git checkout -qb side && git status --short; echo ok")),
      "plain",
    );
    const { workerId } = await rig.engine.client.workers.start.mutate({ task: "PLAIN-GIT", directory: r, checks: [{ run: "true" }] });
    await settle(rig.engine.client, [workerId], () => "once", 240_000);
    expect((await rig.engine.client.workers.workspace.query({ workerId })).gitRuns).toEqual([]);
  }, 300_000);
});
