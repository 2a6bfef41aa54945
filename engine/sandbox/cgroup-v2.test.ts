// The engine's cgroup v2 path against a stand-in hierarchy (test/fixtures/cgroup2-standin.ts) that answers as the
// kernel does: this machine's unified hierarchy delegates only hugetlb, so the path never ran here. What it checks: the
// files written and their order, that controllers are enabled in a parent's cgroup.subtree_control before the groups
// under it are made, the "no internal processes" rule (the engine moves itself into a leaf of its own group), refusals
// (never unlimited), and cleanup (every command group removed, the engine's own leaf never killed).
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Cgroup2StandIn } from "../../test/fixtures/cgroup2-standin";
import { cgroupLimits, checkGroup, ENGINE_LEAF, type LimitSetup, removeTree } from "./cgroup";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-cgroup2-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;

const ENGINE = 4242;
const SCOPE = "user.slice/user@1000.service/app.slice/ocw.scope";

/** A host whose engine runs in a delegated scope (systemd-run --user --scope -p Delegate=yes), with `others` beside it. */
function host(o: { others?: number[]; controllers?: string[]; kill?: boolean; swap?: boolean; delegate?: string[] } = {}) {
  const fs = new Cgroup2StandIn(path.join(tmp, `cg-${++n}`), { controllers: o.controllers, kill: o.kill, swap: o.swap });
  const delegate = o.delegate ?? ["pids", "memory"];
  fs.setUp([
    { path: ".", enable: ["pids", "memory"] },
    { path: "user.slice", enable: delegate },
    { path: "user.slice/user@1000.service", enable: delegate },
    { path: "user.slice/user@1000.service/app.slice", enable: delegate },
    { path: SCOPE, procs: [ENGINE, ...(o.others ?? [])] },
  ]);
  const h = { mountinfo: fs.mountinfo(), procCgroup: `0::/${SCOPE}\n`, pid: ENGINE, fs, alive: (pid: number) => pid === ENGINE };
  return { fs, h };
}

const at = (log: string[], re: RegExp) => log.findIndex((l) => re.test(l));

describe("cgroup v2 against a stand-in hierarchy", () => {
  it("the engine alone in its delegated scope: it moves into a leaf, enables pids and memory top-down, then limits a check's group", () => {
    const { fs, h } = host();
    const s = cgroupLimits(h) as LimitSetup;
    expect(s).toMatchObject({ commands: "cgroup2", checks: "cgroup2", label: "cgroup v2 (pids, memory)", swap: true });
    const own = `${SCOPE}/ocw-${ENGINE}`;
    expect(s.parents).toEqual({ pids: path.join(fs.root, own), memory: path.join(fs.root, own) });
    // The scope held the engine: the first write is refused (no internal processes), the engine moves into its leaf,
    // and only then may the scope hand the controllers on.
    expect(fs.log()).toEqual([
      `write ${SCOPE}/cgroup.subtree_control=+pids +memory !EBUSY`,
      `mkdir ${own}`,
      `mkdir ${own}/${ENGINE_LEAF}`,
      `write ${own}/${ENGINE_LEAF}/cgroup.procs=${ENGINE}`,
      `write ${SCOPE}/cgroup.subtree_control=+pids +memory`,
      `write ${own}/cgroup.subtree_control=+pids +memory`,
    ]);
    expect(fs.procsOf(SCOPE)).toEqual([]);
    expect(fs.procsOf(`${own}/${ENGINE_LEAF}`)).toEqual([ENGINE]);
    expect(fs.read(path.join(fs.root, own, "cgroup.controllers")).split(/\s+/)).toEqual(expect.arrayContaining(["pids", "memory"]));

    fs.ops.length = 0;
    const g = checkGroup(64, 96, s, fs)!;
    const log = fs.log();
    const dir = g.dirs[0];
    const rel = path.relative(fs.root, dir);
    expect(g.dirs).toEqual([dir, dir]);
    expect(log).toEqual([
      `mkdir ${rel}`,
      `write ${rel}/pids.max=64`,
      `write ${rel}/memory.max=${96 * 1024 * 1024}`,
      `write ${rel}/memory.swap.max=0`,
      `write ${rel}/memory.oom.group=1`,
    ]);
    expect(fs.read(path.join(dir, "pids.max")).trim()).toBe("64");
    expect(fs.read(path.join(dir, "memory.max")).trim()).toBe(String(96 * 1024 * 1024));
    expect(fs.read(path.join(dir, "memory.swap.max")).trim()).toBe("0");

    // A check's processes join (the join prefix writes cgroup.procs), one is OOM-killed and a fork refused: both said.
    fs.write(path.join(dir, "cgroup.procs"), "5001");
    fs.write(path.join(dir, "cgroup.procs"), "5002");
    fs.report(rel, "memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n");
    fs.report(rel, "pids.events", "max 2\n");
    expect(g.hits()).toEqual(["memory", "processes"]);
    // Removed: every process in it killed through cgroup.kill, then the group.
    fs.ops.length = 0;
    expect(g.remove()).toBe(true);
    expect(fs.log()).toEqual([`write ${rel}/cgroup.kill=1`, `rmdir ${rel}`]);
    expect(fs.killed).toEqual([5001, 5002]);
    expect(fs.exists(dir)).toBe(false);
  });

  it("controllers are enabled in the parent's cgroup.subtree_control before any group is made under it", () => {
    const { fs, h } = host();
    const s = cgroupLimits(h) as LimitSetup;
    checkGroup(8, 16, s, fs);
    const log = fs.log();
    const own = `${SCOPE}/ocw-${ENGINE}`;
    const scopeEnabled = at(log, new RegExp(`^write ${SCOPE}/cgroup.subtree_control=\\+pids \\+memory$`));
    const ownEnabled = at(log, new RegExp(`^write ${own}/cgroup.subtree_control=`));
    const checkMade = at(log, new RegExp(`^mkdir ${own}/check-`));
    expect(scopeEnabled).toBeGreaterThanOrEqual(0);
    expect(scopeEnabled).toBeLessThan(ownEnabled);
    expect(ownEnabled).toBeLessThan(checkMade);
    // The leaf was made before the scope could enable anything: it is the engine's own, never a command's.
    expect(at(log, /^mkdir .*\/check-/)).toBeGreaterThan(ownEnabled);
  });

  it("the engine started beside other processes (a terminal's shell in its scope): v2 is refused, the engine moves back, nothing of its groups is left", () => {
    const { fs, h } = host({ others: [777] });
    const s = cgroupLimits(h);
    expect(typeof s).toBe("string");
    expect(s).toMatch(/holds other processes than the engine, so it cannot hand pids and memory on \(EBUSY\)/);
    // The v1 fallback is looked at too (none here): the reason names both.
    expect(s).toMatch(/no cgroup v1 pids and memory hierarchies/);
    expect(fs.procsOf(SCOPE).sort((a, b) => a - b)).toEqual([777, ENGINE]);
    expect(fs.dirs(path.join(fs.root, SCOPE))).toEqual([]);
    expect(fs.killed).toEqual([]);
  });

  it("a parent that delegates pids but not memory: refused with the reason, nothing made", () => {
    const { fs, h } = host({ delegate: ["pids"] });
    expect(cgroupLimits(h)).toMatch(/cgroup2 at .* has no pids and memory controllers for this process/);
    expect(fs.log()).toEqual([]);
  });

  it("a limit that cannot be written fails the check's group (never a group without its limits), and removes it", () => {
    const { fs, h } = host();
    const s = cgroupLimits(h) as LimitSetup;
    for (const file of [/pids\.max$/, /memory\.max$/]) {
      fs.failNext(file, "ENOSPC");
      fs.ops.length = 0;
      expect(() => checkGroup(64, 96, s, fs)).toThrow(/the check's limits could not be set \(ENOSPC\): cgroup v2 \(pids, memory\)/);
      const log = fs.log();
      expect(log.at(-1)).toMatch(/^rmdir .*\/check-\d+$/);
      expect(fs.dirs(s.parents!.pids).filter((d) => d.startsWith("check-"))).toEqual([]);
    }
    // An enable refused for another reason than processes (a parent that stopped delegating): v2 refused, cleaned up.
    const other = host();
    other.fs.failNext(/ocw-\d+\/cgroup\.subtree_control$/, "EACCES");
    expect(cgroupLimits(other.h)).toMatch(/cgroup2: pids and memory are not delegated to .* \(EACCES\)/);
    // The scope enables nothing again, the engine is back in it, and no group of the engine's is left.
    expect(other.fs.log().slice(6, 8)).toEqual([`write ${SCOPE}/cgroup.subtree_control=-pids -memory`, `write ${SCOPE}/cgroup.procs=${ENGINE}`]);
    expect(other.fs.procsOf(SCOPE)).toEqual([ENGINE]);
    expect(other.fs.dirs(path.join(other.fs.root, SCOPE))).toEqual([]);
    expect(other.fs.killed).toEqual([]);
  });

  it("a kernel without cgroup.kill (before 5.14) and without swap accounting: processes killed one by one, no swap limit written", () => {
    const { fs, h } = host({ kill: false, swap: false });
    const s = cgroupLimits(h) as LimitSetup;
    expect(s.swap).toBe(false);
    fs.ops.length = 0;
    const g = checkGroup(64, 96, s, fs)!;
    expect(fs.log().some((l) => /memory\.swap\.max/.test(l))).toBe(false);
    fs.write(path.join(g.dirs[0], "cgroup.procs"), "6001");
    fs.ops.length = 0;
    expect(g.remove()).toBe(true);
    expect(fs.log()).toEqual(["kill =6001", `rmdir ${path.relative(fs.root, g.dirs[0])}`]);
  });

  it("on exit every command group goes, but the engine's own leaf is never killed", () => {
    const { fs, h } = host();
    const s = cgroupLimits(h) as LimitSetup;
    const g = checkGroup(64, 96, s, fs)!;
    fs.write(path.join(g.dirs[0], "cgroup.procs"), "5100");
    fs.ops.length = 0;
    removeTree(s.parents!.pids, fs, ENGINE_LEAF);
    expect(fs.killed).toEqual([5100]);
    expect(fs.procsOf(`${SCOPE}/ocw-${ENGINE}/${ENGINE_LEAF}`)).toEqual([ENGINE]);
    expect(fs.log().some((l) => l.includes(`${ENGINE_LEAF}/cgroup.kill`))).toBe(false);
    expect(fs.dirs(s.parents!.pids)).toEqual([ENGINE_LEAF]);

    // What is left (ocw-<pid> and its leaf, holding only the engine) goes with the scope when the engine has exited:
    // systemd removes an empty scope's groups; the stand-in does the same rmdirs.
    fs.kill(ENGINE);
    expect(removeTree(s.parents!.pids, fs)).toBe(true);
    expect(fs.dirs(path.join(fs.root, SCOPE))).toEqual([]);
  });
});
