import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { allowListedEnv, sandboxed, sandboxStatus, writeWorkerShell } from "./sandbox";

const status = sandboxStatus();
const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-sandbox-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe.skipIf(status.kind === "none")(`the bubblewrap sandbox, for real (${status.reason ?? "bwrap"})`, () => {
  const hidden = path.join(tmp, "home");
  const plugin = path.join(hidden, ".claude", "plugins", "ocw");
  const work = path.join(tmp, "work");
  mkdirSync(plugin, { recursive: true });
  mkdirSync(work, { recursive: true });
  writeFileSync(path.join(hidden, ".claude", ".credentials.json"), "SECRET");
  writeFileSync(path.join(plugin, "opencode"), "binary");
  const run = (script: string, network: "none" | "host" = "none") => {
    const c = sandboxed(["/bin/sh", "-c", script], { hidden: [path.join(hidden, ".claude")], writable: [work], readOnly: [plugin], network, env: allowListedEnv({ HOME: work }), cwd: work });
    return spawnSync(c.file, c.args, { env: c.env, encoding: "utf8" });
  };

  it("hidden folders are empty, a folder re-exposed inside one is readable, the writable one is writable, the rest read-only", () => {
    expect(run(`cat ${hidden}/.claude/.credentials.json`).status).not.toBe(0);
    expect(run(`cat ${plugin}/opencode`).stdout).toBe("binary");
    expect(run(`echo x > ${work}/f && cat ${work}/f`).stdout).toBe("x\n");
    expect(run(`echo x > ${tmp}/outside`).status).not.toBe(0);
    expect(run(`echo x > ${plugin}/opencode`).status).not.toBe(0);
  });

  it("no network namespace means no loopback server either; the environment is exactly the allow-list", () => {
    expect(run("cat /proc/net/tcp | wc -l").stdout.trim()).toBe("1"); // the header line only: nothing listens
    const env = run("env").stdout;
    expect(env).toContain(`HOME=${work}`);
    expect(env).not.toMatch(/ANTHROPIC|OCW_|OPENCODE|npm_/);
  });

  it("the worker shell runs a command only inside a workspace, writes only there, and nothing it starts outlives it", () => {
    const root = path.join(tmp, "workspaces");
    const ws = path.join(root, "repo-1234", "w-1");
    mkdirSync(ws, { recursive: true });
    mkdirSync(path.join(root, "repo-1234", "w-2"), { recursive: true });
    const shell = writeWorkerShell(path.join(tmp, "sandbox", "worker-shell"), { workspacesRoot: root, tmpRoot: path.join(tmp, "wtmp"), kind: "bwrap" });
    const sh = (cwd: string, cmd: string) => spawnSync(shell, ["-c", cmd], { cwd, encoding: "utf8" });
    expect(sh(tmp, "true").status).toBe(126);
    expect(sh(path.join(root, "repo-1234"), "echo x > w-2/theirs.txt").status).toBe(126); // the repository folder (reached through "..") is no workspace
    expect(sh(ws, "echo ok > mine.txt && cat mine.txt").stdout).toBe("ok\n");
    expect(sh(ws, "ls ../w-2 2>&1; echo x > ../w-2/theirs.txt").status).not.toBe(0);
    expect(sh(ws, "(sleep 1.5; echo late > late.txt) > /dev/null 2>&1 & echo started").stdout).toBe("started\n");
    execFileSync("sleep", ["3"]);
    expect(existsSync(path.join(ws, "late.txt"))).toBe(false); // the background job died with its command
  });
});
