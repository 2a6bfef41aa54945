import { execFileSync, spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { refreshMirror } from "../workspace";
import { allowListedEnv, sandboxed, sandboxStatus, writeRepoBinds, writeWorkerShell } from "./sandbox";

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
    const c = sandboxed(["/bin/sh", "-c", script], {
      hidden: [path.join(hidden, ".claude")],
      writable: [work],
      readOnly: [plugin],
      network,
      env: allowListedEnv({ HOME: work }),
      cwd: work,
    });
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

  it("the worker shell runs a command only in the workspace opencode names, writes only there, and nothing it starts outlives it", () => {
    const root = path.join(tmp, "workspaces");
    const ws = path.join(root, "repo-1234", "w-1");
    const theirs = path.join(root, "repo-1234", "w-2");
    mkdirSync(ws, { recursive: true });
    mkdirSync(theirs, { recursive: true });
    const shell = writeWorkerShell(path.join(tmp, "sandbox", "worker-shell"), { workspacesRoot: root, tmpRoot: path.join(tmp, "wtmp"), kind: "bwrap" });
    const sh = (cwd: string, cmd: string, named: string | null = ws) =>
      spawnSync(shell, ["-c", cmd], { cwd, encoding: "utf8", env: { PATH: process.env.PATH!, ...(named ? { OCW_WORKSPACE: named } : {}) } });
    expect(sh(ws, "true", null).status).toBe(126); // no workspace named (opencode's plugin did not run): refused
    expect(sh(tmp, "true").status).toBe(126);
    expect(sh(path.join(root, "repo-1234"), "echo x > w-2/theirs.txt").status).toBe(126); // the repository folder is no workspace
    expect(sh(ws, "echo ok > mine.txt && cat mine.txt").stdout).toBe("ok\n");
    expect(sh(ws, "ls ../w-2 2>&1; echo x > ../w-2/theirs.txt").status).not.toBe(0);
    expect(sh(ws, "(sleep 1.5; echo late > late.txt) > /dev/null 2>&1 & echo started").stdout).toBe("started\n");
    execFileSync("sleep", ["3"]);
    expect(existsSync(path.join(ws, "late.txt"))).toBe(false); // the background job died with its command
  });

  it("opencode serve's environment holds the egress proxy's key (HTTP_PROXY, HTTPS_PROXY): no command of the worker shell sees it, confined or not", () => {
    const root = path.join(tmp, "ws-proxy");
    const ws = path.join(root, "repo-1", "w-p");
    mkdirSync(ws, { recursive: true });
    const key = "ocw:PROXYKEY-4f1c@127.0.0.1:40123";
    const serveEnv = {
      PATH: process.env.PATH!,
      OCW_WORKSPACE: ws,
      HTTP_PROXY: `http://${key}`,
      HTTPS_PROXY: `http://${key}`,
      http_proxy: `http://${key}`,
      https_proxy: `http://${key}`,
      NO_PROXY: "127.0.0.1:41233",
      no_proxy: "127.0.0.1:41233",
    };
    for (const kind of ["bwrap", "none"] as const) {
      const shell = writeWorkerShell(path.join(tmp, `sandbox-proxy-${kind}`, "worker-shell"), {
        workspacesRoot: root,
        tmpRoot: path.join(tmp, "wtmp-proxy"),
        kind,
      });
      const r = spawnSync(shell, ["-c", "env; cat /proc/self/environ | tr '\\0' '\\n'"], { cwd: ws, encoding: "utf8", env: serveEnv });
      expect([kind, r.status]).toEqual([kind, 0]);
      expect(r.stdout).toContain("PATH=");
      expect([kind, r.stdout]).not.toEqual([kind, expect.stringMatching(/PROXYKEY|_PROXY|_proxy/)]);
    }
  });

  it("a workdir that is a symlink to another worker's workspace is refused: the workspace is the one opencode named, never the command's folder", () => {
    const root = path.join(tmp, "ws-link");
    const mine = path.join(root, "repo-1", "w-a");
    const theirs = path.join(root, "repo-1", "w-b");
    mkdirSync(mine, { recursive: true });
    mkdirSync(theirs, { recursive: true });
    symlinkSync(theirs, path.join(mine, "b"));
    // A subfolder the worker swapped for a symlink: the named folder still means its own workspace, nothing else.
    symlinkSync(theirs, path.join(mine, "sub"));
    const shell = writeWorkerShell(path.join(tmp, "sandbox-link", "worker-shell"), {
      workspacesRoot: root,
      tmpRoot: path.join(tmp, "wtmp-link"),
      kind: "bwrap",
    });
    const sh = (cwd: string, named: string) =>
      spawnSync(shell, ["-c", "echo pwned > backdoor.txt"], { cwd, encoding: "utf8", env: { PATH: process.env.PATH!, OCW_WORKSPACE: named } });
    const r = sh(path.join(mine, "b"), mine);
    expect(r.status).toBe(126);
    expect(r.stderr).toContain("outside this worker's workspace");
    expect(sh(path.join(mine, "sub"), path.join(mine, "sub")).status).toBe(126);
    expect(readdirSync(theirs)).toEqual([]);
  });

  it("deny by default: decoy credentials in $HOME, another project's .env, opencode's database, sockets in /tmp and $HOME are not there", async () => {
    const state = path.join(tmp, "deny-state");
    const root = path.join(state, "workspaces");
    const ws = path.join(root, "repo-1", "w-1");
    mkdirSync(ws, { recursive: true });
    const home = path.join(tmp, "deny-home");
    const decoys = [
      ".cache/huggingface/token",
      ".codex/auth.json",
      ".gemini/oauth_creds.json",
      ".config/github-copilot/hosts.json",
      ".ollama/id_ed25519",
      ".config/sops/age/keys.txt",
      ".kaggle/kaggle.json",
      ".bash_history",
      "other-project/.env",
    ].map((f) => path.join(home, f));
    for (const f of decoys) {
      mkdirSync(path.dirname(f), { recursive: true });
      writeFileSync(f, "DECOY-SECRET\n");
    }
    mkdirSync(path.join(home, ".cargo", "bin"), { recursive: true });
    writeFileSync(path.join(home, ".cargo", "bin", "tool"), "TOOLCHAIN\n");
    const db = path.join(state, "opencode", "t1", ".local", "share", "opencode", "opencode.db");
    mkdirSync(path.dirname(db), { recursive: true });
    writeFileSync(db, "OTHER-WORKERS-TRANSCRIPTS\n");
    const sockets = [path.join(home, "agent.sock"), path.join(os.tmpdir(), `ocw-decoy-${process.pid}.sock`)];
    const servers = await Promise.all(
      sockets.map(
        (s) =>
          new Promise<net.Server>((res) => {
            const srv = net.createServer((c) => c.end("SOCKET-REACHED"));
            srv.listen(s, () => res(srv));
          }),
      ),
    );
    try {
      const shell = writeWorkerShell(path.join(state, "sandbox", "worker-shell"), {
        workspacesRoot: root,
        tmpRoot: path.join(state, "tmp"),
        kind: "bwrap",
        stateDir: state,
        home,
      });
      const paths = [...decoys, db, ...sockets].map((p) => `'${p}'`).join(" ");
      const r = spawnSync(
        shell,
        [
          "-c",
          `for f in ${paths}; do cat "$f" 2>/dev/null; [ -e "$f" ] && echo "VISIBLE $f"; done; cat '${home}/.cargo/bin/tool'; ls -A /run /var/run '${home}' | grep -v -e '^$' -e ':$' -e '^.cargo$' -e '^other-project$' -e '^.cache$' -e '^.config$' -e '^.codex$' -e '^.gemini$' -e '^.ollama$' -e '^.kaggle$' | head -20`,
        ],
        { cwd: ws, encoding: "utf8", env: { PATH: process.env.PATH!, OCW_WORKSPACE: ws } },
      );
      expect(r.stdout).not.toContain("DECOY-SECRET");
      expect(r.stdout).not.toContain("OTHER-WORKERS");
      expect(r.stdout).not.toContain("SOCKET-REACHED");
      expect(r.stdout).not.toContain("VISIBLE");
      expect(r.stdout).toContain("TOOLCHAIN"); // the allow-list comes back, read-only
    } finally {
      await Promise.all(servers.map((s) => new Promise((res) => s.close(res))));
    }
  });

  it("worker commands see nothing of the user's repository (checkout, .git, object store); the engine's mirror of its objects is there, read-only, so the workspace's git works", async () => {
    const state = path.join(tmp, "repo-state");
    const user = path.join(tmp, "user-repo");
    mkdirSync(user, { recursive: true });
    const git = (cwd: string, ...args: string[]) =>
      execFileSync("git", ["-C", cwd, "-c", "user.name=t", "-c", "user.email=t@t", ...args], { encoding: "utf8" });
    git(user, "init", "-q");
    writeFileSync(path.join(user, "README.md"), "USER-CHECKOUT\n");
    git(user, "add", "-A");
    git(user, "commit", "-qm", "init");
    git(user, "config", "remote.origin.url", "https://USER-CONFIG.example/secret.git");
    const root = path.join(state, "workspaces");
    const ws = path.join(root, "user-repo-1", "w-1");
    const mirror = path.join(state, "mirrors", "user-repo-1-sha1", "objects");
    await refreshMirror(path.join(user, ".git", "objects"), mirror);
    mkdirSync(path.dirname(ws), { recursive: true });
    git(path.dirname(ws), "init", "-q", "w-1");
    writeFileSync(path.join(ws, ".git", "objects", "info", "alternates"), mirror + "\n");
    git(ws, "checkout", "-q", git(user, "rev-parse", "HEAD").trim());
    const sandboxDir = path.join(state, "sandbox");
    await writeRepoBinds(path.join(sandboxDir, "binds"), ws, mirror);
    const shell = writeWorkerShell(path.join(sandboxDir, "worker-shell"), {
      workspacesRoot: root,
      tmpRoot: path.join(state, "tmp"),
      kind: "bwrap",
      stateDir: state,
    });
    const sh = (cmd: string) => spawnSync(shell, ["-c", cmd], { cwd: ws, encoding: "utf8", env: { PATH: process.env.PATH!, OCW_WORKSPACE: ws } });
    expect(sh("git log --oneline | wc -l").stdout.trim()).toBe("1");
    expect(sh("git diff HEAD --stat && echo DIFF-OK").stdout).toContain("DIFF-OK");
    expect(sh(`cat ${user}/README.md 2>&1`).stdout).not.toContain("USER-CHECKOUT");
    expect(sh(`cat ${user}/.git/config 2>&1`).stdout).not.toContain("USER-CONFIG");
    // The user's object store itself is not there (before: bound back read-only at its own path).
    expect(sh(`ls ${user}/.git/objects 2>&1 || echo ABSENT`).stdout).toContain("ABSENT");
    expect(sh(`touch ${mirror}/x 2>&1 || echo RO`).stdout).toContain("RO");
  });

  it("limits: output is capped and the rest dropped, the exit status kept, a command past its wall-clock budget is stopped, a file past its size cut", () => {
    const root = path.join(tmp, "lim-ws");
    const ws = path.join(root, "repo-1", "w-1");
    mkdirSync(ws, { recursive: true });
    const limits = { wallSec: 2, procs: 64, memMb: 1024, cpuSec: 30, fileMb: 4, outputBytes: 64 * 1024, tmpfsMb: 8 };
    const shell = writeWorkerShell(path.join(tmp, "lim", "worker-shell"), { workspacesRoot: root, tmpRoot: path.join(tmp, "lim-tmp"), kind: "bwrap", limits });
    const sh = (cmd: string) =>
      spawnSync(shell, ["-c", cmd], { cwd: ws, encoding: "utf8", env: { PATH: process.env.PATH!, OCW_WORKSPACE: ws }, maxBuffer: 1 << 30 });
    const big = sh("head -c 50000000 /dev/zero | tr '\\0' x; exit 3");
    expect(big.status).toBe(3);
    expect(big.stdout.length).toBeLessThan(limits.outputBytes + 200);
    expect(big.stdout).toContain(`output cut at ${limits.outputBytes} bytes; ${50_000_000 - limits.outputBytes} more bytes were dropped`);
    const slow = sh("sleep 60");
    expect(slow.status).toBe(124);
    expect(slow.stdout).toContain("wall-clock budget of 2 s");
    expect(sh("head -c 10000000 /dev/zero > big.bin; ls -l big.bin | awk '{print $5}'").stdout.trim().split("\n").pop()).toBe(String(4 * 1024 * 1024));
    // Each in-memory folder is size-limited (files of 3 MB, under the 4 MB file limit, into an 8 MB /dev/shm and /tmp).
    for (const dir of ["/dev/shm", "/tmp"]) expect(sh(`for i in 1 2 3 4; do head -c 3000000 /dev/zero > ${dir}/f$i; done`).stdout).toContain("No space left");
  });

  // RLIMIT_NPROC does not apply to root (the kernel exempts uid 0): this runs the worker shell as a real user.
  it.skipIf(process.getuid?.() !== 0 || !existsSync("/usr/bin/setpriv"))(
    "a fork bomb in a worker command stays under its process limit and dies with its command",
    () => {
      const base = mkdtempSync(path.join(os.tmpdir(), "ocw-nproc-"));
      try {
        chmodSync(base, 0o755);
        const root = path.join(base, "workspaces");
        const ws = path.join(root, "repo-1", "w-1");
        mkdirSync(ws, { recursive: true });
        mkdirSync(path.join(base, "tmp", "w-1", "home"), { recursive: true });
        execFileSync("chown", ["-R", "65534:65534", ws, path.join(base, "tmp")]);
        const limits = { wallSec: 4, procs: 64, memMb: 512, cpuSec: 30, fileMb: 16, outputBytes: 64 * 1024, tmpfsMb: 8 };
        const shell = writeWorkerShell(path.join(base, "sandbox", "worker-shell"), {
          workspacesRoot: root,
          tmpRoot: path.join(base, "tmp"),
          kind: "bwrap",
          limits,
          home: path.join(base, "home"),
          // RLIMIT_NPROC alone (the cgroup case runs as root in cgroup.test.ts).
          cgroups: { commands: "prlimit", checks: "prlimit", label: "prlimit only", parents: null, swap: false },
        });
        const r = spawnSync(
          "/usr/bin/setpriv",
          [
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            shell,
            "-c",
            "sh -c 'i=0; while [ $i -lt 300 ]; do sleep 30 & i=$((i+1)); echo $i > n; done' 2>/dev/null; read n < n; echo \"started $n\"; bomb() { bomb | bomb & }; bomb",
          ],
          { cwd: ws, encoding: "utf8", env: { PATH: process.env.PATH!, OCW_WORKSPACE: ws } },
        );
        // 300 background processes asked for: the process limit stops them short (the shells count too).
        const started = Number(/started (\d+)/.exec(r.stdout)?.[1]);
        expect(started).toBeGreaterThan(10);
        expect(started).toBeLessThan(limits.procs);
        expect(r.stdout).toContain("wall-clock budget of 4 s"); // the bomb ran until the budget ended the command
        // Nothing of it is left: every process of the command died with its sandbox.
        // (the kernel tears a pid namespace down after its first process died: wait for it, a few seconds at most).
        let left = "?";
        for (let i = 0; i < 50 && left; i++) {
          left = spawnSync("ps", ["-u", "65534", "-o", "pid="], { encoding: "utf8" }).stdout.trim();
          if (left) execFileSync("sleep", ["0.1"]);
        }
        expect(left).toBe("");
      } finally {
        rmSync(base, { recursive: true, force: true });
      }
    },
    60_000,
  );
});

// Deny by default outside the workspace: worker commands and checks start from the system allow-list (systemBinds),
// not from the whole machine with a few folders hidden; root inside keeps no capability to unmount what hides a folder.
describe.skipIf(status.kind === "none")(`the allow-list, for real (${status.reason ?? "bwrap"})`, () => {
  const tag = `ocw-decoy-${process.pid}`;
  const decoys: string[] = [];
  const servers: net.Server[] = [];
  /** A decoy file in a folder of the machine's (skipped where the folder is not writable: not a silent pass). */
  const decoy = (dir: string, name = "secret.txt") => {
    try {
      decoys.push(path.join(dir, tag));
      mkdirSync(path.dirname(path.join(dir, tag, name)), { recursive: true });
      writeFileSync(path.join(dir, tag, name), `DECOY ${dir}\n`);
      return path.join(dir, tag, name);
    } catch {
      return null;
    }
  };
  const socket = async (dir: string) => {
    const p = path.join(dir, `${tag}.sock`);
    try {
      const srv = net.createServer((c) => c.end("SOCKET-REACHED"));
      await new Promise<void>((res, rej) => srv.once("error", rej).listen(p, () => res()));
      servers.push(srv);
      return p;
    } catch {
      return null;
    }
  };
  afterAll(async () => {
    await Promise.all(servers.map((s) => new Promise((res) => s.close(res))));
    for (const d of decoys) rmSync(d, { recursive: true, force: true });
  });

  /** What a command prints when it reaches a path: its content, or VISIBLE for what exists (a socket, a folder). */
  const probe = (paths: string[]) =>
    paths
      .map(
        (p) =>
          `cat '${p}' 2>/dev/null; [ -e '${p}' ] && echo 'VISIBLE ${p}'; [ -S '${p}' ] && python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(s.recv(99).decode())" '${p}' 2>/dev/null`,
      )
      .join("; ");

  it("folders outside the workspace (an /opt- and a /srv-like folder, a held-back checks folder, sockets in /run and /tmp, an abstract socket) are absent from a worker command and a check", async (ctx) => {
    const files = [decoy("/opt"), decoy("/srv"), decoy("/var/lib", "held-back/check.sh")].filter((f): f is string => !!f);
    const socks = [await socket("/run"), await socket(os.tmpdir())].filter((f): f is string => !!f);
    // An abstract Unix socket (no file at all): it belongs to the host's network namespace, which no command shares.
    const asrv = spawn(
      "python3",
      [
        "-c",
        `import socket\ns = socket.socket(socket.AF_UNIX)\ns.bind("\\0${tag}-abstract")\ns.listen(8)\nprint("ready", flush=True)\nwhile True:\n    c, _ = s.accept()\n    c.send(b"SOCKET-REACHED")\n    c.close()`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    await new Promise<void>((res) => asrv.stdout!.once("data", () => res()));
    ctx.onTestFinished(() => void asrv.kill("SIGKILL"));
    const reachAbstract = `python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.connect('\\0${tag}-abstract'); print(s.recv(99).decode())" 2>/dev/null`;
    // From the engine's side it answers: the probe is real.
    expect(execFileSync("sh", ["-c", reachAbstract], { encoding: "utf8" })).toContain("SOCKET-REACHED");
    if (files.length < 3 || socks.length < 2)
      return ctx.skip(`cannot place decoys in /opt, /srv, /var/lib, /run here (not root?): ${files.length} files, ${socks.length} sockets`);
    // Reachable from the engine's own side: the decoys are real.
    expect(readFileSync(files[0]!, "utf8")).toContain("DECOY");
    const state = path.join(tmp, "allow-state");
    const root = path.join(state, "workspaces");
    const ws = path.join(root, "repo-1", "w-1");
    mkdirSync(ws, { recursive: true });
    const shell = writeWorkerShell(path.join(state, "sandbox", "worker-shell"), {
      workspacesRoot: root,
      tmpRoot: path.join(state, "tmp"),
      kind: "bwrap",
      stateDir: state,
    });
    const r = spawnSync(shell, ["-c", `${probe([...files, ...socks])}; ${reachAbstract}`], {
      cwd: ws,
      encoding: "utf8",
      env: { PATH: process.env.PATH!, OCW_WORKSPACE: ws },
    });
    expect(r.stdout).not.toMatch(/DECOY|VISIBLE|SOCKET-REACHED/);
    const { runChecks } = await import("../grading/checks");
    const checkRoot = path.join(tmp, "allow-check");
    mkdirSync(checkRoot, { recursive: true });
    const [c] = await runChecks([{ run: `${probe([...files, ...socks])}; ${reachAbstract}` }], checkRoot, {
      kind: "bwrap",
      stateDir: state,
      tmpDir: path.join(state, "ctmp"),
      root: checkRoot,
    });
    expect(c!.output).not.toMatch(/DECOY|VISIBLE|SOCKET-REACHED/);
  }, 60_000);

  it("root in a worker command or a check cannot unmount what hides a folder (no capabilities are kept)", async (ctx) => {
    if (process.getuid?.() !== 0) return ctx.skip("not root here: bubblewrap gives another user no capability to drop");
    const secret = path.join(os.tmpdir(), `${tag}-umount.txt`);
    writeFileSync(secret, "HIDDEN-BY-TMPFS\n");
    decoys.push(secret);
    const state = path.join(tmp, "caps-state");
    const root = path.join(state, "workspaces");
    const ws = path.join(root, "repo-1", "w-1");
    mkdirSync(ws, { recursive: true });
    const shell = writeWorkerShell(path.join(state, "sandbox", "worker-shell"), {
      workspacesRoot: root,
      tmpRoot: path.join(state, "tmp"),
      kind: "bwrap",
      stateDir: state,
    });
    const attack = `grep CapEff /proc/self/status; umount -l /tmp 2>&1; umount -l '${os.tmpdir()}' 2>&1; cat '${secret}'; mount -t tmpfs x '${ws}' 2>&1 && echo MOUNTED`;
    const r = spawnSync(shell, ["-c", attack], { cwd: ws, encoding: "utf8", env: { PATH: process.env.PATH!, OCW_WORKSPACE: ws } });
    expect(r.stdout).toContain("CapEff:\t0000000000000000");
    expect(r.stdout).not.toMatch(/HIDDEN-BY-TMPFS|MOUNTED/);
    const { runChecks } = await import("../grading/checks");
    const checkRoot = path.join(tmp, "caps-check");
    mkdirSync(checkRoot, { recursive: true });
    const [c] = await runChecks([{ run: attack }], checkRoot, { kind: "bwrap", stateDir: state, tmpDir: path.join(state, "ctmp"), root: checkRoot });
    expect(c!.output).toContain("CapEff:\t0000000000000000");
    expect(c!.output).not.toMatch(/HIDDEN-BY-TMPFS|MOUNTED/);
  }, 60_000);

  it("real toolchains still work inside: node, npm, python3, git, sh", () => {
    const state = path.join(tmp, "tools-state");
    const root = path.join(state, "workspaces");
    const ws = path.join(root, "repo-1", "w-1");
    mkdirSync(ws, { recursive: true });
    const shell = writeWorkerShell(path.join(state, "sandbox", "worker-shell"), {
      workspacesRoot: root,
      tmpRoot: path.join(state, "tmp"),
      kind: "bwrap",
      stateDir: state,
    });
    const r = spawnSync(
      shell,
      [
        "-c",
        "node -e 'console.log(\"node\", 1+1)' && npm --version >/dev/null && echo npm && python3 -c 'print(\"py\", 2+2)' && git init -q . && git --version >/dev/null && echo git",
      ],
      { cwd: ws, encoding: "utf8", env: { PATH: process.env.PATH!, OCW_WORKSPACE: ws } },
    );
    expect(r.stdout + r.stderr).toContain("node 2\nnpm\npy 4\ngit");
  }, 60_000);
});

describe("the allow-list's toolchains from PATH", () => {
  it("a PATH folder outside the system folders comes with its prefix (bin's parent); $HOME's, /tmp's and node_modules' do not", async () => {
    const { pathToolchains } = await import("./sandbox");
    // A prefix outside every denied root ($HOME, /tmp …): in the current folder (the repository), which none covers.
    const prefix = mkdtempSync(path.join(process.cwd(), ".ocw-path-"));
    try {
      mkdirSync(path.join(prefix, "node", "bin"), { recursive: true });
      mkdirSync(path.join(prefix, "tools"), { recursive: true });
      mkdirSync(path.join(prefix, "node_modules", ".bin"), { recursive: true });
      const home = path.join(prefix, "home");
      mkdirSync(path.join(home, "bin"), { recursive: true });
      const PATH = [
        path.join(prefix, "node", "bin"),
        path.join(prefix, "tools"),
        path.join(prefix, "node_modules", ".bin"),
        path.join(home, "bin"),
        "/usr/bin",
        "relative/bin",
      ].join(":");
      const found = pathToolchains({ PATH }, home);
      expect(found).toContain(path.join(prefix, "node"));
      expect(found).toContain(path.join(prefix, "tools"));
      expect(found.some((p) => p.includes("node_modules") || p.startsWith(home) || p.startsWith("/usr") || p.includes("relative"))).toBe(false);
    } finally {
      rmSync(prefix, { recursive: true, force: true });
    }
  });
});

describe.skipIf(status.kind === "none")("opencode serve's own sandbox as root (the worker shell's bubblewrap runs inside it)", () => {
  it("a nested bubblewrap still works, but nothing inside holds a capability on the host (no cgroup mount, no device node)", async (ctx) => {
    if (process.getuid?.() !== 0) return ctx.skip("not root here: bubblewrap already runs in a user namespace of its own");
    const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-serve-caps-"));
    try {
      const c = sandboxed(
        [
          "/bin/sh",
          "-c",
          // What the worker shell does (a sandbox per command), then what an attacker holding serve would try: mount a
          // cgroup v1 hierarchy (its release_agent runs as the host's root), make a disk's device node.
          `${status.bwrap} --ro-bind / / --dev /dev --proc /proc --unshare-pid --unshare-net --cap-drop ALL -- echo NESTED-OK; mkdir -p ${dir}/m; mount -t cgroup -o pids none ${dir}/m 2>/dev/null && echo CGROUP-MOUNTED; mknod ${dir}/disk b 8 0 2>/dev/null && echo DEVICE-MADE`,
        ],
        { hidden: [], writable: [dir], readOnly: [], network: "host", env: allowListedEnv({}), cwd: dir, caps: "nested" },
      );
      const r = spawnSync(c.file, c.args, { env: c.env, encoding: "utf8" });
      expect(r.stdout).toContain("NESTED-OK");
      expect(r.stdout).not.toMatch(/CGROUP-MOUNTED|DEVICE-MADE/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("writeRepoBinds (the worker shell's per-workspace binds)", () => {
  it("writes the mirror's real path as NUL-separated arguments, off the caller's thread; nothing for a missing mirror", async () => {
    const root = mkdtempSync(path.join(tmp, "binds-"));
    const mirror = path.join(root, "mirrors", "repo-sha1", "objects");
    mkdirSync(mirror, { recursive: true });
    // A link to the mirror: the sandbox binds the real folder.
    symlinkSync(path.join(root, "mirrors"), path.join(root, "linked"));
    const binds = path.join(root, "sandbox", "binds");
    const pending = writeRepoBinds(binds, path.join(root, "workspaces", "repo-1", "w-1"), path.join(root, "linked", "repo-sha1", "objects"));
    // Nothing written yet when the call returns: the engine's thread goes on with the other workers' starts.
    expect(existsSync(path.join(binds, "repo-1"))).toBe(false);
    await pending;
    expect(readFileSync(path.join(binds, "repo-1"), "utf8")).toBe(`--ro-bind-try\0${mirror}\0${mirror}\0`);
    await writeRepoBinds(binds, path.join(root, "workspaces", "repo-2", "w-2"), path.join(root, "mirrors", "gone", "objects"));
    expect(readFileSync(path.join(binds, "repo-2"), "utf8")).toBe("");
  });
});
