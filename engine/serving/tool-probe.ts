/**
 * The tool-call round trip verify runs: what every worker turn needs from the model server. One streamed request with
 * OpenCode's eight core tools (the shapes its tools send: bash, read, write, edit, glob, grep, list, todowrite), the
 * model must call `read` (or read the file another way) with valid JSON arguments; the tool result goes back as a
 * `tool` message and the model must use it in its answer.
 *
 * Failures are classified, because they need different fixes:
 *  - `refused`  the server rejects requests with `tools` (llama-server --no-jinja, a server without tool support):
 *               no worker can run → cannot-build;
 *  - `parser`   the call came back as text (`<tool_call>…` in content): the server's tool-call parser is off → cannot-build;
 *  - `model`    the server accepts tools but the model did not call one, sent broken arguments or ignored the result
 *               → underpowered (a better model or quant).
 */
import { readBounded, sseData } from "../net";
import { authHeaders, postStreaming } from "./http";
import { streamedFailure } from "./provider-errors";

interface ToolProbeResult {
  passed: boolean;
  /** null when passed. */
  failure: "refused" | "parser" | "model" | "unreachable" | "provider" | null;
  evidence: string;
  /** The provider answered 429: a rate limit, which says nothing of the model's tool use. */
  rateLimited?: boolean;
  /**
   * failure "provider": the error the provider sent inside the 200 stream (overloaded, rate-limited, …), as its
   * status-code form — for verify to name, never the model's tool use.
   */
  streamed?: { status: number; body: unknown; text: string };
}

const str = (description: string) => ({ type: "string", description });
const num = (description: string) => ({ type: "number", description });
const obj = (properties: Record<string, unknown>, required: string[]) => ({ type: "object", properties, required, additionalProperties: false });

/** OpenCode's core tool schemas (names and parameters as its tools define them). */
const OPENCODE_TOOLS = [
  [
    "bash",
    "Executes a given bash command in a persistent shell session.",
    obj(
      {
        command: str("The command to execute"),
        timeout: num("Optional timeout in milliseconds"),
        workdir: str("The working directory to run the command in"),
        description: str("Clear, concise description of what this command does in 5-10 words"),
      },
      ["command", "description"],
    ),
  ],
  [
    "read",
    "Reads a file from the local filesystem.",
    obj(
      {
        filePath: str("The path to the file to read"),
        offset: num("The line number to start reading from (0-based)"),
        limit: num("The number of lines to read (defaults to 2000)"),
      },
      ["filePath"],
    ),
  ],
  [
    "write",
    "Writes a file to the local filesystem.",
    obj({ content: str("The content to write to the file"), filePath: str("The absolute path to the file to write") }, ["content", "filePath"]),
  ],
  [
    "edit",
    "Performs exact string replacements in files.",
    obj(
      {
        filePath: str("The absolute path to the file to modify"),
        oldString: str("The text to replace"),
        newString: str("The text to replace it with"),
        replaceAll: { type: "boolean", description: "Replace all occurrences of oldString" },
      },
      ["filePath", "oldString", "newString"],
    ),
  ],
  [
    "glob",
    "Fast file pattern matching tool.",
    obj({ pattern: str("The glob pattern to match files against"), path: str("The directory to search in") }, ["pattern"]),
  ],
  [
    "grep",
    "Fast content search tool.",
    obj(
      {
        pattern: str("The regex pattern to search for in file contents"),
        path: str("The directory to search in"),
        include: str('File pattern to include in the search (e.g. "*.js")'),
      },
      ["pattern"],
    ),
  ],
  [
    "list",
    "Lists files and directories in a given path.",
    obj(
      {
        path: str("The absolute path to the directory to list"),
        ignore: { type: "array", items: { type: "string" }, description: "List of glob patterns to ignore" },
      },
      [],
    ),
  ],
  [
    "todowrite",
    "Use this tool to create and manage a structured task list for your current coding session.",
    obj(
      {
        todos: {
          type: "array",
          description: "The updated todo list",
          items: obj(
            {
              content: str("Brief description of the task"),
              status: str("pending, in_progress, completed, cancelled"),
              priority: str("high, medium, low"),
              id: str("Unique identifier"),
            },
            ["content", "status", "priority", "id"],
          ),
        },
      },
      ["todos"],
    ),
  ],
].map(([name, description, parameters]) => ({ type: "function", function: { name, description, parameters } }));

const FILE = "notes/token.txt";
const SYSTEM = "You are a coding agent working in a repository. Act only through the tools: call a tool instead of describing it. Be brief.";
const ASK = `Read the file ${FILE} with the read tool and reply with the single word it contains.`;

interface StreamedTurn {
  status: number;
  error: string | null;
  content: string;
  reasoning: string;
  toolCalls: { id: string; name: string; arguments: string }[];
  finishReason: string | null;
  /** An error chunk of the 200 stream (provider-errors.ts streamedFailure). */
  streamed: { status: number; body: unknown; text: string } | null;
}

/** One streamed chat completion, with tool-call deltas assembled the way OpenAI-compatible clients do. */
async function streamTurn(url: string, headers: Record<string, string>, body: Record<string, unknown>, timeoutMs: number): Promise<StreamedTurn> {
  const out: StreamedTurn = { status: 0, error: null, content: "", reasoning: "", toolCalls: [], finishReason: null, streamed: null };
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), timeoutMs);
  try {
    const res = await postStreaming(url, headers, body, ctl.signal);
    out.status = res.status;
    if (!res.ok || !res.body) {
      // An error answer is a line or a small JSON object: read at most 64 KiB of it.
      const text = await readBounded(res, url, 64 * 1024).catch(() => "");
      let msg = text;
      try {
        const e = (JSON.parse(text) as { error?: { message?: string } | string }).error;
        if (e) msg = typeof e === "string" ? e : (e.message ?? JSON.stringify(e));
      } catch {
        /* not JSON */
      }
      out.error = msg.replace(/\s+/g, " ").slice(0, 240);
      return out;
    }
    const calls: { id: string; name: string; arguments: string }[] = [];
    for await (const data of sseData(res.body)) {
      if (!data || data === "[DONE]") continue;
      let j: {
        choices?: {
          delta?: {
            content?: string | null;
            reasoning_content?: string | null;
            reasoning?: string | null;
            tool_calls?: { index?: number; id?: string; function?: { name?: string; arguments?: string } }[];
          };
          finish_reason?: string | null;
        }[];
        error?: { message?: string };
      };
      try {
        j = JSON.parse(data);
      } catch {
        continue;
      }
      if (j.error) {
        // the provider broke off inside its 200 (OpenAI / OpenRouter `data: {"error":…}`, Anthropic's `event: error`)
        out.error = String(j.error.message ?? JSON.stringify(j.error)).slice(0, 240);
        out.streamed = streamedFailure(j);
        break;
      }
      const c = j.choices?.[0];
      if (!c) continue;
      if (c.delta?.content) out.content += c.delta.content;
      // llama.cpp / vLLM / DeepSeek name it reasoning_content, OpenRouter / Groq / Ollama reasoning
      if (c.delta?.reasoning_content || c.delta?.reasoning) out.reasoning += c.delta.reasoning_content || c.delta.reasoning;
      for (const tc of c.delta?.tool_calls ?? []) {
        const k = tc.index ?? calls.length;
        calls[k] ??= { id: "", name: "", arguments: "" };
        if (tc.id) calls[k].id = tc.id;
        if (tc.function?.name) calls[k].name += tc.function.name;
        if (tc.function?.arguments) calls[k].arguments += tc.function.arguments;
      }
      if (c.finish_reason) out.finishReason = c.finish_reason;
    }
    out.toolCalls = calls.filter(Boolean);
    return out;
  } catch (e) {
    out.error = ctl.signal.aborted
      ? `no answer in ${Math.round(timeoutMs / 1000)} s`
      : ((e as Error & { cause?: { code?: string } }).cause?.code ?? (e as Error).message);
    return out;
  } finally {
    clearTimeout(timer);
  }
}

/** A server that refuses tools says so; a model whose output the server could not parse is the model's failure. */
function refusal(status: number, msg: string): boolean {
  if (/does not match the expected|failed to parse|unparsed/i.test(msg)) return false;
  return status === 400 || status === 404 || status === 422 || status === 501 || /tool|jinja|function call|not supported/i.test(msg);
}

const TEXT_CALL = /<tool_call>|<\|python_tag\|>|\[TOOL_CALLS\]|<function[=>]|<\|tool_call|"name"\s*:\s*"(read|bash)"/;

interface ToolProbeInput {
  chatUrl: string;
  model: string;
  key: string | null;
  /** llama.cpp request extensions (chat_template_kwargs to turn thinking off). */
  llamaExtensions: boolean;
  timeoutMs: number;
  /** Token budget of each turn (thinking models need more). */
  maxTokens?: number;
  /** Send temperature 0 (default true); false for a model that takes only its default (OpenAI's reasoning models). */
  temperature?: boolean;
}

export async function toolRoundTrip(p: ToolProbeInput): Promise<ToolProbeResult> {
  const headers = authHeaders(p.key);
  const token = `PELICAN${Math.floor(1000 + Math.random() * 9000)}`;
  const ext = p.llamaExtensions ? { chat_template_kwargs: { enable_thinking: false } } : {};
  const messages: Record<string, unknown>[] = [
    { role: "system", content: SYSTEM },
    { role: "user", content: ASK },
  ];
  const body = (msgs: Record<string, unknown>[]) => ({
    model: p.model,
    messages: msgs,
    tools: OPENCODE_TOOLS,
    tool_choice: "auto",
    ...(p.temperature === false ? {} : { temperature: 0 }),
    max_tokens: p.maxTokens ?? 512,
    ...ext,
  });
  const t0 = performance.now();
  const first = await streamTurn(p.chatUrl, headers, body(messages), p.timeoutMs);
  if (first.status === 0) return { passed: false, failure: "unreachable", evidence: `request with tools failed: ${first.error}` };
  if (first.status === 429)
    return {
      passed: false,
      failure: "model",
      rateLimited: true,
      evidence: `request with ${OPENCODE_TOOLS.length} tools → HTTP 429, rate-limited: ${first.error}`,
    };
  if (first.status !== 200) {
    const refused = refusal(first.status, first.error ?? "");
    return {
      passed: false,
      failure: refused ? "refused" : "model",
      evidence: refused
        ? `the server refuses requests with tools (HTTP ${first.status}: ${first.error}); workers cannot run without tool calls — start it with tool calling on (llama-server: --jinja and a chat template with tools; vLLM: --enable-auto-tool-choice --tool-call-parser …)`
        : `request with ${OPENCODE_TOOLS.length} tools → HTTP ${first.status}: ${first.error}`,
    };
  }
  if (first.streamed)
    return {
      passed: false,
      failure: "provider",
      streamed: first.streamed,
      rateLimited: first.streamed.status === 429,
      evidence: `request with ${OPENCODE_TOOLS.length} tools: the provider's stream broke off with an error: ${first.error}`,
    };
  if (first.error && !first.toolCalls.length)
    return { passed: false, failure: "model", evidence: `the answer to a request with tools broke off: ${first.error}` };
  const call = first.toolCalls[0];
  if (!call) {
    const text = first.content || first.reasoning;
    if (TEXT_CALL.test(text)) {
      return {
        passed: false,
        failure: "parser",
        evidence: `the tool call came back as plain text (${JSON.stringify(text.slice(0, 100))}): the server's tool-call parser is off — llama-server needs --jinja and the model's own chat template; vLLM --enable-auto-tool-choice with the model's --tool-call-parser`,
      };
    }
    return {
      passed: false,
      failure: "model",
      evidence: `asked to read ${FILE} with ${OPENCODE_TOOLS.length} OpenCode tools offered, the model answered without a tool call (finish_reason ${first.finishReason}; ${JSON.stringify(text.slice(0, 80))})`,
    };
  }
  let args: Record<string, unknown>;
  try {
    args = JSON.parse(call.arguments || "{}") as Record<string, unknown>;
  } catch {
    return {
      passed: false,
      failure: "model",
      evidence: `the model called ${call.name} with arguments that are not JSON (${JSON.stringify(call.arguments.slice(0, 80))})`,
    };
  }
  if (!OPENCODE_TOOLS.some((t) => t.function.name === call.name))
    return { passed: false, failure: "model", evidence: `the model called an unknown tool ${JSON.stringify(call.name)}` };
  const readsFile = JSON.stringify(args).includes("token.txt");
  if (!readsFile)
    return { passed: false, failure: "model", evidence: `the model called ${call.name}(${JSON.stringify(args).slice(0, 100)}), not a read of ${FILE}` };
  // the round trip: the tool result goes back, the answer must use it
  const id = call.id || "call_ocw_verify";
  const second = await streamTurn(
    p.chatUrl,
    headers,
    body([
      ...messages,
      {
        role: "assistant",
        content: first.content || null,
        tool_calls: [{ id, type: "function", function: { name: call.name, arguments: call.arguments || "{}" } }],
      },
      { role: "tool", tool_call_id: id, content: `${token}\n` },
    ]),
    p.timeoutMs,
  );
  const ms = Math.round(performance.now() - t0);
  if (second.streamed)
    return {
      passed: false,
      failure: "provider",
      streamed: second.streamed,
      rateLimited: second.streamed.status === 429,
      evidence: `${call.name} was called, but the provider's stream carrying the answer broke off with an error: ${second.error}`,
    };
  if (second.status === 429)
    return {
      passed: false,
      failure: "model",
      rateLimited: true,
      evidence: `${call.name} was called, but the request carrying its result → HTTP 429, rate-limited: ${second.error}`,
    };
  if (second.status !== 200) {
    const refused = refusal(second.status, second.error ?? "");
    return {
      passed: false,
      failure: refused ? "refused" : "model",
      evidence: `${call.name} was called, but the request carrying its result → HTTP ${second.status}: ${second.error}${refused ? " (the server does not accept tool results: check its chat template)" : ""}`,
    };
  }
  const answer = `${second.content} ${second.reasoning}`;
  if (!answer.toUpperCase().includes(token)) {
    return {
      passed: false,
      failure: "model",
      evidence: `${call.name} was called, but the answer did not use its result ${token} (${second.toolCalls.length ? `it called ${second.toolCalls[0]!.name} again` : JSON.stringify(second.content.slice(0, 80))})`,
    };
  }
  return {
    passed: true,
    failure: null,
    evidence: `tool-call round trip with ${OPENCODE_TOOLS.length} OpenCode tools (streamed): ${call.name}(${JSON.stringify(args).slice(0, 60)}) → result used in the answer, ${ms} ms`,
  };
}
