// The engine's control API fuzzed procedure by procedure, as an untrusted client would call it: inputs drawn from each
// procedure's own zod schema (read from the router, shared/ is the contract), then broken — a field of the wrong type,
// a field missing or extra, huge strings, odd Unicode (lone surrogates, NUL, bidi, emoji), negative, fractional and
// huge numbers (1e400 in the raw body), `..` and NUL in paths, ids of nothing or of workers in the wrong state (one
// waiting for a person, one merged, one discarded) — plus raw bodies no client sends (not JSON, nested 100,000 deep,
// over the size limit). Every request must be answered with success or a 4xx tRPC error whose message is plain words
// (no internal class name, stack frame or engine source path), never INTERNAL_SERVER_ERROR; the engine stays up (same
// pid) and the workers and target that existed before are unchanged after. A real `ocw serve`, a real opencode and the
// scripted model; nothing fuzzed starts a worker or a model (a valid input of a procedure that would is skipped and counted).
// OCW_FUZZ_SEED and OCW_FUZZ_RUNS run another seed or more runs per procedure (a failure names its seed and input);
// OCW_FUZZ_STATS=1 prints, per procedure, how many requests were answered and how each was refused.
import { execFileSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { z } from "zod";
import { readLock } from "../../engine/api/lock";
import { appRouter } from "../../engine/api/router";
import type { Worker } from "../../shared/worker";
import { startScriptedModel, writesAsTold, bash, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, settle, startEngine, tempDir, untilAsk, type TestEngine } from "../helpers";

const SEED = Number(process.env.OCW_FUZZ_SEED ?? 20261207);
const RUNS = Number(process.env.OCW_FUZZ_RUNS ?? 30);

let model: ScriptedModel;
let engine: TestEngine;
let base = "";
let token = "";
let pid = 0;
const dirs: string[] = [];

/** The workers in a known state, made before the fuzz: a merged one, a discarded one, one waiting for a person. */
const W = { merged: "", discarded: "", waiting: "", askId: "", batch: "" };
/** Two more, for the races at the end (never in the fuzz's pools): a built one and one waiting for a person. */
const R = { built: "", waiting: "", askId: "" };
let repo = "";
let before: unknown;
/** Files no request may read whole or wait on: a FIFO (a read waits for a writer for good), a link to /dev/zero, a folder. */
const odd = tempDir("apifuzz-odd");
dirs.push(odd);
const FIFO = path.join(odd, "model.gguf");
const ZERO = path.join(odd, "zero.json");
const FOLDER = path.join(odd, "folder.gguf");
if (process.platform !== "win32") execFileSync("mkfifo", [FIFO]);
symlinkSync("/dev/zero", ZERO);
mkdirSync(FOLDER);

/** What must not change: each witness worker's state, merge, discard, asks, rounds, grants; the target; the policies. */
async function witnesses() {
  const pic = (w: Worker) => ({
    state: w.state,
    merged: w.merged,
    discarded: w.discarded,
    asks: w.asks.map((a) => [a.id, a.status]),
    rounds: w.rounds.length,
    verdict: w.verdict?.commit ?? null,
    grants: w.grants.length,
    steers: w.steers.length,
  });
  const c = engine.client;
  const targets = await c.targets.list.query();
  return {
    merged: pic(await c.workers.get.query({ workerId: W.merged })),
    discarded: pic(await c.workers.get.query({ workerId: W.discarded })),
    waiting: pic(await c.workers.get.query({ workerId: W.waiting })),
    active: targets.active,
    target: targets.targets.find((t) => t.id === "fuzz"),
    policies: await c.policies.get.query(),
  };
}

beforeAll(async () => {
  model = await startScriptedModel({
    scripts: [
      writesAsTold("TASK-FUZZ-WRITE"),
      { name: "hold", match: /TASK-FUZZ-HOLD/, script: (ctx) => (ctx.turnStep === 0 ? bash("echo held > held.txt") : { text: "OUTCOME: built" }) },
    ],
  });
  const home = tempDir("apifuzz-home");
  dirs.push(home);
  engine = await startEngine(undefined, { HOME: home });
  dirs.push(engine.stateDir);
  const lock = readLock(engine.stateDir)!;
  base = `http://127.0.0.1:${lock.port}`;
  token = lock.token;
  pid = lock.pid;
  const c = engine.client;
  await c.targets.save.mutate({ target: scriptedTarget(model.url, 4, "fuzz"), activate: true });
  repo = makeRepo();
  dirs.push(repo);
  const batch = await c.workers.startBatch.mutate({
    tasks: [
      { task: "TASK-FUZZ-WRITE file=a.txt text=alpha", directory: repo, checks: [{ file: "a.txt", equals: "alpha" }] },
      { task: "TASK-FUZZ-WRITE file=b.txt text=beta", directory: repo, checks: [{ file: "b.txt", equals: "beta" }] },
      { task: "TASK-FUZZ-HOLD run a command", directory: repo },
      { task: "TASK-FUZZ-WRITE file=c.txt text=gamma", directory: repo, checks: [{ file: "c.txt", equals: "gamma" }] },
      { task: "TASK-FUZZ-HOLD run another command", directory: repo },
    ],
  });
  W.batch = batch.batchId;
  [W.merged, W.discarded, W.waiting, R.built, R.waiting] = batch.workerIds as [string, string, string, string, string];
  const done = await settle(c, [W.merged, W.discarded, R.built], (a) => (a.workerId === W.waiting || a.workerId === R.waiting ? null : "once"));
  expect([...done.values()].map((w) => w.state)).toEqual(["built", "built", "built"]);
  await c.workers.merge.mutate({ workerId: W.merged });
  await c.workers.discard.mutate({ workerId: W.discarded });
  const held = await untilAsk(c, W.waiting);
  W.askId = held.asks.find((a) => a.status === "pending")!.id;
  R.askId = (await untilAsk(c, R.waiting)).asks.find((a) => a.status === "pending")!.id;
  before = await witnesses();
}, 120_000);

afterAll(async () => {
  await engine?.kill();
  await model?.close();
  cleanup(...dirs);
});

// ---------- the procedures, from the router ----------

interface Proc {
  path: string;
  type: "query" | "mutation" | "subscription";
  input: z.ZodType | null;
}
const PROCS: Proc[] = Object.entries(
  (appRouter as unknown as { _def: { procedures: Record<string, { _def: { type: Proc["type"]; inputs: z.ZodType[] } }> } })._def.procedures,
).map(([path, p]) => ({ path, type: p._def.type, input: p._def.inputs[0] ?? null }));

/** Never called: ends the engine; starts a llama.cpp build (it takes no input to fuzz). */
const NOT_CALLED = new Set(["shutdown", "setup.buildLlama"]);

/**
 * Procedures whose valid input starts long work (a worker, a model, a ladder) or changes what the fuzz keeps as its
 * witnesses: such an input is skipped (counted); everything else they get is sent.
 */
function skipValid(path: string, input: unknown): boolean {
  const v = input as Record<string, unknown> | undefined;
  const names = (x: unknown) => JSON.stringify(x ?? null);
  switch (path) {
    case "workers.start":
    case "workers.startBatch":
    case "workers.startAttempts":
    case "workers.retry":
    case "workers.onNewBase":
    case "ladder.start":
    case "ladder.finish":
    case "setup.start":
    case "policies.set":
      return true;
    // the worker waiting for a person takes these (a merged or discarded one must refuse them: sent)
    case "workers.stop":
    case "workers.steer":
    case "workers.resume":
    case "approvals.decide":
      return names(v).includes(W.waiting) || names(v).includes(W.askId);
    case "workers.discard":
      // a merged worker may be discarded (it is at rest: lifecycle.ts); the witness would change
      return names(v).includes(W.merged);
    case "workers.revert":
    case "workers.push":
    case "workers.mergeBatch":
      return true;
    // another target may be saved, priced or keyed; the fuzz's own stays as it is, and stays the active one
    case "targets.save":
      return (v?.target as { id?: string } | undefined)?.id === "fuzz" || v?.activate === true;
    case "targets.setPrice":
    case "targets.setKey":
      return v?.id === "fuzz";
    case "targets.use":
      return true;
    // verified against the pool's URLs (nothing listens there); "unverified" saves and uses one without checks
    case "setup.capture":
    case "setup.provider":
    case "setup.providerKey":
    case "setup.verify":
      return names(v).includes('"unverified":true');
    default:
      return false;
  }
}

// ---------- values ----------

const ODD = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "\udfff\ud800",
  "\u202eevil\u202c",
  "\u200b",
  "e\u0301\u0301\u0301\u0301\u0301\u0301",
  "🧨💥",
  "\r\n",
  "\u001b[31mred",
  "null",
  "undefined",
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "%s%n%d",
  "${process.exit()}",
  "$(reboot)",
  "`id`",
  "'; DROP TABLE workers; --",
];
const PATHS = [
  "..",
  "../../../../etc/passwd",
  "/etc/passwd",
  "/etc",
  "/",
  "/proc/self/mem",
  "/dev/zero",
  "/dev/null",
  "/nonexistent/ocw",
  "/tmp/../tmp/..",
  "/tmp/a\u0000b",
  "relative/path",
  "~",
  "C:\\Windows",
  "\\\\host\\share",
  "file:///etc",
  FIFO,
  ZERO,
  FOLDER,
];
const URLS = [
  "http://127.0.0.1:9/v1",
  "http://127.0.0.1:1",
  "http://localhost:9/v1",
  "http://user:secret@127.0.0.1:9/v1",
  "https://[::1]:9/v1",
  "http://127.0.0.1:99999/v1",
  "ftp://127.0.0.1/",
  "javascript:alert(1)",
  "not a url",
  "http://",
  "http://127.0.0.1:9/v1?\u0000",
];
const hugeString = fc.integer({ min: 5_000, max: 200_000 }).map((n) => "x".repeat(n));
const oddString = fc.oneof(fc.constantFrom(...ODD), fc.string({ unit: "binary", maxLength: 40 }), fc.string({ unit: "grapheme", maxLength: 20 }));
/** Ids: of nothing, hostile, or of a worker (ask, batch) in a state the procedure may refuse. */
const idOf = (kind: "worker" | "batch" | "ask" | "any") =>
  fc.oneof(
    {
      weight: 4,
      arbitrary: kind === "batch" ? fc.constant(W.batch) : kind === "ask" ? fc.constant(W.askId) : fc.constantFrom(W.merged, W.discarded, W.waiting),
    },
    { weight: 3, arbitrary: fc.constantFrom(W.merged, W.discarded, W.waiting, W.batch, W.askId) },
    { weight: 2, arbitrary: fc.constantFrom("w-0000000000", "b-0000000000", "a-0000000000", "ask-0", "fuzz", "../../etc/passwd", "w-../../x", "*", "%") },
    { weight: 2, arbitrary: oddString },
    { weight: 1, arbitrary: hugeString },
  );
const numberish = fc.oneof(
  fc.constantFrom(0, -1, 1, 2, 0.5, -0.5, 1e-9, 2 ** 31, 2 ** 53, -(2 ** 53), Number.MAX_SAFE_INTEGER + 2, 1e308, -1e308),
  fc.integer({ min: -1000, max: 1000 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
/** A value of any type: what a client sends where it should not. */
const hostile: fc.Arbitrary<unknown> = fc.oneof(
  oddString,
  fc.constantFrom(...PATHS),
  numberish,
  fc.boolean(),
  fc.constant(null),
  fc.constant([]),
  fc.constant({}),
  fc.constant(JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}')),
  fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 }), { maxKeys: 3 }),
  hugeString,
);

type Def = { type: string; [k: string]: unknown };
const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

/** A string for a field, by its name: ids, folders, URLs and times from their pools; else anything. */
function stringFor(key: string): fc.Arbitrary<string> {
  const k = key.toLowerCase();
  if (k === "workerid" || k === "retryof") return idOf("worker");
  if (k === "batchid") return idOf("batch");
  if (k === "askid" || k === "untilgone") return idOf("ask");
  if (
    k === "directory" ||
    k === "dir" ||
    k === "cwd" ||
    k === "path" ||
    k === "gguf" ||
    k === "metadata" ||
    k === "llamaserver" ||
    k === "files" ||
    k === "file"
  )
    return fc.oneof(fc.constantFrom(...PATHS), fc.constant(repo || "/tmp"), fc.constant(`${repo || "/tmp"}/../..`), oddString);
  if (k === "endpoint" || k === "url" || k === "baseurl" || k.endsWith("url") || k === "remote")
    return fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...URLS) }, oddString);
  if (k.endsWith("id") || k === "id" || k === "target") return fc.oneof(idOf("any"), fc.constantFrom("fuzz", "nope", "adhoc-0"));
  return fc.oneof(
    { weight: 5, arbitrary: fc.string({ maxLength: 30 }) },
    { weight: 2, arbitrary: oddString },
    { weight: 1, arbitrary: fc.constantFrom(...PATHS) },
    { weight: 1, arbitrary: hugeString },
  );
}

/** Values near the schema's own shape (valid or nearly), recursing through the zod v4 definition. */
function near(s: z.ZodType, key = "", depth = 0): fc.Arbitrary<unknown> {
  if (depth > 6) return hostile;
  const d = defOf(s);
  switch (d.type) {
    case "object": {
      const shape = d.shape as Record<string, z.ZodType>;
      const entries = Object.fromEntries(Object.entries(shape).map(([k, v]) => [k, near(v, k, depth + 1)]));
      return fc.record(entries, { requiredKeys: Object.keys(shape).filter((k) => !["optional", "default", "prefault"].includes(defOf(shape[k]!).type)) });
    }
    case "string":
      return stringFor(key);
    case "number":
      if (/timeout/i.test(key))
        return fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 0, max: 50 }) }, { weight: 1, arbitrary: numberish.filter((n) => !(n > 50)) });
      return numberish;
    case "boolean":
      return fc.boolean();
    case "enum":
      return fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...Object.values(d.entries as Record<string, string>)) }, { weight: 1, arbitrary: oddString });
    case "literal":
      return fc.constantFrom(...(d.values as unknown[]));
    case "optional":
    case "nullable":
    case "default":
    case "prefault":
    case "readonly":
    case "catch":
    case "nonoptional":
      return fc.oneof(
        { weight: 4, arbitrary: near(d.innerType as z.ZodType, key, depth + 1) },
        { weight: 1, arbitrary: fc.constant(d.type === "nullable" ? null : undefined) },
      );
    case "array":
      return fc.oneof(
        { weight: 5, arbitrary: fc.array(near(d.element as z.ZodType, key, depth + 1), { maxLength: 3 }) },
        { weight: 1, arbitrary: fc.constant(null).map(() => Array.from({ length: 300 }, () => "x")) },
      );
    case "tuple":
      return fc.tuple(...(d.items as z.ZodType[]).map((i) => near(i, key, depth + 1)));
    case "union":
      return fc.oneof(...(d.options as z.ZodType[]).map((o) => near(o, key, depth + 1)));
    case "pipe":
      return near(d.in as z.ZodType, key, depth + 1);
    case "lazy":
      return near((d.getter as () => z.ZodType)(), key, depth + 1);
    case "record":
      return fc.dictionary(fc.string({ maxLength: 8 }), near(d.valueType as z.ZodType, key, depth + 1), { maxKeys: 3 });
    case "null":
      return fc.constant(null);
    default:
      return hostile;
  }
}

/** Every place in a value (its root, each field and element), as a list of keys. */
function places(v: unknown, at: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(at);
  if (v && typeof v === "object" && at.length < 6) for (const [k, x] of Object.entries(v)) places(x, [...at, Array.isArray(v) ? Number(k) : k], out);
  return out;
}
function edit(v: unknown, at: (string | number)[], f: (parent: Record<string | number, unknown>, key: string | number) => void): unknown {
  const copy = structuredClone(v) as Record<string | number, unknown>;
  let p = copy;
  for (const k of at.slice(0, -1)) p = p[k] as Record<string | number, unknown>;
  f(p, at[at.length - 1]!);
  return copy;
}

/** One break of a value: none, the whole of it replaced, a field replaced by another type, removed, or one added. */
const broken = (good: fc.Arbitrary<unknown>) =>
  fc
    .tuple(
      good,
      fc.nat(),
      fc.constantFrom("none", "root", "replace", "drop", "extra", "extra"),
      hostile,
      fc.constantFrom("extra", "__proto__", "constructor", "then", "workerId", ""),
    )
    .map(([v, pick, how, bad, extraKey]) => {
      if (how === "none") return v;
      if (how === "root") return bad;
      const inner = places(v).filter((p) => p.length > 0);
      const objects = places(v).filter((p) => {
        let x: unknown = v;
        for (const k of p) x = (x as Record<string | number, unknown>)[k];
        return !!x && typeof x === "object" && !Array.isArray(x);
      });
      if (how === "extra") {
        if (!objects.length) return bad;
        const at = objects[pick % objects.length]!;
        return (
          edit({ r: v }, ["r", ...at, extraKey], (p, k) =>
            Object.defineProperty(p, k, { value: bad, enumerable: true, writable: true, configurable: true }),
          ) as { r: unknown }
        ).r;
      }
      if (!inner.length) return bad;
      const at = inner[pick % inner.length]!;
      return (edit({ r: v }, ["r", ...at], (p, k) => (how === "drop" ? delete p[k] : (p[k] = bad))) as { r: unknown }).r;
    });

// ---------- the transport ----------

/** Raw request bodies no client sends (the tRPC body is the input as JSON). */
const RAW_BODIES = [
  "",
  "{",
  "undefined",
  "NaN",
  "1e400",
  '{"workerId":1e400}',
  '{"workerId":"\\ud800"}',
  '"\\u0000"',
  "[".repeat(100_000) + "]".repeat(100_000),
  '{"a":'.repeat(50_000) + "1" + "}".repeat(50_000),
  JSON.stringify({ x: "y".repeat(2_200_000) }),
  '{"__proto__":{"isAdmin":true}}',
];

/** Words that tell a client an internal error, a stack frame or the engine's source: none may reach a message. */
const INTERNAL =
  /\b(TypeError|RangeError|ReferenceError|SyntaxError|EvalError|URIError|AggregateError|ZodError|TRPCError|OcwError|InputError)\b|Cannot (read|set) propert|is not a function|is not iterable|is not defined|Maximum call stack|\bat \S+ \(|\bat (file|node):|node:internal|\/engine\/\w+\/\w+\.ts|ocw\.mjs|\[object Object\]/;

interface Answer {
  status: number;
  code?: string;
  message?: string;
}
const stats: Record<string, { sent: number; ok: number; refused: Record<string, number>; skipped: number }> = {};
const soft: string[] = [];
const messages = new Set<string>();

async function send(proc: Proc, body: string | undefined, how: "post" | "get" = "post", timeoutMs = 10_000): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, "content-type": "application/json", "x-ocw-client": "gui:fuzz" };
  let url = `${base}/trpc/${proc.path}`;
  let init: RequestInit = { method: "POST", headers, body };
  if (proc.type === "subscription" || how === "get") {
    if (body !== undefined) url += `?input=${encodeURIComponent(body)}`;
    init = { method: "GET", headers: { ...headers, accept: "text/event-stream" } };
  }
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), proc.type === "subscription" ? 400 : timeoutMs);
  try {
    const res = await fetch(url, { ...init, signal: ctl.signal });
    let text = "";
    try {
      text = await res.text();
    } catch {
      // a subscription's stream, cut off by the abort: its status is what counts
    }
    // A request the engine's HTTP parser refused (a subscription's input past its header limit, in the URL): JSON.
    if (proc.type === "subscription" && res.status >= 400 && text.startsWith("{")) {
      const json = JSON.parse(text) as { error?: { message?: string; data?: { code?: string } } };
      return { status: res.status, code: json.error?.data?.code, message: json.error?.message };
    }
    if (proc.type === "subscription") {
      const err = /event: serialized-error\ndata: (.*)/.exec(text)?.[1];
      const parsed = err ? (JSON.parse(err) as { message?: string; data?: { code?: string } }) : null;
      return { status: res.status, code: parsed?.data?.code, message: parsed?.message };
    }
    let json: { error?: { message?: string; data?: { code?: string } } } = {};
    try {
      json = JSON.parse(text);
    } catch {
      json = { error: { message: text } };
    }
    return { status: res.status, code: json.error?.data?.code, message: json.error?.message };
  } catch (err) {
    if (ctl.signal.aborted && proc.type === "subscription") return { status: 200 };
    if (ctl.signal.aborted) return { status: 504, message: `no answer in ${timeoutMs} ms` };
    throw new Error(`${proc.path}: no answer (${(err as Error).message})`);
  } finally {
    clearTimeout(timer);
  }
}

function judge(proc: Proc, shown: string, a: Answer) {
  const s = (stats[proc.path] ??= { sent: 0, ok: 0, refused: {}, skipped: 0 });
  s.sent++;
  const where = `${proc.path} ← ${shown.length > 300 ? `${shown.slice(0, 300)}…(${shown.length} chars)` : shown}`;
  expect(a.status, `${where}: HTTP ${a.status} ${a.message ?? ""}`).toBeLessThan(500);
  if (a.status < 300 && !a.code) {
    s.ok++;
    if (process.env.OCW_FUZZ_OK === proc.path) console.log(`ok: ${shown.slice(0, 600)}`);
    return;
  }
  s.refused[a.code ?? String(a.status)] = (s.refused[a.code ?? String(a.status)] ?? 0) + 1;
  expect(a.code, where).not.toBe("INTERNAL_SERVER_ERROR");
  const m = a.message ?? "";
  expect(m, `${where}: an empty message`).not.toBe("");
  expect(m, `${where}: ${m}`).not.toMatch(INTERNAL);
  // a refusal quotes what it refuses, bounded: never the request back whole
  expect(m.length, `${where}: a message of ${m.length} characters: ${m.slice(0, 200)}…`).toBeLessThan(2_000);
  // a code name is not words
  expect(m, where).not.toMatch(/^[A-Z_]+$/);
  if (process.env.OCW_FUZZ_MESSAGES) messages.add(`${proc.path}\t${a.code}\t${m.slice(0, 300).replace(/\s+/g, " ")}`);
  if (/\b(ENOENT|EACCES|EISDIR|ENOTDIR|ELOOP|EINVAL|ENAMETOOLONG|ERR_[A-Z_]+)\b/.test(m) && soft.length < 50) soft.push(`${proc.path}: ${m.slice(0, 200)}`);
}

const encode = (v: unknown) => (v === undefined ? undefined : JSON.stringify(v));

// ---------- the tests ----------

describe(`the API, fuzzed (seed ${SEED}, ${RUNS} runs per procedure)`, () => {
  it("the router's procedures are all here, with their schemas", () => {
    expect(PROCS.length).toBeGreaterThan(60);
    expect(PROCS.map((p) => p.path)).toContain("workers.merge");
  });

  // Found by this fuzz, kept as explicit cases: each answered at once with a 4xx and plain words, the engine answering
  // meanwhile. A FIFO read whole stopped the whole engine until something wrote to it; /dev/zero read whole takes its
  // memory (then the process); a folder was said as "EISDIR: illegal operation on a directory, read".
  const byPath = (p: string) => PROCS.find((x) => x.path === p)!;
  const EXAMPLES: [string, unknown][] = [
    ["setup.estimate", { metadata: FIFO }],
    ["setup.estimate", { gguf: FIFO }],
    ["setup.estimate", { metadata: ZERO }],
    ["setup.estimate", { metadata: "/dev/zero" }],
    ["setup.estimate", { gguf: "/dev/zero" }],
    ["setup.estimate", { metadata: FOLDER }],
    ["setup.estimate", { gguf: FOLDER }],
    ["setup.plan", { model: FIFO }],
    ["setup.plan", { model: FOLDER }],
    ["setup.fit", { model: FIFO }],
    ["setup.k8s", { model: FIFO, gpus: "1x80G" }],
    // an unknown batch or worker in the wait's stream: NOT_FOUND, as workers.wait says (it was INTERNAL_SERVER_ERROR)
    ["workers.waitStream", { batchId: "b-nope", timeoutMs: 10 }],
    ["workers.waitStream", { workerIds: ["w-nope"], timeoutMs: 10 }],
    // a rule of several `*` on a long command held the engine's thread for minutes (picomatch's regular expression)
    ["policies.explain", { rules: [{ tool: "bash", pattern: "*a*a*a*b", decision: "once" }], tool: "bash", what: "a".repeat(3000) }],
    ["policies.explain", { rules: [{ tool: "*", pattern: "*[a]*[a]*[a]*b", decision: "reject" }], tool: "edit", what: "a".repeat(8000) }],
  ];
  it.each(EXAMPLES)("%s %j: answered at once (a 4xx in plain words), and the engine answers meanwhile", async (p, input) => {
    const proc = byPath(p);
    const started = Date.now();
    const [answer, health] = await Promise.all([
      send(proc, JSON.stringify(input), "post", 8_000),
      new Promise((r) => setTimeout(r, 300)).then(() => send(byPath("health"), undefined, "get", 3_000)),
    ]);
    expect(health.status, "the engine answered nothing else while it served this").toBe(200);
    judge(proc, JSON.stringify(input), answer);
    if (answer.status !== 200)
      expect(answer.code, `${p} ${JSON.stringify(input).slice(0, 200)}: HTTP ${answer.status} ${answer.message}`).toMatch(/BAD_REQUEST|NOT_FOUND/);
    expect(answer.message ?? "").not.toMatch(/\bE[A-Z]{3,}\b/);
    expect(Date.now() - started).toBeLessThan(8_000);
  });

  for (const proc of PROCS.filter((p) => !NOT_CALLED.has(p.path))) {
    it(proc.path, async () => {
      const inputs = proc.input ? broken(near(proc.input)) : fc.oneof(fc.constant(undefined), hostile);
      const det = await fc.check(
        fc.asyncProperty(inputs, fc.boolean(), async (input, viaGet) => {
          if (proc.input && proc.input.safeParse(input).success && skipValid(proc.path, input)) {
            (stats[proc.path] ??= { sent: 0, ok: 0, refused: {}, skipped: 0 }).skipped++;
            return;
          }
          const body = encode(input);
          const how = proc.type === "query" && viaGet && (body?.length ?? 0) < 2000 ? "get" : "post";
          judge(proc, `${how} ${body}`, await send(proc, body, how));
        }),
        { seed: SEED + PROCS.indexOf(proc), numRuns: RUNS, endOnFailure: true },
      );
      if (det.failed) {
        const shown = JSON.stringify(det.counterexample?.[0]) ?? "undefined";
        throw new Error(
          `${proc.path}: ${(det.errorInstance as Error | undefined)?.message ?? ""}\ninput: ${shown.length > 400 ? `${shown.slice(0, 400)}…(${shown.length} chars)` : shown}\n(seed ${det.seed}, path ${det.counterexamplePath}; rerun with OCW_FUZZ_SEED=${SEED})`,
        );
      }
      const rawInput = (raw: string) => {
        try {
          return JSON.parse(raw) as unknown;
        } catch {
          return undefined;
        }
      };
      if (proc.type !== "subscription")
        for (const raw of RAW_BODIES) {
          // `{"workerId":1e400}` is `{}` to a schema whose fields are all optional (setup.start's: a model start)
          if (proc.input && proc.input.safeParse(rawInput(raw)).success && skipValid(proc.path, rawInput(raw))) continue;
          judge(proc, `raw ${raw.slice(0, 60)}`, await send(proc, raw));
        }
    });
  }

  it("one ask answered by 8 clients at once: one answer taken, the rest refused in words (never a 500)", async () => {
    const decide = byPath("approvals.decide");
    const decisions = ["once", "reject", "always", "once", "reject", "once", "always", "reject"];
    const answers = await Promise.all(decisions.map((d) => send(decide, JSON.stringify({ askId: R.askId, decision: d }))));
    answers.forEach((a, i) => judge(decide, `race ${decisions[i]}`, a));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    const w = await engine.client.workers.get.query({ workerId: R.waiting });
    expect(w.asks.find((a) => a.id === R.askId)?.status).toBe("decided");
  });

  it("a built worker raced by merge, discard, publish, push, revert and reads at once: every answer a success or a 4xx in words", async () => {
    const id = JSON.stringify({ workerId: R.built });
    const calls: [string, string][] = [
      ["workers.merge", id],
      ["workers.discard", id],
      ["workers.publish", id],
      ["workers.merge", id],
      ["workers.discard", id],
      ["workers.diff", id],
      ["workers.transcript", id],
      ["workers.workspace", id],
      ["workers.events", id],
      ["workers.push", JSON.stringify({ workerId: R.built, remote: "/nonexistent/remote.git" })],
      ["workers.revert", id],
      ["workers.publish", id],
      ["workers.get", id],
    ];
    const answers = await Promise.all(calls.map(([p, b]) => send(byPath(p), b)));
    answers.forEach((a, i) => judge(byPath(calls[i]![0]), `race ${calls[i]![1]}`, a));
    const w = await engine.client.workers.get.query({ workerId: R.built });
    expect(w.state).toBe("built");
    expect(w.merged !== null || w.discarded).toBe(true);
    // and again, now that it is merged or discarded
    const again = await Promise.all(calls.map(([p, b]) => send(byPath(p), b)));
    again.forEach((a, i) => judge(byPath(calls[i]![0]), `after ${calls[i]![1]}`, a));
  });

  it("the engine is the same process, answers, and what existed before is unchanged", async () => {
    expect(readLock(engine.stateDir)?.pid).toBe(pid);
    expect(engine.proc.exitCode).toBeNull();
    expect((await engine.client.health.query()).pid).toBe(pid);
    expect(await witnesses()).toEqual(before);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // nothing it was sent failed inside the engine unseen: no runtime error or stack in its log
    if (process.env.OCW_FUZZ_STATS) console.log(engine.stderr());
    expect(engine.stderr()).not.toMatch(/unhandled|uncaught|\b(TypeError|RangeError|ReferenceError)\b|\n\s+at \S+ \(/i);
    const total = Object.values(stats).reduce((n, s) => n + s.sent, 0);
    const skipped = Object.values(stats).reduce((n, s) => n + s.skipped, 0);
    console.log(`api fuzz, seed ${SEED}: ${total} requests over ${Object.keys(stats).length} procedures (${skipped} valid inputs skipped)`);
    if (process.env.OCW_FUZZ_STATS) console.log(JSON.stringify(stats, null, 1));
    // OCW_FUZZ_MESSAGES=FILE: every distinct refusal (procedure, code, message), to read them
    if (process.env.OCW_FUZZ_MESSAGES) writeFileSync(process.env.OCW_FUZZ_MESSAGES, [...messages].sort().join("\n"));
    if (soft.length) console.log(`raw system error codes in messages:\n${soft.join("\n")}`);
  });
});
