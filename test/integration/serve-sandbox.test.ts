// opencode serve deny-by-default (issue 25): what the real `opencode serve` process can reach inside its own sandbox,
// probed by a program that runs as serve itself (the configured opencode binary is a wrapper that probes, then execs
// the real one), and what a worker's command can reach. Neither sees another project in $HOME, the user's own
// checkout or `.git/config`, an /opt- or /srv-like folder, or a host Unix socket; the worker's `git log` still shows
// the history (its objects come from the engine's mirror), and opencode still tells the workspace's project by the id
// the engine wrote.
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sandboxStatus } from "../../engine/sandbox";
import { bash, startScriptedModel, writeFile, type ScriptedModel, turnSteps } from "../fixtures/scripted-model";
import type { Worker } from "../../shared/worker";
import { cleanup, ROOT, scriptedTarget, settle, startEngine, tempDir, type TestEngine } from "../helpers";

const sandbox = sandboxStatus();
const DECOY = "DECOY" + Math.random().toString(36).slice(2);
const home = tempDir("serve-home");
const opt = tempDir("opt-like");
const sockDir = tempDir("sockets");
const wrapperDir = tempDir("opencode-wrapper");
let srv: string | null = null;
let model: ScriptedModel;
let engine: TestEngine;
const servers: net.Server[] = [];

// The user's own repository, kept with their other projects in $HOME.
const user = path.join(home, "projects", "mine");
const other = path.join(home, "projects", "other", ".env");
const sockets = [path.join(home, "projects", "agent.sock"), path.join(sockDir, "nested", "daemon.sock")];

const g = (dir: string, ...args: string[]) =>
  execFileSync("git", ["-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", ...args], { encoding: "utf8" }).trim();

/** Shell text that says, per path, READ (its content was read) or DENIED; and, per socket, CONNECTED or NOSOCK. */
function probe(): string {
  const files = [
    other,
    path.join(user, "README.md"),
    path.join(user, ".git", "config"),
    path.join(opt, "secret.txt"),
    ...(srv ? [path.join(srv, "secret.txt")] : []),
  ];
  const dirs = [path.join(user, ".git", "objects"), path.join(home, "projects")];
  const node = process.execPath;
  return [
    ...files.map((f) => `if cat '${f}' 2>/dev/null | grep -q ${DECOY}; then echo "READ ${f}"; else echo "DENIED ${f}"; fi`),
    ...dirs.map((d) => `if ls '${d}' >/dev/null 2>&1; then echo "READ ${d}"; else echo "DENIED ${d}"; fi`),
    ...sockets.map(
      (s) =>
        `'${node}' -e "require('net').connect('${s}').on('connect',()=>{console.log('CONNECTED ${s}');process.exit()}).on('error',e=>{console.log('NOSOCK ${s} '+e.code);process.exit()})"`,
    ),
  ].join("\n");
}

beforeAll(async () => {
  mkdirSync(path.dirname(other), { recursive: true });
  writeFileSync(other, `API_KEY=${DECOY}\n`);
  writeFileSync(path.join(opt, "secret.txt"), `${DECOY}\n`);
  // A real /srv folder where this user may make one (root: CI); the /opt-like temp folder stands in otherwise.
  try {
    srv = mkdtempSync("/srv/ocw-decoy-");
    writeFileSync(path.join(srv, "secret.txt"), `${DECOY}\n`);
  } catch {
    srv = null;
  }
  mkdirSync(user, { recursive: true });
  writeFileSync(path.join(user, "README.md"), `# mine ${DECOY}\n`);
  g(user, "init", "-q", "-b", "main");
  g(user, "add", "-A");
  g(user, "commit", "-qm", "first");
  writeFileSync(path.join(user, "b.txt"), "b\n");
  g(user, "add", "-A");
  g(user, "commit", "-qm", "second");
  g(user, "config", "remote.origin.url", `https://example.invalid/${DECOY}.git`);
  mkdirSync(path.dirname(sockets[1]!), { recursive: true });
  for (const s of sockets) {
    const server = net.createServer((c) => c.end("SOCKET-REACHED"));
    await new Promise<void>((res) => server.listen(s, res));
    servers.push(server);
  }
  // The opencode binary the engine starts: probes as serve itself (inside serve's sandbox), then is the real one.
  // The real binary sits beside the wrapper (a hard link, or a copy across file systems): serve's sandbox shows the
  // opencode install (the wrapper's folder), not the engine's node_modules.
  const bin = path.join(wrapperDir, "bin", "opencode");
  const real = path.join(wrapperDir, "bin", "opencode-real");
  mkdirSync(path.dirname(bin), { recursive: true });
  const installed = path.join(ROOT, "node_modules", "opencode-ai", "bin", "opencode.exe");
  try {
    linkSync(installed, real);
  } catch {
    copyFileSync(installed, real);
  }
  writeFileSync(bin, `#!/bin/sh\n{\n${probe()}\n} > "$HOME/serve-probe.txt" 2>&1\nexec '${real}' "$@"\n`);
  chmodSync(bin, 0o755);
  model = await startScriptedModel();
  engine = await startEngine(undefined, { HOME: home, OCW_OPENCODE_BIN: bin, OCW_COMMAND_TIMEOUT_SEC: "30" });
  await engine.client.targets.save.mutate({ target: scriptedTarget(model.url, 2, "serve-sandbox"), activate: true });
}, 60_000);

afterAll(async () => {
  await engine?.kill();
  await model?.close();
  await Promise.all(servers.map((s) => new Promise((res) => s.close(res))));
  if (srv) rmSync(srv, { recursive: true, force: true });
  cleanup(engine?.stateDir ?? "", home, opt, sockDir, wrapperDir);
});

/** One worker run (its serve's start runs the serve probe; its command runs the worker probe), shared by the tests. */
let run: Promise<Worker> | null = null;
function probed(): Promise<Worker> {
  run ??= (async () => {
    // The worker's command writes what it reached into its own workspace (read here after it settles).
    model.addScript(
      /SERVE-PROBE/,
      // (a script file: opencode itself refuses a bash call whose text names a folder outside the project)
      turnSteps(
        writeFile("probe.sh", `${probe()}\necho GITLOG; git log --format=%s; git diff HEAD~1 --stat; echo ENDGIT\n`),
        bash("sh probe.sh > probe-out.txt 2>&1; echo probed"),
      ),
      "serve-probe",
    );
    const { workerId } = await engine.client.workers.start.mutate({ task: "SERVE-PROBE", directory: user });
    return (await settle(engine.client, [workerId], () => "once", 240_000)).get(workerId)!;
  })();
  return run;
}

const reached = (out: string) => out.split("\n").filter((l) => /^(READ|CONNECTED) /.test(l) || l.includes("SOCKET-REACHED"));
const serveHome = () => path.join(engine.stateDir, "opencode", "serve-sandbox");

describe.skipIf(sandbox.kind === "none")(`opencode serve deny-by-default (${sandbox.kind === "none" ? sandbox.reason : "bubblewrap"})`, () => {
  it("opencode serve itself reaches no other project in $HOME, not the user's checkout, .git/config or objects, no /opt- or /srv-like folder, no host socket", async () => {
    const w = await probed();
    expect(w.sandbox).toBe("bwrap");
    const serve = readFileSync(path.join(serveHome(), "serve-probe.txt"), "utf8");
    expect(serve).toContain("DENIED"); // the probe ran
    expect(reached(serve)).toEqual([]);
    expect(serve.match(/NOSOCK/g)).toHaveLength(sockets.length);
  }, 300_000);

  it("a worker command reaches none of them either (the user's object store included), and its git log and git diff still work", async () => {
    const w = await probed();
    const cmd = readFileSync(path.join(w.worktree!, "probe-out.txt"), "utf8");
    expect(cmd).toContain("ENDGIT"); // the command ran to its end
    expect(reached(cmd)).toEqual([]);
    expect(cmd.match(/NOSOCK/g)).toHaveLength(sockets.length);
    // The history is there (the engine's mirror of the user's objects): both commits, and the diff of the last one.
    expect(cmd).toMatch(/GITLOG\nsecond\nfirst\n/);
    expect(cmd).toContain("b.txt | 1 +");
    // No model request carried a decoy's content.
    const seen = JSON.stringify(model.requests.map((q) => q.body));
    expect(seen).not.toContain(`API_KEY=${DECOY}`);
    expect(seen).not.toContain(`# mine ${DECOY}`);
    expect(seen).not.toContain("SOCKET-REACHED");
  }, 300_000);

  it("opencode still tells the workspace's project by the id the engine wrote into its .git (in opencode's own storage)", async () => {
    const w = await probed();
    // Not the root commit's id, which every clone of the repository shares.
    const id = readFileSync(path.join(w.worktree!, ".git", "opencode"), "utf8").trim();
    const data = path.join(serveHome(), ".local", "share", "opencode");
    const stored = (readdirSync(data, { recursive: true }) as string[])
      .map((f) => path.join(data, f))
      .filter((f) => existsSync(f) && !f.endsWith(".lock"))
      .some((f) => {
        try {
          return readFileSync(f).includes(id);
        } catch {
          return false;
        }
      });
    expect(stored).toBe(true);
  }, 300_000);
});
