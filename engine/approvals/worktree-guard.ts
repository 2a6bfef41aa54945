// The worktree guard: shell commands that would write outside a worker's worktree are refused by the engine before
// anyone is asked. opencode's `external_directory: deny` catches path arguments (`touch /x`, `cp a /x`) but not the
// targets of redirections or `tee`/`dd of=` (measured with opencode 1.18.33: `echo x > /outside` is an ordinary bash
// ask, and approving it writes the file). This is a filter for the plain cases a model writes, not a sandbox: a
// command that builds its path at run time (`sh -c "$(…)"`, an interpreter's own file calls) still relies on the
// person who reads the ask.
import os from "node:os";
import path from "node:path";

/** Device files a command may always write to. */
const HARMLESS = /^\/dev\/(null|stdout|stderr|tty|fd\/\d+)$/;

/** Splits a command into words and operators, keeping quoted text (quotes removed) in one word. */
function tokenize(command: string): string[] {
  const tokens: string[] = [];
  let word = "";
  let quoted = false;
  const flush = () => {
    if (word || quoted) tokens.push(word);
    word = "";
    quoted = false;
  };
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!;
    if (c === "'" || c === '"') {
      const end = command.indexOf(c, i + 1);
      word += command.slice(i + 1, end < 0 ? undefined : end);
      quoted = true;
      i = end < 0 ? command.length : end;
    } else if (c === "\\" && i + 1 < command.length) word += command[++i];
    else if (/\s/.test(c)) flush();
    else if (c === ">" || c === "<" || c === "|" || c === ";" || c === "&") {
      // A redirection's fd number (`2>`) belongs to the operator.
      const fd = /^\d+$/.test(word) && c === ">" ? word : "";
      if (fd) word = "";
      flush();
      let op = fd + c;
      while (i + 1 < command.length && /[>&|]/.test(command[i + 1]!) && op.length < 4) op += command[++i];
      tokens.push(op);
    } else word += c;
  }
  flush();
  return tokens;
}

const isOperator = (t: string) => /^\d*[<>|;&]/.test(t);
const isRedirect = (t: string) => /^(\d*>{1,2}\|?|&>{1,2})$/.test(t);

/** Where a target names a file: `~` and `$HOME` expanded; other variables are left as they are (not resolvable). */
function resolveTarget(target: string, cwd: string): string | null {
  const home = os.homedir();
  const expanded = target.replace(/^~(?=\/|$)/, home).replace(/^\$\{?HOME\}?(?=\/|$)/, home);
  if (expanded.includes("$") || expanded.includes("`")) return null;
  return path.resolve(cwd, expanded);
}

/** The command without here-document bodies: their text is data (an HTML file's `<b>` is no redirection). */
function withoutHeredocBodies(command: string): string {
  const lines = command.split("\n");
  const kept: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    kept.push(line);
    for (const m of line.matchAll(/<<(-?)\s*(['"]?)([\w.-]+)\2/g)) {
      const strip = m[1] === "-";
      while (i + 1 < lines.length && (strip ? lines[i + 1]!.replace(/^\t+/, "") : lines[i + 1]) !== m[3]) i++;
      i++; // the delimiter line
    }
  }
  return kept.join("\n");
}

/** The files a shell command would write outside `worktree` (empty when it writes none there that this can see). */
export function writesOutside(command: string, worktree: string, workdir = worktree): string[] {
  const tokens = tokenize(withoutHeredocBodies(command));
  const targets: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    const next = tokens[i + 1];
    if (isRedirect(t) && next !== undefined && !isOperator(next)) targets.push(next);
    else if (t === "tee" && (i === 0 || isOperator(tokens[i - 1]!))) {
      for (let j = i + 1; j < tokens.length && !isOperator(tokens[j]!); j++) if (!tokens[j]!.startsWith("-")) targets.push(tokens[j]!);
    } else if (t.startsWith("of=")) targets.push(t.slice(3));
  }
  const root = path.resolve(worktree);
  const outside: string[] = [];
  for (const target of targets) {
    const file = resolveTarget(target, path.resolve(root, workdir));
    if (file === null || HARMLESS.test(file)) continue;
    if (file !== root && !file.startsWith(root + path.sep)) outside.push(target);
  }
  return [...new Set(outside)];
}
