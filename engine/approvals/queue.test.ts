// The approvals queue against a fake opencode client: who answers an ask (the engine's guards, a grant, a policy, a
// person), what opencode hears ("always" is "once"), and how the worker's state follows (waiting-approval ⇄ running).
import { mkdtempSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { PermissionAsk } from "../../shared/permission";
import type { PortResult } from "../harness";
import { FakeOpencode, stubPort } from "../../test/fixtures/fake-harness";
import { testRegistry } from "../../test/fixtures/registry";
import { Approvals } from "./queue";

/** opencode's answers to the engine's replies: every one with `status` (a 404: opencode no longer has the ask). */
function fakePort(status = 200) {
  const calls: { method: string; args: Record<string, unknown> }[] = [];
  const answer =
    (method: string) =>
    async (args: object): Promise<PortResult<void>> => {
      calls.push({ method, args: { ...args } });
      return status < 400 ? { ok: true, value: undefined } : { ok: false, kind: "status", status };
    };
  const port = stubPort({ replyPermission: answer("permission.reply"), replyQuestion: answer("question.reply"), rejectQuestion: answer("question.reject") });
  const server = new FakeOpencode(() => []);
  server.port = port;
  return { calls, server, port };
}
/** No HTTP answer: a network failure, the reply's time limit, or an answer whose body could not be read. */
const noAnswer = (error: Error): PortResult<void> => ({ ok: false, kind: "no-answer", error });

let n = 0;
const ask = (workerId: string, tool: string, what: string, extra: Partial<PermissionAsk> = {}): PermissionAsk => ({
  id: `per_${n++}`,
  workerId,
  sessionId: "ses",
  kind: "permission",
  tool,
  what,
  patterns: [what],
  always: [],
  createdAt: Date.now(),
  status: "pending",
  ...extra,
});
const settled = () => new Promise((r) => setTimeout(r, 10));

function setup(status = 200, lookup?: (host: string) => Promise<string[]>, direct?: () => string[]) {
  const r = testRegistry();
  const approvals = new Approvals({ stateDir: r.stateDir, registry: r.registry, lookup, direct });
  const ws = mkdtempSync(path.join(os.tmpdir(), "ocw-ws-"));
  const w = r.worker("running", { workspace: ws });
  const fake = fakePort(status);
  r.registry.rt(w.id).attach(fake.server);
  return { ...r, approvals, ws, w, ...fake };
}

describe("the approvals queue", () => {
  it("a webfetch of a public name that resolves to this machine or its private network (127.0.0.1.nip.io, a metadata name): refused by the engine like the address, whoever approves; a public one waits for a person", async () => {
    const names: Record<string, string[]> = {
      "127.0.0.1.nip.io": ["127.0.0.1"],
      "metadata.example.com": ["169.254.169.254"],
      "v6.example.com": ["2606:4700::1", "::1"],
      "public.example.com": ["93.184.216.34"],
    };
    const looked: string[] = [];
    const { approvals, w, calls, registry } = setup(200, async (h) => (looked.push(h), names[h] ?? []));
    for (const url of ["http://127.0.0.1.nip.io:4096/session", "http://metadata.example.com/latest/meta-data/", "https://V6.example.com./x"])
      approvals.onAsk(w.id, ask(w.id, "webfetch", url));
    await settled();
    const asks = registry.get(w.id).asks;
    expect(asks.map((a) => [a.status, a.decision, a.by?.name])).toEqual([
      ["decided", "reject", "network guard"],
      ["decided", "reject", "network guard"],
      ["decided", "reject", "network guard"],
    ]);
    expect(calls.map((c) => c.args.reply)).toEqual(["reject", "reject", "reject"]);
    expect(JSON.stringify(calls[0]!.args)).toContain("127.0.0.1.nip.io, which resolves to 127.0.0.1 (a local or private network address) is not a public page");
    const pub = ask(w.id, "webfetch", "https://public.example.com/docs");
    approvals.onAsk(w.id, pub);
    await settled();
    expect(registry.get(w.id).asks.at(-1)).toMatchObject({ id: pub.id, status: "pending" });
    expect(registry.get(w.id).state).toBe("waiting-approval");
    // A literal address is refused as before, without a lookup; a name looked up once is not looked up again at once.
    approvals.onAsk(w.id, ask(w.id, "webfetch", "http://10.0.0.1/"));
    approvals.onAsk(w.id, ask(w.id, "webfetch", "http://127.0.0.1.nip.io/again"));
    await settled();
    expect(looked.sort()).toEqual(["127.0.0.1.nip.io", "metadata.example.com", "public.example.com", "v6.example.com"]);
    expect(
      registry
        .get(w.id)
        .asks.slice(-2)
        .map((a) => a.decision),
    ).toEqual(["reject", "reject"]);
  });

  it("a webfetch that starts at the model's own endpoint (opencode's NO_PROXY: reached past the egress proxy, and so are its redirects) is refused by the network guard; other public pages wait for a person", async () => {
    const names: Record<string, string[]> = {
      "api.provider.example": ["93.184.216.34"],
      "docs.provider.example": ["93.184.216.34"],
      "llm.example.net": ["93.184.216.35"],
    };
    const direct = ["127.0.0.1:4100", "api.provider.example", "llm.example.net:8443"];
    const { approvals, w, calls, registry } = setup(
      200,
      async (h) => names[h] ?? [],
      () => direct,
    );
    const urls = [
      "https://api.provider.example/v1/redirect?to=http://169.254.169.254/",
      "https://eu.API.provider.example./x",
      "http://llm.example.net:8443/",
      "https://docs.provider.example/guide",
      "http://llm.example.net/",
      "https://llm.example.net:8444/",
    ];
    for (const url of urls) approvals.onAsk(w.id, ask(w.id, "webfetch", url));
    await settled();
    expect(registry.get(w.id).asks.map((a) => [a.what, a.status, a.decision ?? null, a.by?.name ?? null])).toEqual([
      [urls[0], "decided", "reject", "network guard"],
      [urls[1], "decided", "reject", "network guard"],
      [urls[2], "decided", "reject", "network guard"],
      [urls[3], "pending", null, null],
      [urls[4], "pending", null, null],
      [urls[5], "pending", null, null],
    ]);
    expect(JSON.stringify(calls[0]!.args)).toContain(
      "api.provider.example (the model's endpoint, which opencode reaches past the network guard) is not a public page",
    );
  });

  it("a read inside the workspace is answered at once and not recorded; one outside is refused by the engine on the record", async () => {
    const { approvals, w, ws, calls, registry } = setup();
    approvals.onAsk(w.id, ask(w.id, "read", path.join(ws, "a.txt"), { patterns: ["a.txt"] }));
    await settled();
    expect(calls).toMatchObject([{ method: "permission.reply", args: { reply: "once" } }]);
    expect(registry.get(w.id).asks).toEqual([]);
    const outside = mkdtempSync(path.join(os.tmpdir(), "ocw-out-"));
    symlinkSync(outside, path.join(ws, "link"));
    approvals.onAsk(w.id, ask(w.id, "read", "link/secret", { patterns: ["link/secret"] }));
    await settled();
    expect(calls.at(-1)).toMatchObject({ method: "permission.reply", args: { reply: "reject" } });
    expect(registry.get(w.id).asks[0]).toMatchObject({ status: "decided", decision: "reject", by: { kind: "engine", name: "workspace guard" } });
    expect(registry.get(w.id).state).toBe("running");
  });

  it("an ask for a person: waiting-approval until decided; 'always' reaches opencode as 'once' and becomes the engine's grant of that exact command, which answers the same command again", async () => {
    const { approvals, w, calls, registry } = setup();
    const first = ask(w.id, "bash", "echo one", { always: ["echo *"] });
    approvals.onAsk(w.id, first);
    expect(registry.get(w.id).state).toBe("waiting-approval");
    expect(approvals.pending().map((a) => a.id)).toEqual([first.id]);
    await approvals.decide({ askId: first.id, decision: "always" }, { kind: "person", name: "t" });
    expect(registry.get(w.id).state).toBe("running");
    expect(calls.map((c) => c.args.reply)).toEqual(["once"]);
    // The exact command, not opencode's suggestion `echo *`.
    expect(approvals.grants()).toMatchObject([{ tool: "bash", pattern: "echo one" }]);
    approvals.onAsk(w.id, ask(w.id, "bash", "echo one", { always: ["echo *"] }));
    await settled();
    expect(registry.get(w.id).state).toBe("running");
    expect(registry.get(w.id).asks[1]).toMatchObject({ status: "decided", decision: "once", by: { kind: "policy" } });
    approvals.onAsk(w.id, ask(w.id, "bash", "echo two"));
    await settled();
    expect(registry.get(w.id).asks[2]).toMatchObject({ status: "pending" });
    await approvals.decide({ askId: registry.get(w.id).asks[2]!.id, decision: "once" }, { kind: "person" });
    approvals.revokeGrant(approvals.grants()[0]!.id);
    expect(approvals.grants()).toEqual([]);
    // An unknown id says where the valid ones are listed, by name (not "list grants").
    expect(() => approvals.revokeGrant("g-nope")).toThrow('unknown grant "g-nope": no grant in force has that id (`ocw grants` lists them)');
    approvals.onAsk(w.id, ask(w.id, "bash", "echo one"));
    expect(registry.get(w.id).state).toBe("waiting-approval");
  });

  it('a grant never crosses a shell operator: "always" on `npm test` leaves every chained command to a person', async () => {
    const { approvals, w, registry } = setup();
    const first = ask(w.id, "bash", "npm test", { always: ["npm *"] });
    approvals.onAsk(w.id, first);
    await approvals.decide({ askId: first.id, decision: "always" }, { kind: "person", name: "p" });
    const chained = [
      "npm test ; touch pwned",
      "npm test && node -e 'require(1)'",
      "npm test $(touch pwned)",
      "npm test || true; rm -rf src",
      "npm test\ntouch pwned",
      "npm run build",
    ];
    for (const c of chained) approvals.onAsk(w.id, ask(w.id, "bash", c, { always: ["npm *"] }));
    await settled();
    const later = registry.get(w.id).asks.slice(1);
    expect(later.map((a) => [a.what, a.status])).toEqual(chained.map((c) => [c, "pending"]));
    // "always" on a compound command grants each simple command; a substitution is never granted.
    await approvals.decide({ askId: later[1]!.id, decision: "always" }, { kind: "person", name: "p" });
    expect(approvals.grants().map((g) => g.pattern)).toEqual(["npm test", "node -e 'require(1)'"]);
    await expect(approvals.decide({ askId: later[2]!.id, decision: "always" }, { kind: "person" })).rejects.toThrow(
      /"always" is not offered .*substitution.*answer once or reject/,
    );
    expect(registry.get(w.id).asks[3]).toMatchObject({ status: "pending" });
  });

  it("a policy rule that approves is matched per simple command: `npm test*` does not approve `npm test; rm -rf src`", async () => {
    const { approvals, w, registry } = setup();
    approvals.setPolicies([{ tool: "bash", pattern: "npm test*", decision: "once" }]);
    approvals.onAsk(w.id, ask(w.id, "bash", "npm test -- --grep x"));
    approvals.onAsk(w.id, ask(w.id, "bash", "npm test; rm -rf src"));
    approvals.onAsk(w.id, ask(w.id, "bash", "npm test $(rm -rf src)"));
    await settled();
    expect(registry.get(w.id).asks.map((a) => a.status)).toEqual(["decided", "pending", "pending"]);
  });

  it("an approving policy rule never approves a redirection it does not spell out: `npm test*` leaves `npm test > ~/.bashrc` to a person", async () => {
    const { approvals, w, registry } = setup();
    approvals.setPolicies([
      { tool: "bash", pattern: "npm test*", decision: "once" },
      { tool: "bash", pattern: "npm run lint > lint/*.log", decision: "once" },
    ]);
    // Inside the worktree (the engine's own guard refuses writes outside it before any rule is looked at).
    const asks: [string, boolean][] = [
      ["npm test -- --grep '>'", true],
      ["npm test > src/app.js", false],
      ["npm test >> package.json", false],
      ["npm test 2>tests/test_a.py", false],
      ["npm test &>x", false],
      ["npm test</etc/shadow", false],
      ["npm test -- a>b", false],
      ["npm run lint > lint/a.log", true],
      ["npm run lint > lint/a.log > package.json", false],
      ["npm run lint >> lint/a.log", false],
      ["npm test > ~/.bashrc", false],
    ];
    for (const [a] of asks) approvals.onAsk(w.id, ask(w.id, "bash", a));
    await settled();
    expect(registry.get(w.id).asks.map((a) => [a.what, a.by?.kind === "policy" && a.decision === "once"])).toEqual(asks);
  });

  it("a policy rule answers matching asks and is named as the decider; a bash write outside the worktree is refused first", async () => {
    const { approvals, w, registry } = setup();
    approvals.setPolicies([{ tool: "bash", pattern: "ls*", decision: "once" }]);
    approvals.onAsk(w.id, ask(w.id, "bash", "ls -la"));
    approvals.onAsk(w.id, ask(w.id, "bash", "echo x > /etc/passwd"));
    await settled();
    const [a, b] = registry.get(w.id).asks;
    expect(a).toMatchObject({ decision: "once", by: { kind: "policy", name: "bash ls* → once" } });
    expect(b).toMatchObject({ decision: "reject", by: { kind: "engine", name: "worktree guard" } });
    expect(() => approvals.setPolicies([{ tool: "bash" } as never])).toThrow();
  });

  it("opencode's echo of our own answer is not a decision of its own; an answer given inside opencode is recorded as opencode's", async () => {
    const { approvals, w, registry } = setup();
    const a = ask(w.id, "edit", "a.txt");
    approvals.onAsk(w.id, a);
    const deciding = approvals.decide({ askId: a.id, decision: "once" }, { kind: "person" });
    approvals.onAskGone(w.id, a.id, "once"); // the echo, before the HTTP answer
    await deciding;
    expect(registry.get(w.id).asks[0]!.by).toEqual({ kind: "person" });
    const b = ask(w.id, "edit", "b.txt");
    approvals.onAsk(w.id, b);
    approvals.onAskGone(w.id, b.id, "reject");
    expect(registry.get(w.id).asks[1]).toMatchObject({ decision: "reject", by: { kind: "engine", name: "opencode" } });
    expect(registry.get(w.id).state).toBe("running");
  });

  it("an answer opencode announces as taken is recorded then, without waiting for its HTTP reply; any other announcement still waits for it", async () => {
    const { approvals, w, registry, port } = setup();
    let httpDone = false;
    let release!: () => void;
    // opencode announces the reply on its stream, then its HTTP reply comes only later (its one thread is busy).
    port.replyPermission = (args) => {
      setTimeout(() => approvals.onAskGone(w.id, args.requestID, args.reply), 0);
      return new Promise<PortResult<void>>((r) => {
        release = () => ((httpDone = true), r({ ok: true, value: undefined }));
        // Never later than this: an engine that waits for the HTTP reply still finishes (and fails the check below).
        setTimeout(release, 2000);
      });
    };
    const a = ask(w.id, "edit", "a.txt");
    approvals.onAsk(w.id, a);
    expect(registry.get(w.id).state).toBe("waiting-approval");
    const decided = await approvals.decide({ askId: a.id, decision: "once" }, { kind: "person", name: "p" });
    expect(httpDone).toBe(false);
    expect(decided).toMatchObject({ status: "decided", decision: "once", by: { kind: "person", name: "p" } });
    expect(registry.get(w.id).state).toBe("running");
    release();
    // opencode announces a different answer: the engine waits for the HTTP reply and records what opencode did.
    const b = ask(w.id, "edit", "b.txt", { always: ["*"] });
    approvals.onAsk(w.id, b);
    port.replyPermission = async (args) => (approvals.onAskGone(w.id, args.requestID, "reject"), noAnswer(new TypeError("socket hang up")));
    await expect(approvals.decide({ askId: b.id, decision: "once" }, { kind: "person", name: "p" })).rejects.toThrow(/on its own, not "once"/);
    expect(registry.get(w.id).asks[1]).toMatchObject({ decision: "reject", by: { kind: "engine", name: "opencode" } });
  });

  it("a question dismissed with a note: opencode's dismissal takes no message, so the note is recorded and sent as a steer; without a note nothing is sent", async () => {
    const r = testRegistry();
    const notes: { workerId: string; text: string; by: string }[] = [];
    const approvals = new Approvals({
      stateDir: r.stateDir,
      registry: r.registry,
      note: async (workerId, text, by) => void notes.push({ workerId, text, by: by.kind }),
    });
    const w = r.worker("running", { workspace: mkdtempSync(path.join(os.tmpdir(), "ocw-ws-")) });
    const fake = fakePort();
    r.registry.rt(w.id).attach(fake.server);
    const question = (what: string): PermissionAsk => ({
      ...ask(w.id, "question", what),
      kind: "question",
      questions: [{ question: what, header: "h", options: [] }],
    });
    const q = question("which?");
    approvals.onAsk(w.id, q);
    await approvals.decide({ askId: q.id, decision: "reject", message: "  Ask at most 5 at a time.  " }, { kind: "person" });
    expect(fake.calls).toEqual([{ method: "question.reject", args: expect.not.objectContaining({ message: expect.anything() }) }]);
    expect(notes).toEqual([{ workerId: w.id, text: "Ask at most 5 at a time.", by: "person" }]);
    expect(r.registry.get(w.id).asks[0]).toMatchObject({ status: "decided", decision: "reject", message: "Ask at most 5 at a time." });
    const bare = question("which one?");
    approvals.onAsk(w.id, bare);
    await approvals.decide({ askId: bare.id, decision: "reject" }, { kind: "person" });
    expect(notes).toHaveLength(1);
    // A note that cannot be sent (the worker stopped meanwhile) leaves the dismissal done and says so.
    const failing = new Approvals({ stateDir: r.stateDir, registry: r.registry, note: async () => Promise.reject(new Error("worker is stopped")) });
    const late = question("and now?");
    failing.onAsk(w.id, late);
    await expect(failing.decide({ askId: late.id, decision: "reject", message: "later" }, { kind: "person" })).resolves.toMatchObject({ status: "decided" });
  });

  it("refusals say what to do: unknown ask, decided twice, a question without answers, opencode no longer has it", async () => {
    const { approvals, w, registry } = setup();
    await expect(approvals.decide({ askId: "nope", decision: "once" }, { kind: "person" })).rejects.toThrow(
      'unknown ask "nope": no ask has that id (`ocw asks` or the approvals inbox lists the pending ones)',
    );
    const a = ask(w.id, "edit", "a.txt");
    approvals.onAsk(w.id, a);
    await approvals.decide({ askId: a.id, decision: "once" }, { kind: "person" });
    await expect(approvals.decide({ askId: a.id, decision: "once" }, { kind: "person" })).rejects.toThrow(/no longer pending \(decided: once by person\)/);
    const q: PermissionAsk = { ...ask(w.id, "question", "which?"), kind: "question", questions: [{ question: "which?", header: "h", options: [] }] };
    approvals.onAsk(w.id, q);
    await expect(approvals.decide({ askId: q.id, decision: "once" }, { kind: "person" })).rejects.toThrow(/pass answers/);
    const gone = setup(404);
    const g = ask(gone.w.id, "edit", "a.txt");
    gone.approvals.onAsk(gone.w.id, g);
    await expect(gone.approvals.decide({ askId: g.id, decision: "once" }, { kind: "person" })).rejects.toThrow(/opencode refused the answer .* \(HTTP 404\)/);
    expect(gone.registry.get(gone.w.id).asks[0]).toMatchObject({ status: "cancelled" });
    expect(gone.registry.get(gone.w.id).state).toBe("running");
    expect(registry.get(w.id).state).toBe("waiting-approval");
  });

  it("the engine's own refusal in flight to opencode cannot be overtaken: an approval meanwhile is refused, and opencode hears one answer", async () => {
    const { approvals, w, ws, calls, registry, port } = setup();
    // opencode answers slowly (a busy machine): the refusal is on its way while the ask still reads pending.
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    const answer = port.replyPermission;
    port.replyPermission = async (args, o) => (await slow, answer(args, o));
    const outside = mkdtempSync(path.join(os.tmpdir(), "ocw-out-"));
    symlinkSync("/", path.join(ws, "root"));
    const search = ask(w.id, "grep", `root${outside}`, { patterns: ["ELSEWHERE"] });
    approvals.onAsk(w.id, search);
    expect(registry.get(w.id).asks[0]).toMatchObject({ id: search.id, status: "pending" });
    // "Approve everything pending", as a careless person or a client loop does.
    const approving = approvals.decide({ askId: search.id, decision: "once" }, { kind: "person", name: "careless" });
    await expect(approving).rejects.toThrow(/already being answered by engine workspace guard/);
    // The answer on its way is known (a wait does not call this worker blocked), and its end is told.
    let ends = 0;
    const off = approvals.answers.ended(() => ends++);
    expect([approvals.answers.has(search.id), ends]).toEqual([true, 0]);
    release();
    await settled();
    expect([approvals.answers.has(search.id), ends]).toEqual([false, 1]);
    off();
    expect(calls.map((c) => c.args.reply)).toEqual(["reject"]);
    expect(registry.get(w.id).asks[0]).toMatchObject({ status: "decided", decision: "reject", by: { kind: "engine", name: "workspace guard" } });
    // Two people at once: the second is told the first one's answer is on its way.
    const bash = ask(w.id, "bash", "echo hi");
    approvals.onAsk(w.id, bash);
    const first = approvals.decide({ askId: bash.id, decision: "once" }, { kind: "person", name: "a" });
    await expect(approvals.decide({ askId: bash.id, decision: "reject" }, { kind: "mcp", name: "b" })).rejects.toThrow(/already being answered by person a/);
    await first;
    expect(calls.map((c) => c.args.reply)).toEqual(["reject", "once"]);
  });

  it("an answer opencode never took is not recorded: the ask stays open to be answered again, and a refusal that failed still cannot become an approval", async () => {
    const { approvals, w, ws, calls, registry, port } = setup();
    const answer = port.replyPermission;
    const signals: (AbortSignal | undefined)[] = [];
    let down = true;
    // A network failure or the reply's time limit: no HTTP answer.
    port.replyPermission = async (args, opts) => (signals.push(opts?.signal), down ? noAnswer(new TypeError("fetch failed")) : answer(args, opts));
    const edit = ask(w.id, "edit", "a.txt");
    approvals.onAsk(w.id, edit);
    await expect(approvals.decide({ askId: edit.id, decision: "once" }, { kind: "person", name: "p" })).rejects.toThrow(
      /did not take the answer .*fetch failed.* still pending; answer it again/,
    );
    expect(registry.get(w.id).asks[0]).toMatchObject({ status: "pending" });
    expect(registry.get(w.id).state).toBe("waiting-approval");
    expect(signals[0]).toBeInstanceOf(AbortSignal); // every answer has a time limit: a hung opencode cannot hold the ask for good
    // The engine's refusal of a search outside fails the same way: the ask is left pending, and the worker's person sees it.
    symlinkSync("/", path.join(ws, "root"));
    const search = ask(w.id, "grep", `root${os.tmpdir()}`, { patterns: ["x"] });
    approvals.onAsk(w.id, search);
    await settled();
    expect(registry.get(w.id).asks[1]).toMatchObject({ status: "pending" });
    down = false;
    // Approving it anyway ("approve all") sends the engine's refusal instead, on the record as the engine's.
    await approvals.decide({ askId: search.id, decision: "once" }, { kind: "person", name: "careless" });
    expect(registry.get(w.id).asks[1]).toMatchObject({ status: "decided", decision: "reject", by: { kind: "engine", name: "workspace guard" } });
    await approvals.decide({ askId: edit.id, decision: "once" }, { kind: "person", name: "p" });
    expect(registry.get(w.id).asks[0]).toMatchObject({ status: "decided", decision: "once" });
    expect(calls.map((c) => c.args.reply)).toEqual(["reject", "once"]);
    expect(registry.get(w.id).state).toBe("running");
    // opencode took an answer but its HTTP answer was lost: its stream announced the ask answered, so the answer stands.
    const late = ask(w.id, "edit", "c.txt");
    approvals.onAsk(w.id, late);
    port.replyPermission = async (args) => (approvals.onAskGone(w.id, args.requestID, args.reply), noAnswer(new TypeError("socket hang up")));
    await approvals.decide({ askId: late.id, decision: "reject" }, { kind: "person", name: "p" });
    expect(registry.get(w.id).asks[2]).toMatchObject({ status: "decided", decision: "reject", by: { kind: "person", name: "p" } });
  });

  it("what opencode did is what is recorded: its own different answer (no grant), an unreadable answer it took, and a failed refusal leaves the worker waiting", async () => {
    const { approvals, w, registry, port } = setup();
    // "always" sent, but opencode's stream says it rejected the ask, and the HTTP answer was lost.
    const a = ask(w.id, "edit", "a.txt", { always: ["*"] });
    approvals.onAsk(w.id, a);
    port.replyPermission = async (args) => (approvals.onAskGone(w.id, args.requestID, "reject"), noAnswer(new TypeError("socket hang up")));
    await expect(approvals.decide({ askId: a.id, decision: "always" }, { kind: "person", name: "p" })).rejects.toThrow(
      /opencode answered .* "reject" on its own, not "always"/,
    );
    expect(registry.get(w.id).asks[0]).toMatchObject({ status: "decided", decision: "reject", by: { kind: "engine", name: "opencode" } });
    expect(approvals.grants()).toEqual([]);
    // The answer came but its body could not be read (the HTTP port makes it no-answer, http-port.test.ts): announced, it
    // stands; not announced, it is an answer not taken.
    const b = ask(w.id, "edit", "b.txt");
    approvals.onAsk(w.id, b);
    port.replyPermission = async (args) => (approvals.onAskGone(w.id, args.requestID, args.reply), noAnswer(new SyntaxError("Unexpected end of JSON input")));
    await approvals.decide({ askId: b.id, decision: "once" }, { kind: "person", name: "p" });
    expect(registry.get(w.id).asks[1]).toMatchObject({ status: "decided", decision: "once", by: { kind: "person", name: "p" } });
    const c = ask(w.id, "edit", "c.txt");
    approvals.onAsk(w.id, c);
    port.replyPermission = async () => noAnswer(new SyntaxError("Unexpected end of JSON input"));
    await expect(approvals.decide({ askId: c.id, decision: "once" }, { kind: "person", name: "p" })).rejects.toThrow(
      /did not take the answer .*Unexpected end of JSON input/,
    );
    await approvals.decide({ askId: c.id, decision: "reject" }, { kind: "person", name: "p" }).catch(() => undefined);
    // The engine's own refusal of a search outside fails: the ask waits for a person, and the worker shows it.
    const { approvals: a2, w: w2, ws: ws2, registry: r2, port: p2 } = setup();
    p2.replyPermission = async () => noAnswer(new TypeError("fetch failed"));
    symlinkSync("/", path.join(ws2, "root"));
    a2.onAsk(w2.id, ask(w2.id, "grep", `root${os.tmpdir()}`, { patterns: ["x"] }));
    await settled();
    expect(r2.get(w2.id).asks[0]).toMatchObject({ status: "pending" });
    expect(r2.get(w2.id).state).toBe("waiting-approval");
  });

  it("the engine's refusals come before any grant or rule: an 'always' on echo does not approve an echo that writes outside", async () => {
    const { approvals, w, registry } = setup();
    approvals.setPolicies([{ tool: "*", pattern: "**", decision: "once" }]);
    const first = ask(w.id, "bash", "echo hi", { always: ["echo *"] });
    approvals.onAsk(w.id, first);
    await settled();
    // The catch-all rule answered it; an "always" from a person makes the grant.
    approvals.setPolicies([]);
    const second = ask(w.id, "bash", "echo two", { always: ["echo *"] });
    approvals.onAsk(w.id, second);
    await approvals.decide({ askId: second.id, decision: "always" }, { kind: "person", name: "p" });
    approvals.setPolicies([{ tool: "*", pattern: "**", decision: "once" }]);
    approvals.onAsk(w.id, ask(w.id, "bash", "echo pwned > /etc/ocw-outside.txt"));
    await settled();
    expect(registry.get(w.id).asks.at(-1)).toMatchObject({ decision: "reject", by: { kind: "engine", name: "worktree guard" } });
  });

  it("no rule answers a question: a catch-all policy leaves it to a person, and the worker shows it waits", async () => {
    const { approvals, w, calls, registry } = setup();
    approvals.setPolicies([{ tool: "*", pattern: "**", decision: "once" }]);
    const q: PermissionAsk = { ...ask(w.id, "question", "which one?"), kind: "question", questions: [{ question: "which one?", header: "h", options: [] }] };
    approvals.onAsk(w.id, q);
    await settled();
    expect(calls).toEqual([]);
    expect(registry.get(w.id).asks[0]).toMatchObject({ status: "pending" });
    expect(registry.get(w.id).state).toBe("waiting-approval");
    expect(approvals.pending().map((a) => a.id)).toEqual([q.id]);
  });

  it("a worker whose opencode is gone cannot be answered (resume it); cancelAll cancels every pending ask on the record", async () => {
    const { approvals, w, registry } = setup();
    approvals.onAsk(w.id, ask(w.id, "edit", "a.txt"));
    approvals.onAsk(w.id, ask(w.id, "edit", "b.txt"));
    registry.rt(w.id).attach(undefined);
    await expect(approvals.decide({ askId: registry.get(w.id).asks[0]!.id, decision: "once" }, { kind: "person" })).rejects.toThrow(
      /not running \(the ask was lost\): resume the worker/,
    );
    approvals.cancelAll(w.id, { kind: "engine", name: "test" }, "gone");
    expect(registry.get(w.id).asks.map((a) => a.status)).toEqual(["cancelled", "cancelled"]);
  });
});
