import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtemp, mkdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createOpencodeClient } from "@opencode-ai/sdk/v2";
import { bash, editFile, readFile as readFileStep, sequence, startScriptedModel, writeFile, type ScriptedModel } from "../fixtures/scripted-model";

const models: ScriptedModel[] = [];
async function start(opts?: Parameters<typeof startScriptedModel>[0]) {
  const m = await startScriptedModel(opts);
  models.push(m);
  return m;
}
afterEach(async () => {
  await Promise.all(models.splice(0).map((m) => m.close()));
});

const chat = (m: ScriptedModel, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  fetch(`${m.url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ model: "scripted-1", ...body }),
  });

function sseChunks(raw: string): any[] {
  return raw
    .split("\n\n")
    .filter((b) => b.startsWith("data: "))
    .map((b) => b.slice(6))
    .map((d) => (d === "[DONE]" ? "[DONE]" : JSON.parse(d)));
}

const json = (r: Response): Promise<any> => r.json();
const user = (text: string) => [{ role: "user", content: text }];

describe("scripted model (plain fetch)", () => {
  it("serves health, models and 404", async () => {
    const m = await start({ modelId: "m-x" });
    expect(m.url).toBe(`http://127.0.0.1:${m.port}/v1`);
    expect(await json(await fetch(`http://127.0.0.1:${m.port}/health`))).toEqual({ status: "ok" });
    const models = await json(await fetch(`${m.url}/models`));
    expect(models.object).toBe("list");
    expect(models.data[0]).toMatchObject({ id: "m-x", object: "model" });
    const nf = await fetch(`${m.url}/nope`);
    expect(nf.status).toBe(404);
    expect((await json(nf)).error.message).toMatch(/no route/);
  });

  it("streams text with reasoning and usage", async () => {
    const m = await start({ scripts: [{ match: /hello/, script: () => ({ text: "Hi there friend", reasoning: "think hard" }) }] });
    const res = await chat(m, { messages: user("say hello"), stream: true, stream_options: { include_usage: true } });
    expect(res.headers.get("content-type")).toMatch(/text\/event-stream/);
    const chunks = sseChunks(await res.text());
    expect(chunks.at(-1)).toBe("[DONE]");
    const objs = chunks.slice(0, -1);
    expect(objs[0].choices[0].delta.role).toBe("assistant");
    expect(objs.every((c) => c.object === "chat.completion.chunk" && c.id === objs[0].id)).toBe(true);
    const content = objs.map((c) => c.choices[0]?.delta?.content ?? "").join("");
    const reasoning = objs.map((c) => c.choices[0]?.delta?.reasoning_content ?? "").join("");
    expect(content).toBe("Hi there friend");
    expect(reasoning).toBe("think hard");
    const fin = objs.find((c) => c.choices[0]?.finish_reason);
    expect(fin.choices[0].finish_reason).toBe("stop");
    const usage = objs.at(-1);
    expect(usage.choices).toEqual([]);
    expect(usage.usage.total_tokens).toBe(usage.usage.prompt_tokens + usage.usage.completion_tokens);
    expect(m.requests[0]).toMatchObject({ kind: "chat", stream: true, step: 0, matched: "hello", finished: true, clientAborted: false });
  });

  it("answers non-streaming text and the fallback", async () => {
    const m = await start();
    const res = await chat(m, { messages: [{ role: "user", content: [{ type: "text", text: "anything" }] }] });
    const j = await json(res);
    expect(j.object).toBe("chat.completion");
    expect(j.choices[0]).toMatchObject({ index: 0, finish_reason: "stop", message: { role: "assistant" } });
    expect(j.choices[0].message.content).toMatch(/^OUTCOME: honest-failure/);
    expect(j.usage.prompt_tokens).toBeGreaterThan(0);
    expect(m.requests[0]!.matched).toBe("fallback");
  });

  it("streams tool calls with unique ids, and sequence() follows ctx.step", async () => {
    const m = await start({
      scripts: [
        {
          match: /build/,
          script: sequence([
            {
              toolCalls: [
                { name: "write", args: { filePath: "a.txt", content: "A" } },
                { name: "bash", args: { command: "ls", description: "list" } },
              ],
            },
            (ctx) => ({ text: `saw ${ctx.toolResults.length} results, last=${ctx.lastToolResult}` }),
          ]),
        },
      ],
    });
    const calls: any[] = [];
    for (let i = 0; i < 2; i++) {
      const chunks = sseChunks(await (await chat(m, { messages: user("build it"), stream: true })).text()).slice(0, -1);
      const byIndex = new Map<number, { id?: string; name?: string; args: string }>();
      for (const c of chunks)
        for (const tc of c.choices[0]?.delta?.tool_calls ?? []) {
          const cur = byIndex.get(tc.index) ?? { args: "" };
          if (tc.id) cur.id = tc.id;
          if (tc.function?.name) cur.name = tc.function.name;
          cur.args += tc.function?.arguments ?? "";
          byIndex.set(tc.index, cur);
        }
      expect(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason).toBe("tool_calls");
      calls.push(...byIndex.values());
    }
    expect(calls.map((c) => c.name)).toEqual(["write", "bash", "write", "bash"]);
    expect(JSON.parse(calls[0].args)).toEqual({ filePath: "a.txt", content: "A" });
    expect(JSON.parse(calls[1].args)).toMatchObject({ command: "ls" });
    expect(new Set(calls.map((c) => c.id)).size).toBe(4);

    // step 1: an assistant message + tool results already in the conversation
    const messages = [
      ...user("build it"),
      { role: "assistant", content: null, tool_calls: [{ id: calls[0].id, type: "function", function: { name: "write", arguments: calls[0].args } }] },
      { role: "tool", tool_call_id: calls[0].id, content: "Wrote file successfully." },
    ];
    const j = await json(await chat(m, { messages }));
    expect(j.choices[0].message.content).toBe("saw 1 results, last=Wrote file successfully.");
    expect(m.requests.map((r) => r.step)).toEqual([0, 0, 1]);

    // non-streaming tool call shape, raw (malformed) arguments pass through untouched
    m.addScript(/raw/, () => ({ toolCalls: [{ name: "write", args: '{"filePath": "x' }] }));
    const r = await json(await chat(m, { messages: user("raw args") }));
    expect(r.choices[0].finish_reason).toBe("tool_calls");
    expect(r.choices[0].message.tool_calls[0]).toMatchObject({ type: "function", function: { name: "write", arguments: '{"filePath": "x' } });
  });

  it("builds opencode tool calls with the helpers", () => {
    expect(writeFile("f.txt", "x")).toEqual({ toolCalls: [{ name: "write", args: { filePath: "f.txt", content: "x" } }] });
    expect(editFile("f.txt", "a", "b")).toEqual({ toolCalls: [{ name: "edit", args: { filePath: "f.txt", oldString: "a", newString: "b" } }] });
    expect(readFileStep("f.txt")).toEqual({ toolCalls: [{ name: "read", args: { filePath: "f.txt" } }] });
    expect(bash("ls")).toEqual({ toolCalls: [{ name: "bash", args: { command: "ls" } }] });
    expect(bash("ls", { workdir: "sub" })).toEqual({ toolCalls: [{ name: "bash", args: { command: "ls", workdir: "sub" } }] });
  });

  it("answers title requests without consuming scripts", async () => {
    let calls = 0;
    const m = await start({ fallback: () => (calls++, { text: "x" }) });
    const res = await chat(m, {
      messages: [{ role: "system", content: "You are a title generator. Output only a title." }, ...user("Generate a title for this conversation: hi")],
    });
    expect((await json(res)).choices[0].message.content).toBe("Scripted title");
    expect(calls).toBe(0);
    expect(m.requests[0]).toMatchObject({ kind: "title", matched: "title" });
  });

  it("returns scripted errors with headers", async () => {
    const m = await start({ fallback: () => ({ error: { status: 429, message: "rate limited", headers: { "retry-after": "1" } } }) });
    const res = await chat(m, { messages: user("x"), stream: true });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(await json(res)).toEqual({ error: { message: "rate limited", type: "rate_limit_error", code: "rate_limit_exceeded" } });
  });

  it("enforces the api key", async () => {
    const m = await start({ apiKey: "sk-test" });
    expect((await chat(m, { messages: user("x") })).status).toBe(401);
    expect((await chat(m, { messages: user("x") }, { authorization: "Bearer nope" })).status).toBe(401);
    expect((await chat(m, { messages: user("x") }, { authorization: "Bearer sk-test" })).status).toBe(200);
    expect((await fetch(`${m.url}/models`)).status).toBe(401);
    expect(m.requests.map((r) => r.matched)).toEqual(["unauthorized", "unauthorized", "fallback"]);
  });

  it("holds requests on the gate and counts them in flight", async () => {
    const m = await start({ fallback: () => ({ text: "released" }) });
    let release!: () => void;
    m.setGate(new Promise<void>((r) => (release = r)));
    const pending = [1, 2, 3].map(() => chat(m, { messages: user("x"), stream: true }).then((r) => r.text()));
    await expect.poll(() => m.inFlight()).toBe(3);
    release();
    const texts = await Promise.all(pending);
    expect(texts.every((t) => t.includes("released") && t.endsWith("data: [DONE]\n\n"))).toBe(true);
    await expect.poll(() => m.inFlight()).toBe(0);
    expect(m.maxInFlight()).toBe(3);
  });

  it("closes mid-stream, detects client aborts of hanging streams, and close() never hangs", async () => {
    const m = await start({
      chunkDelayMs: 5,
      scripts: [
        { match: /close/, script: () => ({ closeMidStream: true, textBeforeClose: "partial answer" }) },
        { match: /hang/, script: () => ({ hang: true, textBeforeHang: "still thinking" }) },
      ],
    });
    const res = await chat(m, { messages: user("close please"), stream: true });
    await expect(res.text()).rejects.toThrow();
    expect(m.requests[0]).toMatchObject({ clientAborted: false, finished: false, response: { type: "closeMidStream" } });

    const hung = await chat(m, { messages: user("hang please"), stream: true });
    const reader = hung.body!.getReader();
    let got = "";
    while (!got.includes("thinking")) got += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    await expect.poll(() => m.requests[1]!.clientAborted).toBe(true);

    // a hanging request still open at close() must not block it
    void chat(m, { messages: user("hang again"), stream: true })
      .then((r) => r.text())
      .catch(() => {});
    await expect.poll(() => m.inFlight()).toBe(1);
    await m.close();
  });
});

// ---- end-to-end with the real opencode server ----

const OPENCODE = path.resolve("node_modules/opencode-ai/bin/opencode.exe");
const OFFLINE_ENV = {
  OPENCODE_DISABLE_MODELS_FETCH: "1",
  OPENCODE_DISABLE_AUTOUPDATE: "1",
  OPENCODE_DISABLE_SHARE: "1",
  OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
  OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
  OPENCODE_PURE: "1",
  OPENCODE_DISABLE_CLAUDE_CODE: "1",
  OPENCODE_DISABLE_EXTERNAL_SKILLS: "1",
};

function waitForUrl(proc: ChildProcess, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    const timer = setTimeout(() => reject(new Error(`opencode did not start in ${timeoutMs} ms\n${out}\n${err}`)), timeoutMs);
    proc.stderr!.on("data", (d) => (err += d));
    proc.stdout!.on("data", (d) => {
      out += d;
      const m = out.match(/opencode server listening on (http:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    proc.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`opencode exited ${code}\n${out}\n${err}`));
    });
  });
}

describe("scripted model with the real opencode serve", () => {
  it("drives write, edit and bash tool calls and a final text through opencode", async () => {
    const m = await start({
      apiKey: "sk-local",
      scripts: [
        {
          match: /create hello\.txt/,
          name: "hello",
          script: sequence([
            writeFile("hello.txt", "hi from scripted model\n"),
            editFile("hello.txt", "scripted", "edited"),
            bash("cat hello.txt && echo ok"),
            (ctx) => ({
              text: ctx.lastToolResult === "hi from edited model\nok\n" ? "OUTCOME: built" : `unexpected: ${ctx.lastToolResult}`,
              reasoning: "checked the output",
            }),
          ]),
        },
      ],
    });
    const tmp = await mkdtemp(path.join(tmpdir(), "ocw-scripted-"));
    const project = path.join(tmp, "project");
    await mkdir(project, { recursive: true });
    execFileSync("git", ["init", "-q"], { cwd: project });
    const password = "s3cret-test";
    const config = {
      $schema: "https://opencode.ai/config.json",
      provider: {
        scripted: {
          npm: "@ai-sdk/openai-compatible",
          name: "Scripted (local)",
          options: { baseURL: m.url, apiKey: "sk-local" },
          models: { "scripted-1": { name: "Scripted 1", tool_call: true, limit: { context: 128000, output: 8192 } } },
        },
      },
      model: "scripted/scripted-1",
      small_model: "scripted/scripted-1",
      enabled_providers: ["scripted"],
      autoupdate: false,
      share: "disabled",
      lsp: false,
      formatter: false,
      snapshot: false,
      permission: { edit: "allow", bash: "allow", webfetch: "deny", question: "deny" },
    };
    const dirs = { HOME: "home", XDG_DATA_HOME: "xdg/data", XDG_CONFIG_HOME: "xdg/config", XDG_STATE_HOME: "xdg/state", XDG_CACHE_HOME: "xdg/cache" };
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      ...OFFLINE_ENV,
      OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
      OPENCODE_SERVER_PASSWORD: password,
      npm_config_registry: "http://127.0.0.1:9/", // the background plugin install must not reach out
    };
    for (const [k, rel] of Object.entries(dirs)) {
      env[k] = path.join(tmp, rel);
      await mkdir(env[k]!, { recursive: true });
    }
    const proc = spawn(OPENCODE, ["serve", "--hostname=127.0.0.1", "--port=0"], { cwd: project, env, stdio: ["ignore", "pipe", "pipe"] });
    const events = new AbortController();
    let client: ReturnType<typeof createOpencodeClient> | undefined;
    let sessionID: string | undefined;
    try {
      const url = await waitForUrl(proc, 60_000);
      client = createOpencodeClient({
        baseUrl: url,
        directory: project,
        headers: { Authorization: "Basic " + Buffer.from(`opencode:${password}`).toString("base64") },
      });
      const sub = await client.global.event({ signal: events.signal, sseMaxRetryAttempts: 0 } as any);
      const s = (await client.session.create({})).data!;
      sessionID = s.id;
      const terminal = (async () => {
        for await (const e of sub.stream as AsyncIterable<any>) {
          const t = e?.payload?.type;
          if (e?.payload?.properties?.sessionID !== s.id) continue;
          if (t === "session.idle") return { type: t };
          if (t === "session.error") return { type: t, error: e.payload.properties.error };
        }
        return { type: "stream-ended" };
      })();
      const r = await client.session.promptAsync({
        sessionID: s.id,
        agent: "build",
        parts: [{ type: "text", text: "Please create hello.txt with a greeting." }],
      });
      expect(r.response.status).toBe(204);
      const result = await Promise.race([terminal, new Promise<{ type: string }>((res) => setTimeout(() => res({ type: "timeout" }), 120_000))]);
      expect(result).toEqual({ type: "session.idle" });

      expect(await readFile(path.join(project, "hello.txt"), "utf8")).toBe("hi from edited model\n");
      const mine = m.requests.filter((q) => q.sessionId === s.id && q.kind === "chat");
      expect(mine.map((q) => [q.step, q.matched, q.response?.type])).toEqual([
        [0, "hello", "toolCalls"],
        [1, "hello", "toolCalls"],
        [2, "hello", "toolCalls"],
        [3, "hello", "text"],
      ]);
      const first = mine[0]!.body;
      expect(first.stream).toBe(true);
      expect(first.stream_options).toEqual({ include_usage: true });
      expect(first.tools.map((t: any) => t.function.name)).toEqual(expect.arrayContaining(["write", "edit", "bash", "read"]));
      const toolMsgs = mine[3]!.body.messages.filter((x: any) => x.role === "tool");
      expect(toolMsgs.map((x: any) => x.tool_call_id)).toEqual(mine.slice(0, 3).map((q) => q.response!.toolCalls![0]!.id));
      expect(toolMsgs[0].content).toBe("Wrote file successfully.");

      const msgs = (await client.session.messages({ sessionID: s.id })).data!;
      const last = msgs.at(-1)!;
      expect(last.info.role).toBe("assistant");
      expect(
        last.parts
          .filter((p: any) => p.type === "text")
          .map((p: any) => p.text)
          .join(""),
      ).toBe("OUTCOME: built");
      expect(last.parts.find((p: any) => p.type === "reasoning")).toMatchObject({ text: "checked the output" });
      const tools = msgs.flatMap((x) => x.parts).filter((p: any) => p.type === "tool") as any[];
      expect(tools.map((t) => [t.tool, t.state.status])).toEqual([
        ["write", "completed"],
        ["edit", "completed"],
        ["bash", "completed"],
      ]);
      // the untitled session also triggered a title request, answered without touching the script
      await expect.poll(() => m.requests.some((q) => q.kind === "title"), { timeout: 10_000 }).toBe(true);
    } finally {
      if (client && sessionID) await client.session.abort({ sessionID }).catch(() => {});
      events.abort();
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once("exit", r));
        proc.kill("SIGTERM");
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
        if (proc.exitCode === null) proc.kill("SIGKILL");
      }
      await rm(tmp, { recursive: true, force: true }).catch(() => {});
    }
  });
});
