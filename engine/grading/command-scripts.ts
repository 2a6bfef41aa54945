// The scripts of the checkout a check's command runs by name (`bash scripts/test.sh`, `./scripts/check`,
// `node scripts/run-tests.js`, `python3 tools/runtests.py`): what the check really runs, as a Makefile is to `make test`.
// Read conservatively from the command's words: an interpreter followed by a path, or a path to a program, both inside
// the checkout; a word with an expansion (`$X`, a glob, `~`) is not guessed at, but for a variable set on the line itself.
//
// Followed: an interpreter's script (`bash x`, `python3 -u x`, `node -r pre.js x`, `npx tsx x`), a path run as a program
// (`./scripts/check`), a shell's command line (`bash -c '…'`, `sh -ec '…'`, `bash -o pipefail -c '…'`, `env -S '…'`), a
// shell given its script on standard input (`bash < x`, `sh -s < x`, `cat x | bash`, `cat a b | sh -s`), the wrappers of
// WRAPPERS before any of these (`env -i X=1`, `sudo -E`, `busybox`, `nice -n 5`, `timeout 60`, `taskset 0x1`…), the
// reserved words a command may follow (`if bash x; then`, `! sh x`, `{ sh x; }`, `while …; do bash x; done`), a `cd` to
// a plain folder, package.json's scripts (`npm test`, `yarn x`), make's recipes (the Makefile's, or those of the files
// `-f` names, with the makefiles their `include` lines name plainly, read where the line stands, found in make's folder
// or its `-I` folders, a sub-make's inherited ones too, and first the files MAKEFILES names) and, inside a shell script,
// the shell scripts it runs or sources (by name, by `$(dirname "$0")`, or linked) and the package.json scripts and make
// recipes of the npm, yarn, pnpm or make it runs (read as if the check had named them).
// make's MAKEFLAGS, GNUMAKEFLAGS and MAKEFILES are read where the make's environment or command line sets them
// (`MAKEFILES=x.env make`, `make MAKEFLAGS=-Iconf`, or an earlier `export MAKEFLAGS=-Iconf;` of the line or script,
// exported or not) and passed on to the sub-makes of its recipes, with those its makefiles set (make passes MAKEFLAGS on,
// and exports MAKEFILES once a makefile sets it: `MAKEFILES = src/x.rules`, `MAKEFLAGS += -I$(D)`).
// A variable an earlier command of the same line or script set to a plain value (`S=scripts/test.sh; bash "$S"`,
// `export D=ci && sh $D/run.sh`) is read as that value; `eval '…'`, `su -c '…'` and `flock FILE [-c] …` as the command
// they run. So are the command `xargs` runs (`xargs -0 -n1 bash x`; the arguments it appends and the words holding its
// `-I` string are unknown), each `-exec CMD … ;` or `-exec CMD … {} +` of a `find` (`{}` unknown), `script -c '…'`,
// `watch [-x] …` and GNU `parallel CMD ::: …` (or `parallel ::: 'cmd' …`: each argument a command line).
// Not followed (a parser of the common forms, not a shell): what any other expansion names (`bash $SCRIPT` set outside
// the command, `$(which bash) x`, make's `$(MAKE) -f $(F)`, `include $(LOCAL)`), a script fed by another program than
// cat (`sed … | bash`, `curl … | sh`, `bash <(cat x)`, `tee`), aliases, a function called by name (its body is read
// where it is defined), a script `xargs` or `find` takes from its input (`xargs bash`, `find -exec bash {} \;`),
// `find -execdir`/`-ok`, `parallel` with `--`, `-I`, `--wd`, options but a few, or no `:::`, `script` without `-c`, other
// wrappers than these, make's pattern rules and variables, and a `cd` to anything but a plain folder. A here-document's
// lines are read as the line's own commands (what a shell given one runs). make's short options are read in getopt's
// clusters (`make -kC sub`, `-sfci.mk`).
// The worker writes these files: a script, package.json or makefile is read only when it is a regular file inside the
// checkout of at most MAX_READ_BYTES (files.ts: not through a link leading out, nor a device or FIFO), a make or npm command read
// again from the same folder at no lesser depth reads nothing new, and at most MAX_READ_CHARS are read in all.
import { lstatSync } from "node:fs";
import path from "node:path";
import { readInside, realInside } from "./files";
import { fromRun, MAKE_SHORT_VALUE, type MakeRun, makeflagsIncludeDirs, makeLongOption } from "./make-includes";

/** A script a check's command names: its path from the repository's root ("/"-separated), and the command that names it. */
export interface CommandScript {
  file: string;
  command: string;
  /** The shell script that runs or sources this one (its lines named it), when it is not the command's own word. */
  via?: string;
  /** Sourced (`. FILE`, `source FILE`): it runs inside the shell that sources it, and may end it (`exit 0`). */
  sourced?: boolean;
}

/** A shell word as written, or null when it holds an expansion (a variable, a command substitution, a glob, `~`). */
type Word = string | null;
/**
 * A simple command's words, with the file its standard input is redirected from (`< FILE`), when one is, and the simple
 * command whose output is piped into it (`cat x | bash`), when it is the right-hand side of a pipe.
 */
type Words = Word[] & { stdin?: string; piped?: Words };

/**
 * A shell command line split into simple commands (at `;`, `&`, `|`, newlines and parentheses), each a list of words,
 * with redirections and comments left out. Quotes are taken off; what the shell would expand makes the word null.
 */
export function simpleCommands(line: string): Words[] {
  const out: Words[] = [];
  let words: Words = [];
  let word = "";
  let inWord = false;
  let expands = false;
  /** An unquoted `{` in the word: a brace expansion (`{a,b}`, `x{1..3}`) when a comma or `..` stands between it and a `}`. */
  let brace = false;
  let redirect = false;
  let fromFile = false;
  /** The simple command before a `|` (not `||`), until the one after it is read. */
  let pipeFrom: Words | null = null;
  /**
   * Variables given a value by a command of assignments only (`S=scripts/test.sh; bash "$S"`, `export S=…`): the value
   * as written, or null where it expands. An assignment before a command (`S=x bash $S`) is not one: the shell expands
   * the command's words before it.
   */
  const vars = new Map<string, string | null>();
  /** Per word of the command: the variable it assigns (`NAME=…`), if it is an assignment. */
  let assigns: (string | undefined)[] = [];
  let assigning: string | undefined;
  const endWord = () => {
    if (brace && braceExpands(word)) expands = true;
    if (inWord) {
      if (redirect) {
        if (fromFile && !expands) words.stdin = word;
        redirect = false;
        fromFile = false;
      } else {
        words.push(expands ? null : word);
        assigns.push(assigning);
      }
    }
    word = "";
    inWord = false;
    expands = false;
    brace = false;
    assigning = undefined;
  };
  /** `$NAME` or `${NAME}` at `i` (the `$`): the variable's value as written and where its reference ends, when known. */
  const valueAt = (i: number): { value: string; end: number } | null => {
    const m = /^\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})/.exec(line.slice(i, i + 260));
    const value = m ? vars.get(m[1] ?? m[2]!) : undefined;
    return m && typeof value === "string" ? { value, end: i + m[0].length - 1 } : null;
  };
  const endCommand = () => {
    endWord();
    // The assignments of `S=x T=y`, or of `export S=x` (`declare -x S=x`: its options are no assignments).
    const declares = typeof words[0] === "string" && DECLARES.has(words[0]);
    const at = words.map((_, k) => k).filter((k) => !declares || (k > 0 && !words[k]?.startsWith("-")));
    if (at.length && at.every((k) => assigns[k] !== undefined))
      for (const k of at) vars.set(assigns[k]!, words[k] === null ? null : words[k]!.slice(assigns[k]!.length + 1));
    else if (words[0] === "unset") for (const w of words.slice(1)) if (w) vars.delete(w);
    assigns = [];
    if (words.length) {
      if (pipeFrom) words.piped = pipeFrom;
      pipeFrom = null;
      out.push(words);
    }
    words = [];
  };
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    /** A variable set on this line to a plain value, referenced here. */
    const known = c === "$" ? valueAt(i) : null;
    if (c === "\\") {
      if (line[i + 1] === "\n") i++;
      else {
        word += line[++i] ?? "";
        inWord = true;
      }
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      word += line.slice(i + 1, end < 0 ? line.length : end);
      inWord = true;
      i = end < 0 ? line.length : end;
    } else if (c === '"') {
      let j = i + 1;
      for (; j < line.length && line[j] !== '"'; j++) {
        const v = line[j] === "$" ? valueAt(j) : null;
        if (line[j] === "\\") word += line[++j] ?? "";
        else if (v) {
          word += v.value;
          j = v.end;
        } else {
          if (line[j] === "$" || line[j] === "`") expands = true;
          word += line[j];
        }
      }
      inWord = true;
      i = j;
    } else if (known) {
      // A variable an earlier command of this line set to a plain value: that value (a glob in it expands).
      if (/[*?[{~]/.test(known.value)) expands = true;
      word += known.value;
      inWord = true;
      i = known.end;
    } else if (c === "$" && (line[i + 1] === "(" || line[i + 1] === "{")) {
      // A substitution (`$(cmd)`, `$((1+1))`, `${X}`, make's `$(VAR)`): the word expands; its inside is not read.
      let depth = 0;
      for (i++; i < line.length; i++) {
        if (line[i] === "(" || line[i] === "{") depth++;
        else if ((line[i] === ")" || line[i] === "}") && --depth === 0) break;
      }
      expands = true;
      inWord = true;
    } else if (c === "#" && !inWord) {
      while (i < line.length && line[i] !== "\n") i++;
      endCommand();
    } else if (c === "|") {
      // A pipe (`|`, `|&`) hands its left side's output to the next simple command; `||` does not.
      const left = inWord || words.length ? words : null;
      endCommand();
      if (line[i + 1] === "|") {
        i++;
        pipeFrom = null;
      } else {
        if (line[i + 1] === "&") i++;
        pipeFrom = left && out[out.length - 1] === left ? left : null;
      }
    } else if (c === "\n" && pipeFrom && !inWord && !words.length) {
      // `cat x |` at a line's end: the pipe goes on on the next line.
    } else if (";&\n()".includes(c)) {
      endCommand();
      pipeFrom = null;
    } else if (c === "<" || c === ">") {
      // A redirection: a file descriptor's number before it is no word, and the word after it is its target.
      if (inWord && /^\d+$/.test(word)) {
        word = "";
        inWord = false;
      } else endWord();
      // `< FILE` alone is what the command reads (`bash < scripts/test.sh` runs it); `<<`, `<<<`, `<&`, `<>` are not.
      fromFile = c === "<" && !["<", "&", ">", "("].includes(line[i + 1] ?? "");
      while (line[i + 1] === ">" || line[i + 1] === "<" || line[i + 1] === "&") i++;
      redirect = true;
    } else if (c === " " || c === "\t") endWord();
    else {
      if (c === "=" && assigning === undefined && !expands && /^[A-Za-z_][A-Za-z0-9_]*$/.test(word)) assigning = word;
      if ("$`*?[~".includes(c)) expands = true;
      if (c === "{") brace = true;
      word += c;
      inWord = true;
    }
  }
  endCommand();
  return out;
}

/**
 * Whether a word holds a brace expansion: a `{` and then, before any other brace, a comma or `..` and a `}`. (A loop,
 * not a regular expression: a worker's `{,,,…` of 200,000 commas took the expression 20 s.)
 */
function braceExpands(word: string): boolean {
  let open = false;
  let sep = false;
  for (let i = 0; i < word.length; i++) {
    const c = word[i];
    if (c === "{") {
      open = true;
      sep = false;
    } else if (c === "}") {
      if (open && sep) return true;
      open = false;
    } else if (open && (c === "," || (c === "." && word[i + 1] === "."))) sep = true;
  }
  return false;
}

/** The shell's reserved words that may stand before a simple command, at its start. */
const RESERVED = new Set(["if", "then", "elif", "else", "do", "while", "until", "!", "{"]);
/** Builtins whose words are assignments (`export S=x`): they set variables as a bare `S=x` does. */
const DECLARES = new Set(["export", "readonly", "declare", "typeset", "local"]);
const SHELLS = new Set(["bash", "sh", "dash", "zsh", "ksh", "ash", "mksh", "source", "."]);
const PYTHON = /^(python[\d.]*|pypy[\d.]*)$/;
const NODE = new Set(["node", "nodejs"]);
const TS_RUNNERS = new Set(["tsx", "ts-node", "ts-node-esm", "babel-node"]);
const OTHER = new Set(["ruby", "perl", "php", "rscript", "lua", "pwsh", "tclsh"]);
/** Options (per interpreter) whose value is the next word. */
const PY_VALUE = new Set(["-W", "-X", "-Q"]);
const NODE_VALUE = new Set([
  "-C",
  "--conditions",
  "--input-type",
  "--title",
  "--stack-size",
  "--inspect-port",
  "--test-reporter",
  "--test-reporter-destination",
]);
/** Node options whose value is a file Node runs or reads before the script (a preload, a loader, an env file setting NODE_OPTIONS). */
const NODE_FILE = new Set(["-r", "--require", "--import", "--loader", "--experimental-loader", "--env-file"]);
const OTHER_VALUE = new Set(["-I", "-r", "-M", "-d"]);
/**
 * Wrappers that run the rest of the words as a command (`env X=1 cmd`, `timeout 60 cmd`, `sudo -E cmd`, `busybox sh x`):
 * each with its options whose value is the next word, and whether an operand comes before the command (timeout's
 * duration, taskset's mask).
 */
const WRAPPERS: Record<string, { values: string[]; operand?: true }> = {
  env: { values: ["-u", "-C", "--unset", "--chdir"] },
  exec: { values: ["-a"] },
  command: { values: [] },
  builtin: { values: [] },
  time: { values: ["-f", "-o", "--format", "--output"] },
  nice: { values: ["-n", "--adjustment"] },
  nohup: { values: [] },
  timeout: { values: ["-s", "-k", "--signal", "--kill-after"], operand: true },
  stdbuf: { values: ["-i", "-o", "-e", "--input", "--output", "--error"] },
  "xvfb-run": { values: ["-n", "-s", "-e", "-f", "-p", "-w", "--server-num", "--server-args", "--error-file", "--auth-file", "--xauth-protocol", "--wait"] },
  sudo: {
    values: [
      "-u",
      "-g",
      "-C",
      "-D",
      "-h",
      "-p",
      "-r",
      "-t",
      "-T",
      "-U",
      "--user",
      "--group",
      "--close-from",
      "--chdir",
      "--host",
      "--prompt",
      "--role",
      "--type",
      "--command-timeout",
      "--other-user",
    ],
  },
  doas: { values: ["-u", "-C"] },
  busybox: { values: [] },
  setsid: { values: [] },
  ionice: { values: ["-c", "-n", "--class", "--classdata"] },
  taskset: { values: [], operand: true },
  // `flock [-w 5] FILE cmd …` or `flock FILE -c '…'` (the command line after -c: commandStart).
  flock: { values: ["-w", "--wait", "--timeout", "-E", "--conflict-exit-code"], operand: true },
  chronic: { values: [] },
  unbuffer: { values: [] },
};
const wrapperOf = (w: string) => (Object.hasOwn(WRAPPERS, path.posix.basename(w)) ? path.posix.basename(w) : null);

/**
 * Where a simple command's program is among its words, past assignments and wrappers (their options, a timeout's
 * duration): `at`, its index; `split`, the command line an `env -S '…'` (or `-Sbash …`, `--split-string=…`, after other
 * options) makes of its string and the words after it; null when an expansion hides it.
 */
function commandStart(words: Word[]): { at: number } | { split: string } | null {
  let i = 0;
  // `if bash x; then …`, `! sh x`, `{ sh x; }`, `while …; do bash x; done`: the reserved words a command may follow.
  while (typeof words[i] === "string" && RESERVED.has(words[i]!)) i++;
  for (;;) {
    const w = words[i];
    if (typeof w !== "string") return null;
    const wrapper = wrapperOf(w);
    if (/^[A-Za-z_]\w*=/.test(w)) {
      i++;
      continue;
    }
    if (w === "eval" || path.posix.basename(w) === "su") {
      // `eval '…'` runs its words joined as a command line; `su [user] -c '…'` (`--command=…`) runs its -c string.
      const rest = words.slice(i + 1);
      if (rest.some((x) => x === null)) return null;
      if (w === "eval") return rest.length ? { split: rest.join(" ") } : null;
      const c = rest.findIndex((x) => x === "-c" || x === "--command" || x!.startsWith("--command="));
      const line = c < 0 ? undefined : rest[c]!.startsWith("--command=") ? rest[c]!.slice("--command=".length) : rest[c + 1];
      return typeof line === "string" ? { split: line } : null;
    }
    // `xargs CMD`, `find … -exec CMD {} +`, `script -c '…'`, `watch CMD`, `parallel CMD ::: …` (by their bare name or an
    // absolute path: `./script` is the project's own program): the command they run.
    const runner = !w.includes("/") || w.startsWith("/") ? path.posix.basename(w) : "";
    if (Object.hasOwn(RUNNERS, runner)) return RUNNERS[runner]!(words.slice(i + 1));
    if (!wrapper) return { at: i };
    i++;
    if (wrapper === "env") {
      let k = i;
      while (typeof words[k] === "string" && words[k]!.startsWith("-") && !/^(-S|--split-string)/.test(words[k]!)) k++;
      const flag = words[k];
      if (typeof flag === "string" && /^(-S|--split-string)/.test(flag)) {
        const whole = flag === "-S" || flag === "--split-string";
        const value = whole ? words[k + 1] : flag.replace(/^(-S|--split-string=)/, "");
        const after = words.slice(k + (whole ? 2 : 1));
        if (typeof value !== "string" || after.some((x) => x === null)) return null;
        return { split: [value, ...after].join(" ") };
      }
    }
    const { values, operand } = WRAPPERS[wrapper]!;
    while (typeof words[i] === "string" && words[i]!.startsWith("-") && words[i] !== "-") {
      const o = words[i++]!;
      if (o === "--") break;
      if (values.includes(o)) i++;
    }
    if (operand && typeof words[i] === "string") i++;
    if (wrapper === "flock" && (words[i] === "-c" || words[i] === "--command")) return typeof words[i + 1] === "string" ? { split: words[i + 1]! } : null;
  }
}

/**
 * Text the command-line parser cannot know (what `xargs -I{}` or `find -exec … {}` puts in a word): a word holding it names
 * no file (a path cannot hold a NUL), and a `cd` to one ends the reading.
 */
const UNKNOWN = "\u0000";

/**
 * A word as a command line would write it (single-quoted), for a program that runs its words as they are (xargs, find
 * -exec): `unknown`, the text that program puts in its place (`{}`), is UNKNOWN; an expansion is `"$_"` (null again).
 */
const quoted = (w: Word, unknown?: string): string => (w === null ? '"$_"' : `'${(unknown ? w.split(unknown).join(UNKNOWN) : w).replaceAll("'", "'\\''")}'`);

/**
 * A program's options (getopt's way: `-abc` clusters, `--name=value`): `flags` take no value, `values` the rest of their
 * cluster or the next word, `optional` only the rest of their cluster (or `=…`); long ones likewise. Calls `seen` with
 * each option and its value; returns the index of the first operand, or null for an option it does not know or an
 * expansion among them (what it is cannot be told). Options end at the first operand (`+` in getopt's string), or `--`.
 * `from`: the index to start at (the index returned counts from 0 still).
 */
function options(
  args: Word[],
  spec: { flags: string; values: string; optional?: string; long: Record<string, "flag" | "value" | "optional"> },
  seen: (option: string, value: Word | undefined) => void = () => {},
  from = 0,
): number | null {
  let i = from;
  for (; i < args.length; i++) {
    const w = args[i];
    if (typeof w !== "string") return null;
    if (w === "--") return i + 1;
    if (!w.startsWith("-") || w === "-") return i;
    if (w.startsWith("--")) {
      const eq = w.indexOf("=");
      const name = eq < 0 ? w : w.slice(0, eq);
      const kind = Object.hasOwn(spec.long, name) ? spec.long[name] : undefined;
      if (!kind || (kind === "flag" && eq >= 0)) return null;
      if (kind === "value" && eq < 0 && i + 1 >= args.length) return null;
      seen(name, eq >= 0 ? w.slice(eq + 1) : kind === "value" ? args[++i] : undefined);
      continue;
    }
    for (let k = 1; k < w.length; k++) {
      const c = w[k]!;
      const rest = w.slice(k + 1);
      if (spec.flags.includes(c)) seen(`-${c}`, undefined);
      else if (spec.optional?.includes(c)) {
        seen(`-${c}`, rest || undefined);
        break;
      } else if (spec.values.includes(c)) {
        if (!rest && i + 1 >= args.length) return null;
        seen(`-${c}`, rest || args[++i]);
        break;
      } else return null;
    }
  }
  return i;
}

/** GNU xargs: the command after its options (echo when none: nothing to read), run with the arguments it appends. */
function xargsCommand(args: Word[]): { split: string } | null {
  let replace: string | null | undefined;
  const at = options(
    args,
    {
      flags: "0rtpxo",
      values: "adEILnPs",
      optional: "eil",
      long: {
        "--null": "flag",
        "--no-run-if-empty": "flag",
        "--verbose": "flag",
        "--interactive": "flag",
        "--exit": "flag",
        "--open-tty": "flag",
        "--arg-file": "value",
        "--delimiter": "value",
        "--max-args": "value",
        "--max-procs": "value",
        "--max-chars": "value",
        "--process-slot-var": "value",
        "--eof": "optional",
        "--replace": "optional",
        "--max-lines": "optional",
      },
    },
    (o, v) => {
      // `-I R`, `-iR`, `--replace[=R]` (`{}` by default): R in the command's words is what each input line puts there.
      if (o === "-I" || o === "-i" || o === "--replace") replace = v === undefined ? "{}" : v || null;
    },
  );
  if (at === null || replace === null || at >= args.length) return null;
  const unknown = replace ?? undefined;
  return {
    split: args
      .slice(at)
      .map((w) => quoted(w, unknown))
      .join(" "),
  };
}

/**
 * find's `-exec CMD … ;` and `-exec CMD … {} +`, each one of the line (`{}`, the files found, unknown); `-execdir` (run from
 * each file's folder) and `-ok` (asks first) are not read, nor anything of a find whose `-exec` has no end (it runs nothing).
 */
function findCommands(args: Word[]): { split: string } | null {
  const lines: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const w = args[i];
    if (w !== "-exec" && w !== "-execdir" && w !== "-ok" && w !== "-okdir") continue;
    let end = i + 1;
    while (end < args.length && args[end] !== ";" && !(args[end] === "+" && end > i + 2 && args[end - 1] === "{}")) end++;
    if (end >= args.length) return null;
    if (w === "-exec" && end > i + 1)
      lines.push(
        args
          .slice(i + 1, end)
          .map((x) => quoted(x, "{}"))
          .join(" "),
      );
    i = end;
  }
  return lines.length ? { split: lines.join("\n") } : null;
}

/** util-linux script: the command line its `-c` (`--command`) gives the shell it starts; without one, an interactive shell (not read). */
function scriptCommand(args: Word[]): { split: string } | null {
  let command: Word | undefined;
  // Its options come before or after the typescript file (getopt moves them): read them all.
  // (Read in place, not from a copy of the rest at each operand: a worker's `script a a a …` of 100,000 words took 77 s.)
  for (let i = 0; i < args.length; ) {
    const at = options(
      args,
      {
        flags: "aefqhV",
        values: "cEBIOTmo",
        optional: "t",
        long: {
          "--append": "flag",
          "--return": "flag",
          "--flush": "flag",
          "--force": "flag",
          "--quiet": "flag",
          "--command": "value",
          "--echo": "value",
          "--log-io": "value",
          "--log-in": "value",
          "--log-out": "value",
          "--log-timing": "value",
          "--logging-format": "value",
          "--output-limit": "value",
          "--timing": "optional",
        },
      },
      (o, v) => {
        if (o === "-c" || o === "--command") command = v;
      },
      i,
    );
    if (at === null) return typeof command === "string" ? { split: command } : null;
    if (at > i && args[at - 1] === "--") break;
    i = at + 1;
  }
  return typeof command === "string" ? { split: command } : null;
}

/** procps watch: its words after its options, joined as the command line it gives `sh -c` (`-x`: run as they are). */
function watchCommand(args: Word[]): { split: string } | null {
  let exec = false;
  const at = options(
    args,
    {
      flags: "bcCeghprtwxv",
      values: "nq",
      optional: "d",
      long: {
        "--beep": "flag",
        "--color": "flag",
        "--no-color": "flag",
        "--errexit": "flag",
        "--chgexit": "flag",
        "--precise": "flag",
        "--no-rerun": "flag",
        "--no-title": "flag",
        "--no-wrap": "flag",
        "--exec": "flag",
        "--interval": "value",
        "--equexit": "value",
        "--differences": "optional",
      },
    },
    (o) => {
      if (o === "-x" || o === "--exec") exec = true;
    },
  );
  const rest = at === null ? [] : args.slice(at);
  if (!rest.length) return null;
  if (exec) return { split: rest.map((w) => quoted(w)).join(" ") };
  return rest.every((w) => typeof w === "string") ? { split: rest.join(" ") } : null;
}

/**
 * GNU parallel, when its inputs follow `:::` on the line: the command before them, its words joined as the command line
 * it gives the shell (a replacement string, `{}`, `{.}`, `{1}`, unknown), or with no command each argument of a single
 * `:::` as a command line. A few options only; `--` (moreutils' parallel reads the line otherwise), `-I`, `--wd`, remote
 * logins and the rest leave it unread.
 */
function parallelCommand(args: Word[]): { split: string } | null {
  const at = options(args, {
    flags: "kvu0",
    values: "jPnNL",
    long: Object.fromEntries([
      ...[
        "--keep-order",
        "--tag",
        "--verbose",
        "--progress",
        "--bar",
        "--eta",
        "--dry-run",
        "--will-cite",
        "--no-notice",
        "--ungroup",
        "--line-buffer",
        "--lb",
        "--group",
        "--null",
      ].map((o) => [o, "flag" as const]),
      ...[
        "--jobs",
        "--max-procs",
        "--max-args",
        "--max-replace-args",
        "--max-lines",
        "--timeout",
        "--retries",
        "--delay",
        "--joblog",
        "--halt",
        "--results",
        "--res",
        "--tagstring",
      ].map((o) => [o, "value" as const]),
    ]),
  });
  if (at === null || args[at - 1] === "--") return null;
  const rest = args.slice(at);
  const sep = rest.findIndex((w) => typeof w === "string" && /^::::?\+?$/.test(w));
  if (sep < 0 || rest.includes("--")) return null;
  const command = rest.slice(0, sep);
  if (command.length) {
    if (command.some((w) => w === null)) return null;
    return { split: command.map((w) => w!.replace(/\{[^{}]*\}/g, UNKNOWN)).join(" ") };
  }
  const inputs = rest.slice(sep + 1);
  if (rest[sep] !== ":::" || inputs.some((w) => typeof w === "string" && /^::::?\+?$/.test(w))) return null;
  const lines = inputs.filter((w): w is string => typeof w === "string");
  return lines.length ? { split: lines.join("\n") } : null;
}

/** The programs that run a command of their words in a way of their own (commandStart). */
const RUNNERS: Record<string, (args: Word[]) => { split: string } | null> = {
  xargs: xargsCommand,
  find: findCommands,
  script: scriptCommand,
  watch: watchCommand,
  parallel: parallelCommand,
};

/** The files a simple command runs, and whether it is a shell that reads its script from standard input (`bash -s`, `sh`). */
type Files = string[] & { fromStdin?: boolean };

/** Whether a word names a file by path (not a bare name looked up on PATH, an installed package or an option). */
const pathLike = (w: string) => w.includes("/") || /\.(sh|bash|zsh|js|mjs|cjs|ts|mts|cts|tsx|jsx|py|rb|pl|php|r|lua|ps1|tcl)$/i.test(w);

/**
 * The files a simple command's words run, as paths from the checks' folder as written: the script an interpreter is
 * given (and Node's preloads), a path run as a program, and the commands a `sh -c '…'` holds (`recurse`).
 */
function scriptWords(words: Word[], recurse: (line: string) => string[]): Files {
  const start = commandStart(words);
  if (!start) return [];
  if ("split" in start) return recurse(start.split);
  let i = start.at;
  const next = () => words[i];
  const program = next();
  if (typeof program !== "string") return [];
  i++;
  const name = path.posix.basename(program).toLowerCase();
  const out: Files = [];
  /** The first word after the interpreter's options (`takesValue`: options whose value is the next word). */
  const firstArg = (takesValue: (o: string) => boolean, stop: (o: string) => boolean, file?: (o: string) => boolean): string | null => {
    while (i < words.length) {
      const w = words[i];
      if (w === null || w === undefined) return null;
      if (w === "--") return typeof words[i + 1] === "string" ? words[i + 1]! : null;
      if (!w.startsWith("-") || w === "-") return w === "-" ? null : w;
      if (stop(w)) return null;
      const eq = w.indexOf("=");
      if (file && eq > 0 && file(w.slice(0, eq))) out.push(w.slice(eq + 1));
      if (file?.(w) && typeof words[i + 1] === "string") out.push(words[i + 1]!);
      if (takesValue(w) || file?.(w)) i++;
      i++;
    }
    return null;
  };
  if (SHELLS.has(name)) {
    // A shell's options: clusters (`-euo pipefail`, `-ec`), where each `o`/`O` takes the next word (`+o posix` too);
    // `--rcfile FILE` and `--init-file FILE` (an interactive shell's) take one; `-c`, alone or in a cluster, makes the
    // first word after them a command line; `-s` (or no script at all) reads the script from standard input.
    let command = false;
    let stdin = false;
    for (; i < words.length; i++) {
      const w = words[i];
      if (typeof w !== "string") return out;
      if (w === "--" || w === "-") {
        i++;
        break;
      }
      if (!/^[-+]./.test(w)) break;
      if (w.startsWith("--")) {
        if (w === "--rcfile" || w === "--init-file") i++;
        continue;
      }
      if (w[0] === "-" && w.includes("c")) command = true;
      if (w[0] === "-" && w.includes("s")) stdin = true;
      i += (w.match(/[oO]/g) ?? []).length;
    }
    const operand = words[i];
    if (command) return typeof operand === "string" ? recurse(operand) : [];
    if (typeof operand === "string" && !stdin) out.push(operand);
    else if (operand !== null && name !== "." && name !== "source") out.fromStdin = true;
  } else if (PYTHON.test(name)) {
    const script = firstArg(
      (o) => PY_VALUE.has(o),
      (o) => /^-[bBdEhiIOPqsSuvV]*[cm]/.test(o),
    );
    if (script) out.push(script);
  } else if (NODE.has(name) || TS_RUNNERS.has(name)) {
    const script = firstArg(
      (o) => NODE_VALUE.has(o),
      (o) => ["-e", "--eval", "-p", "--print", "--test", "--run"].includes(o),
      (o) => NODE_FILE.has(o),
    );
    if (script) out.push(script);
    // A preload named as an installed package (`-r ts-node/register`) is no file of the checkout.
    return out.filter((f) => f === script || f.startsWith(".") || /\.[cm]?[jt]s$/.test(f));
  } else if (name === "bun" || name === "deno") {
    if (next() === "run") i++;
    else if (name === "deno" || next() === "test") return [];
    const script = firstArg(
      () => false,
      () => false,
    );
    if (script && pathLike(script)) out.push(script);
  } else if (OTHER.has(name)) {
    const script = firstArg(
      (o) => OTHER_VALUE.has(o),
      (o) => o === "-e" || o === "-E" || o === "-r" || o === "-c",
    );
    if (script) out.push(script);
  } else if (name === "npx" || name === "pnpx") {
    while (typeof next() === "string" && next()!.startsWith("-")) i++;
    return typeof next() === "string" && TS_RUNNERS.has(next()!) ? scriptWords(words.slice(i), recurse) : [];
  } else if (program.includes("/")) out.push(program);
  return out;
}

/**
 * The files of the checkout the checks' commands run by name (`commands`, run in `sub`, the checks' folder from the
 * repository's root), each with the command. A `cd` to a plain relative folder moves where later words are read from;
 * one to anything else ends the reading of that command. Paths outside the checkout (absolute, or above its root) are
 * left out: they are not the worker's. The package.json scripts `npm test`, `npm run X`, `yarn X` and `pnpm X` run
 * (read from `checkout`, as committed) are read the same way.
 */
export function commandScripts(commands: string[], sub: string, checkout?: string): CommandScript[] {
  return readCommands(commands, sub, checkout).scripts;
}

/**
 * The makes the checks' commands run (`commands`, run in `sub`), read as commandScripts reads them (a `cd`, a recipe's
 * `make -C sub`, a script's `make`): each one's folder, the makefiles `-f` names and the folders of its search path for
 * included makefiles (makeIncludes), from the repository's root. One whose options cannot be told (a word that expands)
 * is taken as a plain `make` in its folder.
 */
export function makeRuns(commands: string[], sub: string, checkout: string): MakeRun[] {
  return readCommands(commands, sub, checkout).runs.map(({ goals: _, ...run }) => run);
}

/**
 * The makes the commands run (makeRuns), each with the goals its command line names (`make -C src test check`: test and
 * check; none where it names none, or where they cannot be told: then its default goal), for makeFacts' goals.
 */
export function makeGoalRuns(commands: string[], sub: string, checkout: string): MakeRun[] {
  return readCommands(commands, sub, checkout).runs;
}

/**
 * What a check's command line (`line`, run in `sub`) writes by other programs than its makes, as far as a namesake of a
 * make goal it writes can be told to be the person's own (checks.ts):
 * - `compiled`: the files its trusted compilers' last `-o` names (paths from the repository's root), or that a C-family one
 *   writes without it (implicitOutputs: `cc -c x.c` writes `x.o`): `cc`, `gcc`, `g++`,
 *   `c++`, `clang`, `clang++` (a version suffix too: `gcc-12`), `rustc`, `go build`, by a bare name that `trusted` finds
 *   on the checks' PATH outside the worker's files. A compiler reads the worker's sources, and runs none of them. None
 *   where the line may change what such a name runs (a file sourced, `eval`, `alias`, `hash`, `enable`, a function
 *   defined, PATH set), and none whose folder cannot be told (a `cd` to anything but a plain folder, a `cd` beside a
 *   subshell's parentheses).
 * - `others`: the first program it runs besides make, those compilers and the builtins of QUIET (a worker's program, a
 *   script, a program run through a variable or a wrapper's command line, a command substitution), or null: what that
 *   one writes cannot be told from what make or a compiler wrote.
 * - `rewritable`: those of `compiled` after whose last compile the line runs a program of `others`' kind or a make, which
 *   could write them again (`cc -o t t.c && ./t`): the compiler's output is not surely what is there when the check ends.
 * - `andOnly`: its commands are joined by `&&` alone (no `;`, `||`, `|`, `&`, newline, `!` or `trap`): when the check
 *   passes, every one of them ran and succeeded, so each compiler wrote its output.
 * - `makes`: it runs make itself (whose recipes run what they run).
 */
export function checkWriters(
  line: string,
  sub: string,
  trusted: (compiler: string) => boolean,
): { compiled: string[]; rewritable: string[]; others: string | null; andOnly: boolean; makes: boolean } {
  const shape = lineShape(line);
  let others: string | null = shape.substitutes ? "a command substitution" : null;
  let andOnly = shape.andOnly;
  let makes = false;
  // A function defined on the line (`cc() { …; }`, `function cc`): its name runs it.
  let voided = /(^|[\s;&|(){}])(function\s+\S|[\w.:+-]+\s*\(\s*\))/.test(line);
  const compiled: string[] = [];
  // What a command run after its compile could have written again (a command substitution's runs where the line runs it).
  const rewritable = new Set<string>();
  let at: string | null = sub;
  let sawCd = false;
  const other = (what: string) => {
    others ??= what;
    for (const f of compiled) rewritable.add(f);
  };
  for (const words of simpleCommands(line)) {
    if (words[0] === "!" || words[0] === "trap") andOnly = false;
    const lead = words.findIndex((w) => typeof w !== "string" || !RESERVED.has(w));
    if (lead < 0) continue;
    const set = assignedOnly(words.slice(lead));
    if (set) {
      if (set.some(([name]) => name === "PATH") || words.slice(lead).some((w) => w === null)) voided = true;
      continue;
    }
    const start = commandStart(words);
    if (!start || !("at" in start)) {
      voided = true;
      other(start ? "a command a wrapper runs from its string" : "a program named through an expansion");
      continue;
    }
    const before = words.slice(0, start.at);
    if (before.some((w) => w === null || /^PATH=/.test(w))) voided = true;
    const prog = words[start.at];
    if (typeof prog !== "string") {
      other("a program named through an expansion");
      continue;
    }
    const args = words.slice(start.at + 1);
    if (prog === "cd" || prog === "pushd" || prog === "popd") {
      sawCd = true;
      const to = args[0];
      at =
        prog === "cd" && at !== null && typeof to === "string" && !to.startsWith("/") && to !== "-" && !to.includes(UNKNOWN)
          ? path.posix.normalize(path.posix.join(at || ".", to))
          : null;
      if (at === ".") at = "";
      if (at?.startsWith("..")) at = null;
      continue;
    }
    if (SHELL_CHANGERS.has(prog)) {
      voided = true;
      other(prog);
      continue;
    }
    if (prog === "make" || prog === "gmake") {
      makes = true;
      for (const f of compiled) rewritable.add(f);
      continue;
    }
    if (QUIET.has(prog)) continue;
    const kind = COMPILER.test(prog) ? "cc" : prog === "rustc" ? "rustc" : prog === "go" && args[0] === "build" ? "go" : null;
    if (!kind || !trusted(prog)) {
      other(prog);
      continue;
    }
    // Nothing known written where it writes nothing (`cc -###`, `go build -n`: the commands printed, none run) or reads
    // more words from a file (`@args`: a worker's, possibly, with an `-o` of its own).
    if (args.some((w) => typeof w === "string" && (w.startsWith("@") || (kind === "cc" && w === "-###") || (kind === "go" && w === "-n")))) continue;
    // Its last `-o` alone: gcc, clang and go write that one (`cc -c -o a.o -o b.o x.c` writes b.o), whatever came before.
    let last: string | null | undefined;
    for (let k = kind === "go" ? 1 : 0; k < args.length; k++) {
      const w = args[k];
      if (w === "-o") last = k + 1 < args.length ? args[++k] : null;
      else if (typeof w === "string" && kind === "cc" && /^-o./.test(w)) last = w.slice(2);
      else if (typeof w === "string" && kind === "go" && w.startsWith("-o=")) last = w.slice(3);
    }
    const outs =
      last !== undefined
        ? typeof last !== "string" || !last || last.startsWith("/") || last.startsWith("~") || last.includes(UNKNOWN)
          ? []
          : [last]
        : kind === "cc"
          ? implicitOutputs(args)
          : [];
    if (at !== null)
      for (const out of outs) {
        const file = fromRun(at, out);
        if (!file) continue;
        compiled.push(file);
        rewritable.delete(file);
      }
  }
  const out = voided || (sawCd && shape.parens) ? [] : [...new Set(compiled)];
  return { compiled: out, rewritable: shape.substitutes ? out : out.filter((f) => rewritable.has(f)), others, andOnly, makes };
}

/** The C-family sources a compiler takes by their suffix (gcc's list), and whether `-S` makes assembly of them. */
const CC_SOURCE = /\.(c|i|ii|cc|cp|cxx|cpp|CPP|c\+\+|C|m|mi|mm|M|mii)$/;
const CC_ASSEMBLY = /\.(s|S|sx)$/;
/** A C-family compiler's options whose value is the next word (`-I inc`, `-include pre.h`, `-MF dep.d`…). */
const CC_VALUE =
  /^(-[IDUxLlTuzeA]|-include|-imacros|-isystem|-idirafter|-iquote|-iprefix|-iwithprefix|-iwithprefixbefore|-isysroot|-imultilib|-MF|-MT|-MQ|-Xlinker|-Xassembler|-Xpreprocessor|-Xclang|--param|-aux-info|-dumpbase|-dumpbase-ext|-dumpdir|-wrapper|-target|-arch)$/;

/**
 * What a C-family compiler given no `-o` writes, from the folder it runs in: with `-c`, each source's object (gcc and
 * clang name it after the source, without its folder: `cc -c src/x.c` writes `x.o`); with `-S`, its assembly (`x.s`);
 * with neither (nor `-E`, `-M`, `-MM`, `-fsyntax-only`, which write no file), a program linked from its inputs,
 * `a.out`. None after `-x` (a language named: the suffixes no longer tell the sources), and none for a word that
 * expands, or that is an option's value.
 */
function implicitOutputs(args: (string | null)[]): string[] {
  let mode: "c" | "S" | "link" = "link";
  const sources: string[] = [];
  let inputs = 0;
  for (let k = 0; k < args.length; k++) {
    const w = args[k];
    if (typeof w !== "string" || w.includes(UNKNOWN)) return [];
    if (w === "-x") return [];
    if (CC_VALUE.test(w)) {
      k++;
      continue;
    }
    if (w === "-c") mode = mode === "link" ? "c" : mode;
    else if (w === "-S") mode = "S";
    else if (w === "-E" || w === "-M" || w === "-MM" || w === "-fsyntax-only") return [];
    else if (!w.startsWith("-") && w) {
      inputs++;
      if (CC_SOURCE.test(w) || CC_ASSEMBLY.test(w)) sources.push(w);
    }
  }
  if (mode === "link") return inputs ? ["a.out"] : [];
  const stem = (w: string) => path.posix.basename(w).replace(/\.[^.]+$/, "");
  if (mode === "S") return sources.filter((w) => CC_SOURCE.test(w)).map((w) => `${stem(w)}.s`);
  return sources.map((w) => `${stem(w)}.o`);
}

/** The C-family compilers whose `-o` output checkWriters takes as the check's own (`gcc-12`, `clang++-15` too). */
const COMPILER = /^(cc|c\+\+|gcc|g\+\+|clang|clang\+\+)(-\d+(\.\d+)*)?$/;
/** Builtins and programs that run nothing of the worker's and write no file of their own (a redirection is the line's). */
const QUIET = new Set([
  "true",
  "false",
  ":",
  "echo",
  "printf",
  "test",
  "[",
  "[[",
  "]]",
  "}",
  "pwd",
  "exit",
  "set",
  "mkdir",
  "ls",
  "sleep",
  "wait",
  "then",
  "fi",
  "done",
  "esac",
]);
/** What changes what a later command's name runs: a sourced file, eval, an alias, the command hash, a builtin turned off. */
const SHELL_CHANGERS = new Set([".", "source", "eval", "alias", "hash", "enable", "builtin", "command", "exec"]);

/**
 * A command line's shape outside its quotes: `andOnly`, its commands are joined by `&&` alone (a redirection's `>&`, `&>`
 * is no separator); `substitutes`, it holds a command substitution (`$(…)`, backquotes, `<(…)`, `>(…)`), which runs a
 * command the simple commands do not show; `parens`, it holds a parenthesis (a subshell, whose `cd` ends with it).
 */
function lineShape(line: string): { andOnly: boolean; substitutes: boolean; parens: boolean } {
  let andOnly = true;
  let substitutes = false;
  let parens = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "\\") i++;
    else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      i = end < 0 ? line.length : end;
    } else if (c === '"') {
      for (i++; i < line.length && line[i] !== '"'; i++) {
        if (line[i] === "\\") i++;
        else if (line[i] === "`" || (line[i] === "$" && line[i + 1] === "(")) substitutes = true;
      }
    } else if (c === "#" && (i === 0 || /\s/.test(line[i - 1]!))) {
      while (i < line.length && line[i] !== "\n") i++;
      i--;
    } else if (c === "`" || (c === "$" && line[i + 1] === "(") || ((c === "<" || c === ">") && line[i + 1] === "(")) substitutes = true;
    else if (c === "&" && line[i + 1] === "&") i++;
    else if (c === "&" && (line[i - 1] === ">" || line[i - 1] === "<" || line[i + 1] === ">")) continue;
    else if (c === ";" || c === "|" || c === "&" || c === "\n") andOnly = false;
    else if (c === "(" || c === ")") parens = true;
  }
  return { andOnly, substitutes, parens };
}

/** The scripts the commands run (commandScripts) and the makes they run (makeRuns), in one reading. */
function readCommands(commands: string[], sub: string, checkout?: string): { scripts: CommandScript[]; runs: MakeRun[] } {
  const found = new Map<string, CommandScript>();
  /** Each with the goals its command line names (makeGoalRuns; makeRuns leaves them out). */
  const runs: MakeRun[] = [];
  /**
   * What is left to read, in characters (command lines, scripts, makefiles): past it nothing more is read. Worker-written
   * text read many times over (a makefile's targets whose recipes each run `make` another) would take minutes.
   */
  const work = { left: MAX_READ_CHARS };
  /** The make, npm, yarn or pnpm commands read (folder and words), each with the least depth it was read at. */
  const tools = new Map<string, number>();
  /**
   * `inScript`: the shell script whose own line this is (read for the shell scripts it runs in turn, and the recipes and
   * package scripts of the make, npm, yarn or pnpm it runs; not its other programs). `inherited`: what make reads from
   * the environment this line runs in (MakeEnv): what a make's MAKEFLAGS and MAKEFILES pass on to what its recipes run,
   * and so to a make they run, or what an earlier line of a script exported.
   */
  const read = (line: string, cwd: string, command: string, depth: number, inScript?: string, inherited: MakeEnv = NO_MAKE_ENV): void => {
    if (depth > 3) return;
    work.left -= line.length;
    if (work.left < 0) return;
    let at: string | null = cwd;
    /** The environment as the line's commands so far leave it (`export MAKEFLAGS=-Iconf; make test`). */
    let env = inherited;
    for (const words of simpleCommands(line)) {
      if (at === null) return;
      const from: string = at;
      // `export MAKEFLAGS=-Iconf`, `MAKEFILES=x.env; export MAKEFILES`: what the later commands' make reads. Counted
      // whether or not it is exported: a variable the shell was given is exported already, and so is any after `set -a`.
      const set = assignedOnly(words);
      if (set) env = withMakeVars(env, set);
      const envNow = env;
      // `cd x`, or `then cd x` (past the reserved words a command may follow)
      const lead = words.findIndex((w) => typeof w !== "string" || !RESERVED.has(w));
      if (lead >= 0 && words[lead] === "cd") {
        const to = words[lead + 1];
        at =
          typeof to === "string" && !to.startsWith("/") && to !== "-" && !to.includes(UNKNOWN) ? path.posix.normalize(path.posix.join(from || ".", to)) : null;
        if (at === ".") at = "";
        if (at?.startsWith("..")) at = null;
        continue;
      }
      const files = scriptWords(words, (inner) => {
        read(inner, from, command, depth + 1, inScript, envNow);
        return [];
      });
      // `bash < scripts/test.sh`, `sh -s < run.sh`, `cat scripts/test.sh | bash`: a shell given no script reads it from
      // its standard input, the file redirected there or what a `cat` of plain files pipes into it.
      const program = programOf(words);
      if (files.fromStdin) files.push(...(words.stdin !== undefined ? [words.stdin] : catFiles(words.piped)));
      for (const f of files) {
        if (f.startsWith("/") || f.startsWith("~") || f.includes(UNKNOWN)) continue;
        const file = path.posix.normalize(path.posix.join(from || ".", f));
        if (file === "." || file === ".." || file.startsWith("../")) continue;
        // Inside a script only the shell scripts it runs are followed: its other programs may well be the code under test.
        // A file a shell runs or sources (`bash scripts/runner`, `. config/testenv`) is shell text whatever its name.
        const shell = checkout ? shellScript(checkout, file, SHELLS.has(program ?? "")) : null;
        if (inScript && shell === null) continue;
        if (!found.has(file)) {
          const sourced = program === "." || program === "source" ? { sourced: true } : {};
          found.set(file, inScript ? { file, command, via: inScript, ...sourced } : { file, command, ...sourced });
          // A symbolic link (`scripts/test.sh -> ../tools/run.sh`, or a linked folder on the way): the file it leads to
          // is what runs, reached through the link.
          const real = checkout ? realInside(checkout, file) : null;
          if (real && real !== file && !found.has(real)) found.set(real, { file: real, command, via: file });
          // A shell script's own lines, read from the folder it was run from (its relative paths are the caller's).
          if (shell !== null)
            read(withScriptDir(shell, path.posix.relative(from || ".", path.posix.dirname(file)) || "."), from, command, depth + 1, file, envNow);
        }
      }
      if (checkout) {
        // `CI=1 npm test`, `timeout 300 make test`: the tool past assignments and wrappers. Inside a script too (`make test`
        // in ci.sh): its recipes and package scripts are read as the check's own, as if the check had named them.
        const start = commandStart(words);
        const tool = start && "at" in start ? words.slice(start.at) : [];
        const isMake = tool[0] === "make" || tool[0] === "gmake";
        // `MAKEFLAGS=-Iconf make test`, `env GNUMAKEFLAGS='-I conf' make`, `MAKEFILES=x.env make`: the environment's
        // come first, as make reads them.
        const flags = isMake ? withMakeVars(envNow, assignmentsBefore(start && "at" in start ? words.slice(0, start.at) : [])) : envNow;
        // The same tool read again in the same folder, no shallower, reads nothing new (`make` on each line of a recipe).
        const key = `${from}\0${JSON.stringify(tool)}\0${flags.includeDirs.join("\0")}\0\0${flags.readFirst.join("\0")}`;
        if ((tools.get(key) ?? Number.POSITIVE_INFINITY) <= depth) continue;
        if (isMake || tool[0] === "npm" || tool[0] === "yarn" || tool[0] === "pnpm") tools.set(key, depth);
        for (const script of packageScripts(tool, checkout, from)) read(script, from, command, depth + 1, undefined, envNow);
        const options = isMake ? makeOptions(tool, from) : null;
        // Its own options and variables (`make -I conf MAKEFILES=x.env test`) after the environment's; a variable given on
        // its command line is passed on to its sub-makes, as its environment is.
        const passed = options
          ? withMakeVars({ includeDirs: [...flags.includeDirs, ...options.includeDirs], readFirst: flags.readFirst }, options.vars)
          : flags;
        const includeDirs = passed.includeDirs;
        const readFirst = passed.readFirst.filter((w) => !w.startsWith("~") && !w.includes(UNKNOWN));
        if (isMake)
          runs.push({
            dir: options?.dir ?? from,
            makefiles: options?.makefiles ?? [],
            includeDirs: fromMakeDir(options?.dir ?? from, includeDirs),
            ...(readFirst.length ? { readFirst } : {}),
            // No target named (or none that can be told): make builds its makefiles' first target.
            ...(options?.targets.length ? {} : { defaultGoal: true }),
            goals: options?.targets ?? [],
          });
        const make = options ? makeRecipes(options, checkout, work, fromMakeDir(options.dir, includeDirs), readFirst) : null;
        // The makefiles `-f` names are what the command runs, as a script is (a harness by its name, `-f ci/test.mk`).
        for (const f of make?.makefiles ?? []) if (!found.has(f)) found.set(f, { file: f, command });
        // What its makefiles set of MAKEFLAGS, GNUMAKEFLAGS and MAKEFILES reaches its recipes' makes too.
        const sets = make ? withMakeVars(passed, make.vars) : passed;
        if (make) for (const line of make.lines) read(line, make.dir, command, depth + 1, undefined, sets);
      }
    }
  };
  for (const c of commands) read(c, sub, c, 0);
  return { scripts: [...found.values()], runs };
}

/**
 * What make reads from its environment (or a make's command line passes on to its sub-makes): the `-I` folders of
 * MAKEFLAGS and GNUMAKEFLAGS, as written (read from each make's own folder), and the names MAKEFILES gives, as written
 * (each make reads them from its own folder, before its makefiles).
 */
interface MakeEnv {
  includeDirs: string[];
  readFirst: string[];
}
const NO_MAKE_ENV: MakeEnv = { includeDirs: [], readFirst: [] };

/** The variables of make's that decide what it reads (MakeEnv). */
const MAKE_VARS = new Set(["MAKEFLAGS", "GNUMAKEFLAGS", "MAKEFILES"]);

/**
 * At most this many `-I` folders, and as many MAKEFILES names, are kept in a MakeEnv, and one more: make-includes takes a
 * run with more than 64 of either as too large to tell what it reads (every changed file then counts). A worker's script
 * of 30,000 `export MAKEFLAGS=-Ia` lines would otherwise be copied and searched at each.
 */
const MAX_MAKE_ENV = 65;

/** `list` with those of `more` it lacks added, up to MAX_MAKE_ENV. */
function added(list: string[], more: string[]): string[] {
  if (list.length >= MAX_MAKE_ENV) return list;
  const out = [...list];
  for (const m of more) {
    if (out.length >= MAX_MAKE_ENV) break;
    if (!out.includes(m)) out.push(m);
  }
  return out;
}

/**
 * An environment with make's variables among `vars` (name, value) added: their `-I` folders and MAKEFILES names after the
 * ones it had (GNUMAKEFLAGS before MAKEFLAGS, as make reads them). Added, not replaced: a value set again counts with the
 * one before, which a make run earlier may have read.
 */
function withMakeVars(env: MakeEnv, vars: [string, string][]): MakeEnv {
  const known = vars.filter(([name, value]) => MAKE_VARS.has(name) && !value.includes(UNKNOWN));
  if (!known.length) return env;
  const value = (name: string) => known.filter(([n]) => n === name).map(([, v]) => v);
  return {
    includeDirs: added(env.includeDirs, [...value("GNUMAKEFLAGS"), ...value("MAKEFLAGS")].flatMap(makeflagsIncludeDirs)),
    readFirst: added(
      env.readFirst,
      value("MAKEFILES").flatMap((v) => v.split(/\s+/).filter(Boolean)),
    ),
  };
}

/** The `NAME=value` words among a command's words (the assignments before it: `MAKEFLAGS=-Iconf make test`). */
function assignmentsBefore(before: Word[]): [string, string][] {
  return before.flatMap((w) => {
    const m = typeof w === "string" ? /^([A-Za-z_]\w*)=([\s\S]*)$/.exec(w) : null;
    return m ? [[m[1]!, m[2]!] as [string, string]] : [];
  });
}

/**
 * The assignments of a command that only assigns: `S=x T=y`, or `export S=x` (`declare -x`, `readonly`, `typeset`,
 * `local`, past their options); null for any other command.
 */
function assignedOnly(words: Word[]): [string, string][] | null {
  const declares = typeof words[0] === "string" && DECLARES.has(words[0]);
  const rest = declares ? words.slice(1).filter((w) => !(typeof w === "string" && w.startsWith("-"))) : words;
  if (!rest.length && !declares) return null;
  const set = assignmentsBefore(rest);
  return set.length && (declares || set.length === rest.length) ? set : null;
}

/** `-I` folders as written, read from make's folder `dir`: from the repository's root, once each; those outside it left out. */
function fromMakeDir(dir: string, dirs: string[]): string[] {
  const out: string[] = [];
  for (const d of dirs) {
    if (d.startsWith("/") || d.startsWith("~") || d.includes(UNKNOWN)) continue;
    const p = fromRun(dir, d);
    if (p !== null && !out.includes(p)) out.push(p);
  }
  return out;
}

/** At most this many characters of command lines, scripts and makefiles are read per commandScripts (some 16 MiB). */
const MAX_READ_CHARS = 16 * 2 ** 20;

/** The package.json scripts (with their pre and post scripts) an `npm test`, `npm run X`, `yarn X` or `pnpm X` runs in `dir`. */
function packageScripts(words: Word[], checkout: string, dir: string): string[] {
  const [tool, ...args] = words;
  if (tool !== "npm" && tool !== "yarn" && tool !== "pnpm") return [];
  const plain = args.filter((w): w is string => typeof w === "string" && !w.startsWith("-"));
  let name: string | undefined;
  if (plain[0] === "test" || plain[0] === "t" || plain[0] === "tst") name = "test";
  else if (plain[0] === "start") name = "start";
  else if (plain[0] === "run" || plain[0] === "run-script") name = plain[1];
  else if (tool !== "npm") name = plain[0];
  if (!name) return [];
  let scripts: Record<string, unknown>;
  try {
    const json = JSON.parse(readInside(checkout, path.posix.join(dir || ".", "package.json")) ?? "") as { scripts?: Record<string, unknown> };
    scripts = json && typeof json.scripts === "object" && json.scripts ? json.scripts : {};
  } catch {
    return [];
  }
  return [`pre${name}`, name, `post${name}`].map((k) => scripts[k]).filter((s): s is string => typeof s === "string");
}

/** A make command's options: its folder (after `-C`), the makefiles `-f` names, its `-I` folders as written, its targets. */
interface MakeOptions {
  dir: string;
  makefiles: string[];
  includeDirs: string[];
  targets: string[];
  /** The variables its command line sets (`make MAKEFLAGS=-Iconf test`), name and value. */
  vars: [string, string][];
}

/**
 * A `make [options] [targets]` command's options as make reads them, run from `from`: `-C DIR` (`--directory`) moves it
 * (a later one from the folder an earlier one moved to), and the makefiles `-f` names (`make -f ci.mk test`, `--file=…`,
 * `--makefile …`, `-fci.mk`) are read from the folder it moves to, as are `-I` folders (`-I conf`, `-Iconf`,
 * `--include-dir=conf`). Short options in getopt's clusters (`make -kC sub`, `-sfci.mk`), long ones by any unambiguous
 * start (`--inc=conf`), as getopt takes them. Null for anything but make, a word that expands, or a folder or makefile
 * not told from the words (standard input, outside the checkout).
 */
function makeOptions(words: Word[], from: string): MakeOptions | null {
  if (words[0] !== "make" && words[0] !== "gmake") return null;
  if (words.some((w) => w?.includes(UNKNOWN))) return null;
  let dir = from;
  const targets: string[] = [];
  const named: string[] = [];
  const includeDirs: string[] = [];
  const vars: [string, string][] = [];
  /** `-C DIR`: make moves there (a later one from the folder an earlier one moved to); false when it cannot be told. */
  const move = (to: Word | undefined): boolean => {
    if (typeof to !== "string" || !to || to.startsWith("/")) return false;
    dir = path.posix.normalize(path.posix.join(dir || ".", to));
    if (dir === ".") dir = "";
    return !dir.startsWith("..");
  };
  /** An option's value: false when it cannot be told. */
  const take = (option: string, value: Word | undefined): boolean => {
    if (option === "f") {
      if (typeof value !== "string") return false;
      named.push(value);
    } else if (option === "C") return move(value);
    else if (option === "I" && typeof value === "string") includeDirs.push(value);
    return true;
  };
  for (let i = 1; i < words.length; i++) {
    const w = words[i];
    if (typeof w !== "string") return null;
    if (w === "--") {
      for (const t of words.slice(i + 1)) if (typeof t === "string" && !t.includes("=")) targets.push(t);
      vars.push(...assignmentsBefore(words.slice(i + 1)));
      break;
    }
    if (w.startsWith("--")) {
      const eq = w.indexOf("=");
      const long = makeLongOption(w.slice(2, eq < 0 ? undefined : eq));
      if (long?.value && !take(long.option, eq < 0 ? words[++i] : w.slice(eq + 1))) return null;
    } else if (/^-[^-]/.test(w)) {
      // Short options, alone or in a getopt cluster (`-kC sub`, `-sfci.mk`): `-f`, `-C` and `-I` take the rest of the
      // cluster or the next word, as do `-o`, `-W` and `-E`; any other letter takes no value here.
      for (let k = 1; k < w.length; k++) {
        const c = w[k]!;
        if (!MAKE_SHORT_VALUE.includes(c)) continue;
        if (!take(c, k + 1 < w.length ? w.slice(k + 1) : words[++i])) return null;
        break;
      }
    } else if (!w.startsWith("-") && !w.includes("=")) targets.push(w);
    else if (!w.startsWith("-")) vars.push(...assignmentsBefore([w]));
  }
  const makefiles: string[] = [];
  for (const f of named) {
    const file = path.posix.normalize(path.posix.join(dir || ".", f));
    if (f === "-" || f.startsWith("/") || f.startsWith("~") || file === "." || file === ".." || file.startsWith("../")) return null;
    makefiles.push(file);
  }
  return { dir, makefiles, includeDirs, targets, vars };
}

/**
 * The recipe lines a make command (makeOptions) runs from the Makefile of its folder, or from the makefiles `-f` names
 * (read in order; `makefiles`: their paths from the repository's root), with the makefiles their include lines name
 * plainly, found as make finds them (`searched`: its `-I` folders, from the root): those of the targets named (the first
 * target when none is) and of their prerequisites, read from the rules as written (no variables expanded, no pattern
 * rules). The files MAKEFILES names (`readFirst`, as written) are read before them, found as an include line's names are,
 * and give no default goal. Null when no makefile is there to read.
 */
function makeRecipes(
  { dir, makefiles, targets }: MakeOptions,
  checkout: string,
  work: { left: number },
  searched: string[],
  readFirst: string[] = [],
): { dir: string; lines: string[]; makefiles: string[]; vars: [string, string][] } | null {
  let text: string | null = null;
  /** The makefiles read (an include of one of them is a loop). */
  const reading = new Set(makefiles);
  if (makefiles.length) {
    const texts = makefiles.flatMap((f) => {
      const t = readInside(checkout, f);
      return t === null ? [] : [t];
    });
    text = texts.length ? texts.join("\n") : null;
  } else
    for (const name of ["GNUmakefile", "makefile", "Makefile"]) {
      // The first of these names that is there is the one make reads: one not read (readInside) ends the reading.
      if (!lstatSync(path.join(checkout, dir, name), { throwIfNoEntry: false })) continue;
      text = readInside(checkout, path.posix.join(dir, name));
      if (text !== null) reading.add(path.posix.join(dir, name));
      break;
    }
  if (text === null) return makefiles.length ? { dir, lines: [], makefiles, vars: [] } : null;
  const budget = { files: MAX_INCLUDED };
  // MAKEFILES' files, read as an `-include` line of their names would read them (and their own include lines in turn).
  const firstText = readFirst.length ? withIncludes(`-include ${readFirst.join(" ")}`, checkout, [dir, ...searched], reading, budget) : "";
  text = withIncludes(text, checkout, [dir, ...searched], reading, budget);
  work.left -= text.length + firstText.length;
  if (work.left < 0) return null;
  const rules = new Map<string, { prereqs: string[]; recipe: string[] }>();
  let first: string | undefined;
  let current: { prereqs: string[]; recipe: string[] }[] = [];
  const split = (t: string) => t.replace(/\\\n/g, " ").split("\n");
  // MAKEFILES' files' lines, then the makefiles': only the makefiles' give the default goal.
  const firstLines = firstText ? split(firstText) : [];
  const all = [...firstLines, ...split(text)];
  /** The makefiles' variables as set (`=`, `:=`, `+=`, `?=`; `!=` unknown), for the values of make's own (MAKE_VARS). */
  const assigned = new Map<string, string | null>();
  for (let k = 0; k < all.length; k++) {
    const raw = all[k]!;
    const goal = k >= firstLines.length;
    if (raw.startsWith("\t")) {
      for (const r of current) r.recipe.push(asMake(raw.slice(1).replace(/^[\s@+-]+/, "")));
      continue;
    }
    const line = raw.replace(/#.*$/, "");
    // `X = 1`, `export MAKEFLAGS += -Isrc`, `override MAKEFILES := a`, and a target's own `test: MAKEFILES = a` (read as
    // the makefile's: it reaches the sub-makes of that target's recipe).
    const set =
      /^\s*(?:(?:override|export|private)\s+)*([\w.-]+)\s*(::?=|:::=|\?=|\+=|!=|=)\s*(.*)$/.exec(line) ??
      /^[^:=#\t]+:\s*(?:(?:override|export|private)\s+)*(MAKEFLAGS|GNUMAKEFLAGS|MAKEFILES)\s*(::?=|:::=|\?=|\+=|!=|=)\s*(.*)$/.exec(line);
    if (set && !/^\s*(-?include|sinclude)\b/.test(line)) {
      const [, name, op, value] = set as unknown as [string, string, string, string];
      const was = assigned.get(name);
      // Past the bound, what make passes its sub-makes is still kept (a MAKEFILES set after 4,096 other variables).
      if (assigned.size < MAX_MAKE_VARS || assigned.has(name) || MAKE_VARS.has(name))
        assigned.set(name, op === "!=" ? null : op === "+=" ? (was === null ? null : `${was ?? ""} ${value}`) : op === "?=" && was !== undefined ? was : value);
      current = [];
      continue;
    }
    // (The targets up to the colon, trimmed below: a lazy `[^:=]*?\s*` took quadratic time on a long line of spaces.)
    const m = /^([^:=#\t][^:=]*)::?\s*([^=].*)?$/.exec(line);
    if (!m || /^\s*(export|override|define|include|-include|sinclude|ifn?eq|ifn?def|else|endif)\b/.test(line)) {
      if (line.trim()) current = [];
      continue;
    }
    const [before, after] = (m[2] ?? "").split(";", 2);
    current = [];
    for (const t of m[1]!.trim().split(/\s+/)) {
      const rule = rules.get(t) ?? { prereqs: [], recipe: [] };
      rule.prereqs.push(...(before ?? "").split("|").join(" ").trim().split(/\s+/).filter(Boolean));
      if (after?.trim()) rule.recipe.push(asMake(after.trim()));
      rules.set(t, rule);
      current.push(rule);
      if (goal && first === undefined && !t.startsWith(".") && !t.includes("%")) first = t;
    }
  }
  const lines: string[] = [];
  const seen = new Set<string>();
  // Each target's prerequisites' recipes, then its own, depth first (with a stack of its own: a chain of 50,000
  // prerequisites overflowed the call stack).
  const visit = (goal: string) => {
    const stack: { rule: { prereqs: string[]; recipe: string[] }; next: number }[] = [];
    const enter = (t: string) => {
      if (seen.has(t)) return;
      seen.add(t);
      const rule = rules.get(t);
      if (rule) stack.push({ rule, next: 0 });
    };
    enter(goal);
    while (stack.length) {
      const top = stack[stack.length - 1]!;
      if (top.next < top.rule.prereqs.length) enter(top.rule.prereqs[top.next++]!);
      else {
        stack.pop();
        for (const r of top.rule.recipe) lines.push(r);
      }
    }
  };
  for (const t of targets.length ? targets : first ? [first] : []) visit(t);
  // make passes MAKEFLAGS and GNUMAKEFLAGS to its sub-makes, and exports MAKEFILES once a makefile sets it (GNU make 4.3):
  // the values, expanded where they can be told (an unknown one passes nothing: withMakeVars leaves it out).
  const vars: [string, string][] = [];
  for (const name of ["GNUMAKEFLAGS", "MAKEFLAGS", "MAKEFILES"]) {
    const v = assigned.get(name);
    if (v === undefined) continue;
    const value = v === null ? null : expandMakeVars(v, assigned, { left: MAX_MAKE_VAR_REFS });
    vars.push([name, value ?? UNKNOWN]);
  }
  return { dir, lines, makefiles, vars };
}

/** At most this many variables of a make command's makefiles are kept (makeRecipes), and references expanded per value. */
const MAX_MAKE_VARS = 4096;
const MAX_MAKE_VAR_REFS = 4096;

/**
 * A makefile variable's value with its `$(NAME)` and `${NAME}` references expanded from `vars` (one not set: empty), `$$`
 * as `$`; null where it holds anything else (a function, `$@`, a value `!=` set) or past `budget` references or 64 KiB.
 */
function expandMakeVars(value: string, vars: Map<string, string | null>, budget: { left: number }, depth = 0): string | null {
  if (depth > 16) return null;
  let out = "";
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (out.length > 64 * 1024) return null;
    if (c !== "$") {
      out += c;
      continue;
    }
    if (value[i + 1] === "$") {
      out += "$";
      i++;
      continue;
    }
    const m = /^\$(?:\(([\w.-]+)\)|\{([\w.-]+)\})/.exec(value.slice(i, i + 260));
    if (!m || --budget.left < 0) return null;
    const v = vars.get(m[1] ?? m[2]!);
    if (v === null) return null;
    if (v !== undefined) {
      const e = expandMakeVars(v, vars, budget, depth + 1);
      if (e === null) return null;
      out += e;
    }
    i += m[0].length - 1;
  }
  return out;
}

/**
 * A recipe line with make's own name for itself, `$(MAKE)` or `${MAKE}` (the sub-make of `$(MAKE) -f src/tests.make
 * check`), read as `make`: the makefiles and folders that sub-make reads are read as a plain `make`'s.
 */
const asMake = (line: string) => line.replace(/\$(\(MAKE\)|\{MAKE\})/g, "make");

/** At most this many makefiles a command's makefiles include are read in their place (per make command). */
const MAX_INCLUDED = 16;

/**
 * A makefile's text with each `include`, `-include` or `sinclude` line of plain names (no variable, glob or `~`) replaced
 * by the text of the files it names, read as make reads them: from make's folder, or the first of its `-I` folders that
 * has the name (`folders`: make's folder first), and theirs in turn: their rules and recipes are the makefile's own,
 * where the line stands (an included file's first target can be make's default goal).
 * A name outside the checkout (absolute, above it, or a link leading out), one missing, one already being read (a loop)
 * or past `budget` is left out; the line of a name that is not plain stays, and is not read.
 */
function withIncludes(text: string, checkout: string, folders: string[], reading: Set<string>, budget: { files: number }): string {
  return text
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((line) => {
      const m = /^[ ]*(?:-include|sinclude|include)[ \t]+([^#]*)/.exec(line);
      if (!m) return line;
      const parts: string[] = [];
      for (const name of m[1]!.trim().split(/\s+/).filter(Boolean)) {
        if (/[$*?[\]{}~\\`"']/.test(name) || name.startsWith("/") || name.includes(UNKNOWN)) continue;
        const file = folders
          .map((f) => path.posix.normalize(path.posix.join(f || ".", name)))
          .find((f) => f !== "." && f !== ".." && !f.startsWith("../") && isThere(checkout, f));
        if (file === undefined || reading.has(file) || budget.files <= 0) continue;
        const included = readInside(checkout, file);
        if (included === null) continue;
        budget.files--;
        parts.push(withIncludes(included, checkout, folders, new Set([...reading, file]), budget));
      }
      // The names not read stay as an include line (one the rules below pass over).
      return [...parts, line].join("\n");
    })
    .join("\n");
}

/** Whether the checkout has something at `file` (a link too, wherever it leads). */
function isThere(checkout: string, file: string): boolean {
  try {
    return lstatSync(path.join(checkout, file), { throwIfNoEntry: false }) !== undefined;
  } catch {
    return false;
  }
}

/** `$(dirname "$0")`, `$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)`, `${0%/*}` and the like: the script's own folder. */
const SELF = String.raw`(?:\$0|\$\{0\}|\$BASH_SOURCE|\$\{BASH_SOURCE(?:\[0\])?\})`;
const DIRNAME = String.raw`(?:\$\(\s*dirname\s+(?:"${SELF}"|${SELF})\s*\)|\x60\s*dirname\s+(?:"${SELF}"|${SELF})\s*\x60)`;
const SCRIPT_DIR = new RegExp(
  String.raw`\$\(\s*cd\s+(?:"${DIRNAME}"|${DIRNAME})\s*(?:&&|;)\s*pwd(?:\s+-[PL])?\s*\)|${DIRNAME}|\$\{(?:0|BASH_SOURCE(?:\[0\])?)%/\*\}`,
  "g",
);

/**
 * A shell script's text with its own folder written out where it names it (`. "$(dirname "$0")/lib.sh"`, or
 * `DIR=$(cd "$(dirname "$0")" && pwd)` then `. "$DIR/env.sh"`), as `dir` (from the folder it runs in): the commonest
 * way a harness sources its library, which read as an expansion and was not followed.
 */
function withScriptDir(text: string, dir: string): string {
  if (!/^[\w./-]+$/.test(dir)) return text;
  let out = text.replace(SCRIPT_DIR, dir);
  const escaped = dir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const names = [
    ...out.matchAll(new RegExp(String.raw`^[ \t]*(?:export[ \t]+|readonly[ \t]+|local[ \t]+)?([A-Za-z_]\w*)=("?)${escaped}\2[ \t]*(?:#.*)?$`, "gm")),
  ].map((m) => m[1]!);
  for (const name of new Set(names)) out = out.replace(new RegExp(String.raw`\$(?:\{${name}\}|${name}(?!\w))`, "g"), dir);
  return out;
}

/** A simple command's program (its first word after assignments and wrappers), as its base name in lower case. */
function programOf(words: Word[]): string | null {
  const start = commandStart(words);
  const w = start && "at" in start ? words[start.at] : null;
  return typeof w === "string" ? path.posix.basename(w).toLowerCase() : null;
}

/** The files a `cat` of plain files (`cat a.sh b.sh`, `cat -- x`) writes out, in order; none for any other command or an expansion. */
function catFiles(words: Words | undefined): string[] {
  if (!words) return [];
  const start = commandStart(words);
  if (!start || !("at" in start) || typeof words[start.at] !== "string" || path.posix.basename(words[start.at]!) !== "cat") return [];
  const out: string[] = [];
  let options = true;
  for (const w of words.slice(start.at + 1)) {
    if (typeof w !== "string" || w === "-") return [];
    if (options && w === "--") options = false;
    else if (!(options && w.startsWith("-"))) out.push(w);
  }
  return out.length || words.stdin === undefined ? out : [words.stdin];
}

/**
 * A shell script's text (named `.sh`/`.bash`, with a shell's `#!` line, or `byShell`: a shell runs or sources it), or
 * null for any other file or none.
 */
function shellScript(checkout: string, file: string, byShell = false): string | null {
  const text = readInside(checkout, file);
  if (text === null) return null;
  if (byShell || /\.(sh|bash)$/i.test(file) || /^#!\s*\S*\/(env\s+)?(ba|da|z|k)?sh\b/.test(text)) return text;
  return null;
}
