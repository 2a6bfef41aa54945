import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, realpathSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { config } from "../config";

/**
 * What a sandboxed process may touch. Everything else on the machine is read-only; `hidden` paths are replaced by an
 * empty tmpfs (folders) or /dev/null (files) so they cannot even be read.
 */
export const SandboxPolicy = z.object({
  /** Writable folders (bound read-write at the same path). */
  writable: z.array(z.string()),
  /** Folders and files made unreadable. */
  hidden: z.array(z.string()),
  /** Folders bound read-only again after `writable` (a writable parent with a read-only child). */
  readOnly: z.array(z.string()).default([]),
  /** Network: "none" gives the process its own empty network namespace (no loopback servers, no internet). */
  network: z.enum(["none", "host"]),
  /** The process's environment, exactly (nothing is inherited). */
  env: z.record(z.string(), z.string()),
  cwd: z.string(),
});
export type SandboxPolicy = z.infer<typeof SandboxPolicy>;

export type SandboxKind = "bwrap" | "none";

export interface SandboxStatus {
  kind: SandboxKind;
  /** Why there is no sandbox, and what to do (when kind is "none"). */
  reason: string | null;
  bwrap: string | null;
}

let cached: SandboxStatus | null = null;

/** Whether bubblewrap is installed and can make namespaces here (it cannot inside some containers). */
export function sandboxStatus(): SandboxStatus {
  if (cached) return cached;
  if (process.platform !== "linux") {
    cached = { kind: "none", bwrap: null, reason: `no sandbox on ${process.platform} yet (Linux bubblewrap only): start workers with --no-sandbox to run them unconfined` };
    return cached;
  }
  const bwrap = config().OCW_BWRAP ?? findOnPath("bwrap");
  if (!bwrap) {
    cached = { kind: "none", bwrap: null, reason: "bubblewrap (bwrap) is not installed: `sudo apt-get install bubblewrap` (Debian/Ubuntu) or `sudo dnf install bubblewrap`, or opt out with --no-sandbox" };
    return cached;
  }
  try {
    execFileSync(bwrap, ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-net", "--", "true"], { stdio: "pipe", timeout: 10_000 });
    cached = { kind: "bwrap", bwrap, reason: null };
  } catch (err) {
    const why = String((err as { stderr?: Buffer }).stderr ?? (err as Error).message).trim().split("\n")[0];
    cached = { kind: "none", bwrap, reason: `bubblewrap cannot create namespaces here (${why}): allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or opt out with --no-sandbox` };
  }
  return cached;
}

function findOnPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, name);
    try {
      if (statSync(p).isFile()) return p;
    } catch {
      /* not here */
    }
  }
  return null;
}

/** Where a user keeps credentials a worker must never read (relative to $HOME), plus shell histories. */
const HOME_SECRETS = [
  ".ssh",
  ".gnupg",
  ".aws",
  ".azure",
  ".kube",
  ".docker",
  ".config/gcloud",
  ".config/gh",
  ".config/hub",
  ".config/opencode",
  ".local/share/opencode",
  ".claude",
  ".claude.json",
  ".npmrc",
  ".yarnrc",
  ".pypirc",
  ".netrc",
  ".git-credentials",
  ".cargo/credentials",
  ".cargo/credentials.toml",
  ".bash_history",
  ".zsh_history",
  ".python_history",
  ".node_repl_history",
  ".psql_history",
  ".mysql_history",
  ".lesshst",
  ".viminfo",
  ".pgpass",
  ".my.cnf",
  ".vault-token",
  ".password-store",
  ".local/share/keyrings",
  ".mozilla",
  ".config/chromium",
  ".config/google-chrome",
  ".m2",
  ".gradle/gradle.properties",
  ".terraform.d",
  ".config/git/credentials",
  ".config/op",
  ".config/rclone",
  ".config/Code/User/globalStorage",
];

/**
 * Sockets a sandboxed process could reach without any network (a network namespace does not cover Unix sockets that
 * exist as files): agents, the user's session bus and runtime dir, container engines, the X server.
 */
export function hostSockets(env: NodeJS.ProcessEnv = process.env): string[] {
  const list = ["/run/user", "/var/run/docker.sock", "/run/docker.sock", "/run/podman", "/tmp/.X11-unix", "/run/dbus", "/var/run/dbus"];
  if (env.XDG_RUNTIME_DIR) list.push(env.XDG_RUNTIME_DIR);
  if (env.SSH_AUTH_SOCK) list.push(path.dirname(env.SSH_AUTH_SOCK));
  try {
    for (const d of readdirSync("/tmp")) if (/^(ssh-|gpg-|tmux-|\.ICE-unix)/.test(d)) list.push(path.join("/tmp", d));
  } catch {
    /* no /tmp */
  }
  return list.filter((p) => existsSync(p));
}

/** The user's secrets that exist on this machine (absolute paths). */
export function homeSecrets(home = os.homedir()): string[] {
  return [...HOME_SECRETS.map((p) => path.join(home, p)).filter((p) => existsSync(p)), ...hostSockets()];
}

/** Variables a worker's commands may see, copied from the engine's environment when set. Nothing else passes. */
const PASS_ENV = ["PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "USER", "LOGNAME", "SHELL"];

/** An allow-listed environment: the listed variables of `from`, then `extra`. */
export function allowListedEnv(extra: Record<string, string>, from: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of PASS_ENV) if (from[k] !== undefined) env[k] = from[k]!;
  return { ...env, ...extra };
}

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/** bubblewrap's arguments for a policy (the command follows `--`). */
export function bwrapArgs(policy: SandboxPolicy): string[] {
  const args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session"];
  if (policy.network === "none") args.push("--unshare-net");
  for (const p of policy.hidden.map(real)) {
    if (!existsSync(p)) continue;
    if (statSync(p).isDirectory()) args.push("--tmpfs", p);
    else args.push("--ro-bind", "/dev/null", p);
  }
  for (const p of policy.writable.map(real)) {
    mkdirSync(p, { recursive: true });
    args.push("--bind", p, p);
  }
  for (const p of policy.readOnly.map(real)) if (existsSync(p)) args.push("--ro-bind", p, p);
  args.push("--clearenv");
  for (const [k, v] of Object.entries(policy.env)) args.push("--setenv", k, v);
  args.push("--chdir", policy.cwd);
  return args;
}

/** The command line that runs `argv` inside the policy's sandbox (or unconfined when `kind` is "none"). */
export function sandboxed(argv: string[], policy: SandboxPolicy, kind: SandboxKind = sandboxStatus().kind): { file: string; args: string[]; env: Record<string, string> } {
  if (kind === "none") return { file: argv[0]!, args: argv.slice(1), env: policy.env };
  const bwrap = sandboxStatus().bwrap!;
  return { file: bwrap, args: [...bwrapArgs(policy), "--", ...argv], env: {} };
}

const shq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * The shell opencode runs a worker's bash commands with (its SHELL). Each command gets its own sandbox: only its own
 * workspace and private tmp are writable, every other workspace is hidden, there is no network (so no engine API, no
 * opencode API, no model, no internet), and its environment is rebuilt from scratch. When the command ends, every
 * process it left behind ends with it (its own pid namespace).
 */
export function writeWorkerShell(file: string, opts: { workspacesRoot: string; tmpRoot: string; kind: SandboxKind; bash?: string }): string {
  const root = real(opts.workspacesRoot);
  const tmpRoot = real(opts.tmpRoot);
  const bash = opts.bash ?? (existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh");
  const env = allowListedEnv({ TERM: "dumb", CI: "1", GIT_TERMINAL_PROMPT: "0", GIT_AUTHOR_NAME: "opencode-worker", GIT_AUTHOR_EMAIL: "opencode-worker@localhost", GIT_COMMITTER_NAME: "opencode-worker", GIT_COMMITTER_EMAIL: "opencode-worker@localhost" });
  delete env.SHELL;
  const setenv = Object.entries(env).map(([k, v]) => `--setenv ${k} ${shq(v)}`).join(" ");
  const lines = [
    "#!/bin/sh",
    "# Generated by opencode-worker: the worker's shell. Each command runs in its own sandbox (see engine/sandbox).",
    `root=${shq(root)}`,
    `tmproot=${shq(tmpRoot)}`,
    'here=$(pwd -P)',
    'case "$here" in "$root"/*) ;; *) echo "opencode-worker: commands run only inside a workspace (cwd $here)" >&2; exit 126;; esac',
    'rel=${here#"$root"/}',
    // A workspace is exactly <root>/<repository>/<worker id>: a cwd that resolves to the repository folder (through a
    // symlink to "..") names no workspace and is refused, rather than opening every workspace of the repository.
    'case "$rel" in */*) ;; *) echo "opencode-worker: not inside a workspace: $here" >&2; exit 126;; esac',
    'ws="$root/$(printf %s "$rel" | cut -d/ -f1-2)"',
    'id=$(basename "$ws")',
    'case "$id" in w-*) ;; *) echo "opencode-worker: not a workspace: $ws" >&2; exit 126;; esac',
    'tmp="$tmproot/$id"',
    'mkdir -p "$tmp/home" 2>/dev/null',
  ];
  if (opts.kind === "none") {
    lines.push(`exec env -i ${Object.entries(env).map(([k, v]) => `${k}=${shq(v)}`).join(" ")} HOME="$tmp/home" TMPDIR="$tmp" ${bash} "$@"`);
  } else {
    const bwrap = sandboxStatus().bwrap!;
    lines.push(
      `exec ${shq(bwrap)} --ro-bind / / --dev /dev --proc /proc --unshare-pid --unshare-ipc --unshare-uts --unshare-net --die-with-parent --new-session \\`,
      '  --tmpfs "$root" --tmpfs "$tmproot" --bind "$ws" "$ws" --bind "$tmp" "$tmp" \\',
      `  --clearenv ${setenv} --setenv HOME "$tmp/home" --setenv TMPDIR "$tmp" --chdir "$here" -- ${bash} "$@"`,
    );
  }
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, lines.join("\n") + "\n");
  chmodSync(file, 0o755);
  return file;
}
