// Opening a worker's workspace from the desktop app: the folder comes from the engine (workers.workspace validates
// that it is a workspace of the engine's), never from the page; the editor / terminal command is shared/open-with.ts.
// No `electron` import: main.ts passes shell.openPath in, so this runs in plain Node too.
import { spawn } from "node:child_process";
import { accessSync, constants, realpathSync, statSync } from "node:fs";
import path from "node:path";
import { launchesFor, type Launch, type OpenHow } from "../shared/open-with";
import type { EngineClient } from "../engine/api/client";

interface OpenResult {
  ok: boolean;
  path?: string;
  /** What ran (the program's name), or why nothing did. */
  detail: string;
}

/** The program on PATH (or as given, when it names a path) that can run, or null. */
function findProgram(command: string, env: NodeJS.ProcessEnv = process.env, platform = process.platform): string | null {
  const exts = platform === "win32" ? ["", ...(env.PATHEXT ?? ".EXE;.CMD;.BAT").split(";")] : [""];
  const ok = (p: string) => {
    try {
      accessSync(p, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (command.includes("/") || (platform === "win32" && command.includes("\\"))) return ok(command) ? command : null;
  for (const d of (env.PATH ?? "").split(path.delimiter).filter(Boolean))
    for (const e of exts) if (ok(path.join(d, command + e))) return path.join(d, command + e);
  return null;
}

function run(l: Launch, program: string, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, l.args, { cwd: l.cwd, env, detached: true, stdio: "ignore", shell: false, windowsHide: false });
    child.once("error", reject);
    child.once("spawn", () => {
      child.unref();
      resolve();
    });
  });
}

/** `dir` is a folder inside `root`, both as the kernel resolves them (no symlink out). */
function inside(root: string, dir: string): boolean {
  try {
    const r = realpathSync(root);
    const d = realpathSync(dir);
    return d !== r && d.startsWith(r + path.sep) && statSync(d).isDirectory();
  } catch {
    return false;
  }
}

export async function openWorker(
  client: Pick<EngineClient, "workers">,
  workerId: unknown,
  how: unknown,
  openPath: (p: string) => Promise<string>,
  env: NodeJS.ProcessEnv = process.env,
  platform: string = process.platform,
  workspaces?: string,
): Promise<OpenResult> {
  if (typeof workerId !== "string" || !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/.test(workerId)) return { ok: false, detail: "not a worker id" };
  if (how !== "folder" && how !== "editor" && how !== "terminal") return { ok: false, detail: "open a folder, an editor or a terminal" };
  let dir: string;
  let gitRuns: string[];
  try {
    const found = await client.workers.workspace.query({ workerId });
    dir = found.path;
    gitRuns = found.gitRuns ?? [];
  } catch (err) {
    return { ok: false, detail: (err as Error).message };
  }
  // Whatever answers on the engine's port is believed only about a folder of the person's own state dir: after the
  // engine moved (its port taken by another local user's server while it was down), a squatter answering here named
  // a folder of its own — opened in an editor or a file manager as the person, its git settings unchecked.
  if (workspaces !== undefined && !inside(workspaces, dir))
    return { ok: false, detail: "refused: the engine named a folder outside its workspaces (is the engine at its address still ours?)" };
  if (how === "folder") {
    const problem = await openPath(dir);
    return problem ? { ok: false, path: dir, detail: problem } : { ok: true, path: dir, detail: "the file manager" };
  }
  // An editor's git (VS Code runs `git status` on opening) or a terminal's prompt would run, as the person and outside
  // every sandbox, what the worker planted in its repository's git settings: not opened there.
  if (gitRuns.length)
    return {
      ok: false,
      path: dir,
      detail: `not opened in ${how === "editor" ? "an editor" : "a terminal"}: the worker's repository holds git settings that would run commands as you when git reads it (${gitRuns.slice(0, 4).join("; ")}${gitRuns.length > 4 ? `; ${gitRuns.length - 4} more` : ""}; the names are the worker's). Open the folder instead, or look at its graded change (its diff) first`,
    };
  const tried: string[] = [];
  for (const l of launchesFor(how as Exclude<OpenHow, "folder">, dir, env, platform)) {
    const program = findProgram(l.command, env, platform as NodeJS.Platform);
    if (!program) {
      tried.push(l.command);
      continue;
    }
    try {
      await run(l, program, env);
      return { ok: true, path: dir, detail: path.basename(l.command) };
    } catch (err) {
      tried.push(`${l.command} (${(err as Error).message})`);
    }
  }
  const hint = how === "editor" ? "set $VISUAL or $EDITOR, or install VS Code's `code` command" : "set $TERMINAL to your terminal";
  return { ok: false, path: dir, detail: `none of ${tried.join(", ")} could start: ${hint}` };
}
