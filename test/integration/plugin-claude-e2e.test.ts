// The whole loop through Claude Code itself: the real Claude Code CLI (`claude -p`, pinned, from the npm registry)
// with the opencode-worker plugin, its model played by a scripted Anthropic Messages API
// (test/fixtures/scripted-anthropic.ts), drives the plugin's MCP tools against the real engine, the real opencode and
// the scripted worker model. Session 1 delegates two workers, approves and merges one into the repository; session 2,
// a new `claude -p` process that knows nothing of the first, finds the other by repository, approves and merges it.
import { execFileSync, spawn } from "node:child_process";
import { cpSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  buildAnthropicContext,
  startScriptedAnthropic,
  type AnthropicContext,
  type AnthropicStep,
  type ScriptedAnthropic,
} from "../fixtures/scripted-anthropic";
import { startScriptedModel, type ScriptedModel, writesAsTold } from "../fixtures/scripted-model";
import { connect } from "../../engine/api/client";
import { readLock } from "../../engine/api/lock";
import { cleanup, makeRepo, ROOT, scriptedTarget, startEngine, tempDir, pidAlive } from "../helpers";
import { claudeCode } from "./claude-code";

const PREFIX = "mcp__plugin_opencode-worker_ocw__";

describe("scripted Anthropic API (the fixture itself)", () => {
  let api: ScriptedAnthropic;
  beforeAll(async () => {
    api = await startScriptedAnthropic({
      apiKey: "k",
      scripts: [
        {
          match: /weather/,
          script: (ctx) =>
            ctx.lastToolResult
              ? { text: `It is ${ctx.lastToolResult.json.sky}.` }
              : { toolUses: [{ name: "get_weather", input: { city: "Paris", note: "x".repeat(100) } }] },
        },
      ],
    });
  });
  afterAll(() => api?.close());
  const post = (body: unknown, key = "k", p = "/v1/messages") =>
    fetch(`${api.url}${p}?beta=true`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify(body),
    });
  const tools = [{ name: "get_weather", description: "w", input_schema: { type: "object", properties: { city: { type: "string" } } } }];

  it("streams a tool_use in input_json_delta pieces, then answers from the tool result; whole responses, tokens, errors", async () => {
    const r = await post({ model: "m", max_tokens: 100, stream: true, tools, messages: [{ role: "user", content: "what is the weather?" }] });
    expect(r.headers.get("content-type")).toContain("text/event-stream");
    const events = (await r.text())
      .split("\n\n")
      .filter(Boolean)
      .map((chunk) => {
        const [ev, data] = chunk.split("\n");
        return { event: ev!.slice(7), data: JSON.parse(data!.slice(6)) };
      });
    const names = events.map((e) => e.event).filter((e) => e !== "ping" && e !== "content_block_delta");
    expect(names).toEqual(["message_start", "content_block_start", "content_block_stop", "message_delta", "message_stop"]);
    for (const e of events) expect(e.data.type).toBe(e.event);
    const deltas = events.filter((e) => e.event === "content_block_delta").map((e) => e.data.delta);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.every((d) => d.type === "input_json_delta")).toBe(true);
    const start = events.find((e) => e.event === "content_block_start")!.data.content_block;
    expect(start).toMatchObject({ type: "tool_use", name: "get_weather", input: {} });
    expect(JSON.parse(deltas.map((d) => d.partial_json).join(""))).toMatchObject({ city: "Paris" });
    expect(events.find((e) => e.event === "message_delta")!.data.delta.stop_reason).toBe("tool_use");

    const messages = [
      { role: "user", content: [{ type: "text", text: "what is the weather?" }] },
      { role: "assistant", content: [{ type: "tool_use", id: start.id, name: "get_weather", input: { city: "Paris" } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: start.id, content: [{ type: "text", text: '{"sky":"blue"}' }] }] },
    ];
    const whole: any = await (await post({ model: "m", max_tokens: 100, tools, messages })).json();
    expect(whole).toMatchObject({ type: "message", role: "assistant", stop_reason: "end_turn", content: [{ type: "text", text: "It is blue." }] });
    const ctx = buildAnthropicContext({ messages });
    expect(ctx.toolResults).toEqual([
      { toolUseId: start.id, name: "get_weather", input: { city: "Paris" }, content: '{"sky":"blue"}', json: { sky: "blue" }, isError: false },
    ]);
    expect(ctx.step).toBe(1);

    // No tools offered (a side request): the fallback, never a script.
    const side: any = await (await post({ model: "m", max_tokens: 10, messages: [{ role: "user", content: "weather title" }] })).json();
    expect(side.content[0].text).toBe("Scripted reply.");
    const counted: any = await (await post({ model: "m", messages: [{ role: "user", content: "hi" }] }, "k", "/v1/messages/count_tokens")).json();
    expect(counted.input_tokens).toBeGreaterThan(0);
    const bad = await post({ model: "m", messages: [] }, "wrong");
    expect(bad.status).toBe(401);
    expect(((await bad.json()) as any).error.type).toBe("authentication_error");
    expect((await fetch(`${api.url}/v1/models`, { headers: { "x-api-key": "k" } })).status).toBe(404);
    expect(api.requests.map((q) => q.matched)).toEqual(["weather", "weather", "fallback", "count_tokens", "unauthorized", "not-found"]);
  });
});

// ---- the real Claude Code ----

const cc = claudeCode();
const skip = "skip" in cc ? cc.skip : null;

let model: ScriptedModel;
let stateDir: string;
let api: ScriptedAnthropic;
let repo: string;
let home: string;
let pluginDir: string;
let env: NodeJS.ProcessEnv;
const git = (...a: string[]) => execFileSync("git", a, { cwd: repo, encoding: "utf8", stdio: "pipe" }).trim();

/**
 * The scripted Claude: the next tool call to take `workerId` through wait → approve → wait → result → merge, read
 * from the last tool result. Any tool error ends the turn with "FAILED: …".
 */
function drive(ctx: AnthropicContext, workerId: string, done: (merge: any) => string): AnthropicStep {
  const t = (name: string) => `${PREFIX}${name}`;
  const last = ctx.lastToolResult!;
  const short = last.name.slice(PREFIX.length);
  if (short === "merge") return { text: done(last.json) };
  if (short === "approve") return { toolUses: [{ name: t("wait"), input: { workerId, timeoutSec: 60 } }] };
  if (short === "result")
    return last.json?.verdict === "built"
      ? { toolUses: [{ name: t("merge"), input: { workerId } }] }
      : { text: `FAILED: ${workerId} is ${last.json?.verdict}: ${last.content.slice(0, 1500)}` };
  if (short === "wait") {
    const pending = (last.json?.pending ?? []).filter((p: any) => p.workerId === workerId);
    if (pending.length) return { toolUses: [{ name: t("approve"), input: { askId: pending[0].askId, decision: "once" } }] };
    if (last.json?.settled) return { toolUses: [{ name: t("result"), input: { workerId } }] };
    if (ctx.toolResults.filter((r) => r.name === t("wait")).length > 8) return { text: `FAILED: ${workerId} never settled` };
  }
  return { toolUses: [{ name: t("wait"), input: { workerId, timeoutSec: 60 } }] };
}

const failed = (ctx: AnthropicContext): AnthropicStep | null => {
  const bad = ctx.toolResults.find((r) => r.isError || !(r.name.startsWith(PREFIX) || r.name === "ToolSearch"));
  return bad ? { text: `FAILED: ${bad.name || bad.toolUseId}: ${bad.content.slice(0, 500)}` } : null;
};

/** The tools a session uses: Claude Code defers MCP tools (names only) until ToolSearch loads their schemas. */
const USED = ["workers", "delegate", "wait", "approve", "result", "merge"].map((t) => `${PREFIX}${t}`);

/** As Claude does: a tool it wants but was not given is loaded with ToolSearch first ("select:a,b"). */
function withToolSearch(script: (ctx: AnthropicContext) => AnthropicStep) {
  return (ctx: AnthropicContext): AnthropicStep => {
    const f = failed(ctx);
    if (f) return f;
    const step = script(ctx);
    if (!("toolUses" in step) || step.toolUses.every((u) => ctx.tools.includes(u.name)) || !ctx.tool("ToolSearch")) return step;
    if (ctx.toolResults.filter((r) => r.name === "ToolSearch").length >= 3)
      return { text: `FAILED: ToolSearch never loaded ${step.toolUses.map((u) => u.name).join(", ")}` };
    return { toolUses: [{ name: "ToolSearch", input: { query: `select:${USED.join(",")}`, max_results: USED.length } }] };
  };
}

/** Session 1: delegate a.txt and b.txt, then take the a.txt worker to merged; b.txt is left for a later session. */
function session1(ctx: AnthropicContext): AnthropicStep {
  const delegated = ctx.toolResults.filter((r) => r.name === `${PREFIX}delegate`);
  if (delegated.length === 0) {
    const delegate = (file: string, text: string) => ({
      name: `${PREFIX}delegate`,
      input: { task: `E2E-WRITE file=${file} text=${text}`, directory: repo, checks: [{ file, equals: text }], scope: [file], title: `write ${file}` },
    });
    return { toolUses: [delegate("a.txt", "alpha"), delegate("b.txt", "beta")] };
  }
  const a = delegated.find((r) => (r.input as any).task.includes("a.txt"))!.json.workerId;
  const b = delegated.find((r) => (r.input as any).task.includes("b.txt"))!.json.workerId;
  return drive(ctx, a, (m) => `MERGED ${a} into ${m.into} at ${m.commit}. Left ${b} for later.`);
}

/** Session 2: knows only the repository: finds its workers, takes the one not graded yet to merged. */
function session2(ctx: AnthropicContext): AnthropicStep {
  const listed = ctx.toolResults.find((r) => r.name === `${PREFIX}workers`);
  if (!listed) return { toolUses: [{ name: `${PREFIX}workers`, input: { directory: repo } }] };
  const open = (listed.json.workers as any[]).filter((w) => w.verdict === null);
  if (open.length !== 1) return { text: `FAILED: expected one ungraded worker, got ${JSON.stringify(listed.json.workers)}` };
  const id = open[0].workerId;
  return drive(ctx, id, (m) => `MERGED ${id} into ${m.into} at ${m.commit}.`);
}

/** One `claude -p` session in its own process group (stdin closed); the group is ended when it returns. */
function claude(prompt: string, timeoutMs = 150_000): Promise<{ code: number | null; stdout: string; stderr: string; json: any; ms: number }> {
  const t0 = Date.now();
  const args = ["-p", prompt, "--plugin-dir", pluginDir, "--allowedTools", `${PREFIX}*`, "--output-format", "json", "--model", "claude-sonnet-4-5"];
  const child = spawn((cc as { bin: string }).bin, args, { env, cwd: repo, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (b) => (stdout += b));
  child.stderr.on("data", (b) => (stderr += b));
  const killGroup = (sig: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, sig);
    } catch {}
  };
  const timer = setTimeout(() => {
    stderr += `\n(killed after ${timeoutMs} ms)`;
    killGroup("SIGKILL");
  }, timeoutMs);
  return new Promise((resolve) => {
    child.on("close", (code) => {
      clearTimeout(timer);
      // The plugin's MCP server (and anything else Claude Code started) goes with the session.
      killGroup("SIGTERM");
      let json: any = null;
      try {
        json = JSON.parse(stdout);
      } catch {}
      resolve({ code, stdout, stderr, json, ms: Date.now() - t0 });
    });
  });
}

/** What went on, for a failing assertion's message. */
const transcript = () =>
  api.requests
    .map(
      (q) =>
        `${q.path} [${q.matched}] tools=${q.tools.filter((n) => n.startsWith(PREFIX)).length} → ${q.response?.status ?? ""}${q.response?.text ?? ""}${(q.response?.toolUses ?? []).map((u) => ` ${u.name}(${JSON.stringify(u.input)})`).join("")}${q.problem ? ` PROBLEM ${q.problem}` : ""}`,
    )
    .join("\n");

/** Ends the engine the plugin's bridge started (detached, supervised: not a child of this test) with `ocw stop`,
 * then makes sure its processes are gone. */
async function stopEngine() {
  const lock = stateDir ? readLock(stateDir) : null;
  if (!lock) return;
  try {
    execFileSync(process.execPath, [path.join(pluginDir, "bin", "ocw"), "stop"], { env, stdio: "pipe", timeout: 30_000 });
  } catch {}
  const pids = [lock.supervisorPid, lock.pid].filter((p): p is number => typeof p === "number");
  for (let i = 0; i < 100 && pids.some(pidAlive); i++) await new Promise((r) => setTimeout(r, 100));
  for (const pid of pids.filter(pidAlive)) process.kill(pid, "SIGKILL");
}

describe.skipIf(!!skip)(`Claude Code drives the plugin's MCP tools end to end${skip ? ` (skipped: ${skip})` : ""}`, () => {
  beforeAll(async () => {
    model = await startScriptedModel({
      scripts: [writesAsTold("E2E-WRITE")],
    });
    // The person set up a target earlier (with an engine that has since stopped): Claude Code's plugin starts the
    // engine itself, as it does for a real user, and that engine outlives the session.
    stateDir = tempDir("cc-e2e-state");
    const setup = await startEngine(stateDir);
    await setup.client.targets.save.mutate({ target: scriptedTarget(model.url, 4), activate: true });
    await setup.kill();
    api = await startScriptedAnthropic({
      apiKey: "sk-ant-scripted-e2e",
      scripts: [
        { name: "session-1", match: /OCW-E2E-SESSION-1/, script: withToolSearch(session1) },
        { name: "session-2", match: /OCW-E2E-SESSION-2/, script: withToolSearch(session2) },
      ],
    });
    repo = makeRepo();
    home = tempDir("cc-e2e-home");
    // The plugin as the checkout has it (what `claude plugin install` copies; plugin-claude-code.test.ts covers the
    // install itself), loaded for each session with --plugin-dir.
    pluginDir = path.join(tempDir("cc-e2e-plugin"), "opencode-worker");
    cpSync(path.join(ROOT, "plugin"), pluginDir, { recursive: true, filter: (src) => !/node_modules|\.lock$/.test(path.relative(ROOT, src)) });
    env = {
      PATH: process.env.PATH,
      HOME: home,
      ANTHROPIC_BASE_URL: api.url,
      ANTHROPIC_API_KEY: "sk-ant-scripted-e2e",
      DISABLE_AUTOUPDATER: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_TELEMETRY: "1",
      // The plugin's bridge starts (then finds) this test's engine through the state directory.
      OCW_STATE_DIR: stateDir,
      OCW_STALL_SEC: "600",
      // opencode from this checkout, so that the plugin copy needs no first-run npm ci of its own.
      OCW_OPENCODE_BIN: path.join(ROOT, "node_modules", "opencode-ai", "bin", "opencode.exe"),
    };
  });

  afterAll(async () => {
    await stopEngine();
    await model?.close();
    await api?.close();
    cleanup(stateDir ?? "", repo ?? "", home ?? "", pluginDir ? path.dirname(pluginDir) : "");
  });

  let first: { sessionId: string; merged: string; left: string; enginePid: number } | null = null;

  it("session 1: delegate two workers, approve one's edit, merge it into main", async () => {
    const r = await claude(`OCW-E2E-SESSION-1: delegate writing a.txt and b.txt in ${repo} to OpenCode workers; merge a.txt.`);
    const why = `exit ${r.code}\nstdout: ${r.stdout.slice(0, 3000)}\nstderr: ${r.stderr.slice(0, 3000)}\nAPI:\n${transcript()}`;
    expect(r.code, why).toBe(0);
    const m = /^MERGED (w\S+) into main at ([0-9a-f]{7,})\. Left (w\S+) for later\.$/.exec(r.json?.result ?? "");
    expect(m, why).toBeTruthy();
    const [, merged, commit, left] = m!;
    // The repository: main has the worker's change, committed; the other worker's file is not there yet.
    expect(git("show", "main:a.txt")).toBe("alpha");
    expect(git("rev-parse", "main")).toMatch(new RegExp(`^${commit}`));
    expect(() => git("show", "main:b.txt")).toThrow();
    expect(git("status", "--porcelain")).toBe("");
    // The engine: started by the plugin's bridge (from the plugin's own bundle), still running after Claude Code
    // exited, without Claude Code's key or variables in its environment.
    const lock = readLock(stateDir);
    expect(lock, "no engine lock after session 1").toBeTruthy();
    const cmdline = readFileSync(`/proc/${lock!.pid}/cmdline`, "utf8").split("\0");
    expect(cmdline.slice(1, 3), cmdline.join(" ")).toEqual([path.join(pluginDir, "bin", "ocw"), "serve"]);
    const engineEnv = readFileSync(`/proc/${lock!.pid}/environ`, "utf8")
      .split("\0")
      .map((kv) => kv.split("=")[0]!);
    expect(engineEnv.filter((k) => /^(ANTHROPIC_|CLAUDE|MCP_TOOL_TIMEOUT)/.test(k))).toEqual([]);
    expect(engineEnv).toContain("OCW_STATE_DIR");
    // The edit was approved by Claude Code over MCP.
    const api1 = connect(lock!, "gui:test");
    const w = await api1.workers.get.query({ workerId: merged! });
    expect(w.asks.map((a) => ({ status: a.status, by: a.by }))).toEqual([{ status: "decided", by: { kind: "mcp", name: expect.stringMatching(/claude/i) } }]);
    const other = await api1.workers.get.query({ workerId: left! });
    expect(other.state).toBe("waiting-approval");
    // What the model saw: the plugin's tools under their plugin names, every one answered without an error.
    const used = api.requests
      .filter((q) => q.matched === "session-1")
      .flatMap((q) => q.response?.toolUses ?? [])
      .map((u) => u.name);
    // (Claude Code 2.1.332 defers MCP tools: the scripted model loads them with ToolSearch first, as Claude does.)
    expect(new Set(used.filter((n) => n !== "ToolSearch"))).toEqual(new Set(["delegate", "wait", "approve", "result", "merge"].map((t) => `${PREFIX}${t}`)));
    // What Claude read of the worker's ask came framed: inside `untrusted`, labelled, with the repository-relative path.
    const read = JSON.stringify(api.requests.filter((q) => q.matched === "session-1").map((q) => q.body)).replace(/\\+"/g, '"');
    expect(read, why).toMatch(/"untrustedNote":"untrusted: text a worker\/model wrote/);
    expect(read, why).toMatch(/"untrusted":\{"what":"a\.txt"\}/);
    // The Stop hook held the end of the session once, naming the ask left unanswered (b.txt's worker).
    expect(JSON.stringify(api.requests.filter((q) => q.matched === "session-1").map((q) => q.body)), why).toMatch(
      /1 opencode-worker ask on this repository is unanswered/,
    );
    first = { sessionId: r.json.session_id, merged: merged!, left: left!, enginePid: lock!.pid };
    console.log(`session 1: ${(r.ms / 1000).toFixed(1)} s, ${api.requests.filter((q) => q.matched === "session-1").length} model requests`);
  });

  it("session 2: a new claude -p finds the first session's other worker by repository, approves it and merges it", async (ctx) => {
    if (!first) return ctx.skip("session 1 did not complete");
    const before = api.requests.length;
    const r = await claude(`OCW-E2E-SESSION-2: finish the OpenCode worker still open in ${repo} and merge it.`);
    const why = `exit ${r.code}\nstdout: ${r.stdout.slice(0, 3000)}\nstderr: ${r.stderr.slice(0, 3000)}\nAPI:\n${transcript()}`;
    expect(r.code, why).toBe(0);
    expect(r.json.session_id).not.toBe(first.sessionId);
    // Nothing of session 1's conversation reached session 2's model.
    const mine = api.requests.slice(before).filter((q) => q.matched === "session-2");
    expect(
      mine.every((q) => !JSON.stringify(q.body.messages).includes("OCW-E2E-SESSION-1")),
      why,
    ).toBe(true);
    expect(r.json?.result, why).toMatch(new RegExp(`^MERGED ${first.left} into main at [0-9a-f]{7,}\\.$`));
    expect(git("show", "main:a.txt")).toBe("alpha");
    expect(git("show", "main:b.txt")).toBe("beta");
    expect(git("status", "--porcelain")).toBe("");
    // The same engine as session 1's: session 2's bridge attached to it.
    const lock = readLock(stateDir)!;
    expect(lock.pid).toBe(first.enginePid);
    const w = await connect(lock, "gui:test").workers.get.query({ workerId: first.left });
    expect(w.asks.map((a) => ({ status: a.status, kind: a.by?.kind }))).toEqual([{ status: "decided", kind: "mcp" }]);
    // The plugin's other parts reached the model: the SessionStart hook's line about the worker session 1 left waiting,
    // the supervisor subagent and the slash commands among what Claude Code offers.
    const seen = JSON.stringify(mine.map((q) => q.body));
    console.log(
      `session 2 facts: hook line ${/opencode-worker on this repository: 1 worker waits for an answer/.test(seen)}, subagent ${seen.includes("opencode-worker-supervisor")}, command ${seen.includes("opencode-worker:status")}`,
    );
    expect(seen, why).toMatch(/opencode-worker on this repository: 1 worker waits for an answer/);
    expect(seen, why).toContain("opencode-worker-supervisor");
    expect(seen, why).toContain("opencode-worker:status");
    console.log(`session 2: ${(r.ms / 1000).toFixed(1)} s, ${mine.length} model requests`);
  });
});
