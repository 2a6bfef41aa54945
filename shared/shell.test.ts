import { describe, expect, it } from "vitest";
import { grantOffer, grantsFor, type Grant, type PermissionAsk } from "./permission";
import { splitCommand } from "./shell";

const bash = (what: string, extra: Partial<PermissionAsk> = {}): PermissionAsk => ({
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
const grant = (pattern: string, tool = "bash"): Grant => ({
  id: "g_" + pattern,
  workerId: "w1",
  tool,
  pattern,
  askId: "per_0",
  by: { kind: "person" },
  createdAt: 0,
});
const granted = (what: string, ...patterns: string[]) =>
  !!grantsFor(
    bash(what),
    patterns.map((p) => grant(p)),
  );

describe("splitting a shell command into simple commands", () => {
  it("splits on ; && || | |& & and line breaks, keeping quotes and redirections with their command", () => {
    expect(splitCommand("npm test")).toEqual({ ok: true, commands: ["npm test"] });
    expect(splitCommand("npm   test\t-- --grep 'a b'")).toEqual({ ok: true, commands: ["npm test -- --grep 'a b'"] });
    expect(splitCommand("a ; b && c || d | e |& f & g\nh")).toEqual({ ok: true, commands: ["a", "b", "c", "d", "e", "f", "g", "h"] });
    expect(splitCommand("npm test 2>&1 | tail -n 5")).toEqual({ ok: true, commands: ["npm test 2>&1", "tail -n 5"] });
    expect(splitCommand("npm test > out.txt; cat out.txt")).toEqual({ ok: true, commands: ["npm test > out.txt", "cat out.txt"] });
    expect(splitCommand("echo \"a;b && c\" '|' x\\;y")).toEqual({ ok: true, commands: ["echo \"a;b && c\" '|' x\\;y"] });
    expect(splitCommand("sleep 1 &")).toEqual({ ok: true, commands: ["sleep 1"] });
    expect(splitCommand("echo x &>log")).toEqual({ ok: true, commands: ["echo x &>log"] });
    // An escaped or quoted > is text, not a redirection: the | or & after it is an operator (bash runs `touch p1`).
    expect(splitCommand("echo a\\>|touch p1")).toEqual({ ok: true, commands: ["echo a\\>", "touch p1"] });
    expect(splitCommand("echo a\\>&touch p3")).toEqual({ ok: true, commands: ["echo a\\>", "touch p3"] });
    expect(splitCommand("echo 'a>'|touch p4")).toEqual({ ok: true, commands: ["echo 'a>'", "touch p4"] });
    expect(splitCommand("npm test >| out")).toEqual({ ok: true, commands: ["npm test >| out"] });
  });

  it("does not split what it cannot take apart with certainty", () => {
    for (const c of [
      "npm test $(curl evil)",
      "npm test `id`",
      'echo "$(id)"',
      "diff <(ls) x",
      "(cd x && rm -rf y)",
      "{ rm -rf src; }",
      "npm() { rm -rf src; }; npm test",
      "cat <<EOF\nx\nEOF",
      "npm test # ; rm -rf src",
      "npm test ⁧⁦ ; rm -rf src ⁩⁦ #⁩⁩",
      "npm test\u200b",
      "npm test\r",
      "echo 'unterminated",
      "npm test \\\n; rm -rf src",
      "if true; then rm -rf src; fi",
      "for f in *; do rm $f; done",
      "a ;; b",
      "; rm -rf src",
      "npm test &&",
      // $'…' has its own escapes (\' is a quote inside it): bash runs `touch p2` here.
      "echo $'\\'';touch p2;echo \\'",
      'echo $"x"',
      "",
    ])
      expect(splitCommand(c).ok, JSON.stringify(c)).toBe(false);
  });
});

describe('"always" means what it says', () => {
  it("a grant on `npm test` answers `npm test` and nothing chained to it", () => {
    expect(granted("npm test", "npm test")).toBe(true);
    expect(granted("npm  test", "npm test")).toBe(true);
    for (const c of [
      "npm test ; touch pwned",
      "npm test; touch pwned",
      "npm test && node -e 'x'",
      "npm test $(touch pwned)",
      "npm test || true; rm -rf src",
      "npm test\ntouch pwned",
      "npm test & rm -rf src",
      "npm test | sh",
      "npm test > ~/.bashrc",
      "npm test -- x",
      "npm testx",
    ]) {
      expect(granted(c, "npm test"), c).toBe(false);
    }
  });

  it("every simple command needs its own grant, and a grant never crosses an operator", () => {
    expect(granted("npm test && npm run lint", "npm test")).toBe(false);
    expect(granted("npm test && npm run lint", "npm test", "npm run lint")).toBe(true);
    expect(granted("npm run lint; npm test", "npm test", "npm run lint")).toBe(true);
    // A grant is one simple command: `npm test; touch pwned` as a pattern matches nothing that splits.
    expect(granted("npm test; touch pwned", "npm test; touch pwned")).toBe(false);
  });

  it("the offer is the exact simple commands: no interpreter-wide pattern is ever offered", () => {
    expect(grantOffer(bash("python3 -m pytest", { always: ["python3 *"] }))).toEqual({ ok: true, patterns: ["python3 -m pytest"] });
    expect(grantOffer(bash("cat x | head", { always: ["cat *"] }))).toEqual({ ok: true, patterns: ["cat x", "head"] });
    expect(grantOffer(bash("npm test && npm test"))).toEqual({ ok: true, patterns: ["npm test"] });
    expect(granted("python3 -c 'import os'", "python3 -m pytest")).toBe(false);
    expect(granted("cat ~/.ssh/id_rsa", "cat x", "head")).toBe(false);
  });

  it("not offered: unsplittable, cut (too long), flagged, hidden characters, questions", () => {
    expect(grantOffer(bash("npm test $(id)"))).toMatchObject({ ok: false, why: expect.stringContaining("substitution") });
    expect(grantOffer(bash("echo " + "x".repeat(2000)))).toMatchObject({ ok: false, why: expect.stringContaining("characters long") });
    expect(grantOffer(bash("npm test", { flags: [{ kind: "out-of-scope", detail: "d" }] }))).toMatchObject({ ok: false });
    expect(grantOffer({ ...bash("a/b\u202e.txt"), tool: "edit" })).toMatchObject({ ok: false });
    expect(grantOffer({ ...bash("src/a.ts"), tool: "edit" })).toEqual({ ok: true, patterns: ["src/a.ts"] });
    expect(grantOffer({ ...bash("which?"), kind: "question", tool: "question" })).toMatchObject({ ok: false });
  });

  it("a path or URL grant is exact, never a glob", () => {
    const edit = (what: string) => ({ ...bash(what), tool: "edit" });
    expect(!!grantsFor(edit("src/a.ts"), [grant("src/a.ts", "edit")])).toBe(true);
    expect(!!grantsFor(edit("src/b.ts"), [grant("src/*", "edit")])).toBe(false);
    expect(!!grantsFor(edit("src/a.ts"), [grant("src/a.ts", "bash")])).toBe(false);
  });
});

describe("redirections taken apart (policy patterns spell them out)", () => {
  it("operators with their file descriptor, quotes and escapes respected", async () => {
    const { redirectionParts } = await import("./shell");
    expect(redirectionParts("npm test > out.txt")).toEqual({ texts: ["npm test ", " out.txt"], ops: [">"] });
    expect(redirectionParts("npm test 2>&1 >>log &>x <in")).toEqual({ texts: ["npm test ", "1 ", "log ", "x ", "in"], ops: ["2>&", ">>", "&>", "<"] });
    expect(redirectionParts("echo '>' \">\" \\> x")).toEqual({ texts: ["echo '>' \">\" \\> x"], ops: [] });
    expect(redirectionParts("echo a2>b")).toEqual({ texts: ["echo a2", "b"], ops: [">"] });
  });
});
