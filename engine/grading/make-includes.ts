// What a Makefile includes: `-include $(DEPS)` (DEPS := $(SRCS:.c=.d)), `include config.local`. An included file's rules,
// variables and special targets are the Makefile's own (a `.IGNORE:` in a worker's main.d makes `make test` ignore every
// failing command), so such a file counts as check configuration, unless it holds only what a compiler writes there:
// plain dependency lines (`main.o: main.c main.h`). Read without running make (its `$(shell)` would run here, unconfined).
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import picomatch from "picomatch";
import { STAR, type WildcardToken, wildcardMatch } from "../../shared/wildcard";
import { readInside, realInside } from "./files";

/** One include line of a Makefile: the Makefile (from the repository's root), the line as written, and what it names. */
export interface MakeInclude {
  makefile: string;
  line: string;
  /** Whether a file (from the repository's root, "/"-separated) is one the line includes. */
  names: (file: string) => boolean;
  /**
   * The line comes before the first rule of the makefile a make that names no target reads first (`make` alone): the
   * first target of what it includes is the one make builds (`src/x.o: src/x.c` in place of the Makefile's tests).
   */
  setsGoal?: boolean;
}

/** The names make looks for in a folder, in its order: the first that exists is read. */
const MAKEFILES = ["GNUmakefile", "makefile", "Makefile"];
/** At most this many Makefiles (the first, and those it includes that exist) are read per make run. */
const MAX_FILES = 10;
/** At most this many make runs are read (the checks' folder's, the root's, and those the checks' commands start). */
const MAX_RUNS = 24;

/**
 * One make that a check runs, with paths from the repository's root ("/"-separated, "" for the root): the folder it
 * runs in (after `-C`), the makefiles `-f` names (none: the folder's GNUmakefile, makefile or Makefile), and the folders
 * `-I DIR` / `--include-dir=DIR` name (from its command line, from MAKEFLAGS in its environment, or passed on to it in
 * MAKEFLAGS by the make whose recipe runs it), in make's order.
 */
export interface MakeRun {
  dir: string;
  makefiles?: string[];
  includeDirs?: string[];
  /**
   * The names MAKEFILES gives it (in its environment, on its command line, or passed on by the make whose recipe runs
   * it), as written: make reads each before its makefiles, from its folder or its `-I` folders, and never takes its
   * default goal from one.
   */
  readFirst?: string[];
  /** It names no target: it builds the first target its makefiles define (an included file's, when included before any). */
  defaultGoal?: boolean;
  /**
   * The targets its command line names (none: its default goal), where its goals are asked for (makeGoalRuns): then
   * makeFacts tells their namesakes and what they build (`goals`, `made`).
   */
  goals?: string[];
}

/**
 * Stands for `$(CURDIR)` (the folder make runs in, an absolute path) while a line is expanded: a name that starts with
 * it is the run's folder, not one outside the checkout.
 */
const CURDIR = "\u0001";

/**
 * Stands for text that cannot be told here (`$(shell …)`, a function not read here, a variable `!=` sets, `$@`): any
 * text, `/` included. A name with it in it names every file its known parts allow (`$(SRCS:.c=.d)` with SRCS from
 * `$(shell find src -name '*.c')`: any file ending in `.d`); one of it alone, any file named like a makefile fragment.
 */
const UNKNOWN = "\u0002";

/**
 * What the makefiles a make run reads say besides their include lines, from the repository's root ("/"-separated):
 * - `targets`: where a file makes make skip a target's recipe. A target not declared `.PHONY` is up to date when a file
 *   (or a folder) of its name is there, in make's folder or one its VPATH or `vpath` names (`make test` with a `test`
 *   file there: "'test' is up to date", and no test runs).
 * - `inputs`: files whose change changes the makefiles make reads: those a rule that remakes an included makefile reads
 *   (its prerequisites and the files its recipe names, in make's folder or a VPATH one; make remakes an included
 *   makefile before reading it: `build.env: src/gen.sh` with `sh src/gen.sh > $@`), and those `$(file <…)` and
 *   `$(shell …)` read as make reads the makefile (`$(eval $(shell cat src/rules.txt))`).
 * - `vpath`: each run's folder with the folders of its VPATH and `vpath` lines (a built-in rule remakes an included
 *   makefile from a source found there: `local.env` from `src/local.env.sh`).
 * - `readFirst`: where the names MAKEFILES gives a run are looked for (its folder, then its `-I` folders): make reads
 *   those files before its makefiles.
 * - `read`: whether any run read a makefile.
 * - `goals` (only for runs whose goals are asked for, MakeRun.goals): where a file makes make skip a goal of a run:
 *   each goal its command line names (`make test`), or its default goal (`.DEFAULT_GOAL`, else the first target of its
 *   first makefile), that is not `.PHONY`, in make's folder or one of its VPATH folders (as `targets`).
 * - `made` (the same runs): what a run builds by its own rules: its goals and the prerequisites they reach through the
 *   rules read here (explicit rules only, those `$(eval …)` makes and `.SECONDEXPANSION`'s lists too; `all: prog test`
 *   reaches test; names as make names them: canonical, archive members), in make's folder or one of its VPATH folders (a
 *   name through `..` as make opens it: opened).
 */
export interface MakeFacts {
  includes: MakeInclude[];
  readFirst: { path: string; name: string }[];
  /** The include lines that name a file (MakeIncludes.naming): those its name alone finds, and those asked one by one. */
  included: MakeIncludes;
  targets: { path: string; target: string; makefile: string }[];
  inputs: { path: string; makefile: string; why: string }[];
  vpath: { dir: string; folders: string[] }[];
  read: boolean;
  goals: { path: string; goal: string; makefile: string | null }[];
  made: string[];
  /**
   * (The same runs.) Where a file makes make skip remaking a prerequisite its goals reach that a rule builds: one of an
   * explicit rule with a recipe, one a pattern rule's target matches (that rule with a recipe), or an object file (make's
   * built-in `%.o: %.c`); not `.PHONY`, nor a leaf no rule builds (a source, or what the checks' own programs write). A
   * file there newer than its sources is used as it is (`test: test.o` links a stale `test.o`, not one compiled from the
   * held-back test.c).
   */
  intermediates: { path: string; target: string; makefile: string | null }[];
}

/**
 * Past this many matches of a file against include lines that are not plain names (wildcards, text not told here, `%`
 * patterns), all gradings of one reading together, the makefiles are too large to tell what they read (MakeTooLarge): a
 * worker's makefile of 30,000 include lines and 30,000 rules held the engine's thread for minutes.
 */
const MATCH_BUDGET = 200_000;

/** At most this many folders in a make's search path for included makefiles, or in its VPATH: each name is looked for in each. */
const MAX_FOLDERS = 64;

/** The makefiles are too large to tell which files they read within the engine's bounds (MATCH_BUDGET). */
export class MakeTooLarge extends Error {
  constructor() {
    super("the makefiles a check's make reads are too large to tell which files they read");
  }
}

/** A plain name: one file, no wildcard, nothing not told here (includeMatcher matches it by equality). */
const isPlainName = (w: string) => !/[*?[\]\\{}()+@!\u0002]/.test(w);

/**
 * Which include lines name a file: each plain name in a map (looked up at once), the lines with any other name asked one
 * by one, within MATCH_BUDGET.
 */
export class MakeIncludes {
  private readonly plain = new Map<string, MakeInclude[]>();
  private readonly others: MakeInclude[] = [];
  private left = MATCH_BUDGET;

  add(inc: MakeInclude, words: (string | null)[]): void {
    let other = false;
    for (const w of words) {
      if (w === null) continue;
      if (!isPlainName(w)) other = true;
      else {
        const at = this.plain.get(w);
        if (!at) this.plain.set(w, [inc]);
        else if (!at.includes(inc)) at.push(inc);
      }
    }
    if (other) this.others.push(inc);
  }

  /** One match's share of the bound; throws MakeTooLarge past it. */
  spend(n = 1): void {
    this.left -= n;
    if (this.left < 0) throw new MakeTooLarge();
  }

  /** The include lines that name `file` (from the repository's root): those its name finds, then the others, each in the order read. */
  naming(file: string): MakeInclude[] {
    const found = new Set(this.plain.get(file));
    for (const inc of this.others) {
      this.spend();
      if (!found.has(inc) && inc.names(file)) found.add(inc);
    }
    return [...found];
  }
}

/** A rule of a makefile as read here: its targets, prerequisites and recipe's words, expanded as far as can be told. */
interface Rule {
  makefile: string;
  targets: string[];
  prereqs: string[];
  /** Its prerequisite list ran past the expansion bounds (MAX_EXPANSION, EXPANSION_BUDGET): the rest of it unknown. */
  cut?: boolean;
  recipe: string[];
  /**
   * After `.SECONDEXPANSION:`, the prerequisite list as its first expansion leaves it (`test: $$(OBJS)`: `$(OBJS)`):
   * expanded again, for each target, once every makefile is read (secondExpansion).
   */
  second?: string;
}

/** At most this many lines `$(eval …)` makes, per make run; past them what it reads cannot be told (MakeTooLarge). */
const MAX_EVAL_LINES = 10_000;
/** At most this much text `$(eval …)` makes per make run (in characters); past it, MakeTooLarge. */
const MAX_EVAL_TEXT = 1024 * 1024;
/** References one line of `$(eval …)` may expand (EXPANSION_BUDGET's, for such a line); past them, MakeTooLarge. */
const EVAL_BUDGET = 50_000;

/** Names make reads as a makefile fragment, for an include name that cannot be told at all (`-include $(shell …)`). */
const FRAGMENT = /\.(d|dep|deps|mk|mak|make)$/i;

/** A recipe that writes a compiler's dependency lines (`$(CC) -MM $^ > $@`, makedepend): its prerequisites are sources. */
const DEPENDENCY_RECIPE = /(^|\s)-M{1,2}[DGP]?(\s|$)|makedepend|(^|[\s(])(gcc|g\+\+|c\+\+|cc|clang\+*|cpp)(\s|$)|\$[({](CC|CXX|CPP)[)}]/;

/**
 * The include lines of the makefiles each run reads in the checkout (a folder alone: the Makefile make reads there), and
 * of the makefiles they include that exist there. An include line names a file in the folder make runs in and, for a
 * relative name (`include config.env`, `-include rules/x.d`), under each folder of make's search path: the run's `-I`
 * folders, and those a `MAKEFLAGS += -I DIR` of its makefiles adds (GNU make 4.4 reads that at once; 4.3 only in a
 * sub-make: counted for every include line of the run, whichever make runs it). Make reads the first of these that
 * exists; all count here (the worker may add or remove the one before). A name that cannot be told at all (`$(shell
 * …)`, `$(call …)`) names every file named like a makefile fragment (FRAGMENT).
 */
export function makeIncludes(checkout: string, runs: (string | MakeRun)[]): MakeInclude[] {
  return makeFacts(checkout, runs).includes;
}

/** The include lines of the makefiles each run reads (makeIncludes), and what else they say (MakeFacts). */
export function makeFacts(checkout: string, runs: (string | MakeRun)[]): MakeFacts {
  const out: MakeInclude[] = [];
  const included = new MakeIncludes();
  const facts: MakeFacts = { includes: out, included, readFirst: [], targets: [], inputs: [], vpath: [], read: false, goals: [], made: [], intermediates: [] };
  const seen = new Set<string>();
  for (const given of runs) {
    const run = typeof given === "string" ? { dir: given } : given;
    const key = JSON.stringify([run.dir, run.makefiles ?? [], run.includeDirs ?? [], run.readFirst ?? [], !!run.defaultGoal, run.goals ?? []]);
    if (seen.has(key)) continue;
    if (seen.size >= MAX_RUNS) break;
    seen.add(key);
    const { dir } = run;
    const named = run.makefiles?.length ? run.makefiles : null;
    const first = named ?? [MAKEFILES.map((m) => path.posix.join(dir, m)).find((m) => existsSync(path.join(checkout, m)))].filter((m) => m !== undefined);
    /** The run's search path for included makefiles: grows with each `MAKEFLAGS` its makefiles set. */
    const searched = [...(run.includeDirs ?? [])];
    const vars = new Map<string, string>([["CURDIR", CURDIR]]);
    // The names MAKEFILES gives: each read before the makefiles, the first place that has it (as an include line's name).
    const readFirst = (run.readFirst ?? []).filter((w) => w && !w.includes(UNKNOWN));
    // Each name is looked for in each folder: past the bound, what make reads cannot be told here.
    if (readFirst.length > MAX_FOLDERS || searched.length > MAX_FOLDERS) throw new MakeTooLarge();
    const readFirstFiles = new Set(readFirst.map((w) => firstFound(checkout, dir, searched, w)).filter((f): f is string => f !== null));
    const queue = [...readFirstFiles, ...first];
    const done = new Set<string>();
    const rules: Rule[] = [];
    const phony = new Set<string>();
    const vpathDirs: string[] = [];
    /** The include lines of this run, with the names they give (expanded), for the rules that remake them. */
    const runIncludes: { inc: MakeInclude; names: string[]; words: () => (string | null)[] }[] = [];
    /** Names `$(file <…)` and `$(shell …)` read, with the makefile. */
    const reads: { name: string; makefile: string }[] = [];
    /** The goal of a make naming none: `.DEFAULT_GOAL`'s, else the first target of the first rule read (not a special or pattern one). */
    let defaultGoal: string | null = null;
    /** Whether that goal is set yet (for a make naming no target, the lines read until then may set it: `setsGoal`). */
    let goalSet = false;
    /** What each `$(wildcard …)` pattern of a rule names in the checkout (globIn), read once per run. */
    const globs = new Map<string, string[] | null>();
    /** Whether `.SECONDEXPANSION:` was read: the prerequisite lists after it are expanded again (Rule.second). */
    let expandsTwice = false;
    /** The archives of the members a prerequisite list names (`lib.a(x.o)`): a rule (`(%): %`) builds them. */
    const archives = new Set<string>();
    /** The lines `$(eval …)` made, in this run (MAX_EVAL_LINES). */
    let evalLines = 0;
    let evalText = 0;
    while (queue.length && done.size < MAX_FILES) {
      const makefile = queue.shift()!;
      if (done.has(makefile)) continue;
      done.add(makefile);
      // A regular file inside the checkout, of a bounded size (files.ts): the worker may have made it a link anywhere.
      const text = readInside(checkout, makefile);
      if (text === null) continue;
      facts.read = true;
      /** The rules the lines since the last rule line belong to (a recipe line is theirs). */
      let current: Rule[] = [];
      /** The `define` being read: its name (null where it cannot be told), how it sets it, its lines, its nesting. */
      let inDefine: { name: string | null; op: string; body: string[]; depth: number } | null = null;
      // The lines `$(eval …)` makes are read next, as make reads them (spliced in after the line that makes them).
      const lines = logicalLines(text);
      for (let li = 0; li < lines.length; li++) {
        const raw = lines[li]!;
        if (inDefine) {
          if (/^\s*endef\b/.test(raw) && --inDefine.depth === 0) {
            // Its value, for `$(call …)` and `$(eval …)` (a rule made of it: `$(eval $(call PROG,test))`).
            const { name, op, body } = inDefine;
            if (name !== null && !(op === "?=" && vars.has(name)))
              vars.set(name, op === "+=" && vars.has(name) ? `${vars.get(name)}\n${body.join("\n")}` : op === "!=" ? UNKNOWN : body.join("\n"));
            inDefine = null;
          } else {
            if (/^\s*(?:(?:override|export|private)\s+)*define\b/.test(raw)) inDefine.depth++;
            inDefine.body.push(raw);
          }
          continue;
        }
        if (raw.startsWith("\t") && current.length) {
          const recipe = words(expandLine(raw, vars));
          for (const r of current) r.recipe.push(...recipe);
          continue;
        }
        const line = raw.replace(/(^|[^\\])#.*$/, "$1");
        if (line.trim()) current = [];
        const def = /^\s*(?:(?:override|export|private)\s+)*define\b\s*(.*?)\s*(::?=|:::=|\?=|\+=|!=|=)?\s*$/.exec(line);
        if (def) {
          const name = expandLine(def[1]!, vars).trim();
          inDefine = { name: /^[\w.-]+$/.test(name) ? name : null, op: def[2] ?? "=", body: [], depth: 1 };
          continue;
        }
        // What make reads of other files as it reads this line: `$(file <X)`, and the words of a `$(shell …)`.
        for (const m of line.matchAll(/\$[({]file\s+<\s*([^)}\s]+)/g)) reads.push({ name: m[1]!, makefile });
        for (const m of line.matchAll(/\$[({]shell\s+([^)}]*)/g))
          for (const w of words(m[1]!.replace(/[<>|;&'"]/g, " "))) if (!w.startsWith("-") && !w.includes("$")) reads.push({ name: w, makefile });
        // A line of `$(eval …)` (alone, or in a `$(foreach …)`): the text it makes is read as the makefile's next lines.
        if (/^\s*\$[({](?:eval|foreach|call)\s/.test(line)) {
          const { lines: made, spent } = evaluated(line, vars);
          evalLines += made.length;
          evalText += made.reduce((k, l) => k + l.length + 1, 0);
          // Its references count against the run's bound too (a makefile of thousands of such lines).
          included.spend(spent);
          if (evalLines > MAX_EVAL_LINES || evalText > MAX_EVAL_TEXT) throw new MakeTooLarge();
          lines.splice(li + 1, 0, ...made);
          continue;
        }
        const assign = /^\s*(?:(?:override|export|private)\s+)*([\w.-]+)\s*(::?=|:::=|\?=|\+=|!=|=)\s*(.*)$/.exec(line);
        if (assign && !/^\s*-?include\b|^\s*sinclude\b/.test(line)) {
          const [, name, op, value] = assign;
          if (op === "+=") vars.set(name!, `${vars.get(name!) ?? ""} ${value}`);
          else if (op === "?=") vars.set(name!, vars.get(name!) ?? value!);
          else if (op === "!=") vars.set(name!, UNKNOWN);
          else vars.set(name!, value!);
          if (name === "MAKEFLAGS") {
            for (const d of makeflagsIncludeDirs(expandLine(vars.get(name)!, vars)))
              for (const at of lookedFor(dir, [], d)) {
                if (at !== null && !searched.includes(at)) searched.push(at);
                if (searched.length > MAX_FOLDERS) throw new MakeTooLarge();
              }
          }
          if (name === ".DEFAULT_GOAL") {
            const value = words(expandLine(vars.get(name)!, vars));
            defaultGoal = value.length === 1 && !value[0]!.includes(UNKNOWN) ? canonical(value[0]!) : null;
            goalSet = true;
          }
          if (name === "VPATH") {
            vpathDirs.push(...expandLine(vars.get(name)!, vars).split(/[:\s]+/));
          }
          continue;
        }
        const vp = /^\s*vpath\s+\S+\s+(.*)$/.exec(line);
        if (vp) {
          vpathDirs.push(...expandLine(vp[1]!, vars).split(/[:\s]+/));
          continue;
        }
        const inc = /^\s*(?:-include|sinclude|include)\s+(.*)$/.exec(line);
        if (!inc) {
          if (/^\s*(?:export|unexport|override|undefine|ifn?eq|ifn?def|else|endif|load|-load)\b/.test(line)) continue;
          const rule = /^([^:=#\t][^:=]*?)::?(?!=)\s*(.*)$/.exec(line);
          if (!rule) continue;
          budget = EXPANSION_BUDGET;
          const [before, after] = rule[2]!.split(";", 2) as [string, string | undefined];
          // A rule's `$(wildcard …)` names the files there (make reads it as it reads the rule): `$(patsubst
          // %.c,%.o,$(wildcard *.c))` reaches test.o, not a file named `*.o` (globbed).
          globbed = (pattern) => globIn(checkout, dir, pattern, globs);
          // Each name as make names it (canonical): `./test` is `test`; an archive member `lib.a(x.o)` as its archive.
          const targets = members(words(expand(rule[1]!, vars, 0)), null).map(canonical);
          // A target-specific variable (`test: X = 1`) names its targets, but no prerequisite or recipe; an `=` inside a
          // reference (`test: $(SRCS:.c=.o)`, a substitution reference) does not make one.
          cut = false;
          const list = /=/.test(outsideReferences(before)) ? null : expand(before.replace("|", " "), vars, 0);
          const prereqs = list === null ? [] : members(words(list), archives).map(canonical);
          globbed = null;
          const r: Rule = { makefile, targets, prereqs, recipe: after ? words(expand(after, vars, 0)) : [] };
          if (cut && list !== null) r.cut = true;
          if (expandsTwice && list?.includes("$")) r.second = list;
          if (targets.includes(".SECONDEXPANSION")) expandsTwice = true;
          const ordinary = targets.find((t) => !t.startsWith(".") && !t.includes("%"));
          if (ordinary !== undefined && !readFirstFiles.has(makefile)) {
            if (!goalSet) defaultGoal = ordinary;
            goalSet = true;
          }
          rules.push(r);
          current = [r];
          if (targets.includes(".PHONY")) for (const p of prereqs) phony.add(p);
          continue;
        }
        const names = words(expandLine(inc[1]!, vars)).filter((w) => /[^*?[\]]/.test(path.posix.basename(w)));
        /** Each name where make looks for it: the run's folder, then (a relative name) the search path's folders. */
        const where = (folders: string[]) => names.flatMap((w) => (w.replaceAll(UNKNOWN, "") ? lookedFor(dir, folders, w) : [UNKNOWN]));
        if (!where(searched).some((g) => g !== null)) continue;
        // Matched against the search path as the run's makefiles leave it (a later `MAKEFLAGS += -I` too), once asked.
        let match: ((file: string) => boolean)[] | undefined;
        const matchers = () => where(searched).flatMap((g) => (g === null ? [] : [includeMatcher(g)]));
        const include: MakeInclude = { makefile, line: raw.trim(), names: (f: string) => (match ??= matchers()).some((m) => m(f)) };
        if (run.defaultGoal && !goalSet && first.includes(makefile)) include.setsGoal = true;
        out.push(include);
        runIncludes.push({ inc: include, names, words: () => where(searched) });
        // The makefile make reads for each plain name: the first found.
        for (const w of names) {
          const found = firstFound(checkout, dir, searched, w);
          if (found) queue.push(found);
        }
      }
    }
    for (const { inc, words } of runIncludes) included.add(inc, words());
    // Every place make looks for a MAKEFILES name counts, with the search path as the makefiles leave it (the worker may
    // add or remove the one before).
    for (const name of readFirst) for (const p of lookedFor(dir, searched, name)) if (p !== null) facts.readFirst.push({ path: p, name });
    /** This run's include lines (a rule remakes only what its own make includes). */
    const mine = new Set(runIncludes.map((x) => x.inc));
    const folders = [...new Set(vpathDirs.filter((d) => d && !d.includes(UNKNOWN) && !path.posix.isAbsolute(d)).map((d) => fromRun(dir, d)))].filter(
      (d): d is string => d !== null && d !== dir,
    );
    if (folders.length > MAX_FOLDERS) throw new MakeTooLarge();
    facts.vpath.push({ dir, folders });
    /** A name read from make's folder, and where VPATH would find it. */
    const at = (name: string): string[] => (name.includes(UNKNOWN) ? [] : lookedFor(dir, folders, name)).filter((p): p is string => p !== null);
    /**
     * A name make builds, where a file there stands for it (its goals, and what they reach): as `at`, but a name with
     * `..` after a folder (`build/../x.o`) as make opens it, through whatever that folder is then (a link too: opened).
     */
    const madeAt = (name: string): string[] =>
      name.includes(UNKNOWN) ? [] : [dir, ...folders].map((f) => opened(f, name) ?? fromRun(f, name)).filter((p): p is string => p !== null);
    for (const r of rules) {
      for (const t of r.targets) {
        if (t.includes("%") || /^\.[A-Z_]/.test(t) || phony.has(t)) continue;
        for (const p of at(t)) facts.targets.push({ path: p, target: t, makefile: r.makefile });
      }
      // A rule that remakes an included makefile: an explicit target an include line names, or a pattern one of its names matches.
      const remakes = r.targets.flatMap((t) => {
        if (!t.includes("%"))
          return [...new Set(at(t).flatMap((p) => included.naming(p)))].filter((inc) => mine.has(inc)).map((inc) => ({ inc, stem: null as string | null }));
        return runIncludes.flatMap(({ inc, names }) => {
          included.spend(names.length);
          return names.filter((n) => !n.includes(UNKNOWN) && matchesPattern(t, n)).map((n) => ({ inc, stem: stemOf(t, n) }));
        });
      });
      for (const { inc, stem } of remakes.slice(0, 8)) {
        const why = `make remakes what ${inc.makefile} includes (\`${inc.line}\`) with a rule that reads it`;
        const sources = r.recipe.join(" ").match(DEPENDENCY_RECIPE) ? [] : r.prereqs;
        for (const w of [...sources, ...r.recipe]) {
          const name = stem === null ? w : w.replace("%", stem);
          if (/^[-<>|&;]/.test(name) || name.includes("$")) continue;
          for (const p of at(name)) facts.inputs.push({ path: p, makefile: r.makefile, why });
        }
      }
    }
    // The goals (those named, else the default one), and what they reach through the rules' prerequisites.
    const goals = !run.goals ? [] : run.goals.length ? run.goals.map(canonical) : run.defaultGoal && defaultGoal !== null ? [defaultGoal] : [];
    for (const g of goals)
      if (!g.includes("%") && !/^\.[A-Z_]/.test(g) && !phony.has(g))
        for (const p of madeAt(g)) facts.goals.push({ path: p, goal: g, makefile: first[0] ?? null });
    if (goals.length) {
      const prereqs = new Map<string, string[]>();
      const truncated = new Set<string>();
      for (const r of rules)
        for (const t of r.targets) {
          // After `.SECONDEXPANSION:`, the list expanded again for this target, with the variables as the makefiles leave them.
          const list =
            r.second === undefined || t.includes("%")
              ? r.prereqs
              : secondExpansion(r.second, t, vars, (pattern) => globIn(checkout, dir, pattern, globs), archives);
          if (r.second !== undefined) included.spend(list.length + 1);
          // A goal that reaches a list read only in part: what the rest reaches cannot be told (every changed file counts).
          if (r.cut) truncated.add(t);
          const known = prereqs.get(t);
          if (known) for (const p of list) known.push(p);
          else prereqs.set(t, [...list]);
        }
      const reached = new Set<string>();
      const walk = [...goals];
      for (let i = 0; i < walk.length; i++) {
        const t = walk[i]!;
        if (reached.has(t)) continue;
        if (truncated.has(t)) throw new MakeTooLarge();
        reached.add(t);
        const next = prereqs.get(t) ?? [];
        // Each prerequisite is a step of the walk: within MATCH_BUDGET, as the matches of include lines are.
        included.spend(next.length + 1);
        for (const p of next) walk.push(p);
      }
      // Each name reached is looked for in each VPATH folder too: within the same bound.
      included.spend(reached.size * folders.length);
      for (const t of reached) if (!t.includes("%")) facts.made.push(...madeAt(t));
      // Of those, the prerequisites a rule builds (MakeFacts.intermediates), each pattern rule's target asked within the bound.
      const built = new Set(rules.filter((r) => r.recipe.length).flatMap((r) => r.targets.filter((t) => !t.includes("%"))));
      const patterns = rules.filter((r) => r.recipe.length).flatMap((r) => r.targets.filter((t) => t.includes("%") && !/^\.[A-Z_]/.test(t)));
      for (const t of reached) {
        if (goals.includes(t) || t.includes("%") || /^\.[A-Z_]/.test(t) || phony.has(t)) continue;
        included.spend(patterns.length);
        if (built.has(t) || /\.o$/.test(t) || archives.has(t) || patterns.some((p) => matchesPattern(p, t)))
          for (const p of madeAt(t)) facts.intermediates.push({ path: p, target: t, makefile: first[0] ?? null });
      }
    }
    for (const { name, makefile } of reads)
      for (const p of at(name))
        facts.inputs.push({ path: p, makefile, why: `${makefile} reads it as make reads the makefile (\`$(file <…)\` or \`$(shell …)\`)` });
  }
  return facts;
}

/**
 * A target or prerequisite as make names it: without its leading `./` (make strips it: `./test` and `test` are one
 * target), and with `//` and `/./` as `/`. make keeps `sub//x` and `sub/x` apart (a rule for one is none for the other),
 * but they are one file: read as one, a rule for either is reached from both, and the file is watched.
 */
function canonical(name: string): string {
  let n = name.replace(/\/(?:\.?\/)+/g, "/");
  while (n.startsWith("./") && n.length > 2) n = n.slice(2);
  return n;
}

/**
 * A list's words with each archive member reference (`lib.a(x.o)`, `lib.a(x.o y.o)` over several words) as its archive
 * (make's `(%): %` puts the member into it) and, where `archives` is given (a prerequisite list), the members too, each
 * archive noted there.
 */
function members(ws: string[], archives: Set<string> | null): string[] {
  const out: string[] = [];
  for (let i = 0; i < ws.length; i++) {
    const m = /^([^()\s$]+)\(([^()]*\)?)$/.exec(ws[i]!);
    if (!m) {
      out.push(ws[i]!);
      continue;
    }
    const inside = [m[2]!];
    // The members run on to the word that closes the parenthesis (`lib.a(x.o y.o)`).
    while (!inside.at(-1)!.endsWith(")") && i + 1 < ws.length) inside.push(ws[++i]!);
    if (!inside.at(-1)!.endsWith(")")) {
      out.push(ws[i]!);
      continue;
    }
    inside[inside.length - 1] = inside.at(-1)!.slice(0, -1);
    out.push(m[1]!);
    if (archives) {
      archives.add(canonical(m[1]!));
      out.push(...inside.filter(Boolean));
    }
  }
  return out;
}

/**
 * A name with `..` after a folder (`build/../x.o`), read from `folder` (from the repository's root), as make opens it:
 * the kernel goes through `build` as it is then, a link the worker's program made too, not to `x.o` beside it. Kept as
 * written (`src/build/../x.o`); null for any other name (fromRun reads it), or one that leads above the root as written.
 */
function opened(folder: string, name: string): string | null {
  if (path.posix.isAbsolute(name) || name.startsWith(CURDIR) || fromRun(folder, name) === null) return null;
  const parts = name.split("/").filter((p) => p && p !== ".");
  const at = parts.findIndex((p) => p !== "..");
  if (at < 0 || !parts.slice(at).includes("..")) return null;
  return [...folder.split("/").filter(Boolean), ...parts].join("/");
}

/**
 * The lines the `$(eval …)`s of a line make (`$(eval $(call PROG,test))`, `$(foreach p,$(PROGS),$(eval …))`), with
 * `$(call …)` read: the variable's value with `$(1)`, `$(2)`… bound. Within the line's expansion bounds; throws
 * MakeTooLarge past MAX_EVAL_TEXT (a run's makefiles: MAX_EVAL_LINES and MAX_EVAL_TEXT in all).
 */
function evaluated(line: string, vars: Map<string, string>): { lines: string[]; spent: number } {
  const texts: string[] = [];
  evals = texts;
  try {
    // A bound of its own (a `$(foreach …)` of many programs): past it the line's text could not be told, and what the
    // rules it makes reach would go unread.
    budget = EVAL_BUDGET;
    expand(line, vars, 0);
  } finally {
    evals = null;
  }
  if (budget < 0 || texts.reduce((k, t) => k + t.length, 0) > MAX_EVAL_TEXT) throw new MakeTooLarge();
  return { lines: texts.flatMap(logicalLines), spent: EVAL_BUDGET - budget };
}

/**
 * A prerequisite list after `.SECONDEXPANSION:` (Rule.second) expanded again for the target `target`, with `$$@` (and
 * `$$(@D)`, `$$(@F)`) the target: its names as the rule's prerequisites (members, canonical).
 */
function secondExpansion(list: string, target: string, vars: Map<string, string>, glob: (pattern: string) => string[] | null, archives: Set<string>): string[] {
  automatic = new Map([
    ["@", target],
    ["@D", target.includes("/") ? target.slice(0, target.lastIndexOf("/")) : "."],
    ["@F", path.posix.basename(target)],
  ]);
  globbed = glob;
  try {
    budget = EXPANSION_BUDGET;
    return members(words(expand(list, vars, 0)), archives).map(canonical);
  } finally {
    automatic = null;
    globbed = null;
  }
}

/** The stem a `%` pattern matches in a name. */
function stemOf(pattern: string, name: string): string {
  const p = pattern.indexOf("%");
  return name.slice(p, name.length - (pattern.length - p - 1));
}

/** A path from the repository's root for `name` read from `folder` (also from the root), or null when it leads above the root. */
export function fromRun(folder: string, name: string): string | null {
  const p = path.posix.normalize(path.posix.join(folder || ".", name));
  return p === ".." || p.startsWith("../") ? null : p === "." ? "" : p;
}

/**
 * Where make looks for a name read in the run's folder `dir`, from the repository's root: `$(CURDIR)/x` in that folder
 * alone; an absolute name nowhere in the checkout; a relative one in `dir`, then in each of `folders` (its `-I` or VPATH
 * folders). Null for a place above the root.
 */
function lookedFor(dir: string, folders: string[], name: string): (string | null)[] {
  if (name.startsWith(CURDIR)) return [fromRun(dir, `.${name.slice(CURDIR.length)}`)];
  if (path.posix.isAbsolute(name)) return [];
  return [dir, ...folders].map((f) => fromRun(f, name));
}

/** The file make reads for an include name (no wildcard): the first of the run's folder and its search path that has it. */
function firstFound(checkout: string, dir: string, searched: string[], name: string): string | null {
  if (name.includes(UNKNOWN) || picomatch.scan(name).isGlob) return null;
  return lookedFor(dir, searched, name).find((f): f is string => f !== null && existsSync(path.join(checkout, f))) ?? null;
}

/** make's long options (GNU make 4.4), for the names a `--name` abbreviates (getopt takes any unambiguous start). */
const LONG_OPTIONS = new Map<string, string>(
  Object.entries({
    "always-make": "B",
    "assume-new": "W",
    "assume-old": "o",
    "check-symlink-times": "L",
    debug: "debug",
    directory: "C",
    "dry-run": "n",
    "environment-overrides": "e",
    eval: "E",
    file: "f",
    help: "h",
    "ignore-errors": "i",
    "include-dir": "I",
    jobs: "j",
    "jobserver-auth": "jobserver-auth",
    "jobserver-fds": "jobserver-auth",
    "jobserver-style": "jobserver-style",
    "just-print": "n",
    "keep-going": "k",
    "load-average": "l",
    makefile: "f",
    "max-load": "l",
    "new-file": "W",
    "no-builtin-rules": "r",
    "no-builtin-variables": "R",
    "no-keep-going": "S",
    "no-print-directory": "no-print-directory",
    "no-silent": "no-silent",
    "old-file": "o",
    "output-sync": "O",
    "print-data-base": "p",
    "print-directory": "w",
    question: "q",
    quiet: "s",
    recon: "n",
    shuffle: "shuffle",
    silent: "s",
    stop: "S",
    "sync-mutex": "sync-mutex",
    "temp-stdin": "temp-stdin",
    touch: "t",
    trace: "trace",
    version: "v",
    "warn-undefined-variables": "warn-undefined-variables",
    "what-if": "W",
  }),
);
/** The options of LONG_OPTIONS that take a value (in the word after, or after `=`). */
const LONG_VALUE = new Set(["C", "E", "f", "I", "o", "W", "jobserver-auth", "jobserver-style", "sync-mutex", "temp-stdin"]);

/**
 * What a make option `--name` (before any `=`) stands for, as getopt reads an abbreviation: the short letter of the
 * option (`--include-dir`, `--inc` → "I"; `--file`, `--makefile`, `--fi` → "f"), another name for an option without one,
 * and whether it takes a value; null for a name that is no option or an ambiguous start (`--i`: make stops there).
 */
export function makeLongOption(name: string): { option: string; value: boolean } | null {
  const exact = LONG_OPTIONS.get(name);
  const starts = new Set([...LONG_OPTIONS].filter(([o]) => o.startsWith(name)).map(([, short]) => short));
  const option = exact ?? (name && starts.size === 1 ? [...starts][0]! : null);
  return option === null ? null : { option, value: LONG_VALUE.has(option) };
}

/** make's short options that take a value, in the rest of a cluster or the word after (`-C dir`, `-kIconf`). */
export const MAKE_SHORT_VALUE = "CEfIoW";

/**
 * The folders `-I DIR`, `-IDIR`, `--include-dir=DIR` (or an abbreviation) name in a MAKEFLAGS value, as make reads it:
 * its first word is a cluster of letters when it has no `-` (`kI conf`), and variables follow a `--` (`-- X=1`).
 */
export function makeflagsIncludeDirs(value: string): string[] {
  const ws = words(value);
  if (ws[0] && !ws[0].startsWith("-")) ws[0] = `-${ws[0]}`;
  const out: string[] = [];
  for (let i = 0; i < ws.length; i++) {
    const w = ws[i]!;
    if (w === "--") break;
    if (w.startsWith("--")) {
      const eq = w.indexOf("=");
      const opt = makeLongOption(w.slice(2, eq < 0 ? undefined : eq));
      if (!opt?.value) continue;
      const v = eq < 0 ? ws[++i] : w.slice(eq + 1);
      if (opt.option === "I" && v) out.push(v);
    } else if (w.startsWith("-"))
      for (let k = 1; k < w.length; k++) {
        if (!MAKE_SHORT_VALUE.includes(w[k]!)) continue;
        const v = k + 1 < w.length ? w.slice(k + 1) : ws[++i];
        if (w[k] === "I" && v) out.push(v);
        break;
      }
  }
  return out;
}

/** One name's wildcard as make reads it (`*`, `?`, `[…]`), as tokens; null for what it is not (a backslash, an unclosed `[`). */
function wildcardTokens(p: string): WildcardToken[] | null {
  const out: WildcardToken[] = [];
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    if (c === "\\") return null;
    if (c === "*") {
      if (out.at(-1) !== STAR) out.push(STAR);
    } else if (c === "?") out.push(() => true);
    else if (c === "[") {
      const end = p.indexOf("]", i + 2);
      if (end < 0) return null;
      const negated = p[i + 1] === "!" || p[i + 1] === "^";
      const set = p.slice(negated ? i + 2 : i + 1, end);
      const ranges: [string, string][] = [];
      for (let j = 0; j < set.length; j++) ranges.push(set[j + 1] === "-" && j + 2 < set.length ? [set[j]!, set[(j += 2)]!] : [set[j]!, set[j]!]);
      out.push((ch) => ranges.some(([a, b]) => ch >= a && ch <= b) !== negated);
      i = end;
    } else out.push((ch) => ch === c);
  }
  return out;
}

/**
 * Whether a file (from the repository's root) is one an include word names, in time linear in practice whatever the word:
 * the word is the worker's when it changed the Makefile, and picomatch's expression for `*a*a*a*a*b.mk` backtracks
 * polynomially (minutes of the engine's thread on a 200-character name). Read name by name as make's wildcard reads it;
 * a word in other glob syntax (braces, extglobs, picomatch's `**` across folders) goes to picomatch only with at most
 * one run of `*`, else it names every file (the file is then read as an included one: check configuration unless it
 * holds only plain dependency lines).
 */
function includeMatcher(word: string): (file: string) => boolean {
  if (word === UNKNOWN) return (file) => FRAGMENT.test(file);
  if (word.includes(UNKNOWN)) {
    // Known text around what cannot be told: the literal start before it and end after it (up to any wildcard).
    const head = word.slice(0, word.indexOf(UNKNOWN));
    const tail = word.slice(word.lastIndexOf(UNKNOWN) + 1);
    const prefix = head.slice(0, head.search(/[*?[]/) < 0 ? head.length : head.search(/[*?[]/));
    const suffix = tail.slice(Math.max(tail.lastIndexOf("*"), tail.lastIndexOf("?"), tail.lastIndexOf("]")) + 1);
    return (file) => file.length >= prefix.length + suffix.length && file.startsWith(prefix) && file.endsWith(suffix);
  }
  const parts = word.split("/").map(wildcardTokens);
  if (!/[{}()+@]|(?<!\[)!|\*\*/.test(word) && parts.every((p) => p !== null)) {
    return (file) => {
      const names = file.split("/");
      return names.length === parts.length && names.every((n, i) => wildcardMatch(n, parts[i]!));
    };
  }
  if ((word.match(/\*+/g)?.length ?? 0) > 1) return () => true;
  try {
    return picomatch(word, { dot: true });
  } catch {
    return () => true;
  }
}

/**
 * Bounds on reading one include line, whatever the Makefile (the worker's, when it changed one): references expanded, and
 * the length of the text made. Past them the rest reads as `*` (unknown).
 */
const EXPANSION_BUDGET = 2_000;
const MAX_EXPANSION = 64 * 1024;
let budget = 0;
/** Set where an expansion ran past those bounds (its rest unknown), not where a function is merely unknown here. */
let cut = false;

/**
 * While a rule's targets and prerequisites are expanded: what a `$(wildcard …)` pattern names (globIn), or null to keep
 * it as written (an include line's, matched as a glob against the files a check writes).
 */
let globbed: ((pattern: string) => string[] | null) | null = null;

/** While a line of `$(eval …)` is expanded (evaluated): the texts its evals make; null elsewhere (an eval reads as unknown). */
let evals: string[] | null = null;

/** While a list is expanded a second time (secondExpansion): the automatic variables known (`@`, `@D`, `@F`). */
let automatic: Map<string, string> | null = null;

/** At most this many names from one wildcard pattern of a rule; past them (or a folder not read) it stays as written. */
const MAX_GLOBBED = 4096;

/**
 * The files a rule's wildcard pattern names now, read from make's folder `dir` (from the repository's root), as make's
 * `$(wildcard)` gives them (relative to that folder, dot files only for a pattern that starts with a dot): only a
 * pattern whose last part alone holds `*`, `?` or `[`, in a folder inside the checkout; null for any other (kept as
 * written). The held-back and committed sources are there before the first check runs.
 */
function globIn(checkout: string, dir: string, pattern: string, memo: Map<string, string[] | null>): string[] | null {
  if (memo.has(pattern)) return memo.get(pattern)!;
  let out: string[] | null = null;
  const slash = pattern.lastIndexOf("/");
  const [folder, base] = [pattern.slice(0, slash + 1), pattern.slice(slash + 1)];
  if (/[*?[]/.test(base) && !/[*?[\\\u0001\u0002]/.test(folder) && !/[\\\u0001\u0002]/.test(base) && !path.posix.isAbsolute(pattern)) {
    const from = fromRun(dir, folder || ".");
    const real = from === null ? null : from === "" ? "" : realInside(checkout, from);
    if (real !== null && memo.size < MAX_FOLDERS * 64)
      try {
        const match = picomatch(base, { dot: base.startsWith(".") });
        const names = readdirSync(path.join(checkout, real)).filter((f) => match(f));
        out = names.length <= MAX_GLOBBED ? names.sort().map((f) => folder + f) : null;
      } catch {
        out = null;
      }
  }
  memo.set(pattern, out);
  return out;
}

/** A rule line's text without its references (`$(…)`, `${…}`): where a `=` makes it a target-specific variable. */
function outsideReferences(s: string): string {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    if (s[i] === "$" && (s[i + 1] === "(" || s[i + 1] === "{")) {
      const end = closing(s, i + 1);
      if (end < 0) return out + s.slice(i);
      i = end;
    } else out += s[i];
  }
  return out;
}

/** One line's text expanded (expand) within a fresh EXPANSION_BUDGET. */
function expandLine(text: string, vars: Map<string, string>): string {
  budget = EXPANSION_BUDGET;
  return expand(text, vars, 0);
}

/** A Makefile's lines with their continuations (a backslash at the end) joined. */
function logicalLines(text: string): string[] {
  return text.replace(/\\\r?\n/g, " ").split(/\r?\n/);
}

const words = (s: string) => s.split(/\s+/).filter(Boolean);

/** The end of a `$(`/`${` reference starting at `open` (the bracket), or -1. */
function closing(s: string, open: number): number {
  const [o, c] = s[open] === "(" ? ["(", ")"] : ["{", "}"];
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    if (s[i] === o) depth++;
    else if (s[i] === c && --depth === 0) return i;
  }
  return -1;
}

/** `%` patterns as make's patsubst applies them to one word (a word that does not match is kept). */
function patsubst(pattern: string, replacement: string, word: string): string {
  // A word not known here may be one the pattern matches: made with an unknown stem (`$(SRCS:.c=.d)` of an unknown SRCS: any name ending in `.d`).
  if (word.includes(UNKNOWN) && !matchesPattern(pattern, word)) return replacement.includes("%") ? replacement.replace("%", UNKNOWN) : replacement;
  if (!matchesPattern(pattern, word)) return word;
  return pattern.includes("%") && replacement.includes("%") ? replacement.replace("%", stemOf(pattern, word)) : replacement;
}

/** Whether a word matches a `%` pattern (or is the pattern's text, without one). */
function matchesPattern(pattern: string, word: string): boolean {
  const p = pattern.indexOf("%");
  if (p < 0) return word === pattern;
  const [pre, suf] = [pattern.slice(0, p), pattern.slice(p + 1)];
  return word.length >= pre.length + suf.length && word.startsWith(pre) && word.endsWith(suf);
}

/**
 * A Makefile's text with its variable references and the functions that name files expanded as make would (wildcard,
 * patsubst, subst, addprefix, addsuffix, sort, strip, a substitution reference `$(VAR:.o=.d)`); any other function
 * reads as `*` (unknown here). Wildcards stay as written: they are the globs the include matches.
 */
function expand(s: string, vars: Map<string, string>, depth: number): string {
  if (depth > 20) {
    cut = true;
    return UNKNOWN;
  }
  let out = "";
  for (let i = 0; i < s.length; i++) {
    if (out.length > MAX_EXPANSION) {
      cut = true;
      return `${out}${UNKNOWN}`;
    }
    if (s[i] !== "$") {
      out += s[i];
      continue;
    }
    const next = s[i + 1];
    if (next === "$") {
      out += "$";
      i++;
      continue;
    }
    if (next !== "(" && next !== "{") {
      // A one-letter variable ($@, $X): unknown here, but for `$@` in a second expansion and `$1` in a `$(call …)`.
      const known = next === undefined ? "" : next === "@" ? automatic?.get("@") : evals && /\d/.test(next) ? vars.get(next) : undefined;
      out += known ?? (next ? UNKNOWN : "");
      i++;
      continue;
    }
    const end = closing(s, i + 1);
    if (end < 0) return `${out}${UNKNOWN}`;
    out += reference(s.slice(i + 2, end), vars, depth + 1);
    i = end;
  }
  return out;
}

function reference(body: string, vars: Map<string, string>, depth: number): string {
  if (--budget < 0) {
    cut = true;
    return UNKNOWN;
  }
  const auto = automatic?.get(body);
  if (auto !== undefined) return auto;
  const fn = /^([a-z-]+)\s+([\s\S]*)$/.exec(body);
  if (fn) {
    const [, name, rest] = fn;
    if (name === "foreach") {
      // `$(foreach d,$(DIRS),$(wildcard $(d)/*.d))`: the text expanded once per word of the list, the name bound to it.
      const [v, list, text] = splitArgs(rest!);
      const bound = expand(v ?? "", vars, depth).trim();
      const was = vars.get(bound);
      const out = words(expand(list ?? "", vars, depth))
        .slice(0, evals ? MAX_GLOBBED : 64)
        .map((w) => {
          vars.set(bound, w);
          return expand(text ?? "", vars, depth);
        });
      if (was === undefined) vars.delete(bound);
      else vars.set(bound, was);
      return out.join(" ");
    }
    const args = splitArgs(rest!).map((a) => expand(a, vars, depth));
    const each = (text: string | undefined, f: (w: string) => string) =>
      words(text ?? "")
        .map(f)
        .join(" ");
    switch (name) {
      case "eval":
        // The text is read as the makefile's next lines (evaluated); it expands to nothing.
        if (!evals) return UNKNOWN;
        evals.push(args.join(","));
        return "";
      case "call": {
        // A variable's value with `$(1)`, `$(2)`… the arguments (`$(0)` its name), on a line of `$(eval …)` only.
        const fn = args[0]?.trim() ?? "";
        const value = vars.get(fn);
        if (!evals || value === undefined) return UNKNOWN;
        const bound = Array.from({ length: Math.max(10, args.length) }, (_, k) => String(k));
        const was = bound.map((k) => vars.get(k));
        bound.forEach((k, j) => {
          vars.set(k, j === 0 ? fn : (args[j] ?? ""));
        });
        try {
          return expand(value, vars, depth);
        } finally {
          bound.forEach((k, j) => {
            const w = was[j];
            if (w === undefined) vars.delete(k);
            else vars.set(k, w);
          });
        }
      }
      case "wildcard":
        if (globbed)
          return words(args.join(" "))
            .flatMap((w) => globbed?.(w) ?? [w])
            .join(" ");
        return args.join(",");
      case "sort":
      case "strip":
        return args.join(",");
      // What only picks words out of a list: the whole list (a name it would leave out is counted too).
      case "filter":
      case "filter-out":
      case "word":
        return args[1] ?? "";
      case "firstword":
      case "lastword":
        return args[0] ?? "";
      case "wordlist":
        return args[2] ?? "";
      case "if":
        return args.slice(1).join(" ");
      case "or":
      case "and":
        return args.join(" ");
      case "notdir":
        return each(args[0], (w) => path.posix.basename(w));
      case "dir":
        return each(args[0], (w) => (w.includes("/") ? w.slice(0, w.lastIndexOf("/") + 1) : "./"));
      case "basename":
        return each(args[0], (w) => w.replace(/\.[^./]*$/, ""));
      case "abspath":
      case "realpath":
        return each(args[0], (w) => (path.posix.isAbsolute(w) || w.startsWith(CURDIR) ? w : `${CURDIR}/${w}`));
      case "patsubst":
        return words(args[2] ?? "")
          .map((w) => patsubst(args[0]!.trim(), args[1]!.trim(), w))
          .join(" ");
      case "subst":
        return (args[2] ?? "").split(args[0]!).join(args[1] ?? "");
      case "addprefix":
        return words(args[1] ?? "")
          .map((w) => args[0]!.trim() + w)
          .join(" ");
      case "addsuffix":
        return words(args[1] ?? "")
          .map((w) => w + args[0]!.trim())
          .join(" ");
      default:
        return UNKNOWN;
    }
  }
  const sub = /^([^:=]+):([^=]*)=(.*)$/.exec(body);
  if (sub) {
    const [, name, from, to] = sub;
    const pattern = from!.includes("%") ? from! : `%${from}`;
    const replacement = from!.includes("%") ? to! : `%${to}`;
    return words(expand(vars.get(expand(name!, vars, depth)) ?? "", vars, depth))
      .map((w) => patsubst(pattern, replacement, w))
      .join(" ");
  }
  return expand(vars.get(expand(body, vars, depth).trim()) ?? "", vars, depth);
}

/** A function's arguments, split at the commas outside nested references. */
function splitArgs(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of s) {
    if (ch === "(" || ch === "{") depth++;
    else if (ch === ")" || ch === "}") depth--;
    if (ch === "," && depth === 0) {
      out.push(cur);
      cur = "";
    } else cur += ch;
  }
  out.push(cur);
  return out;
}

/**
 * Whether a file make includes holds only plain dependency lines, as a compiler writes them (`gcc -MMD -MP`): `targets:
 * prerequisites`, with no recipe, assignment, directive, reference, pattern or special target (`.IGNORE:` ignores every
 * failing command; `SHELL = true` runs none). An empty file is plain.
 */
export function plainDependencies(text: string): boolean {
  for (const raw of logicalLines(text)) {
    if (!raw.trim() || /^\s*#/.test(raw)) continue;
    if (raw.startsWith("\t")) return false;
    const line = raw.replace(/\$\$/g, "");
    if (/[$;=%]/.test(line) || !line.includes(":")) return false;
    if (/^\s*(-?include|sinclude|define|endef|export|unexport|override|private|vpath|ifn?eq|ifn?def|else|endif|undefine|load)\b/.test(line)) return false;
    const targets = line.slice(0, line.indexOf(":"));
    if (words(targets).some((t) => /^\.[A-Z_]/.test(t))) return false;
  }
  return true;
}

/**
 * The sources GNU make's built-in rules remake a file from (`make -p -f /dev/null`): `%: %.sh` (`cat $< > $@`), the
 * compilers' `%: %.c` …, the chains through them (`.y`, `.l`, `.w`), and RCS's and SCCS's checkouts (`%,v`, `RCS/%`,
 * `SCCS/s.%`, `s.%`). make tries to remake every makefile it reads before reading it.
 */
const REMADE_FROM = /^(.+?)(?:\.(?:sh|c|cc|cpp|m|mod|o|p|r|s|f|y|l|w|web|ch|def|sym|ln)|,v)$/i;

/**
 * The file (a path, "/"-separated, in the same form as `file`) that make would remake from `file` with a built-in rule,
 * or null: `Makefile.sh` → `Makefile`, `src/calc.d.sh` → `src/calc.d`, `RCS/Makefile,v` and `SCCS/s.Makefile` →
 * `Makefile`.
 */
export function remadeFrom(file: string): string | null {
  const parts = file.split("/");
  const base = parts.pop()!;
  const dir = parts.at(-1)?.toLowerCase();
  if (dir === "rcs") return [...parts.slice(0, -1), base.replace(/,v$/i, "")].join("/");
  if (dir === "sccs") return /^s\./i.test(base) ? [...parts.slice(0, -1), base.slice(2)].join("/") : null;
  if (/^s\../i.test(base)) return [...parts, base.slice(2)].join("/");
  const m = REMADE_FROM.exec(base);
  return m ? [...parts, m[1]!].join("/") : null;
}

/** Whether a name is one make reads as a makefile by itself: GNUmakefile, makefile, Makefile, or a make fragment (`.mk`). */
export const isMakefileName = (base: string) => /^(gnu)?makefile$|\.mk$/i.test(base);
