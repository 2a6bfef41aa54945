// What the desktop app runs to open a worker's workspace in an editor or a terminal (pure, so it is unit-tested without
// an Electron binary; electron/main.ts runs it). The folder itself always comes from the engine (workers.workspace),
// never from the page. Commands are argument lists, never a shell line.

export type OpenHow = "folder" | "editor" | "terminal";
export interface Launch {
  command: string;
  args: string[];
  /** The folder the process starts in (the workspace). */
  cwd: string;
}

/** Editors that draw in a terminal: opened from a GUI they need one around them. */
const TERMINAL_EDITORS = new Set(["vi", "vim", "nvim", "nano", "pico", "micro", "hx", "helix", "kak", "joe", "ne", "mg", "ed", "emacs -nw"]);

/** A $VISUAL / $EDITOR value as words (simple quotes honoured; no shell is ever run). */
export function words(s: string): string[] {
  const out: string[] = [];
  const re = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (let m = re.exec(s); m; m = re.exec(s)) out.push(m[1] ?? m[2] ?? m[3]!);
  return out;
}

const base = (p: string) =>
  p
    .split(/[\\/]/)
    .pop()!
    .replace(/\.exe$/i, "");

/**
 * The editor: $VISUAL, else $EDITOR, else VS Code's `code`. One that draws in a terminal (vim, nano…) is opened inside
 * the platform's terminal. `--wait`-style flags are kept: the process is detached, nothing waits on it.
 */
export function editorLaunches(dir: string, env: Record<string, string | undefined>, platform: string): Launch[] {
  const given = (env.VISUAL?.trim() || env.EDITOR?.trim()) ?? "";
  const w = words(given);
  if (!w.length) return [{ command: platform === "win32" ? "code.cmd" : "code", args: [dir], cwd: dir }];
  const [command, ...args] = w as [string, ...string[]];
  const name = base(command);
  if (TERMINAL_EDITORS.has(name) || (name === "emacs" && args.includes("-nw"))) return terminalLaunches(dir, env, platform, [command, ...args, dir]);
  return [{ command, args: [...args, dir], cwd: dir }];
}

/**
 * A terminal in the workspace, per platform, in the order tried (the first whose program exists runs): macOS Terminal
 * (`open -a Terminal DIR`); Windows Terminal, else cmd; on Linux and the BSDs $TERMINAL, then the common ones. `run`:
 * a command to run inside it (a terminal editor) instead of a shell.
 */
export function terminalLaunches(dir: string, env: Record<string, string | undefined>, platform: string, run?: string[]): Launch[] {
  if (platform === "darwin") {
    if (run) return [{ command: "open", args: ["-a", "Terminal", ...run.slice(-1)], cwd: dir }];
    return [{ command: "open", args: ["-a", "Terminal", dir], cwd: dir }];
  }
  if (platform === "win32")
    return [
      { command: "wt.exe", args: ["-d", dir, ...(run ?? [])], cwd: dir },
      { command: "cmd.exe", args: ["/c", "start", "", "/d", dir, "cmd.exe", ...(run ? ["/c", ...run] : ["/k"])], cwd: dir },
    ];
  const exec = run ?? [];
  const list: Launch[] = [];
  const t = words(env.TERMINAL ?? "");
  if (t.length) list.push({ command: t[0]!, args: [...t.slice(1), ...(run ? ["-e", ...run] : [])], cwd: dir });
  const known: [string, string[]][] = [
    ["x-terminal-emulator", run ? ["-e", ...exec] : []],
    ["gnome-terminal", [`--working-directory=${dir}`, ...(run ? ["--", ...exec] : [])]],
    ["konsole", ["--workdir", dir, ...(run ? ["-e", ...exec] : [])]],
    ["xfce4-terminal", [`--working-directory=${dir}`, ...(run ? ["-x", ...exec] : [])]],
    ["kitty", ["--directory", dir, ...exec]],
    ["alacritty", ["--working-directory", dir, ...(run ? ["-e", ...exec] : [])]],
    ["wezterm", ["start", "--cwd", dir, ...(run ? ["--", ...exec] : [])]],
    ["foot", ["-D", dir, ...exec]],
    ["xterm", run ? ["-e", ...exec] : []],
  ];
  for (const [command, args] of known) list.push({ command, args, cwd: dir });
  return list;
}

/** Every launch for `how` (a folder opens through the shell's own handler, not a command). */
export function launchesFor(how: Exclude<OpenHow, "folder">, dir: string, env: Record<string, string | undefined>, platform: string): Launch[] {
  return how === "editor" ? editorLaunches(dir, env, platform) : terminalLaunches(dir, env, platform);
}
