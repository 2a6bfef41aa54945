// What `ocw run` shows on a terminal for an ask: the command that runs, made visible, never an escape sequence; the
// engine's flags; exactly what "always" grants; "always" not offered where it cannot be granted.
import { describe, expect, it } from "vitest";
import { askerRig } from "../../test/fixtures/asker";
import type { PermissionAsk } from "../../shared/permission";
import { askText, unattendedAskLine } from "./run";
import { jsonForTerminal } from "../../shared/untrusted";

const ask = (what: string, extra: Partial<PermissionAsk> = {}): PermissionAsk => ({
  id: "per_1",
  workerId: "w1",
  sessionId: "s",
  kind: "permission",
  tool: "bash",
  what,
  patterns: [what],
  always: [],
  createdAt: 0,
  status: "pending",
  ...extra,
});
// Any control character but the line breaks the text itself prints (ESC, BEL, CSI, OSC…), or a bidi / zero-width one.
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/;

describe("an ask on the terminal", () => {
  it("a bidi command is shown with visible markers, and its parts are what 'always' would not grant", () => {
    const t = askText(ask("npm test \u2067\u2066 ; rm -rf src \u2069\u2066 #\u2069\u2069", { always: ["npm *"] }));
    expect(t).toContain("npm test ⟪U+2067⟫⟪U+2066⟫ ; rm -rf src ⟪U+2069⟫⟪U+2066⟫ #⟪U+2069⟫⟪U+2069⟫");
    expect(t).not.toMatch(RAW);
    expect(t).toContain('"always" is not offered');
  });

  it("a multi-line command is several visible lines; the grant is each simple command", () => {
    const t = askText(ask("echo hi\nrm -rf src"));
    expect(t).toContain("asks bash: echo hi⏎\n    rm -rf src\n");
    expect(t).toContain('"always" grants exactly: [echo hi] [rm -rf src]');
  });

  it("escape sequences in the command, the diff and the flags never reach the terminal", () => {
    const osc = "\u001b]52;c;cm0gLXJmIH4=\u0007\u001b[2K\u001b[1A";
    const t = askText(
      ask(`echo ok${osc}`, { tool: "edit", diff: `+line ${osc}\n+second\u009b2J`, flags: [{ kind: "protected", detail: `x${osc} is protected` }] }),
    );
    expect(t).not.toMatch(RAW);
    expect(t).toContain("⟪U+001B⟫]52;c;");
    expect(t).toContain("⚑ protected: x⟪U+001B⟫");
  });

  it("an edit whose write leaves the file as it was says so, not a diff of header lines alone", () => {
    const head = "Index: cli.txt\n===================================================================\n--- cli.txt\n+++ cli.txt\n";
    const same = askText(ask("cli.txt", { tool: "edit", diff: head }));
    expect(same).toContain("  no change to the file's content: what the write puts there is what the file already holds\n");
    expect(same).not.toContain("Index:");
    const changed = askText(ask("cli.txt", { tool: "edit", diff: `${head}@@ -0,0 +1,1 @@\n+from cli\n` }));
    expect(changed).toContain("+from cli");
    expect(changed).not.toContain("no change to the file's content");
  });

  it("a long command is cut head and tail with the cut length, and never offered 'always'", () => {
    const t = askText(ask("echo " + "a".repeat(3000) + " ; rm -rf src"));
    expect(t).toMatch(/…\[\d+ characters cut\]… a+ ; rm -rf src/);
    expect(t).toContain('"always" is not offered');
  });

  it("the prompt does not offer [a]lways where nothing can be granted, and ignores 'a' there", async () => {
    const { input, asker, decided, printed } = askerRig();
    asker.enqueue(ask("npm test $(touch pwned)"));
    input.write("a\n");
    input.write("n\n");
    await new Promise((r) => setTimeout(r, 50));
    expect(printed()).toContain("allow? [y]es once / [n]o: ");
    expect(printed()).not.toContain("[a]lways");
    expect(decided).toEqual([{ askId: "per_1", decision: "reject" }]);
    asker.close();
  });
});

describe("a question on the terminal", () => {
  it("an option's description with a line break stays on its option's line: it cannot show an option of its own", async () => {
    const { input, asker, decided, printed } = askerRig();
    asker.enqueue({
      ...ask("Which?"),
      kind: "question",
      tool: "question",
      questions: [
        { question: "Which?", options: [{ label: "Delete the tests", description: "removes them\n  2) Keep the tests (recommended)" }, { label: "Keep" }] },
      ],
    });
    await new Promise((r) => setImmediate(r));
    expect(printed()).toContain("  1) Delete the tests — removes them⏎  2) Keep the tests (recommended)\n  2) Keep\n");
    expect(
      printed()
        .split("\n")
        .filter((l) => l.startsWith("  2)")),
    ).toEqual(["  2) Keep"]);
    input.write("2\n");
    await new Promise((r) => setTimeout(r, 20));
    expect(decided).toEqual([{ askId: "per_1", decision: "once", answers: [["Keep"]] }]);
    asker.close();
  });
});

describe("an ask's tool name and --json output on a terminal", () => {
  it("a tool name that is not a plain name is quoted as untrusted: no escape, no fake prompt line", () => {
    const t = askText(ask("ls", { tool: "bash\u001b[2J\nallow? [y]es once / [a]lways / [n]o: a" }));
    expect(t).not.toMatch(RAW);
    expect(t).toContain('a tool name the model chose, untrusted: "bash⟪U+001B⟫[2J⏎allow?');
    expect(t.split("\n").filter((l) => l.startsWith("allow?"))).toHaveLength(0);
  });

  it("jsonForTerminal escapes what JSON.stringify leaves raw (C1 CSI, bidi, zero-width, tags) and parses to the same value", () => {
    const value = { what: "rm\u009b2J \u202egnp.exe\u200b \u{e0041} ok\nnext", n: 1, é: "café ❤️" };
    const j = jsonForTerminal(value);
    expect(j).not.toMatch(RAW);
    expect(j).not.toMatch(/[\u{e0000}-\u{e0fff}]/u);
    expect(j).toContain("\\u009b");
    expect(j).toContain("café");
    expect(JSON.parse(j)).toEqual(value);
  });
});

describe("an ask `ocw run --approve` answers by itself", () => {
  it("its tool's name, when not a plain name, is quoted and labelled as the model's, never an escape on the terminal (as at the prompt)", () => {
    const a = ask("ls", { tool: "bash\u001b[2J\u202e\nocw: w1 asks nothing" });
    const line = unattendedAskLine(a, "once", false);
    expect(line).toContain('(a tool name the model chose, untrusted: "bash⟪U+001B⟫[2J⟪U+202E⟫⏎ocw: w1 asks nothing")');
    expect(line).not.toMatch(RAW);
    expect(line.split("\n")).toHaveLength(2);
    expect(line).toBe('ocw: w1 asks (a tool name the model chose, untrusted: "bash⟪U+001B⟫[2J⟪U+202E⟫⏎ocw: w1 asks nothing"): ls\n  → once (--approve)');
    // The same words as at the prompt.
    expect(askText(a)).toContain(line.split(": ls")[0]!);
  });
  it("a plain tool name and what it asks read as at the prompt", () => {
    expect(unattendedAskLine(ask("npm test \u2067x"), "once", false)).toBe("ocw: w1 asks bash: npm test ⟪U+2067⟫x\n  → once (--approve)");
  });
});
