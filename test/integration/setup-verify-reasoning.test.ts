/**
 * Verify fails a server whose thinking leaks into `content` (issue 27): vLLM / SGLang started without the family's
 * `--reasoning-parser` return a Qwen3.x answer as `<think>…</think>` + the answer, all in `content` — OpenCode then
 * takes the thinking for the reply. The stub is the scripted model playing such a server (the thinking as text), and
 * the same model behind a parser (the thinking in reasoning_content), which must pass.
 */
import { afterAll, describe, expect, it } from "vitest";
import { verifyEndpoint } from "../../engine/serving/verify";
import { type ScriptedModel, startScriptedModel, toolCall } from "../fixtures/scripted-model";

const GOOD = "```js\nfunction sumOfSquares(n) {\n  let s = 0;\n  for (let i = 1; i <= n; i++) s += i * i;\n  return s;\n}\n```";
const THOUGHT = "The user wants a function. I will loop from 1 to n and add squares.";
const models: ScriptedModel[] = [];
afterAll(async () => {
  for (const m of models) await m.close();
});

/** A Qwen3.x server, with (parser) or without (leak) its reasoning parser. */
async function qwenServer(parser: boolean): Promise<string> {
  const answer = (text: string) => (parser ? { text, reasoning: THOUGHT } : { text: `<think>\n${THOUGHT}\n</think>\n\n${text}` });
  const m = await startScriptedModel({
    modelId: "qwen3.6-27b",
    apiKey: "k",
    scripts: [
      {
        name: "tools",
        match: (c) => c.hasTools,
        script: (c) => (c.toolResults.length ? answer(`It says ${c.lastToolResult!.trim()}.`) : toolCall("read", { filePath: "notes/token.txt" })),
      },
      { match: /sumOfSquares/, script: () => answer(GOOD) },
    ],
    fallback: () => answer("OK."),
  });
  models.push(m);
  return `${m.url.replace(/\/v1\/?$/, "")}/v1`;
}

describe("verify: thinking must not reach content", () => {
  it("a vLLM server without --reasoning-parser (<think>…</think> in content) is cannot-build, naming the flag", async () => {
    const v = await verifyEndpoint({ url: await qwenServer(false), model: "qwen3.6-27b", key: "k", engine: "vllm", slots: 1, perSlotCtx: null });
    const r = v.checks.find((c) => c.name === "reasoning");
    expect(r?.passed, r?.evidence).toBe(false);
    expect(r!.evidence).toMatch(/<think>.*--reasoning-parser \(qwen3 for Qwen3\.x/);
    expect(v.outcome).toBe("cannot-build");
    expect(v.summary).toMatch(/thinking lands in its answers/);
  }, 60_000);

  it("the same model with its parser (thinking in reasoning_content) passes", async () => {
    const v = await verifyEndpoint({ url: await qwenServer(true), model: "qwen3.6-27b", key: "k", engine: "vllm", slots: 1, perSlotCtx: null });
    const r = v.checks.find((c) => c.name === "reasoning");
    expect(r?.passed, r?.evidence).toBe(true);
    expect(v.outcome, v.summary).toBe("built");
  }, 60_000);
});

describe("verify (llama.cpp): the reasoning check asks as OpenCode does", () => {
  /**
   * A llama-server with a Qwen3 template and `--reasoning-format none` (or a captured one whose template llama.cpp
   * cannot split): the thinking stays in `content`. With `chat_template_kwargs.enable_thinking: false`, which the other
   * llama.cpp checks send, the template closes the thinking block in the prompt and no thinking is produced — so the
   * check must also ask without it, as OpenCode's requests come.
   */
  async function llamaNoParser(): Promise<string> {
    const thinkingOff = (c: { body: any }) => c.body?.chat_template_kwargs?.enable_thinking === false;
    const answer = (c: { body: any }, text: string) => (thinkingOff(c) ? { text } : { text: `<think>\n${THOUGHT}\n</think>\n\n${text}` });
    const m = await startScriptedModel({
      modelId: "qwen3-8b",
      apiKey: "k",
      scripts: [
        {
          name: "tools",
          match: (c) => c.hasTools,
          script: (c) => (c.toolResults.length ? answer(c, `It says ${c.lastToolResult!.trim()}.`) : toolCall("read", { filePath: "notes/token.txt" })),
        },
        { match: /sumOfSquares/, script: (c) => answer(c, GOOD) },
      ],
      fallback: (c) => answer(c, "OK."),
    });
    models.push(m);
    return `${m.url.replace(/\/v1\/?$/, "")}/v1`;
  }

  it("a llama-server that leaves the thinking in content is cannot-build, even though enable_thinking:false hides it", async () => {
    const v = await verifyEndpoint({ url: await llamaNoParser(), model: "qwen3-8b", key: "k", engine: "llama.cpp", slots: 1, perSlotCtx: null, tools: false });
    const r = v.checks.find((c) => c.name === "reasoning");
    expect(r?.passed, r?.evidence).toBe(false);
    expect(r!.evidence).toMatch(/<think>.*--reasoning-format/);
    expect(v.outcome).toBe("cannot-build");
  }, 60_000);

  it("the same llama-server with its reasoning parser on (the thinking in reasoning_content) passes", async () => {
    const v = await verifyEndpoint({
      url: await qwenServer(true),
      model: "qwen3.6-27b",
      key: "k",
      engine: "llama.cpp",
      slots: 1,
      perSlotCtx: null,
      tools: false,
    });
    const r = v.checks.find((c) => c.name === "reasoning");
    expect(r?.passed, r?.evidence).toBe(true);
    expect(r!.evidence).toMatch(/reasoning_content/);
  }, 60_000);
});
