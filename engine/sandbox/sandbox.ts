import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readlinkSync, realpathSync, statSync, writeFileSync } from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { config } from "../config";
import { JOIN_SCRIPT, limitFiles, limitSetup, type LimitSetup } from "./cgroup";

/**
 * What a sandboxed process may touch. Everything else on the machine is read-only; `hidden` paths are replaced by an
 * empty tmpfs (folders) or /dev/null (files) so they cannot even be read.
 */
const SandboxPolicy = z.object({
  /** Writable folders (bound read-write at the same path). */
  writable: z.array(z.string()),
  /** Folders and files made unreadable. */
  hidden: z.array(z.string()),
  /** Folders bound read-only again after `writable` (a writable parent with a read-only child). */
  readOnly: z.array(z.string()).default([]),
  /** Folders replaced by an empty tmpfs first (deny by default: deniedRoots), before `reveal` and `writable`. */
  tmpfs: z.array(z.string()).optional(),
  /** Folders bound back read-only inside `tmpfs` (the toolchain allow-list), before `writable`. */
  reveal: z.array(z.string()).optional(),
  /** Per-process limits, tmpfs sizes and the output cap (CommandLimits); absent: none. */
  limits: z
    .object({ wallSec: z.number(), procs: z.number(), memMb: z.number(), cpuSec: z.number(), fileMb: z.number(), outputBytes: z.number(), tmpfsMb: z.number() })
    .optional(),
  /**
   * What the sandbox starts from: "root" binds the whole machine read-only (the sandbox test's own use; nothing of
   * the engine's runs so any more); "allow-list" binds only the system allow-list (systemBinds: /usr, /etc minus its secrets, the
   * toolchains on PATH …), so every other folder of the machine (/opt, /srv, a project or a held-back folder outside
   * the workspace) is absent. Default "root".
   */
  base: z.enum(["root", "allow-list"]).optional(),
  /**
   * Capabilities: "none" (default) drops every one, so root inside cannot unmount what hides a folder; "nested" keeps
   * what a nested bubblewrap needs, in a user namespace of the sandbox's own when the engine runs as root (opencode
   * serve, whose worker shell makes one sandbox per command).
   */
  caps: z.enum(["none", "nested"]).optional(),
  /** A command prefix bubblewrap runs under (joining the command's cgroup, a systemd-run scope; see cgroup.ts). */
  join: z.array(z.string()).optional(),
  /** Network: "none" gives the process its own empty network namespace (no loopback servers, no internet). */
  network: z.enum(["none", "host"]),
  /** The process's environment, exactly (nothing is inherited). */
  env: z.record(z.string(), z.string()),
  cwd: z.string(),
});
type SandboxPolicy = z.infer<typeof SandboxPolicy>;

export type SandboxKind = "bwrap" | "none";

interface SandboxStatus {
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
    cached = {
      kind: "none",
      bwrap: null,
      reason: `no sandbox on ${process.platform} yet (Linux bubblewrap only): start workers with --no-sandbox to run them unconfined`,
    };
    return cached;
  }
  const bwrap = config().OCW_BWRAP ?? findOnPath("bwrap");
  if (!bwrap) {
    cached = {
      kind: "none",
      bwrap: null,
      reason:
        "bubblewrap (bwrap) is not installed: `sudo apt-get install bubblewrap` (Debian/Ubuntu) or `sudo dnf install bubblewrap`, or opt out with --no-sandbox",
    };
    return cached;
  }
  try {
    execFileSync(bwrap, ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-net", "--", "true"], {
      stdio: "pipe",
      timeout: 10_000,
    });
    cached = { kind: "bwrap", bwrap, reason: null };
  } catch (err) {
    const why = String((err as { stderr?: Buffer }).stderr ?? (err as Error).message)
      .trim()
      .split("\n")[0];
    cached = {
      kind: "none",
      bwrap,
      reason: `bubblewrap cannot create namespaces here (${why}): allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or opt out with --no-sandbox`,
    };
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
function hostSockets(env: NodeJS.ProcessEnv = process.env): string[] {
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
function homeSecrets(home = os.homedir()): string[] {
  return [...HOME_SECRETS.map((p) => path.join(home, p)).filter((p) => existsSync(p)), ...hostSockets()];
}

/** Variables a worker's commands may see, copied from the engine's environment when set. Nothing else passes. */
const PASS_ENV = ["PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "USER", "LOGNAME", "SHELL"];

/**
 * An allow-listed environment: the listed variables of `from`, then `extra`. PATH keeps only its absolute folders: a
 * relative one (`bin`, `.`, the empty entry a leading, trailing or doubled `:` makes) is looked up from the command's
 * folder, the worker's files, so a check would run the worker's `bin/python3` or `./go` in place of the tool.
 */
export function allowListedEnv(extra: Record<string, string>, from: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of PASS_ENV) if (from[k] !== undefined) env[k] = from[k]!;
  if (env.PATH !== undefined) env.PATH = absolutePath(env.PATH);
  return { ...env, ...extra };
}

/** A PATH's absolute folders, in order (the last value is kept: it is the same string each time). */
let lastPath: [string, string] | null = null;
function absolutePath(value: string): string {
  if (lastPath?.[0] !== value)
    lastPath = [
      value,
      value
        .split(path.delimiter)
        .filter((d) => path.isAbsolute(d))
        .join(path.delimiter),
    ];
  return lastPath[1];
}

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/**
 * What a worker command or a check may use, at most (per command; each process of it for the per-process ones). The
 * wall-clock budget ends the whole command (its sandbox and everything in it); output past `outputBytes` is dropped
 * (the command goes on, its tail is not kept), so a 300 MB listing is never stored in full.
 */
export interface CommandLimits {
  /** Wall-clock seconds of one command, whatever timeout the model asked for. */
  wallSec: number;
  /** Processes (RLIMIT_NPROC, counted per user: effective for every user but root, which the kernel exempts). */
  procs: number;
  /** Data memory per process, MiB (RLIMIT_DATA: heap and private writable maps). */
  memMb: number;
  /** CPU seconds per process (RLIMIT_CPU). */
  cpuSec: number;
  /** Largest file a process may write, MiB (RLIMIT_FSIZE). */
  fileMb: number;
  /** Output kept of one command, bytes (stdout and stderr together). */
  outputBytes: number;
  /** Size of each in-memory folder of the sandbox (the tmpfs over $HOME, /tmp, /run …, and /dev/shm), MiB. */
  tmpfsMb: number;
}

/** The limits from the engine's configuration (OCW_COMMAND_*; docs/architecture.md, Containment). */
export function commandLimits(): CommandLimits {
  const c = config();
  const pos = (n: number, def: number) => (Number.isFinite(n) && n > 0 ? Math.floor(n) : def);
  return {
    wallSec: pos(c.OCW_COMMAND_TIMEOUT_SEC, 600),
    procs: pos(c.OCW_COMMAND_MAX_PROCS, 1024),
    memMb: pos(c.OCW_COMMAND_MAX_MEM_MB, 8192),
    cpuSec: pos(c.OCW_COMMAND_CPU_SEC, 1800),
    fileMb: pos(c.OCW_COMMAND_MAX_FILE_MB, 4096),
    outputBytes: pos(c.OCW_COMMAND_OUTPUT_MB, 8) * 1024 * 1024,
    tmpfsMb: pos(c.OCW_SANDBOX_TMPFS_MB, 256),
  };
}

/**
 * Folders a worker command and a check never see (each replaced by an empty, size-limited tmpfs): the user's home,
 * the machine's temporary folders (other programs' files and Unix sockets), /run and /var/run (every daemon's socket:
 * docker, dbus, the user's session), removable and mounted drives. Only what `revealed` lists comes back, read-only.
 */
export function deniedRoots(home = os.homedir()): string[] {
  const list = [home, "/tmp", "/var/tmp", "/run", "/var/run", "/media", "/mnt"];
  const out: string[] = [];
  for (const p of list.map(real)) {
    if (p === "/" || out.includes(p)) continue;
    try {
      if (statSync(p).isDirectory()) out.push(p);
    } catch {
      /* absent here */
    }
  }
  return out.sort((a, b) => a.length - b.length);
}

/**
 * What toolchains need from the user's home, read-only (the allow-list; nothing else of $HOME is visible to worker
 * commands and checks): version managers and the binaries language installers put there. None of them holds a
 * credential by convention; the known credential files inside them (`.cargo/credentials*`) stay hidden.
 * `OCW_SANDBOX_READONLY` (":"-separated absolute paths) adds folders of the person's choice.
 */
const TOOLCHAIN_DIRS = [".nvm", ".volta", ".fnm", ".bun/bin", ".deno/bin", ".cargo/bin", ".rustup", ".pyenv", ".rbenv", ".local/bin", "go/bin"];

export function revealed(home = os.homedir()): string[] {
  const extra = (config().OCW_SANDBOX_READONLY ?? "").split(":").filter((p) => path.isAbsolute(p));
  return [...new Set([...TOOLCHAIN_DIRS.map((p) => path.join(home, p)), ...extra].filter((p) => existsSync(p)).map(real))];
}

/**
 * The system allow-list, read-only: all a worker command or a check sees of the machine besides its workspace, its tmp
 * and the toolchain folders of $HOME (`revealed`). Top-level symbolic links (/bin → usr/bin on merged-/usr systems)
 * are made as links. Nothing else of the root is there: /opt, /srv, /home, /var, /sys, a project or a held-back
 * checks folder elsewhere on the machine are absent (docs/security.md lists it).
 */
const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/nix", "/gnu"];

/** Files and folders of /etc that hold secrets (host keys, password hashes, VPN and cluster credentials): never bound. */
const ETC_SECRETS = [
  "/etc/shadow",
  "/etc/shadow-",
  "/etc/gshadow",
  "/etc/gshadow-",
  "/etc/sudoers",
  "/etc/sudoers.d",
  "/etc/ssh",
  "/etc/ssl/private",
  "/etc/security/opasswd",
  "/etc/krb5.keytab",
  "/etc/NetworkManager/system-connections",
  "/etc/wpa_supplicant",
  "/etc/wireguard",
  "/etc/openvpn",
  "/etc/ipsec.secrets",
  "/etc/ppp",
  "/etc/letsencrypt",
  "/etc/kubernetes",
  "/etc/rancher",
  "/etc/docker",
  "/etc/containers/auth.json",
  "/etc/pki/private",
  "/etc/libvirt",
  "/etc/cups/ssl",
];

/**
 * Toolchain folders outside the system folders, found at run time: each PATH folder (a `bin` folder two levels or more
 * deep brings its prefix, so /opt/node/bin brings /opt/node and its lib/) and the engine's own node's prefix. Folders
 * under the denied roots ($HOME, /tmp, /run …) are not taken from PATH: $HOME's come only from TOOLCHAIN_DIRS.
 */
export function pathToolchains(env: NodeJS.ProcessEnv = process.env, home = os.homedir()): string[] {
  const denied = deniedRoots(home);
  const covered = (p: string) => [...SYSTEM_DIRS, ...denied].some((d) => p === d || p.startsWith(d + path.sep));
  const out: string[] = [];
  const add = (p: string) => {
    if (!path.isAbsolute(p)) return;
    const r = real(p);
    // node_modules/.bin (npm puts the engine's own project's there when a script started it) is not a toolchain.
    if (r === "/" || covered(r) || !existsSync(r) || r.split(path.sep).includes("node_modules")) return;
    const parent = path.dirname(r);
    const dir = path.basename(r) === "bin" && path.dirname(parent) !== "/" ? parent : r;
    if (!out.includes(dir)) out.push(dir);
  };
  for (const p of (env.PATH ?? "").split(path.delimiter)) add(p);
  if (path.basename(process.execPath) === "node") add(path.dirname(process.execPath));
  return out;
}

/** bubblewrap's arguments for the system allow-list (the root of an allow-list sandbox). */
export function systemBinds(): string[] {
  const args: string[] = [];
  for (const d of SYSTEM_DIRS) {
    let st;
    try {
      st = lstatSync(d);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) args.push("--symlink", readlinkSync(d), d);
    else if (st.isDirectory()) args.push("--ro-bind", d, d);
  }
  for (const f of ETC_SECRETS) {
    try {
      const st = lstatSync(f);
      if (st.isDirectory()) args.push("--tmpfs", f, "--remount-ro", f);
      else args.push("--ro-bind", "/dev/null", f);
    } catch {
      /* absent here */
    }
  }
  for (const p of pathToolchains()) args.push("--ro-bind", p, p);
  return args;
}

/** Hidden folders that a revealed folder (one of its ancestors) would show again: hidden once more after the reveal. */
function reshown(hidden: string[], reveal: string[]): string[] {
  const r = reveal.map(real);
  return hidden
    .map(real)
    .filter((h) => r.some((x) => h === x || h.startsWith(x + path.sep)))
    .filter((h) => existsSync(h) && statSync(h).isDirectory());
}

/** Hidden files that a revealed folder would show again (a credential file inside a toolchain folder). */
function reshownFiles(hidden: string[], reveal: string[]): string[] {
  const r = reveal.map(real);
  return hidden
    .map(real)
    .filter((h) => r.some((x) => h.startsWith(x + path.sep)))
    .filter((h) => existsSync(h) && !statSync(h).isDirectory());
}

/**
 * The view of the machine `opencode serve` gets (one per target, long-lived): deny by default, as a worker command's.
 * The system allow-list (systemBinds) with $HOME, /tmp, /var/tmp, /run, /var/run, /media, /mnt and the whole state dir
 * empty; the toolchain folders of $HOME read-only (their credential files hidden again); writable: opencode's own home,
 * the workspaces and the workers' tmp (and the engine's cgroup folders the worker shell makes each command's group
 * in); read-only: the engine's object mirrors (every workspace borrows its objects there), the worker shell and plugin
 * folders, the opencode install, and the file /etc/resolv.conf points to when it is a link out of /etc (a model
 * endpoint by name). No user repository, no other project, no host Unix socket in any folder is there.
 */
export function servePolicy(o: {
  stateDir: string;
  writable: string[];
  readOnly: string[];
  env: Record<string, string>;
  cwd: string;
  home?: string;
}): SandboxPolicy {
  const home = o.home ?? os.homedir();
  const reveal = revealed(home);
  const secrets = homeSecrets(home).filter((s) => reveal.some((r) => s.startsWith(r + path.sep)));
  const resolv: string[] = [];
  try {
    if (lstatSync("/etc/resolv.conf").isSymbolicLink()) resolv.push(realpathSync("/etc/resolv.conf"));
  } catch {
    /* none, or a dangling link */
  }
  return {
    base: "allow-list",
    tmpfs: deniedRoots(home),
    hidden: [o.stateDir, ...secrets],
    reveal,
    writable: o.writable,
    readOnly: [...o.readOnly, ...resolv],
    // As root: capabilities only in a user namespace of its own (enough for the worker shell's bubblewrap).
    caps: "nested",
    network: "host",
    env: o.env,
    cwd: o.cwd,
  };
}

/**
 * bubblewrap's capability arguments (see SandboxPolicy.caps). As another user than root there are none to drop, and
 * bubblewrap already works in a user namespace of its own. As root, "nested" gives the sandbox a user namespace of its
 * own (root mapped to root): its capabilities hold only there, enough for the worker shell's own bubblewrap, none on
 * the host (no kernel module, no new cgroup or other file system mount, no unmounting what hides a folder outside).
 */
function capArgs(caps: "none" | "nested", uid = process.getuid?.() ?? -1): string[] {
  if (caps === "none") return ["--cap-drop", "ALL"];
  return uid === 0 ? ["--unshare-user", "--uid", "0", "--gid", "0"] : [];
}

let sizeOption: boolean | null = null;
/** Whether this bubblewrap has `--size` (0.6 and later): without it the in-memory folders have the kernel's default size. */
function bwrapHasSize(): boolean {
  if (sizeOption !== null) return sizeOption;
  const bwrap = sandboxStatus().bwrap;
  try {
    sizeOption = !!bwrap && execFileSync(bwrap, ["--help"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 5000 }).includes("--size");
  } catch (err) {
    sizeOption = String((err as { stdout?: string }).stdout ?? "").includes("--size");
  }
  return sizeOption;
}

/**
 * Whether RLIMIT_NPROC counts per user namespace (Linux 5.14 and later): then a sandbox's limit counts only its own
 * processes. Before, it counts every process of the user, so a limit would fail a busy user's commands: not set there.
 */
function nprocPerNamespace(): boolean {
  const [major, minor] = os
    .release()
    .split(".")
    .map((n) => parseInt(n, 10));
  return (major ?? 0) > 5 || ((major ?? 0) === 5 && (minor ?? 0) >= 14);
}

/** bubblewrap's arguments for a policy (the command follows `--`). */
function bwrapArgs(policy: SandboxPolicy): string[] {
  const args = [...(policy.base === "allow-list" ? systemBinds() : ["--ro-bind", "/", "/"]), "--dev", "/dev", ...capArgs(policy.caps ?? "none")];
  const size = policy.limits && bwrapHasSize() ? ["--size", String(policy.limits.tmpfsMb * 1024 * 1024)] : [];
  // /dev is bubblewrap's own tmpfs: read-only, with a size-limited /dev/shm (shared memory counts as memory).
  if (policy.limits) args.push(...size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev");
  args.push("--proc", "/proc", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session");
  if (policy.network === "none") args.push("--unshare-net");
  for (const p of (policy.tmpfs ?? []).map(real)) if (existsSync(p)) args.push(...size, "--tmpfs", p);
  for (const p of policy.hidden.map(real)) {
    if (!existsSync(p)) continue;
    if (statSync(p).isDirectory()) args.push(...size, "--tmpfs", p);
    else args.push("--ro-bind", "/dev/null", p);
  }
  for (const p of (policy.reveal ?? []).map(real)) if (existsSync(p)) args.push("--ro-bind", p, p);
  // A revealed folder (OCW_SANDBOX_READONLY) above a hidden one does not show it again; nor a hidden file inside one.
  for (const p of reshown(policy.hidden, policy.reveal ?? [])) args.push(...size, "--tmpfs", p);
  for (const p of reshownFiles(policy.hidden, policy.reveal ?? [])) args.push("--ro-bind", "/dev/null", p);
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

const shq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** How many words the limits put before a sandboxed command (`<shell> -c <prelude>`). */
export const LIMITS_WORDS = 3;

/** The shell that applies the per-process limits inside the sandbox, then runs the command (`$0` is the shell). */
function limitsPrelude(l: CommandLimits, bash: boolean, sandbox = true): string {
  // bash sets soft and hard limits together: nothing inside can raise them again. dash has no -u. Outside a sandbox
  // (its own user namespace) the process limit would count every process of the user: not set there.
  const procs = bash && sandbox && nprocPerNamespace() ? `ulimit -u ${l.procs}; ` : "";
  return `${procs}ulimit -t ${l.cpuSec}; ulimit -d ${l.memMb * 1024}; ulimit -f ${l.fileMb * 1024}; ulimit -c 0; exec "$0" "$@"`;
}

/**
 * The shell text that keeps at most `outputBytes` of its input and drops the rest (draining it, so the command is not
 * killed by a closed pipe), then says how much was dropped.
 */
function capFilter(outputBytes: number): string {
  return `{ head -c ${outputBytes}; n=$(wc -c); [ "$n" -gt 0 ] && printf '\\n[opencode-worker: output cut at ${outputBytes} bytes; %s more bytes were dropped]\\n' "$n"; }`;
}

/**
 * The command line that runs `argv` inside the policy's sandbox (or unconfined when `kind` is "none"). With `limits`,
 * the per-process limits apply inside and the output is capped (stdout and stderr together, on stdout).
 */
export function sandboxed(
  argv: string[],
  policy: SandboxPolicy,
  kind: SandboxKind = sandboxStatus().kind,
): { file: string; args: string[]; env: Record<string, string> } {
  const l = policy.limits;
  const shell = existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh";
  const inner = l ? [shell, "-c", limitsPrelude(l, shell.endsWith("bash"), kind !== "none"), ...argv] : argv;
  const base =
    kind === "none"
      ? { file: inner[0]!, args: inner.slice(1), env: policy.env }
      : { file: sandboxStatus().bwrap!, args: [...bwrapArgs(policy), "--", ...inner], env: {} as Record<string, string> };
  if (policy.join?.length) {
    base.args = [...policy.join.slice(1), base.file, ...base.args];
    base.file = policy.join[0]!;
  }
  if (!l) return base;
  // sh -c '"$@" 2>&1 | cap; exit the command's status' sh <file> <args…>
  const script = `exec 3>&1; rc=$( { { "$@" 2>&1 3>&- 4>&-; echo $? >&4; } | ${capFilter(l.outputBytes)} >&3; } 4>&1 ); exit \${rc:-1}`;
  return { file: "/bin/sh", args: ["-c", script, "sh", base.file, ...base.args], env: base.env };
}

/** The file opencode loads as its one plugin: it names, per instance, the workspace a bash command may write. */
export const WORKSPACE_PLUGIN = `// Generated by opencode-worker. opencode runs one instance per directory, and every worker's session has its own
// directory (its workspace, or the subfolder the person named): each bash command of that session is told it here,
// in the environment opencode gives the worker shell, which no command text can change. A bash call whose workdir
// resolves (symlinks followed) outside the workspace is refused before anyone is asked; the worker shell checks again.
// The folder of \`list\` (which asks nobody) is checked the same way, and so is every path a file tool names
// (\`apply_patch\`'s files, \`edit\`'s, \`write\`'s): opencode reads a file to patch or edit before it asks,
// so a path through a symlink into a sibling's workspace would tell the worker whether that file exists, and whether
// lines it guesses are in it, although the ask is refused. A file tool's path whose \`..\` follows a symlink is refused
// where the kernel reads it elsewhere than opencode tells the engine.
import { lstatSync, readlinkSync, statSync } from "node:fs";
import path from "node:path";
// Where a path as written really is, as the kernel reads it: one part at a time, a symlink's target put in its place
// before the parts after it, so a \`..\` after a symlink leaves the link's target (\`<ws>/link/../x\` is \`x\` beside what
// \`link\` names, not \`<ws>/x\`). Where the rest does not exist yet, it is appended as written. (Walked here, not by
// realpath: the runtime's own may normalise the path first.)
const realOf = (p) => {
  let done = "/";
  const todo = p.split(path.sep).filter(Boolean);
  let links = 0;
  while (todo.length) {
    const part = todo.shift();
    if (part === ".") continue;
    if (part === "..") {
      done = path.dirname(done);
      continue;
    }
    const next = path.join(done, part);
    let link = null;
    try {
      link = lstatSync(next).isSymbolicLink() ? readlinkSync(next) : null;
    } catch {
      return path.join(next, ...todo);
    }
    if (link === null) {
      done = next;
      continue;
    }
    // The kernel gives up after 40 links (ELOOP): nothing is opened there.
    if (++links > 40) return path.join(next, ...todo);
    todo.unshift(...link.split(path.sep).filter(Boolean));
    if (path.isAbsolute(link)) done = "/";
  }
  return done;
};
const real = (p) => realOf(path.resolve(p));
// \`list\` asks nobody (opencode-worker's rules allow it): its folder is checked here, symlinks resolved. The other file
// tools ask, and the engine checks their real path on the record before anyone decides; but opencode's apply_patch,
// edit and write read the file before they ask (to make the diff the ask shows), so their paths are checked here too,
// before the tool runs.
// (read, glob and grep ask before they touch the path: the engine answers them, on the record.)
const PATH_ARGS = { list: ["path"], write: ["filePath"], edit: ["filePath"], multiedit: ["filePath"], lsp: ["filePath"] };
// apply_patch's (and the older patch tool's) files: each header of the patch text, as opencode's parser reads them.
const PATCH_FILE = /^\\s*\\*\\*\\* (?:Add File|Delete File|Update File|Move to):\\s*(.+?)\\s*$/;
const pathsOf = (tool, args) => {
  if (tool === "bash") return typeof args.workdir === "string" && args.workdir ? [args.workdir] : [];
  if (tool === "apply_patch" || tool === "patch") {
    if (typeof args.patchText !== "string") return [];
    return args.patchText.split(/\\r\\n|\\r|\\n/).map((l) => PATCH_FILE.exec(l)?.[1]).filter(Boolean);
  }
  return (PATH_ARGS[tool] ?? []).map((k) => args[k]).filter((v) => typeof v === "string" && v);
};
// What the engine is told of a file tool's path is opencode's lexical reading of it (\`path.relative\` to the workspace:
// \`<ws>/link/..\` is \`<ws>\`), while opencode opens an absolute path as written, which the kernel reads symlink first
// (\`link\` → /, then \`..\`): the engine would answer a read of any file opencode can see as one inside the workspace.
// So a file tool's path that the two read differently, or that the kernel reads outside the workspace, is refused here.
const FILE_PATH_ARGS = { read: "filePath", write: "filePath", edit: "filePath", multiedit: "filePath", lsp: "filePath", glob: "path", grep: "path", list: "path" };
const hasDotDot = (p) => p.split(path.sep).includes("..");
// A FIFO, socket or device in the workspace (a worker makes one with mkfifo) is no file to read or write: opencode's
// open of it waits for a writer that never comes, and a few such reads hung the whole serve, every worker of its
// target with it. Refused before the tool runs (no bash command of the workspace runs until it ends: no swap between).
// opencode's read goes through the whole file (counting its lines) and holds a line whole: one 1 GiB line took serve
// ~1.3 GB more memory, and a command may write 4 GiB files (OCW_COMMAND_MAX_FILE_MB), enough to end serve with every
// worker of its target; edit reads the file whole. Larger files are refused to them (a bash command reads a part).
const READ_MAX_BYTES = 64 * 1024 * 1024;
const WHOLE_READERS = new Set(["read", "edit", "multiedit"]);
const tooLarge = (tool, p) => {
  if (!WHOLE_READERS.has(tool)) return false;
  try {
    const st = statSync(p);
    return st.isFile() && st.size > READ_MAX_BYTES;
  } catch {
    return false;
  }
};
const notAFile = (p) => {
  try {
    const st = statSync(p);
    return !st.isFile() && !st.isDirectory();
  } catch {
    return false;
  }
};
// The variable the worker shell reads its workspace from.
const WORKSPACE_VAR = "OCW_WORKSPACE";
// The file tools run while no bash command of this workspace runs, and the other way round: the engine checks a file
// tool's real path when it asks, and a bash command running beside it could otherwise swap a folder of that path for a
// symlink (to another workspace) between the check and the tool's own open. Only the worker's commands can change its
// workspace (other workers' sandboxes cannot reach it; what a command starts dies with it), so holding them back from
// a file tool's start (before its ask) to its end makes the checked path the used one. Shared within a kind (many
// reads at once, many commands at once), first come first served between kinds. Released when the tool ends: its
// "after" hook, or its part ending (an error or a refusal skips "after").
const FILE_TOOLS = new Set(["read", "write", "edit", "multiedit", "patch", "apply_patch", "list", "glob", "grep", "lsp"]);
const kindOf = (tool) => (tool === "bash" ? "bash" : FILE_TOOLS.has(tool) ? "file" : null);
export const OcwWorkspace = async ({ directory, worktree }) => {
  const root = real(worktree && worktree !== "/" ? worktree : directory);
  const lock = { kind: null, holders: new Set(), queue: [] };
  const pump = () => {
    while (lock.queue.length) {
      const next = lock.queue[0];
      if (lock.holders.size && lock.kind !== next.kind) return;
      lock.queue.shift();
      lock.kind = next.kind;
      lock.holders.add(next.id);
      next.resolve();
    }
  };
  const release = (id) => {
    lock.queue = lock.queue.filter((w) => (w.id === id ? (w.resolve(), false) : true));
    if (!lock.holders.delete(id)) return;
    if (!lock.holders.size) lock.kind = null;
    pump();
  };
  // What no file tool or bash call may name: refused before anyone is asked (see the constants above).
  const check = (input, args) => {
    const outside = (where) => where !== root && !where.startsWith(root + path.sep);
    for (const written of pathsOf(input.tool, args)) {
      const where = path.isAbsolute(written) ? realOf(written) : real(path.resolve(directory, written));
      if (outside(where)) {
        // A file tool's refusal does not say where the path leads: that would tell what is there (a file that is a link).
        const said = input.tool === "bash" || input.tool === "list" ? " is " + where + "," : " leads";
        throw new Error("opencode-worker refused this " + input.tool + " call: " + written + said + " outside your workspace. Work only inside your own workspace.");
      }
    }
    const fileKey = FILE_PATH_ARGS[input.tool];
    const file = fileKey ? args[fileKey] : undefined;
    if (typeof file === "string" && file && notAFile(path.isAbsolute(file) ? file : path.resolve(directory, file))) {
      throw new Error("opencode-worker refused this " + input.tool + " call: " + file + " is not a regular file or folder (a FIFO, socket or device). Work only with ordinary files.");
    }
    if (typeof file === "string" && file && tooLarge(input.tool, path.isAbsolute(file) ? file : path.resolve(directory, file))) {
      throw new Error("opencode-worker refused this " + input.tool + " call: " + file + " is larger than " + READ_MAX_BYTES / 1048576 + " MiB. Read a part of it with a shell command (head, tail, sed -n, grep).");
    }
    if (typeof file === "string" && path.isAbsolute(file) && hasDotDot(file)) {
      const where = realOf(file);
      if (outside(where) || where !== real(file)) {
        throw new Error("opencode-worker refused this " + input.tool + " call: " + file + " is " + where + (outside(where) ? ", outside your workspace" : " (a symlink before its ..)") + ". Name the file by its path inside your workspace, without ..");
      }
    }
  };
  return {
    "tool.execute.before": async (input, output) => {
      const args = output.args ?? {};
      // The lock first, then the checks: no bash command of the workspace runs between them and the tool's own open
      // (one running beside them could swap a checked folder for a symlink, a file for a FIFO).
      const kind = kindOf(input.tool);
      if (kind && input.callID) await new Promise((resolve) => (lock.queue.push({ kind, id: input.callID, resolve }), pump()));
      try {
        check(input, args);
      } catch (err) {
        if (input.callID) release(input.callID);
        throw err;
      }
    },
    "tool.execute.after": async (input) => {
      if (input.callID) release(input.callID);
    },
    event: async ({ event }) => {
      const part = event?.type === "message.part.updated" ? event.properties?.part : null;
      if (part?.type === "tool" && part.callID && (part.state?.status === "completed" || part.state?.status === "error")) release(part.callID);
    },
    "shell.env": async (_input, output) => {
      output.env[WORKSPACE_VAR] = directory;
    },
  };
};
`;

export function writeWorkspacePlugin(file: string): string {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, WORKSPACE_PLUGIN);
  return file;
}

/**
 * The trusted per-repository part of the command sandbox, read by the worker shell (NUL-separated bubblewrap
 * arguments, in the engine's sandbox folder, which no worker can write): the engine's mirror of the repository's
 * objects (workspace.ts, mirror.ts) bound back read-only, so the workspace's `git log` and `git diff` work. Nothing of
 * the user's repository is named: its checkout, `.git` and object store are in no sandbox (the mirror is the engine's).
 */
export async function writeRepoBinds(bindsDir: string, worktree: string, mirror: string): Promise<void> {
  // Off the engine's thread: a batch's workers all write theirs at once, beside their workspaces' git (the sync calls
  // held the engine's thread ~2 ms each under that load, ~75 ms for 32, while their sessions waited to be asked for).
  const dir = await fsp.realpath(mirror).catch(() => null);
  const args = dir ? ["--ro-bind-try", dir, dir] : [];
  await fsp.mkdir(bindsDir, { recursive: true });
  await fsp.writeFile(path.join(bindsDir, path.basename(path.dirname(worktree))), args.map((a) => a + "\0").join(""));
}

interface WorkerShellOptions {
  workspacesRoot: string;
  tmpRoot: string;
  kind: SandboxKind;
  /** The engine's state dir: hidden whole from commands (opencode's database and log, other workers, the engine's). */
  stateDir?: string;
  /** Where the per-repository binds are (writeRepoBinds); default `<dirname(file)>/binds`. */
  bindsDir?: string;
  limits?: CommandLimits;
  home?: string;
  bash?: string;
  /** How a command's processes and memory are bound as a whole (cgroup.ts); default: limitSetup(). */
  cgroups?: LimitSetup;
}

/**
 * The shell opencode runs a worker's bash commands with (its SHELL). Each command gets its own sandbox, for the
 * workspace the engine fixed for the command's session — never the command's folder: opencode's plugin
 * (WORKSPACE_PLUGIN) names it in OCW_WORKSPACE, and a command whose folder (its `workdir`, symlinks resolved) is not
 * inside that workspace is refused. Inside: only that workspace and the worker's private tmp are writable; the whole
 * state dir (other workspaces, opencode's database and log), $HOME, /tmp, /run, /var/run, /media and /mnt are empty
 * size-limited tmpfs, with the toolchain allow-list and the engine's mirror of the repository's objects bound back read-only; no network;
 * an environment rebuilt from scratch; its own pid namespace (whatever it leaves running dies with it); the
 * per-process limits, a wall-clock budget and an output cap (CommandLimits).
 */
export function writeWorkerShell(file: string, opts: WorkerShellOptions): string {
  const root = real(opts.workspacesRoot);
  const named = path.resolve(opts.workspacesRoot);
  const tmpRoot = real(opts.tmpRoot);
  const binds = real(opts.bindsDir ?? path.join(path.dirname(file), "binds"));
  const bash = opts.bash ?? (existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh");
  const l = opts.limits ?? commandLimits();
  const env = allowListedEnv({
    TERM: "dumb",
    CI: "1",
    GIT_TERMINAL_PROMPT: "0",
    GIT_AUTHOR_NAME: "opencode-worker",
    GIT_AUTHOR_EMAIL: "opencode-worker@localhost",
    GIT_COMMITTER_NAME: "opencode-worker",
    GIT_COMMITTER_EMAIL: "opencode-worker@localhost",
  });
  delete env.SHELL;
  const setenv = Object.entries(env)
    .map(([k, v]) => `--setenv ${k} ${shq(v)}`)
    .join(" ");
  const refuse = (why: string) => `{ echo "opencode-worker: refused: ${why}" >&2; exit 126; }`;
  const lines = [
    "#!/bin/sh",
    "# Generated by opencode-worker: the worker's shell. Each command runs in its own sandbox (see engine/sandbox).",
    `root=${shq(root)}`,
    `named=${shq(named)}`,
    `tmproot=${shq(tmpRoot)}`,
    `binds=${shq(binds)}`,
    // The workspace comes from opencode (its plugin, per session), never from the command's folder.
    "ws_named=${OCW_WORKSPACE-}",
    'case "$ws_named" in',
    '  "$root"/*) rel=${ws_named#"$root"/} ;;',
    '  "$named"/*) rel=${ws_named#"$named"/} ;;',
    `  *) ${refuse("no worker workspace is named for this command (opencode-worker's plugin did not run)")} ;;`,
    "esac",
    // A workspace is exactly <root>/<repository>/<worker id>, taken from the named path as written (its subfolder may
    // be anything the worker made of it, a symlink included: only the two fixed components count).
    "repo=${rel%%/*}",
    "rest=${rel#*/}",
    "id=${rest%%/*}",
    `if [ "$rest" = "$rel" ] || [ -z "$repo" ] || [ "$repo" = . ] || [ "$repo" = .. ]; then ${refuse("not a workspace: $ws_named")}; fi`,
    `case "$id" in w-*) ;; *) ${refuse("not a workspace: $ws_named")} ;; esac`,
    'ws="$root/$repo/$id"',
    `if [ -L "$ws" ] || [ ! -d "$ws" ]; then ${refuse("no such workspace: $ws")}; fi`,
    `here=$(pwd -P) || ${refuse("the command's folder cannot be read")}`,
    `case "$here" in "$ws"|"$ws"/*) ;; *) ${refuse("the command's folder $here is outside this worker's workspace $ws (a workdir must be inside it)")} ;; esac`,
    'tmp="$tmproot/$id"',
    'mkdir -p "$tmp/home" 2>/dev/null',
    "extra=/dev/null",
    '[ -f "$binds/$repo" ] && extra="$binds/$repo"',
  ];
  if (opts.kind === "none") {
    lines.push(
      `exec env -i ${Object.entries(env)
        .map(([k, v]) => `${k}=${shq(v)}`)
        .join(" ")} HOME="$tmp/home" TMPDIR="$tmp" ${bash} "$@"`,
    );
  } else {
    const bwrap = sandboxStatus().bwrap!;
    const home = opts.home ?? os.homedir();
    const size = bwrapHasSize() ? `--size ${l.tmpfsMb * 1024 * 1024}` : "";
    const hide = [...deniedRoots(home), ...(opts.stateDir ? [real(opts.stateDir)] : []), root, tmpRoot].filter((p, i, a) => a.indexOf(p) === i);
    const hideArgs = hide.map((p) => `${size} --tmpfs ${shq(p)}`).join(" ");
    // Secrets inside the revealed toolchain folders stay hidden (a file bound over with /dev/null).
    const reveal = revealed(home);
    const secretsInside = homeSecrets(home).filter((s) => reveal.some((r) => s.startsWith(r + path.sep)));
    const revealArgs = [
      ...reveal.map((p) => `--ro-bind-try ${shq(p)} ${shq(p)}`),
      ...secretsInside.map((s) => (statSync(s).isDirectory() ? `--tmpfs ${shq(s)}` : `--ro-bind /dev/null ${shq(s)}`)),
    ].join(" ");
    const again = reshown(hide, reveal)
      .map((p) => `${size} --tmpfs ${shq(p)}`)
      .join(" ");
    const timeout = ["/usr/bin/timeout", "/bin/timeout"].find((t) => existsSync(t));
    const cg = opts.cgroups ?? limitSetup();
    const joined = !!cg.parents && (cg.commands === "cgroup1" || cg.commands === "cgroup2");
    if (joined && cg.parents) {
      // The command's own group under the engine's: made, limited and joined before bubblewrap starts (fail closed: a
      // command whose limits cannot be set does not run), emptied and removed after it.
      const set = limitFiles(cg, l.procs, l.memMb)
        .map((f) => {
          const target = `"$${f.file === "pids" ? "cgp" : "cgm"}/${f.name}"`;
          return f.optional ? `{ [ ! -e ${target} ] || echo ${f.value} > ${target}; }` : `echo ${f.value} > ${target}`;
        })
        .join(" && ");
      lines.push(
        `cgp=${shq(cg.parents.pids)}/"c-$id-$$"`,
        `cgm=${shq(cg.parents.memory)}/"c-$id-$$"`,
        `{ mkdir "$cgp" && { [ -d "$cgm" ] || mkdir "$cgm"; } && ${set}; } 2>/dev/null || { rmdir "$cgp" "$cgm" 2>/dev/null; ${refuse("its process and memory limits could not be set (cgroup)")}; }`,
        // Stopped from outside (opencode ends a command it gave up on): the group is emptied and removed all the same.
        'cgclean() { for g in "$cgp" "$cgm"; do i=0; while [ -d "$g" ] && ! rmdir "$g" 2>/dev/null && [ $i -lt 200 ]; do',
        '  [ -e "$g/cgroup.kill" ] && echo 1 > "$g/cgroup.kill" 2>/dev/null',
        '  while read -r p; do kill -9 "$p" 2>/dev/null; done < "$g/cgroup.procs"; i=$((i+1)); sleep 0.05',
        "done; done; }",
        "trap 'cgclean; exit 143' TERM INT HUP",
      );
    }
    const system = systemBinds().map(shq).join(" ");
    lines.push(
      "exec 3>&1",
      // The command's status comes back on fd 4; its output (stdout and stderr) goes through the cap to fd 3.
      `rc=$( { { ${joined ? `/bin/sh -c ${shq(JOIN_SCRIPT)} ocw-limits "$cgp" "$cgm" ` : ""}${timeout ? `${timeout} --foreground -k 5 ${l.wallSec} ` : ""}${shq(bwrap)} \\`,
      `  ${system} \\`,
      `  --dev /dev ${size} --tmpfs /dev/shm --remount-ro /dev --proc /proc --cap-drop ALL \\`,
      "  --unshare-pid --unshare-ipc --unshare-uts --unshare-net --die-with-parent --new-session \\",
      // The repository's part (the engine's mirror of its objects, read-only), after the state dir is hidden.
      `  ${hideArgs} --args 5 \\`,
      `  ${revealArgs} ${again} \\`,
      '  --bind "$ws" "$ws" --bind "$tmp" "$tmp" \\',
      `  --clearenv ${setenv} --setenv HOME "$tmp/home" --setenv TMPDIR "$tmp" --chdir "$here" \\`,
      `  -- ${bash} -c ${shq(limitsPrelude(l, bash.endsWith("bash")))} ${bash} "$@" 5<"$extra" 2>&1 3>&- 4>&-; echo $? >&4; } | ${capFilter(l.outputBytes)} >&3; } 4>&1 )`,
      timeout ? `[ "$rc" = 124 ] && echo "[opencode-worker: the command was stopped after its wall-clock budget of ${l.wallSec} s]"` : ":",
      ...(joined
        ? [
            // What reached a limit, said once; then every process left is killed and the group removed.
            `grep -qs '^oom_kill [1-9]' "$cgm/memory.oom_control" "$cgm/memory.events" && echo "[opencode-worker: the command reached its memory limit of ${l.memMb} MiB: a process was killed]"`,
            `grep -qs '^max [1-9]' "$cgp/pids.events" && echo "[opencode-worker: the command reached its process limit of ${l.procs}: a fork was refused]"`,
            "cgclean",
          ]
        : []),
      "exit ${rc:-1}",
    );
  }
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, lines.join("\n") + "\n");
  chmodSync(file, 0o755);
  return file;
}
