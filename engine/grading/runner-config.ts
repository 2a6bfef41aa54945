// Checks that cannot be gamed from the workspace: the files that decide what a check command really runs (the test
// runner's configuration, scripts, and modules that shadow a tool) are protected by default whenever a task has command
// checks. A change to one of them is its own violation kind ("check configuration"), whatever the task's `protect`
// says; a task that must change one names it exactly in its `scope`.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, lstatSync, readdirSync, readlinkSync, realpathSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import ini from "ini";
import { parse as parseToml } from "smol-toml";
import { allowListedEnv } from "../sandbox";
import { type CommandScript, checkWriters, commandScripts, makeGoalRuns, simpleCommands } from "./command-scripts";
import { MAX_READ_BYTES, readInside } from "./files";
import { foldPath, hashRegular, readRegular } from "../workspace";
import { fromRun, isMakefileName, type MakeFacts, type MakeRun, MakeTooLarge, makeFacts, plainDependencies, remadeFrom } from "./make-includes";
import { PYTHON_STDLIB } from "./python-stdlib";
import { fromTaskFolder } from "./scope";

const run = promisify(execFile);

/** Files (by base name, anywhere in the repository, case folded) that configure or hook a test runner. */
const RUNNER_FILES = new Set([
  "conftest.py",
  "pytest.ini",
  ".pytest.ini",
  "pytest.toml",
  ".pytest.toml",
  "tox.ini",
  "noxfile.py",
  ".npmrc",
  ".yarnrc",
  ".yarnrc.yml",
  ".pnpmfile.cjs",
  ".mocharc",
  ".babelrc",
  ".swcrc",
  ".nycrc",
  ".c8rc",
  ".coveragerc",
  ".rspec",
  ".rspec-local",
  "spec_helper.rb",
  "rails_helper.rb",
  "rakefile",
  "sitecustomize.py",
  "usercustomize.py",
  "makefile",
  "gnumakefile",
  "justfile",
  ".justfile",
  "go.work",
  "rust-toolchain",
  "rust-toolchain.toml",
  // Version managers' pins, read by their shims from the check's folder (pyenv's python3 on PATH, asdf, nodenv, rbenv):
  // they choose the interpreter that runs a check, as rust-toolchain chooses the compiler.
  ".python-version",
  ".tool-versions",
  ".node-version",
  ".nvmrc",
  ".ruby-version",
  ".java-version",
  // Runners of other languages that read their own configuration from the project: bun test's preload scripts, Karma,
  // PHPUnit's bootstrap and suites, Maven's command-line and JVM options (`-DskipTests`).
  "bunfig.toml",
  "phpunit.xml",
  "phpunit.xml.dist",
  "maven.config",
  "jvm.config",
  "jsconfig.json",
  // Build tools' wrappers and their pins: `./gradlew test` and `./mvnw test` run these scripts, which fetch and start
  // the distribution the properties name; Maven's core extensions run code in every build.
  "gradlew",
  "gradlew.bat",
  "mvnw",
  "mvnw.cmd",
  "gradle-wrapper.properties",
  "maven-wrapper.properties",
  // Read by their runners by default, with no flag: Mocha before 8 (test/mocha.opts), node-tap, PHPUnit 10's second
  // name, Jasmine (spec/support/jasmine.json: its helpers run before the specs), cucumber-js, behave, rake's other
  // names, Bazel's options (`test --test_filter=…`), and the task files of gulp, grunt, jake and go-task, which
  // `gulp test`, `grunt test`, `jake test` and `task test` run as make runs a Makefile.
  "mocha.opts",
  ".taprc",
  "phpunit.dist.xml",
  "jasmine.json",
  "cucumber.js",
  "cucumber.cjs",
  "cucumber.mjs",
  "cucumber.json",
  "cucumber.yml",
  "cucumber.yaml",
  "behave.ini",
  ".behaverc",
  "rakefile.rb",
  ".bazelrc",
  "gulpfile.js",
  "gulpfile.cjs",
  "gulpfile.mjs",
  "gulpfile.ts",
  "gulpfile.babel.js",
  "gruntfile.js",
  "gruntfile.cjs",
  "gruntfile.ts",
  "gruntfile.coffee",
  "jakefile",
  "jakefile.js",
  "taskfile.yml",
  "taskfile.yaml",
  "taskfile.dist.yml",
  "taskfile.dist.yaml",
]);

/** Top-level files named like a tool or a module a check may run: they shadow it (`python -m pytest` imports ./pytest.py first). */
const SHADOW_TOP =
  /^(pytest|_pytest|pluggy|iniconfig|pygments|packaging|tomli|exceptiongroup|py|unittest|nose|nose2|doctest|coverage|hypothesis|tox|pip|setuptools|site|runpy|importlib|node|npm|npx|yarn|pnpm|jest|vitest|mocha|tsc|make|bash|sh|python|python3)(\.py|\.pth|\.js|\.cjs|\.mjs|\.sh)?$/;
/**
 * Modules Python or the test runner import by themselves at startup, found first in the checks' folder under
 * `python -m`: `org` (the standard copy and pickle try Jython's `org.python.core` and take an ImportError quietly, so a
 * worker's org.py runs in every such check before any test, as a sitecustomize.py would), `__pypy__` (tried the same
 * way), typing_extensions (pytest's and packaging's), and hypothesis's pytest plugin with what it imports.
 */
const STARTUP_TOP = new Set(["org", "__pypy__", "typing_extensions", "sortedcontainers", "_hypothesis_pytestplugin", "_hypothesis_globals"]);
const STARTUP_WHY =
  "named like a module Python or the test runner imports by itself at startup (`org`, tried by the standard copy module; typing_extensions, pytest's): it runs before any test";

/**
 * A top-level Python module as the import system finds it in the checkout (importlib.machinery.all_suffixes(): source,
 * a sourceless `.pyc` beside it — not only in __pycache__ —, and an extension module `.so`, `.abi3.so`,
 * `.cpython-311-x86_64-linux-gnu.so`): its module name, or null.
 */
const PY_MODULE = /^([^./]+)(?:\.py|\.pyc|(?:\.[\w-]+)?\.so)$/;

/**
 * The standard modules' names as matched here: case folded, as the changed path is (cProfile). Less `test` (CPython's own
 * regression tests, which no runner imports): a top-level test.py is a worker's script far more often than a shadow.
 */
const STDLIB_FOLDED = new Set([...PYTHON_STDLIB].filter((n) => n !== "test").map((n) => n.toLowerCase()));

/** Whether a top-level name (a file, or a package's folder) shadows a tool or a standard module a check imports. */
function shadows(base: string, pkg: boolean): boolean {
  if (SHADOW_TOP.test(base)) return true;
  const name = pkg ? base : PY_MODULE.exec(base)?.[1];
  return !!name && (SHADOW_TOP.test(name) || STDLIB_FOLDED.has(name));
}

/** Files whose runner-related part only counts (the rest may change freely): compared, parsed, between the base and the commit. */
const SECTIONED = new Set([
  "package.json",
  "pyproject.toml",
  "setup.cfg",
  "cargo.toml",
  "go.mod",
  "pom.xml",
  "build.gradle",
  "build.gradle.kts",
  "settings.gradle",
  "settings.gradle.kts",
  "deno.json",
  "deno.jsonc",
]);

/** Why a changed path (relative to the repository root, "/"-separated) may change what a check runs, or null. */
export function runnerConfigReason(file: string): string | null {
  // Matched as a case-insensitive, normalising file system sees the name (`.NPMRC`, `ConfTest.py` open the same file there).
  const parts = foldPath(file).split("/");
  const base = parts[parts.length - 1]!;
  const shown = file.split("/").pop()!;
  if (parts.includes("node_modules")) return "node_modules/ (installed code a check runs)";
  // jest's manual mocks: a __mocks__/<package>.js in any folder of its roots replaces that installed package in every
  // test, without a jest.mock() (a no-op `expect` of chai passes every held-back assertion).
  if (parts.slice(0, -1).includes("__mocks__")) return "__mocks__/ (jest's manual mocks: one named like an installed package replaces it in every test)";
  // Yarn's own files: the release `yarnPath` names (the yarn a check's `yarn test` runs), its plugins, and the zipped
  // packages a Plug'n'Play install loads in place of node_modules/ (`.yarn/cache/chai-…zip`), with the loader that maps
  // each import to one (.pnp.cjs, .pnp.loader.mjs).
  if (parts.slice(0, -1).includes(".yarn"))
    return ".yarn/ (Yarn's own files: the release a check's yarn runs, its plugins, the packages a Plug'n'Play install loads)";
  if (/^\.pnp\.(c?js|loader\.mjs|data\.json)$/.test(base)) return `${shown} (Yarn's Plug'n'Play loader: it decides what each import of a check loads)`;
  if (parts.includes("vendor")) return "vendor/ (vendored code a check builds with: Go's `vendor/`, Composer, Bundler)";
  if (parts.includes("__pycache__") && base.endsWith(".pyc")) return "compiled Python a check may import";
  // pytest writes a .gitignore of `*` into the cache it makes: only a hand-made one is ever committed.
  if (parts.slice(0, -1).includes(".pytest_cache")) return ".pytest_cache/ (pytest's cache: `--lf`, `--ff`, `--nf` and `--sw` choose from it which tests run)";
  if (parts.length >= 2 && parts[parts.length - 2] === ".cargo" && (base === "config" || base === "config.toml"))
    return `.cargo/${shown} (cargo configuration: runners, aliases, flags)`;
  if (parts.length >= 2 && parts[parts.length - 2] === ".mvn" && base === "extensions.xml")
    return ".mvn/extensions.xml (Maven's core extensions: code run in every build)";
  if (RUNNER_FILES.has(base)) return `${shown} (test runner configuration or hook)`;
  if (parts.length >= 2 && parts[parts.length - 2] === "rakelib" && base.endsWith(".rake"))
    return `rakelib/${shown} (rake loads every task file of rakelib/ with the Rakefile)`;
  // The source a built-in rule of make's remakes a makefile from (Makefile.sh, config.mk.sh, RCS/Makefile,v).
  const remade = remadeFrom(file);
  if (remade && isMakefileName(path.posix.basename(remade)))
    return `${shown} (make remakes ${path.posix.basename(remade)} from it with a built-in rule before reading it, \`cat Makefile.sh > Makefile\`: its rules in place of the Makefile's)`;
  // What a Makefile includes (`-include config.mk`): its variables and rules are the Makefile's own.
  if (base.endsWith(".mk")) return `${shown} (a make fragment: a Makefile that includes it runs its rules and variables)`;
  if (/^karma\.conf\.[^/]+$/.test(base)) return `${shown} (tool configuration)`;
  if (/\.config\.[^/]+$/.test(base) || /^\.?[\w-]+rc\.(js|cjs|mjs|json|jsonc|ya?ml|toml)$/.test(base) || /^\.mocharc(\.|$)/.test(base))
    return `${shown} (tool configuration)`;
  if (/^(vitest|vite|jest)\.workspace\.[^/]+$/.test(base) || /^(jest|vitest|test)[.-]setup\.[^/]+$/.test(base) || /^setuptests\.[^/]+$/.test(base))
    return `${shown} (test runner setup file)`;
  if (/^tsconfig(\.[^/]+)?\.json$/.test(base)) return `${shown} (TypeScript configuration: path mappings decide what a test imports)`;
  if (base.endsWith(".pth")) return `${shown} (Python path hook)`;
  // An installed distribution's metadata on sys.path (the checkout is first there under `python -m`): its
  // entry_points.txt registers plugins the runner loads by itself (pytest11), with no conftest.py or configuration.
  if (parts.some((p) => /\.(dist|egg)-info$/.test(p))) return `${shown} (Python package metadata: its entry points register test runner plugins)`;
  const startup = parts.length === 1 ? PY_MODULE.exec(base)?.[1] : parts.length === 2 && PY_MODULE.exec(base)?.[1] === "__init__" ? parts[0] : undefined;
  if (startup && STARTUP_TOP.has(startup)) return `${parts.length === 1 ? shown : `${file.split("/")[0]}/`} (${STARTUP_WHY})`;
  if (parts.length === 1 && shadows(base, false)) return `${shown} (named like a tool or a standard module a check may run: it shadows it)`;
  if (parts.length === 2 && shadows(parts[0]!, true) && PY_MODULE.exec(base)?.[1] === "__init__")
    return `${file.split("/")[0]}/ (a package named like a tool or a standard module a check may run)`;
  return null;
}

/** package.json keys that decide what a check runs or how a test is loaded (the rest: dependencies, metadata, may change). */
const PACKAGE_JSON_KEYS = [
  "scripts",
  "jest",
  "mocha",
  "ava",
  "tap",
  "c8",
  "nyc",
  "vitest",
  "babel",
  "exports",
  "imports",
  "eslintConfig",
  "prettier",
  "config",
  "workspaces",
  "pnpm",
];

/** A value with its object keys sorted at every level: two parses of the same content compare equal. */
function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === "object" && !(v instanceof Date))
    return Object.fromEntries(
      Object.keys(v as Record<string, unknown>)
        .sort()
        .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
    );
  return v instanceof Date ? v.toISOString() : v;
}

type Doc = Record<string, unknown>;
const isDoc = (v: unknown): v is Doc => !!v && typeof v === "object" && !Array.isArray(v);

/** A copy of `doc` without the value at `keys` (a path of table names); the rest as it was. */
function without(doc: Doc, keys: string[]): Doc {
  const [k, ...rest] = keys;
  if (!(k! in doc)) return doc;
  const copy = { ...doc };
  if (!rest.length) delete copy[k!];
  else if (isDoc(copy[k!])) copy[k!] = without(copy[k!] as Doc, rest);
  return copy;
}
const pick = (doc: Doc, keys: string[]): unknown => keys.reduce<unknown>((v, k) => (isDoc(v) ? v[k] : undefined), doc);

/**
 * pyproject.toml, deny by default: everything counts but what only describes the package (its metadata, its build, its
 * dependency lists). Dotted keys, quoted keys and spaced headers (`tool.pytest.ini_options.addopts = …` at the top,
 * `[ tool . "pytest" ]`) are what a TOML parser makes of them, as pytest's own does.
 */
const PYPROJECT_FREE = [
  ["project"],
  ["build-system"],
  ["dependency-groups"],
  ["tool", "poetry"],
  ["tool", "setuptools"],
  ["tool", "setuptools_scm"],
  ["tool", "hatch", "version"],
  ["tool", "hatch", "metadata"],
  ["tool", "hatch", "build"],
  ["tool", "flit"],
  ["tool", "maturin"],
  ["tool", "pdm"],
];
/** Kept although under a free table: entry points register pytest plugins; scripts are run by the tool. */
const PYPROJECT_KEPT = [
  ["project", "entry-points"],
  ["tool", "poetry", "plugins"],
  ["tool", "poetry", "scripts"],
  ["tool", "pdm", "scripts"],
];

function pyprojectPart(doc: Doc): unknown {
  let rest = doc;
  for (const k of PYPROJECT_FREE) rest = without(rest, k);
  return { rest, kept: PYPROJECT_KEPT.map((k) => pick(doc, k) ?? null) };
}

/** Cargo.toml: what decides which tests are built and how they run (targets, harness, auto-discovery, profiles, patches). */
function cargoPart(doc: Doc): unknown {
  const pkg = isDoc(doc.package) ? doc.package : {};
  const auto = ["autotests", "autobins", "autobenches", "autoexamples", "autolib", "build", "links"].map((k) => [k, pkg[k] ?? null]);
  const workspace = isDoc(doc.workspace) ? without(without(doc.workspace, ["dependencies"]), ["package"]) : null;
  return { auto, workspace, ...Object.fromEntries(["lib", "bin", "test", "bench", "example", "profile", "patch", "replace"].map((k) => [k, doc[k] ?? null])) };
}

/**
 * setup.cfg, deny by default: every section but the package's metadata and options (pytest reads `[tool:pytest]`,
 * coverage `[coverage:*]`, flake8, mypy… their own). Parsed with `ini`; a line it reads as a key although it begins
 * with `[` (a header with a trailing comment, an indented one: Python's configparser reads sections the ini parser does
 * not) makes the whole file count, as it cannot be attributed with certainty.
 */
const SETUP_CFG_FREE = new Set([
  "metadata",
  "options",
  "options.extras_require",
  "options.packages.find",
  "options.package_data",
  "options.exclude_package_data",
  "options.data_files",
  "bdist_wheel",
  "sdist",
  "egg_info",
]);

function setupCfgPart(text: string): unknown {
  const doc = ini.parse(text) as Doc;
  const suspicious = (d: Doc): boolean => Object.entries(d).some(([k, v]) => k.trim().startsWith("[") || (isDoc(v) && suspicious(v)));
  if (suspicious(doc)) return { whole: text };
  return Object.fromEntries(Object.entries(doc).filter(([k]) => !SETUP_CFG_FREE.has(k)));
}

/** go.mod: the directives that swap a module for other code or pick the toolchain (`replace`, `toolchain`, `godebug`), as written. */
function goModPart(text: string): unknown {
  const keep: string[] = [];
  let block: string | null = null;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\/\/.*$/, "").trim();
    if (!line) continue;
    if (block) {
      if (line === ")") block = null;
      else if (["replace", "toolchain", "godebug", "retract"].includes(block)) keep.push(`${block} ${line}`);
      continue;
    }
    const m = /^(\w+)\s*(\()?\s*(.*)$/.exec(line);
    if (!m) {
      keep.push(line);
      continue;
    }
    if (m[2]) block = m[1]!;
    else if (!["module", "go", "require", "exclude"].includes(m[1]!)) keep.push(line);
  }
  return keep;
}

/**
 * pom.xml, deny by default: everything but the project's description (name, version, people, licences, scm…), its
 * dependency lists and the properties that only pin versions or the compiler. The build (surefire's and failsafe's
 * `<skip>`, `<excludes>`, `<testFailureIgnore>`, a plugin bound to the test phase), the packaging, profiles and every
 * other property (`skipTests`, `maven.test.skip`, `maven.test.failure.ignore`) count. A DOCTYPE, an entity or a CDATA
 * section makes the whole file count (what they expand to cannot be attributed here).
 */
const POM_FREE = new Set(
  [
    "dependencies",
    "dependencyManagement",
    "name",
    "description",
    "url",
    "version",
    "groupId",
    "artifactId",
    "inceptionYear",
    "organization",
    "licenses",
    "developers",
    "contributors",
    "mailingLists",
    "scm",
    "issueManagement",
    "ciManagement",
    "distributionManagement",
  ].map((k) => `project/${k}`),
);
const POM_FREE_PROPERTY = /^(.*[.-])?version$|^maven\.compiler\.[\w.]+$|^project\.(build|reporting)\.(sourceEncoding|outputEncoding)$/i;

function pomPart(text: string): unknown {
  if (/<!DOCTYPE|<!ENTITY|<!\[CDATA\[/i.test(text)) return { whole: text };
  const body = text.replace(/<!--[\s\S]*?-->/g, "").replace(/<\?[\s\S]*?\?>/g, "");
  const stack: string[] = [];
  const kept: string[] = [];
  let free = 0; // depth inside a free element (0: not in one)
  for (const m of body.matchAll(/<(\/?)([\w.:-]+)((?:[^>"']|"[^"]*"|'[^']*')*?)(\/?)>|([^<]+)|(<)/g)) {
    const [, close, name, attrs, selfClose, textPart, stray] = m;
    if (stray) return { whole: text };
    if (textPart !== undefined) {
      const t = textPart.trim();
      if (t && !free) kept.push(`${stack.join("/")}=${t}`);
      continue;
    }
    if (close) {
      if (stack.pop() !== name) return { whole: text };
      if (free) free--;
      continue;
    }
    stack.push(name!);
    const at = stack.join("/");
    const isFree = free > 0 || POM_FREE.has(at) || (stack.length === 3 && stack[1] === "properties" && POM_FREE_PROPERTY.test(name!));
    if (isFree) free++;
    else kept.push(`<${at}${attrs!.replace(/\s+/g, " ").trimEnd()}>`);
    if (selfClose) {
      stack.pop();
      if (free) free--;
    }
  }
  if (stack.length) return { whole: text };
  return kept;
}

/** A dependency declaration of a Gradle build script, alone on its line: a configuration and one literal coordinate (no `${}`). */
const GRADLE_DEPENDENCY =
  /^\w*(implementation|api|compileonly|runtimeonly|annotationprocessor|compile|runtime|kapt|ksp|classpath)\s*\(?\s*("[^"$\\]*"|'[^'$\\]*'|libs(\.\w+)+|(platform|enforcedplatform|project)\(\s*("[^"$\\]*"|'[^'$\\]*'|libs(\.\w+)+)\s*\))\s*\)?$/i;
const GRADLE_METADATA = /^(version|group|description)\s*=?\s*("[^"$\\]*"|'[^'$\\]*')$/;

/**
 * A Gradle build or settings script (Groovy or Kotlin), deny by default: a script is code, and a test task is turned
 * off or filtered in many spellings (`test { enabled = false }`, `tasks.named("test") { exclude … }`,
 * `ignoreFailures = true`, `gradle.startParameter.excludedTaskNames`). Only the lines that plainly declare a
 * dependency inside a top-level `dependencies { }` block, and the top-level version, group and description, are free;
 * every other line, as written (trimmed), counts.
 */
function gradlePart(text: string): unknown {
  const kept: string[] = [];
  let depth = 0;
  let depsAt = -1; // the depth of the top-level dependencies block's content, or -1
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line) continue;
    const inDeps = depsAt >= 0 && depth === depsAt;
    if (!(inDeps && GRADLE_DEPENDENCY.test(line)) && !(depth === 0 && GRADLE_METADATA.test(line))) kept.push(line);
    if (depth === 0 && /^dependencies\s*\{$/.test(line)) depsAt = 1;
    for (const ch of line) {
      if (ch === "{") depth++;
      else if (ch === "}") depth = Math.max(0, depth - 1);
    }
    if (depsAt >= 0 && depth < depsAt) depsAt = -1;
  }
  // The dependency lines themselves are dropped; their block's braces stay, so an emptied block reads the same.
  return kept;
}

/** JSON with comments and trailing commas (deno.jsonc), made plain JSON: strings are kept as written. */
export function plainJson(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      const start = i;
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === "\\") i++;
      out += text.slice(start, i + 1);
    } else if (c === "/" && text[i + 1] === "/") {
      while (i < text.length && text[i] !== "\n") i++;
      out += "\n";
    } else if (c === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2);
      if (end < 0) throw new Error("an unclosed comment");
      i = end + 1;
      out += " ";
    } else out += c;
  }
  return out.replace(/,(\s*[}\]])/g, "$1");
}

/** deno.json(c), deny by default: every key but the package's name, version and publishing, and formatting and lint settings. */
const DENO_FREE = ["name", "version", "publish", "fmt", "lint", "$schema"];

/** The runner-related part of a sectioned file (parsed: package.json, pyproject.toml, Cargo.toml, setup.cfg, go.mod), as one comparable string. */
export function runnerPart(file: string, text: string | null): string {
  if (text === null) return "";
  const base = foldPath(path.posix.basename(file));
  try {
    let part: unknown;
    if (base === "package.json") {
      const j = JSON.parse(text) as Doc;
      part = PACKAGE_JSON_KEYS.map((k) => [k, (isDoc(j) ? j[k] : undefined) ?? null]);
    } else if (base === "pyproject.toml") part = pyprojectPart(parseToml(text) as Doc);
    else if (base === "cargo.toml") part = cargoPart(parseToml(text) as Doc);
    else if (base === "setup.cfg") part = setupCfgPart(text);
    else if (base === "go.mod") part = goModPart(text);
    else if (base === "pom.xml") part = pomPart(text);
    else if (/^(build|settings)\.gradle(\.kts)?$/.test(base)) part = gradlePart(text);
    else if (base === "deno.json" || base === "deno.jsonc") {
      const j = JSON.parse(base === "deno.jsonc" ? plainJson(text) : text) as Doc;
      part = isDoc(j) ? Object.fromEntries(Object.entries(j).filter(([k]) => !DENO_FREE.includes(k))) : { whole: text };
    } else part = { whole: text };
    // Nothing runner-related at all reads as "" (as a missing file does), so only a file that gains some counts.
    return isEmptyPart(part) ? "" : JSON.stringify(canonical(part));
  } catch {
    // Not parsable: the tool reading it fails or reads it its own way; any change to it counts.
    return `unparsable:${text}`;
  }
}

/**
 * A script a check's command runs whose path reads as a test harness (`test/check.sh`, `scripts/run-tests.js`,
 * `tools/runtests.py`, `ci/verify`, `scripts/check`): check configuration when the worker changes it. Any other script a
 * check runs (`python3 calc.py 2 3`, `sh build.sh`, a recipe's `python3 app.py`) may well be the code under test, the
 * very file the task asks to fix: a refusal there failed honest workers, so it is said with the verdict instead
 * (checkScriptCaveats).
 */
function looksLikeHarness(file: string, sub: string): boolean {
  // Read from the checks' folder down: the folders above it (a project kept under tests/fixtures/app, or
  // packages/spec-parser) say nothing of the scripts in it, and made the code under test read as a harness.
  const rel = sub && foldPath(file).startsWith(`${foldPath(sub)}/`) ? file.slice(sub.length + 1) : file;
  return /(^|[/._-])(tests?|checks?|specs?|verify|runtests|ci)([/._-]|$)/i.test(rel);
}

/** The scripts the checks' commands run (command-scripts.ts), by folded path, each with whether it is a test harness. */
export type CheckScripts = Map<string, CommandScript & { harness: boolean }>;

/**
 * The scripts the checks' commands run, read once per grading: the check-configuration rule, the verdict's caveats and
 * the guard while the checks run all take this one reading.
 */
export function checkScripts(commands: string[], sub: string, checkout: string): CheckScripts {
  const scripts = commandScripts(commands, sub, checkout);
  const all = new Map(scripts.map((s) => [foldPath(s.file), s]));
  return new Map(scripts.map((s) => [foldPath(s.file), { ...s, harness: isHarness(s, all, sub) }]));
}

/** The scripts the checks' commands run that are test harnesses (isHarness), read on their own: what grading guards while the checks run. */
export function harnessScripts(commands: string[], sub: string, checkout: string): CommandScript[] {
  return [...checkScripts(commands, sub, checkout).values()].filter((s) => s.harness);
}

/** A script that reads as a test harness, or one such a harness runs or sources (its library: `. scripts/env.sh`). */
function isHarness(script: CommandScript, all: Map<string, CommandScript>, sub: string): boolean {
  const seen = new Set<string>();
  for (let at: CommandScript | undefined = script; at && !seen.has(at.file); at = at.via ? all.get(foldPath(at.via)) : undefined) {
    if (looksLikeHarness(at.file, sub)) return true;
    seen.add(at.file);
  }
  return false;
}

/**
 * The worker's changes to scripts a check's command runs that are not test harnesses by their path (looksLikeHarness),
 * as the project held them (the base has the file): each a caveat for the verdict, with the command. Scope-named files
 * are the task's own and are left out.
 */
export async function checkScriptCaveats(opts: {
  changed: string[];
  scripts: CheckScripts;
  sub: string;
  scope: string[];
  repo: string;
  baseCommit: string;
}): Promise<string[]> {
  const named = new Set(opts.scope.map((s) => s.replace(/^\.\//, "")));
  const changed = new Set(opts.changed.map(foldPath));
  const out: string[] = [];
  for (const s of opts.scripts.values()) {
    if (s.harness || !changed.has(foldPath(s.file))) continue;
    const rel = fromTaskFolder(opts.sub, s.file);
    if (named.has(rel) || (await baseText(opts.repo, opts.baseCommit, s.file)) === null) continue;
    const cmd = s.command.length > 80 ? `${s.command.slice(0, 80)}…` : s.command;
    out.push(
      `the worker changed ${s.file}, which a check's command runs (\`${cmd}\`): that check's verdict rests on the worker's version of it (read that file before you merge, or protect it)`,
    );
  }
  return out;
}

/** Whether a part holds nothing (every value null, or no table). */
function isEmptyPart(part: unknown): boolean {
  if (part === null || part === undefined) return true;
  if (Array.isArray(part)) return part.every((p) => (Array.isArray(p) && p.length === 2 && typeof p[0] === "string" ? p[1] === null : isEmptyPart(p)));
  if (isDoc(part)) return Object.values(part).every(isEmptyPart);
  return false;
}

/** Where a file or folder would make a check's make take one of its goals as up to date (checkGoals). */
export interface GoalNamesake {
  /** From the repository's root, "/"-separated. */
  path: string;
  goal: string;
  /** The makefile make reads for it, where known. */
  makefile: string | null;
  /** The makefiles were past the engine's bounds: whether the goal is declared `.PHONY` could not be told. */
  unsure?: boolean;
  /** Not a goal but a prerequisite a goal reaches that a rule builds (MakeFacts.intermediates): `goal` is that target. */
  prerequisite?: boolean;
}

/** What a check's command makes of make's goals and what it writes besides (checkGoals). */
export interface CheckGoals {
  goals: GoalNamesake[];
  made: Set<string>;
  /** Where a file makes its makes skip remaking a prerequisite of their goals (MakeFacts.intermediates). */
  intermediates: GoalNamesake[];
  /** The `-o` outputs of the trusted compilers its line runs (checkWriters). */
  compiled: Set<string>;
  /** Those of `compiled` a program or make the line runs after their compile could have written again (checkWriters). */
  rewritable: Set<string>;
  /** The first program it runs besides make, those compilers and quiet builtins, or null (checkWriters). */
  others: string | null;
  /** Its commands are joined by `&&` alone (checkWriters). */
  andOnly: boolean;
  /** It runs make itself. */
  makes: boolean;
}

/** At most this many intermediates are watched for one check's makes; past them the checks are not run (too large). */
const MAX_INTERMEDIATES = 20_000;

/**
 * Whether a compiler's bare name runs the system's: found on `pathEnv` (the checks' PATH, absolute folders only:
 * allowListedEnv) and no folder of it inside `roots` (the checkout, and where it is mounted for the checks: a worker's
 * program could write a `cc` there before the compiler runs).
 */
export function systemCompiler(name: string, pathEnv: string, roots: string[]): boolean {
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return path.resolve(p);
    }
  };
  const inside = roots.map(real);
  const dirs = pathEnv.split(":").filter((d) => path.isAbsolute(d));
  if (dirs.some((d) => inside.some((r) => real(d) === r || real(d).startsWith(r + path.sep)))) return false;
  return dirs.some((d) => existsSync(path.join(d, name)));
}

/**
 * What a check's command (run in `sub`, from the repository's root `checkout`) makes of make's goals, its makefiles read
 * as they are now: `goals`, where a file or folder makes a goal of one of its makes up to date (each goal its command
 * line names, or its default goal, not `.PHONY`, in make's folder and its VPATH folders: makeFacts); `made`, what its
 * makes build by their own rules (their goals and the prerequisites those reach); `intermediates`, those prerequisites a
 * rule builds (a file there is used as it is). Past the engine's bounds on what make reads (a makefile of tens of
 * thousands of rules), the goals its makes' command lines name, in their own folders, taken as not `.PHONY` (`unsure`),
 * and those alone as made. With what its line writes besides its makes (checkWriters: `compiled`, `others`, `andOnly`),
 * its compilers found on `pathEnv` (the checks' PATH) outside `roots` (the checkout, and where the checks see it).
 * Throws past MAX_INTERMEDIATES intermediates: too many files to watch.
 */
export function checkGoals(checkout: string, sub: string, command: string, pathEnv: string = allowListedEnv({}).PATH ?? "", roots: string[] = []): CheckGoals {
  const writers = checkWriters(command, sub, (name) => systemCompiler(name, pathEnv, [checkout, ...roots]));
  const besides = {
    compiled: new Set(writers.compiled),
    rewritable: new Set(writers.rewritable),
    others: writers.others,
    andOnly: writers.andOnly,
    makes: writers.makes,
  };
  const runs = makeGoalRuns([command], sub, checkout);
  if (!runs.length) return { goals: [], made: new Set(), intermediates: [], ...besides };
  try {
    const facts = makeFacts(checkout, runs);
    if (facts.intermediates.length > MAX_INTERMEDIATES)
      throw new Error(
        `the makes of the check "${command.length > 80 ? `${command.slice(0, 80)}…` : command}" reach over ${MAX_INTERMEDIATES} prerequisites a rule builds: too many files to watch for a namesake a check's run writes`,
      );
    const intermediates = facts.intermediates.map((i) => ({ path: i.path, goal: i.target, makefile: i.makefile, prerequisite: true }));
    return { goals: facts.goals, made: new Set(facts.made), intermediates, ...besides };
  } catch (err) {
    if (!(err instanceof MakeTooLarge)) throw err;
    const goals = runs.flatMap((r) =>
      (r.goals ?? []).flatMap((goal) => {
        const p = fromRun(r.dir, goal);
        return p === null || goal.startsWith("/") ? [] : [{ path: p, goal, makefile: null, unsure: true }];
      }),
    );
    return { goals, made: new Set(goals.map((g) => g.path)), intermediates: [], ...besides };
  }
}

/** Why a goal's namesake (or an intermediate's) a check wrote counts, for the later check `by` whose make has that goal. */
export function goalNamesakeWhy(g: GoalNamesake, by: string): string {
  const make = `a goal of the make of the later check "${by}"${g.makefile ? ` (${g.makefile})` : ""}`;
  if (g.prerequisite)
    return `a prerequisite make builds by a rule for \`${g.goal}\`, reached from ${make}: with a file or folder of that name there, newer than its sources, make takes it as up to date and it is not remade from them`;
  return g.unsure
    ? `named like \`${g.goal}\`, ${make}, whose makefiles are too large to tell whether it is declared .PHONY: with a file or folder of that name make takes a goal not declared so as up to date and runs none of its recipe`
    : `named like \`${g.goal}\`, ${make}, which is not declared .PHONY: with a file or folder of that name make takes the goal as up to date and runs none of its recipe`;
}

/**
 * MakeFacts' targets, inputs and MAKEFILES files by path (a file's lookups at once, not a pass over every one per changed
 * file); `reached`, the goals of the checks' makes and the prerequisites those reach that a rule builds (`goal` set for a goal).
 */
function lookups(facts: MakeFacts) {
  const reached: MadeName[] = [
    ...facts.goals.map((g) => ({ path: g.path, target: g.goal, makefile: g.makefile, goal: true })),
    ...facts.intermediates.map((i) => ({ path: i.path, target: i.target, makefile: i.makefile, goal: false })),
  ];
  return {
    targets: firstByPath(facts.targets),
    inputs: firstByPath(facts.inputs),
    readFirst: firstByPath(facts.readFirst),
    reached: firstByPath(reached),
  };
}

/** A name make builds, where a file stands for it: a target, a goal, a prerequisite a goal reaches (linkedTargets). */
interface MadeName {
  path: string;
  target: string;
  makefile: string | null;
  goal?: boolean;
}

const lstatOrNull = (p: string) => {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
};

/** At most this many folders of the names make builds are looked at for a link on their way (linkedTargets); past them, MakeTooLarge. */
const MAX_TARGET_FOLDERS = 10_000;

/**
 * Where make opens the files of the names it builds (`named`: paths from the repository's root, as make opens them)
 * through a link on their way, in the checkout as committed (`checkout`): `links`, each link on the way of one (`src/out`
 * for `src/out/results.txt`), by its path; `behind`, where each such file then is (`src/zz/results.txt`), inside the
 * checkout. One realpath per folder of those names, and an lstat per part of a folder that leads elsewhere or nowhere;
 * past MAX_TARGET_FOLDERS folders, MakeTooLarge (every changed file then counts). Nothing is followed out of the
 * checkout: a file outside it is no file of the commit's.
 */
function linkedTargets(checkout: string, named: MadeName[]): { links: Map<string, MadeName>; behind: Map<string, MadeName> } {
  const byFolder = new Map<string, MadeName[]>();
  for (const n of named) {
    const folder = n.path.includes("/") ? n.path.slice(0, n.path.lastIndexOf("/")) : "";
    if (!folder) continue;
    const at = byFolder.get(folder);
    if (at) at.push(n);
    else byFolder.set(folder, [n]);
  }
  if (byFolder.size > MAX_TARGET_FOLDERS) throw new MakeTooLarge();
  const links = new Map<string, MadeName>();
  const behind = new Map<string, MadeName>();
  const root = realpathSync(checkout);
  for (const [folder, names] of byFolder) {
    // As make opens it: joined as written (`build/..` goes through whatever `build` is), not normalized.
    let real: string | null = null;
    try {
      real = realpathSync.native(`${root}${path.sep}${folder.split("/").join(path.sep)}`);
    } catch {
      /* not there (yet): only the links on its way count */
    }
    if (real === path.join(root, folder)) continue;
    const parts = folder.split("/");
    for (let i = 1; i <= parts.length; i++) {
      if (parts[i - 1] === ".." || parts[i - 1] === ".") continue;
      const p = parts.slice(0, i).join("/");
      if (!links.has(p) && lstatOrNull(path.join(root, p))?.isSymbolicLink()) links.set(p, names[0]!);
    }
    if (real === null || (real !== root && !real.startsWith(root + path.sep))) continue;
    const rel = path.relative(root, real).split(path.sep).join("/");
    for (const n of names) {
      const f = `${rel ? `${rel}/` : ""}${n.path.slice(n.path.lastIndexOf("/") + 1)}`;
      if (!behind.has(f)) behind.set(f, n);
    }
  }
  return { links, behind };
}

/** Each path's first entry. */
function firstByPath<T extends { path: string }>(entries: T[]): Map<string, T> {
  const m = new Map<string, T>();
  for (const e of entries) if (!m.has(e.path)) m.set(e.path, e);
  return m;
}

/** The folders on a path's way from the repository's root ("a/b/c" → "a/b", "a"). */
function ancestors(file: string): string[] {
  const out: string[] = [];
  for (let i = file.lastIndexOf("/"); i > 0; i = file.lastIndexOf("/", i - 1)) out.push(file.slice(0, i));
  return out;
}

/** `git cat-file` in the user's repository: its objects only (no filter, no hook runs), no system or global config. */
const catFile = (repo: string, args: string[], maxBuffer?: number) =>
  run("git", ["-C", repo, "cat-file", ...args], {
    ...(maxBuffer ? { maxBuffer } : {}),
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" },
  });

/** Whether the base commit holds a path (a file or a folder). */
async function baseHas(repo: string, commit: string, file: string): Promise<boolean> {
  return catFile(repo, ["-e", `${commit}:${file}`]).then(
    () => true,
    () => false,
  );
}

async function baseText(repo: string, commit: string, file: string): Promise<string | null> {
  return catFile(repo, ["blob", `${commit}:${file}`], 16 * 1024 * 1024).then(
    (r) => r.stdout,
    () => null,
  );
}

/** The text of a file of the checkout as the worker left it, or null: missing, unreadable, not a regular file inside it of a bounded size (files.ts). */
function newText(checkout: string, file: string): string | null {
  return readInside(checkout, file);
}

const SECTION_WORDS: Record<string, string> = {
  "package.json": "its scripts or test runner settings",
  "pom.xml": "its build, profiles or properties: what Maven runs as tests (skipTests, surefire's skip, excludes, testFailureIgnore)",
  "build.gradle": "its build logic beyond dependency declarations: what Gradle runs as tests (test { enabled, exclude, ignoreFailures })",
  "build.gradle.kts": "its build logic beyond dependency declarations: what Gradle runs as tests (test { enabled, exclude, ignoreFailures })",
  "settings.gradle": "its settings logic: which builds and tasks Gradle runs",
  "settings.gradle.kts": "its settings logic: which builds and tasks Gradle runs",
  "deno.json": "its import map, tasks or test settings",
  "deno.jsonc": "its import map, tasks or test settings",
};

const HELD_BACK_INIT = "the package of held-back tests (it runs before them; its load_tests decides what unittest runs)";

/**
 * Whether `rel` (relative to the checks' folder) is the package init of a folder held-back tests land in (or of one
 * above it): it runs before them, and unittest hands it the whole discovery (`load_tests`), as pytest does a conftest.py.
 */
function heldBackInit(rel: string, heldBackDirs: string[] | undefined): boolean {
  if (!heldBackDirs?.length || rel.startsWith("../") || PY_MODULE.exec(foldPath(path.posix.basename(rel)))?.[1] !== "__init__") return false;
  const dir = path.posix.dirname(rel) === "." ? "" : path.posix.dirname(rel);
  return heldBackDirs.some((d) => d === dir || dir === "" || foldPath(d).startsWith(foldPath(dir) + "/") || foldPath(d) === foldPath(dir));
}

const HELD_BACK_SHADOW =
  "named like a standard module or a tool, beside held-back tests (pytest and unittest put their folder first on sys.path: it shadows the module they import)";

/**
 * Whether `rel` (relative to the checks' folder) is a Python module (a file, or a package's __init__) named like a
 * standard module or a tool, in a folder held-back tests land in or one above it, below the checks' folder (which
 * runnerConfigReason covers). pytest's default import mode puts a test's folder (the first one up without an
 * __init__.py) first on sys.path, as `unittest discover -s` does its start folder: a `tests/colorsys.py` there is what
 * the held-back test's `import colorsys` loads.
 */
function heldBackShadow(rel: string, heldBackDirs: string[] | undefined): boolean {
  if (!heldBackDirs?.length || rel.startsWith("../")) return false;
  const m = pythonModuleOf(rel);
  if (!m?.folder || !(SHADOW_TOP.test(m.name) || STDLIB_FOLDED.has(m.name) || STARTUP_TOP.has(m.name))) return false;
  return holdsHeldBack(m.folder, heldBackDirs);
}

/**
 * The Python module `rel` (relative to the checks' folder) is, case folded: a module file in its folder, or a package of
 * it (its __init__), with the folder it is imported from ("" for the checks' own); null for a file no import loads.
 */
function pythonModuleOf(rel: string): { folder: string; name: string } | null {
  const parts = foldPath(rel).split("/");
  const module = PY_MODULE.exec(parts.at(-1)!)?.[1];
  if (!module) return null;
  if (module !== "__init__") return { folder: parts.slice(0, -1).join("/"), name: module };
  return parts.length < 2 ? null : { folder: parts.slice(0, -2).join("/"), name: parts.at(-2)! };
}

/** Whether held-back tests land in `folder` (case folded, from the checks' folder) or in one below it. */
const holdsHeldBack = (folder: string, heldBackDirs: string[]) => heldBackDirs.some((d) => foldPath(d) === folder || foldPath(d).startsWith(`${folder}/`));

const HELD_BACK_MODULE =
  "named like a held-back module, beside it (an import of that name loads a package, an extension module, another suffix or a link of that name in its place: the held-back code never runs)";

/** A held-back file an import names without its suffix: Python, JavaScript, TypeScript. */
export const HELD_BACK_CODE = /\.(py|[cm]?[jt]sx?)$/;

/**
 * Whether `rel` (relative to the checks' folder) stands in for a held-back module (`files`: the held-back code files,
 * HELD_BACK_CODE, case folded) when a test imports it by name. In the same folder: an entry named like it without a suffix (Node's
 * `require('./helper')` takes a file `helper` before `helper.js`), the same name with another suffix (Python takes an
 * extension module `.so` before the source; Vite `.js` before `.ts`), or a package of its name (its `__init__`, `index`
 * or package.json: Python prefers a package to a module). A held-back file itself does not count (it is copied over the
 * worker's). Matched case folded, as elsewhere.
 */
function heldBackModuleShadow(rel: string, files: string[]): boolean {
  if (!files.length || rel.startsWith("../")) return false;
  const f = foldPath(rel);
  if (files.includes(f)) return false;
  const dirOf = (p: string) => (p.includes("/") ? p.slice(0, p.lastIndexOf("/")) : "");
  const base = f.slice(f.lastIndexOf("/") + 1);
  const stem = PY_MODULE.exec(base)?.[1] ?? (base.includes(".") ? base.slice(0, base.lastIndexOf(".")) : base);
  return files.some((h) => {
    const module = h.replace(HELD_BACK_CODE, "");
    if (f === module) return true;
    if (dirOf(f) === module && /^(__init__|index)(\.|$)|^package\.json$/.test(base)) return true;
    return dirOf(f) === dirOf(module) && stem === module.slice(module.lastIndexOf("/") + 1);
  });
}

const HELD_BACK_FOLDER =
  "named like a folder of held-back tests, beside it (a dotted import of a held-back test, `python -m unittest tests.test_x` or `pytest --pyargs`, loads this module in place of a folder without __init__.py, and its `__path__` decides where the test is read from)";

/**
 * Whether `rel` (relative to the checks' folder) is a Python module (a file: source, sourceless byte code, an extension
 * module; not a package's __init__) named like a folder held-back tests land in or one above it, in that folder's parent
 * (`dirs`: those folders, case folded). A folder without __init__.py is a namespace package, which Python takes only when
 * no module of its name is found: `tests.py` beside `tests/` is `tests` to `import tests.test_hidden`. A held-back file
 * itself does not count (it is copied over the worker's).
 */
function heldBackFolderShadow(rel: string, dirs: string[], files: string[], isPackage: (folder: string) => boolean): boolean {
  if (!dirs.length || rel.startsWith("../")) return false;
  const f = foldPath(rel);
  if (files.includes(f)) return false;
  const slash = f.lastIndexOf("/");
  const module = PY_MODULE.exec(f.slice(slash + 1))?.[1];
  if (!module || module === "__init__") return false;
  const asFolder = slash < 0 ? module : `${f.slice(0, slash)}/${module}`;
  if (!dirs.some((d) => d === asFolder || d.startsWith(`${asFolder}/`))) return false;
  // A regular package of that name (its __init__.py held back, or in the checkout) is found before the module: the
  // worker's module of the same name is then no stand-in (a worker's change to that __init__.py counts on its own).
  const folder = rel.slice(0, rel.lastIndexOf("/") + 1) + rel.slice(rel.lastIndexOf("/") + 1).split(".")[0];
  return !files.includes(`${asFolder}/__init__.py`) && !isPackage(folder);
}

/**
 * Why a file beside the held-back tests decides what they run (the package init above them, a module shadowing a
 * standard one, a held-back one or a held-back folder), or null: the rules for one grading's held-back folders and code
 * files, with those case folded once (runnerConfigChanges and configSnapshot ask it of every file they look at).
 */
function heldBackRules(
  heldBackDirs: string[] = [],
  heldBackModules: string[] = [],
  isPackage: (folder: string) => boolean = () => false,
): (rel: string) => string | null {
  const files = heldBackModules.map(foldPath);
  const dirs = heldBackDirs.filter(Boolean).map(foldPath);
  return (rel) =>
    heldBackInit(rel, heldBackDirs)
      ? HELD_BACK_INIT
      : heldBackShadow(rel, heldBackDirs)
        ? HELD_BACK_SHADOW
        : heldBackModuleShadow(rel, files)
          ? HELD_BACK_MODULE
          : heldBackFolderShadow(rel, dirs, files, isPackage)
            ? HELD_BACK_FOLDER
            : null;
}

/**
 * The module name `rel` (relative to the checks' folder) gives Python when a held-back test imports that name, or null:
 * a module (a file, or a package's __init__) at the top of the checks' folder (`python -m pytest` puts it first on
 * sys.path) or in a folder held-back tests land in or one above it (pytest and unittest put theirs first), named like
 * a top-level name a held-back Python file imports (`imports`: case folded → as written).
 */
function importShadow(rel: string, heldBackDirs: string[], imports: Map<string, string>): string | null {
  if (!imports.size || rel.startsWith("../")) return null;
  const m = pythonModuleOf(rel);
  const imported = m && imports.get(m.name);
  if (!m || !imported) return null;
  return m.folder === "" || holdsHeldBack(m.folder, heldBackDirs) ? imported : null;
}

/**
 * Which of these top-level module names Python finds outside the checkout: installed packages (numpy, yaml), as the
 * checks' `python3` sees them from a neutral folder (isolated: no current folder, no PYTHON* variables, no user site,
 * as a check's empty HOME has none). An empty set when python3 cannot run (then no check runs it either).
 */
async function installedModules(names: string[]): Promise<Set<string>> {
  const script =
    "import importlib.util as u, sys\nfor n in sys.argv[1:]:\n    try:\n        s = u.find_spec(n)\n    except Exception:\n        s = None\n    if s is not None:\n        print(n)\n";
  try {
    const { stdout } = await run("python3", ["-I", "-c", script, ...names], { cwd: "/", env: { PATH: allowListedEnv({}).PATH }, timeout: 20_000 });
    return new Set(stdout.split("\n").filter(Boolean));
  } catch {
    return new Set();
  }
}

const importShadowWhy = (name: string) =>
  `named like ${name}, an installed package a held-back test imports (found first, at the top of the checks' folder or beside the tests: the test imports the worker's module in its place)`;

/**
 * The changed files (relative to the repository root) that change what a check runs, each with why; those the task's
 * scope names exactly are allowed. Sectioned files count only when their runner part differs from the base's.
 */
export async function runnerConfigChanges(opts: {
  changed: string[];
  sub: string;
  scope: string[];
  repo: string;
  baseCommit: string;
  checkout: string;
  /** The folders held-back files are copied into, relative to the checks' folder (`sub`); "" is that folder. */
  heldBackDirs?: string[];
  /** The held-back code files, relative to the checks' folder (heldBackModules). */
  heldBackModules?: string[];
  /** The top-level names the held-back Python files import (heldBackListing). */
  heldBackImports?: string[];
  /** The checks' commands: the scripts of the checkout they run by name count (command-scripts.ts). */
  commands?: string[];
  /** Those scripts when the caller read them already (checkScripts); read from `commands` otherwise. */
  scripts?: CheckScripts;
  /** The pytest plugins' modules when the caller read them already (pytestPluginModules); read otherwise. */
  pluginModules?: PytestPluginModule[];
}): Promise<string[]> {
  const named = new Set(opts.scope.map((s) => s.replace(/^\.\//, "")));
  const heldBack = heldBackRules(opts.heldBackDirs, opts.heldBackModules, (folder) => existsSync(path.join(opts.checkout, opts.sub, folder, "__init__.py")));
  const imports = new Map((opts.heldBackImports ?? []).map((n) => [foldPath(n), n]));
  /** A worker's module named like a name a held-back test imports: a violation if Python finds that name installed. */
  const shadowing = new Map<string, string[]>();
  /** What the makefiles say, read once per grading; or why they could not be read (not read again for the next file). */
  let facts: MakeFacts | MakeTooLarge | undefined;
  let found: ReturnType<typeof lookups> | undefined;
  let linkedAt: ReturnType<typeof linkedTargets> | undefined;
  let runs: MakeRun[] | undefined;
  const scripts = opts.scripts ?? checkScripts(opts.commands ?? [], opts.sub, opts.checkout);
  const plugins = new Map(
    (opts.pluginModules ?? (opts.commands?.length ? pytestPluginModules(opts.checkout, opts.sub, opts.commands, opts.heldBackDirs ?? []) : [])).map(
      ({ file, why }) => [foldPath(file), why],
    ),
  );
  const out: string[] = [];
  for (const file of opts.changed) {
    // Scope globs are relative to the folder the user named (`sub`); git paths to the repository's root.
    const rel = fromTaskFolder(opts.sub, file);
    if (named.has(rel)) continue;
    const heldBackWhy = heldBack(rel);
    if (heldBackWhy) {
      out.push(`check configuration changed: ${file} — ${heldBackWhy}`);
      continue;
    }
    // Only the project's script (one the base holds): a script the check names that the worker wrote new is what the
    // task asked of it (the check could not pass on the base).
    const script = scripts.get(foldPath(file));
    const runBy = script?.command;
    // A file a base harness sources (`[ -f tests/env.sh ] && . tests/env.sh`) is the harness's even when the worker
    // writes it new: it runs inside the harness, and its `exit 0` there passed the check. (One a harness runs as a
    // program of its own that the worker writes new may be what the task asks for.)
    if (
      script &&
      runBy !== undefined &&
      script.harness &&
      ((await baseText(opts.repo, opts.baseCommit, file)) !== null ||
        (script.via !== undefined && script.sourced === true && (await baseText(opts.repo, opts.baseCommit, script.via)) !== null))
    ) {
      out.push(
        `check configuration changed: ${file} — a script a check's command runs (\`${runBy.length > 80 ? `${runBy.slice(0, 80)}…` : runBy}\`): what the check really runs, as a Makefile is to \`make\` (a task that must change it names it in its scope)`,
      );
      continue;
    }
    if (goTestMain(rel, opts.heldBackDirs ?? [], () => newText(opts.checkout, file))) {
      out.push(`check configuration changed: ${file} — ${GO_TEST_MAIN_WHY}`);
      continue;
    }
    const plugin = plugins.get(foldPath(file));
    if (plugin !== undefined) {
      out.push(`check configuration changed: ${file} — ${plugin}`);
      continue;
    }
    const base = foldPath(path.posix.basename(file));
    if (SECTIONED.has(base)) {
      const before = runnerPart(file, await baseText(opts.repo, opts.baseCommit, file));
      const after = runnerPart(file, newText(opts.checkout, file));
      if (before !== after) out.push(`check configuration changed: ${file} (${SECTION_WORDS[base] ?? "its test runner sections"})`);
      continue;
    }
    const why = runnerConfigReason(file) ?? (rel.startsWith("../") ? null : runnerConfigReason(rel));
    if (why) out.push(`check configuration changed: ${file} — ${why}`);
    else {
      // A file the Makefile of the checks' folder (or the root's) includes, or a makefile of a make the checks' commands
      // run (`make -C app`, `make -f ci.make`), found as that make finds it (its `-I` folders too), beyond plain
      // dependency lines.
      runs ??= makeGoalRuns(opts.commands ?? [], opts.sub, opts.checkout);
      try {
        facts ??= makeFacts(opts.checkout, [opts.sub, "", ...runs]);
        if (facts instanceof MakeTooLarge) throw facts;
        const make = facts;
        const byPath = (found ??= lookups(make));
        // A makefile a check's command names (`make -f src/rules.mak test`): what make runs, whatever its name.
        const namedBy = runs.find((r) => r.makefiles?.some((m) => foldPath(m) === foldPath(file)));
        if (namedBy) {
          out.push(`check configuration changed: ${file} — a makefile a check's make reads (\`-f\`): its rules are what the check runs`);
          continue;
        }
        // A file MAKEFILES names (`MAKEFILES=conf/extra.env make test`, `export MAKEFILES=…`, `make MAKEFILES=… test`):
        // make reads it before its makefiles, from its folder or its `-I` folders.
        const first = byPath.readFirst.get(file);
        if (first) {
          out.push(
            `check configuration changed: ${file} — a makefile a check's make reads before its own (\`MAKEFILES=${first.name}\`, in its environment or on its command line): its rules, variables and special targets are the Makefile's own`,
          );
          continue;
        }
        // The source a built-in rule remakes an included makefile from: beside it, or in a folder of the run's VPATH.
        const remade = [
          remadeFrom(file),
          ...make.vpath.flatMap(({ dir, folders }) =>
            folders.filter((v) => file.startsWith(`${v}/`)).map((v) => remadeFrom(path.posix.join(dir, file.slice(v.length + 1)))),
          ),
        ].filter((r): r is string => r !== null);
        const remadeInc = remade.flatMap((r) => make.included.naming(r).map((i) => ({ r, i })))[0];
        if (remadeInc) {
          out.push(
            `check configuration changed: ${file} — make remakes ${remadeInc.r}, which ${remadeInc.i.makefile} includes (\`${remadeInc.i.line}\`), from it with a built-in rule before reading it`,
          );
          continue;
        }
        const input = byPath.inputs.get(file);
        if (input) {
          out.push(`check configuration changed: ${file} — ${input.why}: its change changes the rules make reads`);
          continue;
        }
        // A file or folder named like a target that is not `.PHONY`: make takes that target as up to date and runs no recipe for it.
        // The file itself, or a folder on its way (`src/test/x` in a folder named like the target `src/test`).
        const target = [file, ...ancestors(file)].map((p) => byPath.targets.get(p)).find((t) => t !== undefined);
        if (target && !(await baseHas(opts.repo, opts.baseCommit, target.path))) {
          out.push(
            `check configuration changed: ${file} — named like the target \`${target.target}\` of ${target.makefile}, which is not declared .PHONY: with a file or folder of that name make takes it as up to date and runs none of its recipe`,
          );
          continue;
        }
        // The same for a goal of a check's make that no explicit rule names (built by a built-in rule), and a prerequisite
        // its goals reach that a rule builds (`test.o`): the checkout writes the commit's file with its sources (after
        // them, in its order), so it is no older than they are and make uses it as it is.
        const reached = [file, ...ancestors(file)].map((p) => byPath.reached.get(p)).find((t) => t !== undefined);
        if (reached && !(await baseHas(opts.repo, opts.baseCommit, reached.path))) {
          const of = reached.makefile ? ` (${reached.makefile})` : "";
          out.push(
            reached.goal
              ? `check configuration changed: ${file} — named like \`${reached.target}\`, a goal of a check's make${of}, which is not declared .PHONY: with a file or folder of that name make takes it as up to date and runs none of its recipe`
              : `check configuration changed: ${file} — a prerequisite make builds by a rule for \`${reached.target}\`, reached from a goal of a check's make${of}: with a file or folder of that name there, no older than its sources, make takes it as up to date and does not remake it from them`,
          );
          continue;
        }
        // A link on the way to where make opens one of those (`src/out -> zz` for `out/results.txt`), or the file it then
        // opens (`src/zz/results.txt`, behind the worker's link or the person's): names as written are not where make looks.
        const linked = (linkedAt ??= linkedTargets(opts.checkout, [...make.targets, ...byPath.reached.values()]));
        const via = linked.links.get(file);
        if (via) {
          out.push(
            `check configuration changed: ${file} — a link on the way to the target \`${via.target}\`${via.makefile ? ` of ${via.makefile}` : ""}: make opens that target's file through it, and a file the commit puts behind it stands for the target, up to date`,
          );
          continue;
        }
        const behind = [file, ...ancestors(file)].map((p) => linked.behind.get(p)).find((t) => t !== undefined);
        if (behind) {
          out.push(
            `check configuration changed: ${file} — where make opens the target \`${behind.target}\`${behind.makefile ? ` of ${behind.makefile}` : ""} through a link on its way: a file or folder there, no older than its sources, is that target up to date, and it is not remade`,
          );
          continue;
        }
        // A name a compiler writes into the dependency lines a Makefile includes (`gcc -MMD -MP` writes \`HEADER:\` for each
        // header): \`.IGNORE\` there is make's special target, \`MAKEFLAGS=i\` an assignment.
        if (make.read && /^\.[A-Z][A-Z_]*$|[=;]/.test(path.posix.basename(file))) {
          out.push(
            `check configuration changed: ${file} — its name, read as a makefile line (the dependency lines a compiler writes name it) is a special target or an assignment of make's`,
          );
          continue;
        }
        // A header named `run_%` gives the line `run_%:`, a pattern rule of no recipe and no prerequisite, which make takes over its built-in
        // rules: a stale `run_tests` is up to date, and what should be built from the held-back run_tests.c never is.
        if (make.read && path.posix.basename(file).includes("%")) {
          out.push(
            `check configuration changed: ${file} — its name, read as a makefile line (the dependency lines a compiler writes name it) is a pattern rule of make's with no recipe: make takes every file it matches as made, and builds none of them`,
          );
          continue;
        }
        const naming = make.included.naming(file);
        const goal = naming.find((i) => i.setsGoal);
        if (goal) {
          out.push(
            `check configuration changed: ${file} — included by ${goal.makefile} (\`${goal.line}\`) before its first rule, and a check's make names no target: the first target it defines is the one make builds, in place of the Makefile's`,
          );
          continue;
        }
        const inc = naming[0];
        if (inc && !(await plainIncluded(opts, file))) {
          out.push(
            `check configuration changed: ${file} — included by ${inc.makefile} (\`${inc.line}\`): beyond plain dependency lines, its rules, variables and special targets are the Makefile's own (\`.IGNORE:\` ignores every failing command)`,
          );
          continue;
        }
      } catch (err) {
        if (!(err instanceof MakeTooLarge)) throw err;
        facts ??= err;
        // Past the engine's bounds (a makefile of tens of thousands of include lines and rules, which held its thread for
        // minutes): what make reads cannot be told, so every changed file that gets here counts.
        out.push(`check configuration changed: ${file} — ${err.message} within the engine's bounds: every changed file that could be one of them counts`);
        continue;
      }
      const name = importShadow(rel, opts.heldBackDirs ?? [], imports);
      if (name) shadowing.set(name, [...(shadowing.get(name) ?? []), file]);
    }
  }
  // One python3 for them all, and only when a worker's module is named like an import of the held-back tests (its own
  // module under test is too, and is not installed: `from calc import add` with the worker's calc.py).
  if (shadowing.size) {
    const installed = await installedModules([...shadowing.keys()]);
    for (const [name, files] of shadowing)
      if (installed.has(name)) for (const file of files) out.push(`check configuration changed: ${file} — ${importShadowWhy(name)}`);
  }
  return out;
}

/**
 * Whether a changed file a Makefile includes holds plain dependency lines only (make-includes.ts): as committed, or as
 * the base had it when the worker deleted it (a removed file of rules or variables changes what make runs too). A
 * symlink never is (make reads whatever it leads to).
 */
async function plainIncluded(opts: { checkout: string; repo: string; baseCommit: string }, file: string): Promise<boolean> {
  const at = path.join(opts.checkout, file);
  let st;
  try {
    st = lstatSync(at);
  } catch {
    const before = await baseText(opts.repo, opts.baseCommit, file);
    return before === null || plainDependencies(before);
  }
  if (!st.isFile()) return false;
  const text = newText(opts.checkout, file);
  return text !== null && plainDependencies(text);
}

/**
 * Folders a scan of the checkout between checks does not enter: pytest's default `norecursedirs` (`*.egg`, `.*`,
 * `_darcs`, `build`, `CVS`, `dist`, `node_modules`, `venv`, `{arch}`) and a virtual environment's folder (pytest skips
 * any folder holding `pyvenv.cfg`), `__pycache__` (Python's own byte code, written by every import). Runner
 * configuration written there is not read by the runners (what `npm ci`, `pip install`, a build leave there).
 * Exceptions: `.cargo/` and `.mvn/` (read by cargo and Maven wherever the check runs them), and jest's `__mocks__/`,
 * which jest finds in any folder but node_modules (build/ and dist/ are entered for those alone).
 */
const SKIPPED_DIRS = new Set(["node_modules", "__pycache__", "_darcs", "cvs", "{arch}", "venv"]);
const MOCKS_ONLY_DIRS = new Set(["build", "dist"]);
const READ_DOT_DIRS = new Set([".cargo", ".mvn"]);
/** Above this many entries the scan stops and the checks fail, saying so: what is not scanned cannot be vouched for. */
const SCAN_CAP = 1_000_000;

/** A checkout's runner configuration at one moment: path (from `root`, "/"-separated) → its content's hash (or link, or part). */
export type ConfigSnapshot = Map<string, { hash: string; text?: string; why: string; module?: string }>;
const LINK_WHY = "a symlink into a folder the scan skips (a runner that follows it, as pytest does a folder, reads what is there)";

/**
 * The files of the checkout at `root` that decide what a check runs (runnerConfigReason, the sectioned files, the
 * package init of a held-back folder), with their content's hash, read with the runners' own ignore rules. Sectioned
 * files keep their text, so that only a change of their runner part counts. Links are recorded by their target, and a
 * symlink into a folder the scan skips counts whatever its name (`tests/x` → `../build` would bring build/'s files in).
 */
export function configSnapshot(
  root: string,
  cwd: string,
  heldBackDirs: string[] = [],
  heldBackModules: string[] = [],
  heldBackImports: string[] = [],
): ConfigSnapshot {
  const out: ConfigSnapshot = new Map();
  const sub = path.relative(root, cwd).split(path.sep).join("/");
  const heldBack = heldBackRules(heldBackDirs, heldBackModules, (folder) => existsSync(path.join(cwd, folder, "__init__.py")));
  const imports = new Map(heldBackImports.map((n) => [foldPath(n), n]));
  // The checks' folder, the held-back folders and every folder above them, from `root` (case folded).
  const kept = new Set<string>();
  for (const d of [sub, ...heldBackDirs.map((h) => path.posix.join(sub, h))]) {
    const parts = foldPath(d)
      .split("/")
      .filter((p) => p && p !== ".");
    for (let i = 1; i <= parts.length; i++) kept.add(parts.slice(0, i).join("/"));
  }
  let seen = 0;
  const walk = (dir: string, rel: string, mocksOnly: boolean) => {
    let entries: import("node:fs").Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (++seen > SCAN_CAP) throw new Error(`over ${SCAN_CAP} entries outside the build folders: the checkout could not be scanned for runner configuration`);
      const r = rel ? `${rel}/${e.name}` : e.name;
      const full = path.join(dir, e.name);
      const folded = foldPath(e.name);
      if (e.isDirectory()) {
        if (folded === ".git" || SKIPPED_DIRS.has(folded) || folded.endsWith(".egg")) continue;
        if (folded.startsWith(".") && !READ_DOT_DIRS.has(folded)) continue;
        // A virtual environment is skipped, but never the checks' folder, a held-back folder or one above them: pytest
        // loads the conftest.py of a folder it is given whatever else is in it, so a pyvenv.cfg a check writes there
        // would hide the conftest.py it writes beside it.
        if (!kept.has(foldPath(r)) && existsSync(path.join(full, "pyvenv.cfg"))) continue;
        walk(full, r, mocksOnly || MOCKS_ONLY_DIRS.has(folded));
        continue;
      }
      if (!e.isFile() && !e.isSymbolicLink()) continue;
      const parts = foldPath(r).split("/");
      if (mocksOnly && !parts.slice(0, -1).includes("__mocks__")) continue;
      const fromCwd = fromTaskFolder(sub, r);
      const sectioned = SECTIONED.has(folded);
      const why =
        runnerConfigReason(r) ??
        (!fromCwd.startsWith("../") ? runnerConfigReason(fromCwd) : null) ??
        (sectioned ? `${e.name} (its test runner settings)` : null) ??
        heldBack(fromCwd) ??
        (e.isSymbolicLink() && !mocksOnly && intoSkipped(root, full) ? LINK_WHY : null);
      if (why) out.set(r, { ...read(full, sectioned, r), why });
      else if (!mocksOnly && !fromCwd.startsWith("../")) {
        // A module named like what a held-back test imports: it counts if that name is an installed package
        // (plantedModules asks, only when a check wrote or changed one).
        const module = importShadow(fromCwd, heldBackDirs, imports);
        if (module) out.set(r, { ...read(full, false, r), why: importShadowWhy(module), module });
      }
    }
  };
  walk(root, "", false);
  return out;
}

/** Whether a symlink leads into a folder of the checkout that the scan does not enter (build/, dist/, a dot-folder…). */
function intoSkipped(root: string, link: string): boolean {
  let target: string;
  try {
    target = realpathSync(link);
  } catch {
    return false;
  }
  const rel = path.relative(realpathSync(root), target);
  if (!rel || rel.startsWith("..") || path.isAbsolute(rel)) return false;
  return rel
    .split(path.sep)
    .map(foldPath)
    .some((p) => SKIPPED_DIRS.has(p) || MOCKS_ONLY_DIRS.has(p) || p === ".git" || p.endsWith(".egg") || (p.startsWith(".") && !READ_DOT_DIRS.has(p)));
}

function read(full: string, sectioned: boolean, rel: string): { hash: string; text?: string } {
  try {
    const st = lstatSync(full);
    if (st.isSymbolicLink()) return { hash: `link:${readlinkSync(full)}` };
    // A check wrote it, of any size: hashed a part at a time; its text read for its sections only when small (files.ts).
    const buf = sectioned ? readRegular(full, MAX_READ_BYTES) : null;
    if (buf) return { hash: createHash("sha256").update(buf).digest("hex"), text: runnerPart(rel, buf.toString("utf8")) };
    return { hash: hashRegular(full) ?? "unreadable" };
  } catch {
    return { hash: "unreadable" };
  }
}

/**
 * What a check wrote among the files that decide what a later check runs, between two snapshots of the checkout: each
 * file new, changed or removed, with why it counts. A Makefile beside a `Makefile.in`, `Makefile.am`, `configure` or
 * `CMakeLists.txt` of the checkout is what configure or cmake generates from the project's own files, and does not count.
 */
export function plantedConfig(before: ConfigSnapshot, after: ConfigSnapshot, root: string): string[] {
  const out: string[] = [];
  for (const [f, now] of after) {
    if (now.module) continue;
    const was = before.get(f);
    if (was && (was.hash === now.hash || (was.text !== undefined && was.text === now.text))) continue;
    if (!was && SECTIONED.has(foldPath(path.posix.basename(f))) && now.text === "") continue;
    // The metadata `pip install -e .` writes beside the project (name.egg-info/): it registers a test runner plugin only
    // through an entry_points.txt with a pytest11 group.
    if (
      !was &&
      foldPath(f)
        .split("/")
        .some((p) => /\.(dist|egg)-info$/.test(p))
    ) {
      if (foldPath(path.posix.basename(f)) !== "entry_points.txt") continue;
      // unreadable (a link out, not a regular file, too big): counts
      const text = readInside(root, f) ?? "";
      if (text && !/^\s*\[\s*pytest11\s*\]/im.test(text)) continue;
    }
    if (!was && /^(gnu)?makefile$/.test(foldPath(path.posix.basename(f)))) {
      const dir = path.join(root, path.posix.dirname(f));
      if (["Makefile.in", "Makefile.am", "configure", "CMakeLists.txt"].some((g) => existsSync(path.join(dir, g)))) continue;
    }
    out.push(`${f} ${was ? "changed" : "written"} — ${now.why}`);
  }
  for (const [f, was] of before) if (!after.has(f) && !was.module) out.push(`${f} removed — ${was.why}`);
  return out;
}

/**
 * The modules a check wrote or changed, between two snapshots, named like a held-back test's import that is an installed
 * package (numpy.py beside the tests: the later check's `import numpy` loads it), each with why. One python3, only when
 * a check wrote or changed such a module (a build that generates the worker's own module: not installed, not counted).
 */
export async function plantedModules(before: ConfigSnapshot, after: ConfigSnapshot): Promise<string[]> {
  const written = [...after].filter(([f, now]) => now.module && before.get(f)?.hash !== now.hash);
  if (!written.length) return [];
  const installed = await installedModules([...new Set(written.map(([, now]) => now.module!))]);
  return written.filter(([, now]) => installed.has(now.module!)).map(([f, now]) => `${f} ${before.has(f) ? "changed" : "written"} — ${now.why}`);
}

/** pytest's configuration files, where `addopts` may name a plugin (`-p helpers.plugin`). */
const PYTEST_CONFIGS = ["pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "pyproject.toml", "tox.ini", "setup.cfg"];
/** A `-p name` (or `-pname`, `-p=name`) in a command or a configuration's text; not `-p no:name`, which turns a plugin off. */
const PLUGIN_OPTION = /(?:^|[\s"'[,])-p\s*=?\s*["']?([A-Za-z_][\w.]*)(?![\w.:])/g;

/** A pytest plugin's module file (from the repository's root, as the configuration writes it), with why it counts. */
type PytestPluginModule = { file: string; why: string };

/**
 * The files of the pytest plugins the project's configuration as committed, or the checks' commands, load by module
 * name, each with why: a `-p name` in a command that runs pytest (`mkdir -p build && pytest` names none) or in pytest's
 * configuration of the checks' folder or the root, and `pytest_plugins = [...]` in a conftest.py there or in a folder of
 * held-back tests (or one between). A plugin's hooks decide what pytest reports, as a conftest.py's do. Each module's
 * file and package init, from the checks' folder and from the root, whether or not the checkout has them (its parent
 * packages' inits are not the plugin: pytest takes hooks from the module named only). Read once per grading: the
 * check-configuration rule (runnerConfigChanges) and the guard (guardedConfigFiles) both take it.
 */
export function pytestPluginModules(checkout: string, sub: string, commands: string[], heldBackDirs: string[]): PytestPluginModule[] {
  const named = new Map<string, string>();
  const add = (name: string, where: string) => {
    if (!named.has(name)) named.set(name, where);
  };
  for (const c of commands)
    for (const words of simpleCommands(c)) {
      const line = words.filter((w): w is string => typeof w === "string").join(" ");
      if (/py\.?test/.test(line)) for (const m of line.matchAll(PLUGIN_OPTION)) add(m[1]!, "a check's command");
    }
  const folders = new Set(["", sub]);
  for (const d of heldBackDirs) {
    const parts = d.split("/").filter(Boolean);
    for (let i = 0; i <= parts.length; i++) folders.add(path.posix.join(sub, ...parts.slice(0, i)).replace(/^\.$/, ""));
  }
  const text = (f: string) => readInside(checkout, f);
  for (const dir of folders) {
    for (const name of PYTEST_CONFIGS) {
      const t = text(path.posix.join(dir, name));
      if (t) for (const m of t.matchAll(PLUGIN_OPTION)) add(m[1]!, path.posix.join(dir, name));
    }
    const conftest = path.posix.join(dir, "conftest.py");
    const t = text(conftest);
    const list = t && /^pytest_plugins\s*(?::[^=\n]*)?=\s*([[(][^\])]*[\])]|["'][^"'\n]*["'])/m.exec(t);
    if (list) for (const m of list[1]!.matchAll(/["']([A-Za-z_][\w.]*)["']/g)) add(m[1]!, conftest);
  }
  const out: PytestPluginModule[] = [];
  for (const [name, where] of named) {
    const parts = name.split(".");
    const why = `the module of a pytest plugin that ${where} loads (\`${name}\`): its hooks decide what pytest reports, as a conftest.py's do`;
    for (const from of new Set(["", sub])) {
      out.push({ file: path.posix.join(from, `${parts.join("/")}.py`), why });
      out.push({ file: path.posix.join(from, ...parts, "__init__.py"), why });
    }
  }
  return out;
}

/** Yarn's files in a `.yarn/` folder that its own install writes at every run (its state, unplugged packages' builds): not guarded. */
const YARN_WRITES = /^(install-state\.gz|build-state\.yml|unplugged(\/.*)?)$/;
/** At most this many files of `.yarn/` folders are guarded (a committed cache of thousands of zips). */
const YARN_GUARD_CAP = 20_000;

/**
 * The files besides the test harnesses that grading guards while the checks run, as harness scripts are (a check that
 * rewrites one for a later check fails): what the rules count as check configuration when the worker changes it, but
 * the scan between checks (configSnapshot) does not see. Paths from the repository's root.
 * - The modules of the pytest plugins the project's configuration or the checks' commands load (pytestPluginModules)
 *   that the checkout holds, and the package init that would stand in for such a module (`helpers/plug/__init__.py`
 *   beside `helpers/plug.py`: Python takes the package first).
 * - The files of the `.yarn/` folder of the checks' folder and of each folder above it (the release `yarnPath` names,
 *   its plugins, the Plug'n'Play cache of zipped packages), less what Yarn's own install writes there (YARN_WRITES).
 *   (The loader beside it, `.pnp.cjs`, is runner configuration the scan watches.)
 * In that order, the cache last: grading binds the first ones read-only in the sandbox and compares the rest only.
 * Not guarded: a file a check writes new in `.yarn/` (only .yarnrc.yml and the loader, which are watched, make Yarn load
 * one), nor the `.yarn/` of a folder below the checks' folder.
 */
export function guardedConfigFiles(
  checkout: string,
  sub: string,
  commands: string[],
  heldBackDirs: string[],
  pluginModules: PytestPluginModule[] = pytestPluginModules(checkout, sub, commands, heldBackDirs),
): string[] {
  const out: string[] = [];
  const isFile = (f: string) => lstatSync(path.join(checkout, f), { throwIfNoEntry: false })?.isFile() ?? false;
  for (const { file } of pluginModules) {
    if (isFile(file)) out.push(file);
    else if (file.endsWith("/__init__.py") && isFile(`${file.slice(0, -"/__init__.py".length)}.py`)) out.push(file);
  }
  const parts = sub.split("/").filter((p) => p && p !== ".");
  for (let i = 0; i <= parts.length; i++) {
    const yarn = path.posix.join(...parts.slice(0, i), ".yarn");
    const walk = (rel: string) => {
      let entries: import("node:fs").Dirent[];
      try {
        entries = readdirSync(path.join(checkout, yarn, rel), { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries) {
        if (out.length >= YARN_GUARD_CAP) return;
        const r = rel ? `${rel}/${e.name}` : e.name;
        if (YARN_WRITES.test(r)) continue;
        if (e.isDirectory()) walk(r);
        else if (e.isFile()) out.push(`${yarn}/${r}`);
      }
    };
    if (lstatSync(path.join(checkout, yarn), { throwIfNoEntry: false })?.isDirectory()) walk("");
  }
  // Yarn's release and plugins (run by every yarn command) before the cache: grading binds the first ones read-only.
  const cache = (f: string) => /(^|\/)\.yarn\/cache\//.test(f);
  return [...new Set([...out.filter((f) => !cache(f)), ...out.filter(cache)])];
}

const GO_TEST_MAIN_WHY =
  "a Go test file that defines TestMain in the package of held-back tests: TestMain decides whether the package's tests run at all (`os.Exit(0)` without `m.Run()` passes `go test`)";

/**
 * Whether `rel` (relative to the checks' folder) is a worker's `_test.go` file in a folder held-back files land in (a Go
 * package is its folder) that defines TestMain: `go test` builds it into the same test binary as the held-back tests,
 * and its TestMain runs in their place.
 */
function goTestMain(rel: string, heldBackDirs: string[], text: () => string | null): boolean {
  if (rel.startsWith("../") || !foldPath(rel).endsWith("_test.go")) return false;
  const dir = path.posix.dirname(rel) === "." ? "" : path.posix.dirname(rel);
  if (!heldBackDirs.some((d) => foldPath(d) === foldPath(dir))) return false;
  return /^\s*func\s+TestMain\s*\(/m.test(text() ?? "");
}
