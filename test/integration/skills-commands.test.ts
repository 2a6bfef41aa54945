// The skills tell a model which `ocw` commands and flags to run and which MCP tools to pre-allow. Every one of them
// must exist: each `ocw …` in a skill's code (inline or fenced) is run with --help on the real bundle, each --flag it
// names must be in that command's help, and each allowed tool must be one the bridge lists. The same holds for the
// `ocw …` commands of the README, docs/mcp.md and the plugin's own README, and docs/mcp.md's table of tools must name
// each tool with its real input and output fields.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { BUNDLE, cleanup, ROOT, tempDir } from "../helpers";
import { startMcp, type McpHandle } from "./mcp-helpers";

const skillsDir = path.join(ROOT, "skills");
const skills = readdirSync(skillsDir).map((name) => ({ name, text: readFileSync(path.join(skillsDir, name, "SKILL.md"), "utf8") }));
/** Documents read by people and by Claude that give `ocw` commands: checked as the skills are. */
const docs = ["README.md", "docs/mcp.md", "plugin/README.md"].map((name) => ({ name, text: readFileSync(path.join(ROOT, name), "utf8") }));

/** Every `ocw …` invocation in the skill's code: inline `code` spans and the lines of fenced blocks. */
export function ocwInvocations(markdown: string): string[] {
  const code: string[] = [];
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      continue;
    }
    // A fenced line's comment (after # or ;) or its description column (after a gap of 2+ spaces) is prose.
    if (fenced) code.push(...line.split(/[#;]| {2,}/).map((x) => x.trim()));
    // …and an inline span said as what not to run ("not `ocw setup --k8s`") is no command.
    else for (const m of line.matchAll(/(?<!\bnot )`([^`]+)`/g)) code.push(m[1]!);
  }
  return (
    code
      // A quoted argument (`--task "Add a --verbose flag"`) is the task's text, not a flag.
      .map((c) => c.replace(/"[^"]*"/g, '""'))
      .flatMap((c) => [...c.matchAll(/(?:^|\s)(ocw(?: +[^\s]+)*)/g)].map((m) => m[1]!.trim()))
      // Only `ocw` followed by a command word: not a server named ocw (`claude mcp add ocw -- node …`) or a placeholder.
      .filter((c) => /^ocw [a-z]/.test(c))
  );
}

const helps = new Map<string, string | null>();
/** `ocw WORDS --help`, once per command (the docs name many commands more than once). */
function help(words: string[]): string | null {
  const key = words.join(" ");
  if (!helps.has(key)) helps.set(key, helpOf(words));
  return helps.get(key)!;
}

function helpOf(words: string[]): string | null {
  try {
    const out = execFileSync(process.execPath, [BUNDLE, ...words, "--help"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, OCW_STATE_DIR: state },
    });
    // An unknown subcommand falls back to its parent's help: only a usage line naming exactly these words counts.
    return new RegExp(`^Usage: ocw${words.map((w) => ` ${w}`).join("")}( |$)`, "m").test(out) ? out : null;
  } catch {
    return null;
  }
}

const state = tempDir("skills-state");
let mcp: McpHandle | null = null;
afterAll(async () => {
  await mcp?.close();
  cleanup(state);
});

describe("skills name only commands, flags and tools that exist", () => {
  it("finds the commands the skills give (the extraction works)", () => {
    const all = skills.flatMap((s) => ocwInvocations(s.text));
    expect(all.length).toBeGreaterThan(8);
    expect(all).toContain("ocw doctor");
    expect(ocwInvocations("run `ocw fit --min-ctx 8192 --json` then\n```\nocw targets   # list; ocw target use <id>\n```")).toEqual([
      "ocw fit --min-ctx 8192 --json",
      "ocw targets",
      "ocw target use <id>",
    ]);
    // Prose is not a command: a command said not to run, a server named ocw, a description column, a quoted task.
    expect(
      ocwInvocations(
        'not `ocw setup --k8s`; `claude mcp add ocw -- node x.mjs mcp`\n```\nocw stop      stop the engine\nocw run --task "Add a --verbose flag"\n```',
      ),
    ).toEqual(["ocw stop", 'ocw run --task ""']);
  });

  for (const skill of [...skills, ...docs]) {
    it(`${skill.name}: every \`ocw …\` command answers --help and has every flag the skill gives it`, () => {
      const problems: string[] = [];
      for (const inv of new Set(ocwInvocations(skill.text))) {
        const tokens = inv.split(/\s+/).slice(1);
        const words = tokens.filter((t, i) => /^[a-z][a-z-]*$/.test(t) && tokens.slice(0, i).every((x) => /^[a-z][a-z-]*$/.test(x)));
        // The longest run of leading words that is a real command.
        let cmd: string[] | null = null;
        let text: string | null = null;
        for (let n = words.length; n >= 1 && !text; n--) {
          text = help(words.slice(0, n));
          if (text) cmd = words.slice(0, n);
        }
        if (!cmd || !text) {
          problems.push(`"${inv}": no such command (ocw ${words.join(" ")} --help)`);
          continue;
        }
        const rest = tokens.slice(cmd.length);
        // Leftover bare words must be arguments the usage line asks for, not a mistyped subcommand.
        if (rest[0] && /^[a-z][a-z-]*$/.test(rest[0]) && !/<\w+>|\[(?!command\]|options\])\w+\]/.test(text.split("\n")[0]!))
          problems.push(`"${inv}": ocw ${cmd.join(" ")} has no subcommand "${rest[0]}"`);
        for (const flag of tokens.filter((t) => t.startsWith("--")).map((t) => t.replace(/[=\][,.)]+.*$/, "").replace(/[\][,.)]+$/, ""))) {
          if (!new RegExp(`(^|[\\s,])${flag}(\\s|,|$)`, "m").test(text)) problems.push(`"${inv}": ocw ${cmd.join(" ")} has no ${flag}`);
        }
      }
      expect(problems).toEqual([]);
    });
  }

  it("the CLI's own help names only commands that exist (each `ocw X` in any command's --help)", () => {
    const top = help([])!;
    const commands = [...top.slice(top.indexOf("Commands:")).matchAll(/^ {2}([a-z][a-z-]*)/gm)].map((m) => m[1]!).filter((c) => c !== "help");
    expect(commands).toContain("continue");
    const problems: string[] = [];
    for (const c of commands) {
      for (const m of (help([c]) ?? "").replace(/\s+/g, " ").matchAll(/`ocw ([a-z][a-z-]*)/g))
        if (!commands.includes(m[1]!)) problems.push(`ocw ${c} --help names \`ocw ${m[1]}\`, which is no command`);
    }
    expect(problems).toEqual([]);
  });

  it("every allowed-tools entry is a tool of the plugin's `ocw` server", async () => {
    const manifest = JSON.parse(readFileSync(path.join(ROOT, "plugin", ".claude-plugin", "plugin.json"), "utf8"));
    const server = Object.keys(JSON.parse(readFileSync(path.join(ROOT, "plugin", ".mcp.json"), "utf8")).mcpServers)[0]!;
    const prefix = `mcp__plugin_${manifest.name}_${server}__`;
    const tools = new Set((await listTools()).map((t) => t.name));
    for (const skill of skills) {
      const line = /^allowed-tools:\s*(.+)$/m.exec(skill.text)?.[1] ?? "";
      const allowed = line
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean);
      expect(allowed.length, skill.name).toBeGreaterThan(0);
      for (const name of allowed) {
        expect(name.startsWith(prefix), `${skill.name}: ${name} does not start with ${prefix}`).toBe(true);
        expect(tools.has(name.slice(prefix.length)), `${skill.name}: ${name} is not a tool`).toBe(true);
      }
      // Tools that change the person's repository or end work stay behind Claude Code's own prompt.
      expect(
        allowed.filter((n) => /__(approve|merge|discard|stop|resume)$/.test(n)),
        skill.name,
      ).toEqual([]);
      // The skill (and docs/mcp.md) list the tools it leaves to Claude Code's prompt: exactly those not allowed.
      const left = [...tools].filter((t) => !allowed.includes(prefix + t)).sort();
      const said = (text: string) => {
        const m = /((?:`[a-z_]+`(?:, | and ))+`[a-z_]+`) (?:are deliberately not pre-allowed|out of its `allowed-tools`)/.exec(text);
        return m ? [...m[1]!.matchAll(/`([a-z_]+)`/g)].map((x) => x[1]!).sort() : null;
      };
      if (skill.name === "opencode-worker") {
        expect(said(skill.text), "SKILL.md: the tools it says are not pre-allowed").toEqual(left);
        expect(said(readFileSync(path.join(ROOT, "docs", "mcp.md"), "utf8")), "docs/mcp.md: the tools the skill leaves out").toEqual(left);
      }
    }
    // The plugin's slash commands and subagent name real tools too (and never merge or discard).
    for (const dir of ["commands", "agents"]) {
      for (const f of readdirSync(path.join(ROOT, "plugin", dir))) {
        const text = readFileSync(path.join(ROOT, "plugin", dir, f), "utf8");
        const line = /^(?:allowed-tools|tools):\s*(.+)$/m.exec(text)?.[1] ?? "";
        const named = line
          .split(",")
          .map((x) => x.trim())
          .filter((x) => x.startsWith("mcp__"));
        for (const name of named) expect(name.startsWith(prefix) && tools.has(name.slice(prefix.length)), `${dir}/${f}: ${name} is not a tool`).toBe(true);
        expect(
          named.filter((n) => /__(merge|discard)$/.test(n)),
          `${dir}/${f}`,
        ).toEqual([]);
      }
    }
  });

  it("docs/mcp.md's table of tools names every tool, each with its real input fields and the output fields it lists", async () => {
    const listed = await listTools();
    const rows = readFileSync(path.join(ROOT, "docs", "mcp.md"), "utf8")
      .split("\n")
      .filter((l) => /^\| `[a-z_]+` \|/.test(l))
      .map((l) => l.split(/(?<!\\)\|/).map((c) => c.trim()));
    expect(rows.map((r) => r[1]!.replace(/`/g, "")).sort()).toEqual(listed.map((t) => t.name).sort());
    const problems: string[] = [];
    for (const [, name, input, returns] of rows) {
      const tool = listed.find((t) => t.name === name!.replace(/`/g, ""))!;
      const inputs = Object.keys(tool.inputSchema.properties ?? {});
      const outputs = Object.keys(tool.outputSchema?.properties ?? {});
      for (const f of inputs) if (!new RegExp(`\\b${f}\\b`).test(input!)) problems.push(`${tool.name}: input ${f} is not in the table`);
      for (const f of topFields(input!)) if (!inputs.includes(f)) problems.push(`${tool.name}: the table's input ${f} is no input field`);
      for (const f of topFields(returns!)) if (!outputs.includes(f)) problems.push(`${tool.name}: the table's result field ${f} is not in the output schema`);
    }
    expect(problems).toEqual([]);
  });

  it("the plugin's slash commands pass on what the person typed ($ARGUMENTS, with an argument-hint) and lost no text", () => {
    const problems: string[] = [];
    for (const f of readdirSync(path.join(ROOT, "plugin", "commands"))) {
      const text = readFileSync(path.join(ROOT, "plugin", "commands", f), "utf8");
      const body = text.replace(/^---\n[\s\S]*?\n---\n/, "");
      // A variable expanded to nothing when the file was written leaves "( " or a doubled space behind.
      if (/\(\s|\s\)|\S {2,}\S/.test(body))
        problems.push(`${f}: a gap where text (e.g. $ARGUMENTS) was lost: ${JSON.stringify(/.{0,30}(\(\s|\s\)|\S {2,}\S).{0,30}/.exec(body)?.[0])}`);
      const usesArgs = body.includes("$ARGUMENTS");
      const hint = /^argument-hint:/m.test(text);
      if (usesArgs !== hint) problems.push(`${f}: $ARGUMENTS ${usesArgs ? "without" : "missing, but"} an argument-hint`);
    }
    // /opencode-worker:setup takes the model the person wants (e.g. "/opencode-worker:setup qwen3-coder 30b").
    expect(readFileSync(path.join(ROOT, "plugin", "commands", "setup.md"), "utf8")).toContain("$ARGUMENTS");
    expect(problems).toEqual([]);
  });

  it("the supervisor subagent, which shares the main session's waits, takes its workers and asks from the full lists", () => {
    // A wait in the main session marks asks and verdicts shown for the whole MCP connection, the subagent's included:
    // a subagent that listed workers only from its own waits' `finished` would leave some out of its verdict table.
    const text = readFileSync(path.join(ROOT, "plugin", "agents", "opencode-worker-supervisor.md"), "utf8");
    const body = text.replace(/^---\n[\s\S]*?\n---\n/, "");
    const firstWait = body.indexOf("`wait {batchId}`");
    expect(body.indexOf("`workers {batchId}`")).toBeGreaterThan(-1);
    expect(body.indexOf("`workers {batchId}`")).toBeLessThan(firstWait);
    expect(body.indexOf("`pending_approvals {batchId}`")).toBeLessThan(firstWait);
    expect(body).toMatch(/`result \{workerId\}` for each worker of `workers \{batchId\}`/);
  });
});

/** The bridge's tools, listed once per file. */
async function listTools() {
  mcp ??= await startMcp(state, "skills-test");
  return (await mcp.client.listTools()).tools;
}

/**
 * The top-level field names of a table cell's first `{…}`: each name right after `{` or `,`, outside nested
 * brackets and parenthesised remarks (`{verdict, honest (null when …), checks:[{index…}]}` → verdict, honest, checks).
 */
export function topFields(cell: string): string[] {
  const start = cell.indexOf("{");
  if (start < 0) return [];
  const fields: string[] = [];
  let depth = 0;
  let paren = 0;
  let expect = false;
  for (let i = start; i < cell.length; i++) {
    const ch = cell[i]!;
    if (ch === "{" || ch === "[") depth++;
    else if (ch === "}" || ch === "]") {
      if (--depth === 0) break;
    } else if (ch === "(") paren++;
    else if (ch === ")") paren--;
    if (depth !== 1 || paren) continue;
    if (ch === "{" || ch === ",") expect = true;
    else if (expect && /[A-Za-z]/.test(ch)) {
      const name = /^[A-Za-z][A-Za-z0-9_]*/.exec(cell.slice(i))![0];
      fields.push(name);
      i += name.length - 1;
      expect = false;
    } else if (!/\s/.test(ch)) expect = false;
  }
  return fields;
}
