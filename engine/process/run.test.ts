import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { commandChannelStats, runCommand, trimFinalNewline, useCommandHelper } from "./run";

const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-run-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("runCommand (off the engine's thread)", () => {
  it("returns a command's output, exit code and stderr", async () => {
    const ok = await runCommand("sh", ["-c", "printf 'a\\nb\\n'; printf oops >&2"], { cwd: dir, env: { PATH: process.env.PATH } });
    expect(ok).toMatchObject({ exitCode: 0, signal: null, stdout: "a\nb\n", stderr: "oops" });
    const bad = await runCommand("sh", ["-c", "exit 3"], { cwd: dir, env: { PATH: process.env.PATH } });
    expect(bad.exitCode).toBe(3);
  });

  it("passes only the environment it is given, and runs in cwd", async () => {
    const r = await runCommand("sh", ["-c", 'echo "$OCW_RUN_PROBE:${HOME:-none}"; pwd'], { cwd: dir, env: { PATH: process.env.PATH, OCW_RUN_PROBE: "x" } });
    expect(r.stdout.split("\n").slice(0, 2)).toEqual(["x:none", dir]);
  });

  it("reports a command that cannot start instead of throwing", async () => {
    const r = await runCommand("ocw-no-such-binary", [], { cwd: dir, env: { PATH: process.env.PATH } });
    expect(r.exitCode).toBeNull();
    expect(r.startError).toMatch(/ENOENT/);
  });

  it("keeps large output whole and many commands apart", async () => {
    const big = await runCommand("sh", ["-c", "head -c 3000000 /dev/zero | tr '\\0' x"], { cwd: dir, env: { PATH: process.env.PATH } });
    expect(big.stdout.length).toBe(3_000_000);
    const many = await Promise.all(Array.from({ length: 20 }, (_, i) => runCommand("sh", ["-c", `echo ${i}`], { cwd: dir, env: { PATH: process.env.PATH } })));
    expect(many.map((r) => r.stdout.trim())).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
  });

  it("stops a command whose output passes the cap and says so, instead of reading it all (the thread would die past 512 MiB)", async () => {
    const env = { PATH: process.env.PATH };
    const r = await runCommand("sh", ["-c", "head -c 5000000 /dev/zero | tr '\\0' x; echo after"], { cwd: dir, env, maxOutputBytes: 1_000_000 });
    expect(r).toMatchObject({ exitCode: null, stdout: "" });
    expect(r.stderr).toMatch(/passed 1000000 bytes/);
    // stderr counts too: a command cannot get around the cap by printing there
    const e = await runCommand("sh", ["-c", "head -c 3000000 /dev/zero >&2"], { cwd: dir, env, maxOutputBytes: 1_000_000 });
    expect(e.exitCode).toBeNull();
    // the thread lives on: the next command runs as usual
    expect((await runCommand("sh", ["-c", "echo ok"], { cwd: dir, env })).stdout).toBe("ok\n");
  });

  it("a short-lived CLI gets its command's output, then exits (the thread neither ends it early nor keeps it alive)", () => {
    // A CLI that awaits one command and nothing else: it must not exit before the answer, nor hang after it.
    const script = path.join(dir, "cli.mjs");
    writeFileSync(
      script,
      `import { runCommand } from ${JSON.stringify(path.resolve(__dirname, "run.ts"))};\nconst r = await runCommand("sh", ["-c", "sleep 0.3; echo done"], { cwd: ".", env: { PATH: process.env.PATH } });\nconsole.log(r.stdout.trim());\n`,
    );
    const esbuild = path.resolve(__dirname, "../../node_modules/.bin/esbuild");
    const bundle = path.join(dir, "cli.bundle.mjs");
    execFileSync(esbuild, [script, "--bundle", "--platform=node", "--format=esm", `--outfile=${bundle}`, "--log-level=error"]);
    expect(execFileSync(process.execPath, [bundle], { encoding: "utf8", cwd: dir, timeout: 20_000 }).trim()).toBe("done");
  });

  it("with the helper on (the engine), commands start from a small helper process, not from the engine's own (a fork costs the forking process's size)", async () => {
    useCommandHelper();
    try {
      const env = { PATH: process.env.PATH, OCW_RUN_PROBE: "h" };
      const r = await runCommand("sh", ["-c", 'echo "$PPID:$OCW_RUN_PROBE:${HOME:-none}"; pwd'], { cwd: dir, env });
      const [ppid, probe, home] = r.stdout.split("\n")[0]!.split(":");
      expect(Number(ppid)).not.toBe(process.pid);
      expect([probe, home, r.stdout.split("\n")[1]]).toEqual(["h", "none", dir]);
      // The helper is a child of this process, a bare Node.
      const stat = readFileSync(`/proc/${ppid}/stat`, "utf8");
      expect(Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])).toBe(process.pid);
      // The same contract: exit codes, a command that cannot start, large output whole, the cap, many at once.
      expect((await runCommand("sh", ["-c", "exit 3"], { cwd: dir, env })).exitCode).toBe(3);
      expect((await runCommand("ocw-no-such-binary", [], { cwd: dir, env })).startError).toMatch(/ENOENT/);
      expect((await runCommand("sh", ["-c", "head -c 3000000 /dev/zero | tr '\\0' x"], { cwd: dir, env })).stdout.length).toBe(3_000_000);
      const capped = await runCommand("sh", ["-c", "head -c 3000000 /dev/zero >&2"], { cwd: dir, env, maxOutputBytes: 1_000_000 });
      expect(capped.exitCode).toBeNull();
      const many = await Promise.all(Array.from({ length: 20 }, (_, i) => runCommand("sh", ["-c", `echo ${i}`], { cwd: dir, env })));
      expect(many.map((m) => m.stdout.trim())).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
      // Bytes stay bytes: a name that is not UTF-8 comes back losslessly, or as latin1 when asked.
      const raw = await runCommand("printf", ["a\\377b"], { cwd: dir, env, lossless: true });
      expect(raw.stdout).toBe("a\\xffb");
      // A helper that dies fails the commands it held (they may or may not have run), and the next command gets a new one.
      const held = runCommand("sh", ["-c", "sleep 5"], { cwd: dir, env });
      await new Promise((r) => setTimeout(r, 300));
      process.kill(Number(ppid), "SIGKILL");
      await expect(held).rejects.toThrow(/command helper exited.*may or may not have run/);
      const again = await runCommand("sh", ["-c", "echo $PPID"], { cwd: dir, env });
      expect(Number(again.stdout)).not.toBe(Number(ppid));
      expect(Number(again.stdout)).not.toBe(process.pid);
    } finally {
      useCommandHelper(false);
    }
  });

  it.each([
    ["thread", false],
    ["helper process", true],
  ])("each command gets exactly its own environment (%s), though only its differences from a base go over the channel", async (_name, helper) => {
    useCommandHelper(helper);
    try {
      const printed = async (env: Record<string, string | undefined>) => {
        const r = await runCommand("/usr/bin/env", ["-0"], { cwd: dir, env });
        return Object.fromEntries(
          r.stdout
            .split("\0")
            .filter(Boolean)
            .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
        );
      };
      const defined = (env: Record<string, string | undefined>) => Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined));
      const a: Record<string, string | undefined> = { PATH: process.env.PATH };
      for (let i = 0; i < 30; i++) a[`OCW_BASE_${i}`] = `value ${i} =\u00e9`;
      const b: Record<string, string | undefined> = { PATH: "/bin", OTHER: "1" };
      const before = commandChannelStats();
      const envs = [
        a,
        { ...a, OCW_EXTRA: "x" },
        { ...a, OCW_BASE_3: undefined, OCW_BASE_4: "changed" },
        a,
        b,
        { ...b, OTHER: "2", MORE: "3" },
        { ...a, OCW_BASE_0: "" },
      ];
      for (const env of envs) expect(await printed(env)).toEqual(defined(env));
      // Commands at once, each with its own differences.
      const many = await Promise.all(Array.from({ length: 10 }, (_, i) => printed({ ...a, OCW_N: String(i) })));
      expect(many.map((e) => e.OCW_N)).toEqual(Array.from({ length: 10 }, (_, i) => String(i)));
      const after = commandChannelStats();
      expect(after.commands - before.commands).toBe(envs.length + 10);
      // Bases: a, b (every entry differs), b's variant (most of so small a base differs), a again. Each other command sends
      // its differences only: ~25 entries in all, where the whole environments are ~500.
      expect(after.bases - before.bases).toBeLessThanOrEqual(4);
      expect(after.envEntries - before.envEntries).toBeLessThan(40);
    } finally {
      useCommandHelper(false);
    }
  });

  it("trims exactly one final newline, as a command line prints output", () => {
    expect(trimFinalNewline("a\n\n")).toBe("a\n");
    expect(trimFinalNewline("a\r\n")).toBe("a");
    expect(trimFinalNewline("a")).toBe("a");
  });
});
