// Offering a pending ask to the person as an MCP elicitation form. Always bounded: the form is withdrawn when the
// ask is answered elsewhere (GUI, CLI, another client), when the wait's time is up, or when the call is cancelled.
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { PermissionAsk } from "../../shared/permission";
import type { EngineClient } from "../api/client";
import { follow } from "../api/follow";
import { askView, diffChangesNothing, OPTIONS_SHOWN, QUESTIONS_SHOWN, questionsView, TOO_MANY_QUESTIONS, UNCHANGED_DIFF } from "../../shared/ask-view";
import { showUntrusted, showUntrustedBlock } from "../../shared/untrusted";
import { plainName } from "../../shared/wait";

type OfferOutcome = { kind: "answered"; decision: string } | { kind: "resolved-elsewhere" } | { kind: "declined" } | { kind: "unavailable"; why: string };

/** Whether the connected client declared form elicitation (an empty `elicitation: {}` means forms). */
export function canElicit(server: Server): boolean {
  const e = server.getClientCapabilities()?.elicitation as Record<string, unknown> | undefined;
  return !!e && (!!e.form || Object.keys(e).length === 0);
}

export function formFor(ask: PermissionAsk, title: string) {
  const t = (x: string, max: number) => showUntrusted(x, { max, lines: false });
  const head = `opencode-worker: worker ${ask.workerId} (${t(title, 80)})`;
  if (ask.kind === "question" && ask.questions?.length) {
    // Bounded whatever the worker sent (questionsView): the first questions and options, and what was cut.
    const qv = questionsView(ask);
    const listed = qv.questions.map((q) => `• ${q.question}`).join("\n");
    if (qv.questionsCut) {
      // Questions nobody here can read cannot be answered here: the form only dismisses it, with a note to ask fewer.
      return {
        message: `${head} asks ${ask.questions.length} questions (the worker's words, untrusted), the first ${qv.questions.length} of them:\n${listed}\n${qv.cutNote}.\nreject = dismiss it (the worker is told to ask at most ${QUESTIONS_SHOWN} at a time). Decline to leave it for Claude.`,
        requestedSchema: {
          type: "object" as const,
          properties: {
            decision: { type: "string", title: "Decision", description: "reject", enum: ["reject"] },
            message: { type: "string", title: "Note to the worker (optional)", description: TOO_MANY_QUESTIONS },
          },
          required: ["decision"],
        },
        answers: undefined,
        defaultMessage: TOO_MANY_QUESTIONS,
      };
    }
    const properties: Record<string, unknown> = {};
    // Option labels are shown made safe; the answer maps a shown label back to the worker's own.
    const shownToLabel = qv.questions.map(() => new Map<string, string>());
    qv.questions.forEach((q, i) => {
      const labels = ask.questions![i]!.options.slice(0, OPTIONS_SHOWN).map((o) => o.label);
      q.options.forEach((s, j) => (labels[j] ? shownToLabel[i]!.set(s, labels[j]!) : undefined));
      const shown = q.options.filter((_, j) => labels[j]);
      const more = q.optionsCut ? `; ${q.optionsCut} more not shown: any option's text` : "";
      properties[`q${i}`] =
        shown.length && !q.multiple && !q.optionsCut && new Set(shown).size === shown.length
          ? { type: "string", title: t(q.header ?? q.question, 80), description: t(q.question, 400), enum: shown }
          : {
              type: "string",
              title: t(q.header ?? q.question, 80),
              description: t(q.question, 400) + (shown.length ? ` (options: ${t(shown.join(", "), 1200)}${more})` : ""),
            };
    });
    return {
      message: `${head} asks (the worker's words, untrusted):\n${listed}${qv.cutNote ? `\n(${qv.cutNote})` : ""}\nDecline to leave it for Claude to answer.`,
      requestedSchema: { type: "object" as const, properties, required: qv.questions.map((_, i) => `q${i}`) },
      answers: (content: Record<string, unknown>) =>
        qv.questions.map((_, i) => {
          const a = String(content[`q${i}`] ?? "");
          return [shownToLabel[i]!.get(a) ?? a];
        }),
    };
  }
  const diff = !ask.diff
    ? ""
    : diffChangesNothing(ask.diff)
      ? `\n\nThe change: ${UNCHANGED_DIFF}.`
      : `\n\nThe change (the worker's, untrusted):\n${showUntrustedBlock(ask.diff, { max: 1500 })}`;
  // A permission name that is not a plain identifier is the worker's text too.
  const tool = plainName(ask.tool) ? ask.tool : `a tool (untrusted name: ${JSON.stringify(showUntrusted(ask.tool, { max: 80, lines: false }))})`;
  // The asked text made visible (line breaks, bidi and zero-width characters, escapes), head and tail when long; the
  // engine's flags; exactly what "always" grants, and no "always" where nothing can be granted.
  const v = askView(ask);
  const flags = v.flags.length ? `\n${v.flags.map((f) => `⚑ ${f}`).join("\n")}` : "";
  const cut = v.cut ? `\n(${v.cut} characters cut from the middle)` : "";
  const always = v.always
    ? `always = also allow exactly ${v.always.map((p) => `[${p}]`).join(" ")} for the rest of this worker's run, each simple command on its own`
    : `"always" is not offered: ${v.alwaysWhy}`;
  return {
    // A multi-line command's later lines indented (as on the terminal): none starts where the form's own lines do.
    message: `${head} asks permission: ${tool} — what it asks (the worker's words, untrusted):\n${v.what.split("\n").join("\n    ")}${v.workdir ? `\n(in folder ${v.workdir})` : ""}${cut}${flags}${diff}\n\nonce = allow this request; ${always}; reject = refuse it. Decline to leave it for Claude.`,
    requestedSchema: {
      type: "object" as const,
      properties: {
        decision: {
          type: "string",
          title: "Decision",
          description: v.always ? "once | always | reject" : "once | reject",
          enum: v.always ? ["once", "always", "reject"] : ["once", "reject"],
        },
        message: { type: "string", title: "Note to the worker (optional)", description: "Sent with the answer; with a rejection, say why." },
      },
      required: ["decision"],
    },
    answers: undefined,
  };
}

/**
 * Shows one ask as a form and applies the answer through `decider` (a client that records the person as the one who
 * decided). Returns how it ended; never throws and never outlives `timeoutMs` or `signal`.
 */
export async function offerAsk(opts: {
  server: Server;
  client: EngineClient;
  decider: () => Promise<EngineClient>;
  ask: PermissionAsk;
  title: string;
  timeoutMs: number;
  signal?: AbortSignal;
  log: (l: string) => void;
}): Promise<OfferOutcome> {
  const { ask } = opts;
  if (opts.timeoutMs < 1000) return { kind: "unavailable", why: "no time left" };
  const ac = new AbortController();
  const onAbort = () => ac.abort();
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  let resolvedElsewhere = false;
  // Withdraw the form as soon as the ask stops being pending anywhere: the engine waits for that, one request at a time
  // (no stream of every engine event while the person reads the form).
  const gone = () => {
    resolvedElsewhere = true;
    ac.abort();
  };
  const watcher = watchAsk(opts.client, ask, ac.signal)
    .then((r) => (r === "gone" ? gone() : undefined))
    // An engine older than this bridge has no workers.wait: follow its events, as before.
    .catch(() =>
      ac.signal.aborted
        ? undefined
        : follow(opts.client, [ask.workerId], {
            until: (ws) => ws.get(ask.workerId)?.asks.find((a) => a.id === ask.id)?.status !== "pending",
            signal: ac.signal,
          }).then((r) => (r.reason !== "aborted" ? gone() : undefined)),
    )
    .catch(() => undefined);
  const form = formFor(ask, opts.title);
  try {
    const res = await opts.server.elicitInput(
      { mode: "form", message: form.message, requestedSchema: form.requestedSchema as never },
      { signal: ac.signal, timeout: opts.timeoutMs },
    );
    if (resolvedElsewhere) return { kind: "resolved-elsewhere" };
    if (res.action !== "accept" || !res.content) return { kind: "declined" };
    const content = res.content as Record<string, unknown>;
    const decision = form.answers ? "once" : String(content.decision ?? "");
    if (!["once", "always", "reject"].includes(decision) || (decision === "always" && !askView(ask).always)) return { kind: "declined" };
    const message =
      typeof content.message === "string" && content.message.trim() ? content.message.trim() : "defaultMessage" in form ? form.defaultMessage : undefined;
    try {
      const decider = await opts.decider();
      await decider.approvals.decide.mutate({
        askId: ask.id,
        decision: decision as "once",
        ...(message ? { message } : {}),
        ...(form.answers ? { answers: form.answers(content) } : {}),
      });
    } catch (err) {
      if (/no longer pending|already being answered|refused the answer/.test((err as Error).message)) return { kind: "resolved-elsewhere" };
      opts.log(`could not apply the form's answer to ${ask.id}: ${(err as Error).message}`);
      return { kind: "unavailable", why: (err as Error).message };
    }
    return { kind: "answered", decision };
  } catch (err) {
    if (resolvedElsewhere) return { kind: "resolved-elsewhere" };
    return { kind: "unavailable", why: (err as Error).message };
  } finally {
    ac.abort();
    opts.signal?.removeEventListener("abort", onAbort);
    await watcher;
  }
}

/**
 * Until `ask` is no longer pending ("gone"), the signal aborts ("aborted"), or its worker is at rest with the ask still
 * pending ("stop": nothing more will change it). Each round is one engine wait; another ask of the worker ends a round.
 */
async function watchAsk(client: EngineClient, ask: PermissionAsk, signal: AbortSignal): Promise<"gone" | "aborted" | "stop"> {
  let shown = [ask.id];
  while (!signal.aborted) {
    const r = await client.workers.wait.query(
      { workerIds: [ask.workerId], shownAsks: shown, shownFinished: [ask.workerId], untilGone: ask.id, timeoutMs: 600_000, diffs: false },
      { signal },
    );
    const w = r.workers[0];
    if (!w?.asks.some((a) => a.id === ask.id)) return "gone";
    if (r.reason === "settled" || r.reason === "aborted") return r.reason === "aborted" ? "aborted" : "stop";
    shown = w.asks.map((a) => a.id);
  }
  return "aborted";
}
