import { useVirtualizer } from "@tanstack/react-virtual";
import { memo, useEffect, useLayoutEffect, useMemo, useRef, useState } from "react";
import { showUntrusted, showUntrustedLines } from "../../../shared/untrusted";
import type { TranscriptPart } from "../../../shared/worker";
import { byText, toolShown } from "../format";
import type { TranscriptMark } from "../store";
import { Markdown, Truncated } from "./Markdown";

function show(v: unknown): string {
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  try {
    return JSON.stringify(v, null, 2);
  } catch {
    return String(v);
  }
}

function toolHeadline(p: TranscriptPart): string {
  const input = p.input as Record<string, unknown> | undefined;
  const key = input && (input.command ?? input.filePath ?? input.path ?? input.url ?? input.pattern);
  return typeof key === "string" ? showUntrusted(key, { max: 1000, lines: false }) : "";
}

/** What opencode's bash tool appends to the output of a command it aborted (a stop, an abort of the session). */
const KILLED = /<shell_metadata>[\s\S]*\b(User aborted the command|aborted)\b[\s\S]*<\/shell_metadata>/i;

/** `waiting`: a pending ask holds this tool call (it shows "running" while it waits for a person or Claude). */
export const Part = memo(function Part({ part, ended, waiting }: { part: TranscriptPart; ended?: boolean; waiting?: boolean }) {
  if (part.kind === "reasoning")
    return (
      <details className="part reasoning">
        <summary>Reasoning · {(part.text ?? "").length} chars</summary>
        {/* The model's words: what could hide or reorder text shown as ⟪U+XXXX⟫, line breaks kept (shared/untrusted.ts). */}
        <div className="part-text">{showUntrustedLines(part.text ?? "")}</div>
      </details>
    );
  if (part.kind === "tool") {
    // A tool still "running" in a worker that has ended, or before a later model message, was cut off (stop, crash,
    // engine restart, then Resume): it never finished.
    const unfinished = part.status === "running" || part.status === "pending";
    const cut = ended && unfinished;
    // opencode reports a shell command killed by a stop as "completed", saying so only in its output's metadata.
    const killed = part.status === "completed" && KILLED.test(part.output ?? "");
    const held = !cut && !!waiting && unfinished;
    const status = cut ? "not finished" : killed ? "killed" : held ? "waiting for approval" : (part.status ?? "…");
    return (
      <details className={`part tool tool-${part.status ?? "unknown"}`}>
        <summary>
          <span className="tool-name">{showUntrusted(part.tool ?? "tool", { max: 80, lines: false })}</span>{" "}
          <span className="mono small ellipsis">{toolHeadline(part)}</span>
          <span className={`chip chip-${cut || killed || held ? "warn" : part.status === "completed" ? "ok" : part.status === "error" ? "bad" : "busy"}`}>
            {status}
          </span>
        </summary>
        <div className="tool-io">
          <div className="io-label">input</div>
          {/* The input as the model wrote it (the command as run): made safe and cut as the output is. */}
          <Truncated text={show(part.input)} />
          {(part.output || part.error) && (
            <>
              <div className="io-label">{part.error ? "error" : "output"}</div>
              <Truncated className={part.error ? "err" : ""} text={part.error ?? part.output ?? ""} />
            </>
          )}
        </div>
      </details>
    );
  }
  if (part.kind === "user")
    return (
      <div className="part user">
        <div className="who">you / task</div>
        <Markdown className="part-text" text={part.text ?? ""} />
      </div>
    );
  return (
    <div className="part text">
      <WorkerWho />
      <Markdown className="part-text" text={part.text ?? ""} />
    </div>
  );
});

/** Whose words a text part holds, on screen as the person's own parts say "you / task": the worker's, data to read. */
function WorkerWho() {
  return (
    <div className="who" title="text the worker's model wrote: data, not instructions">
      worker
    </div>
  );
}

export { byText };

function verb(m: Extract<TranscriptMark, { type: "decision" }>): string {
  if (m.status === "cancelled") return "Ask cancelled";
  const question = m.ask?.kind === "question";
  if (m.decision === "reject") return question ? "Question dismissed" : "Rejected";
  if (m.decision === "always") return "Approved always";
  return question ? "Answered" : "Approved once";
}

/** A steer, an ask or a decision, between the model's parts: who did what, in one line a screen reader reads as such. */
export const Mark = memo(function Mark({ mark, answered, root }: { mark: TranscriptMark; answered: boolean; root?: string | null }) {
  const when = new Date(mark.ts).toLocaleTimeString();
  // A path in the worker's own workspace reads as the repository's path (the full one is in the tooltip).
  const short = (what: string) => showUntrusted(root && what.startsWith(root + "/") ? what.slice(root.length + 1) : what, { max: 300, lines: false });
  if (mark.type === "steer") {
    const who =
      mark.by.kind === "mcp"
        ? `Claude${mark.by.name ? ` (${mark.by.name})` : ""} steered`
        : mark.by.kind === "person"
          ? "You steered"
          : `Steered by ${byText(mark.by)}`;
    return (
      <div className="part mark mark-steer" role="note" aria-label={`${who}: ${mark.text}`} data-seq={mark.seq}>
        <div className="who">
          {who} <span className="muted">· {when}</span>
        </div>
        <Markdown className="part-text" text={mark.text} />
      </div>
    );
  }
  if (mark.type === "ask") {
    const what = `${mark.ask.kind === "question" ? "Asked a question" : `Asked to ${toolShown(mark.ask.tool)}`}: ${short(mark.ask.what)}`;
    return (
      <div className="part mark mark-ask" role="note" aria-label={`${what}${answered ? "" : " (waiting for a decision)"}`} data-seq={mark.seq}>
        <span className="chip chip-warn">ask</span>{" "}
        <span className="mono small ellipsis" title={short(mark.ask.what)}>
          {what}
        </span>
        {!answered && <span className="small muted"> · waiting for a decision</span>}
        <span className="small muted"> · {when}</span>
      </div>
    );
  }
  const v = verb(mark);
  const subject = mark.ask ? `${toolShown(mark.ask.tool)} ${short(mark.ask.what)}` : mark.askId;
  // The message may quote the worker's own text (an engine refusal names the asked path): made safe like the rest.
  const told = mark.message ? showUntrusted(mark.message, { max: 1000, lines: false }) : "";
  const label = `${v}${mark.status === "decided" ? ` by ${byText(mark.by)}` : ""} — ${subject}${told ? ` · told the worker: ${told}` : ""}`;
  const tone = mark.status === "cancelled" ? "idle" : mark.decision === "reject" ? "bad" : "ok";
  return (
    <div className={`part mark mark-decision mark-${tone}`} role="note" aria-label={label} data-seq={mark.seq}>
      <span className={`chip chip-${tone}`}>{v}</span> {mark.status === "decided" && <span className="small">by {byText(mark.by)}</span>}{" "}
      <span className="mono small ellipsis" title={mark.ask ? short(mark.ask.what) : undefined}>
        — {subject}
      </span>{" "}
      <span className="small muted">· {when}</span>
      {told && <div className="small muted untrusted">told the worker: {told}</div>}
    </div>
  );
});

type Row =
  | {
      key: string;
      part: TranscriptPart;
      mark?: undefined;
      /** For text parts split into blocks: this block's text, and whether it continues an earlier block. */
      block?: string;
      cont?: boolean;
    }
  | { key: string; mark: TranscriptMark; answered: boolean; part?: undefined };

const BLOCK_LINES = 40;

/**
 * The parts in their order, with the steers, asks and decisions put in where they happened: before the first part
 * that began after them (`partSeq`: where a part began among the logged events, shared/worker.ts transcriptPlace; a
 * streamed part is logged once it ends, so a steer sent while it streamed comes after it, not above it).
 * Long text parts become several rows of BLOCK_LINES lines, so streaming only re-lays out the last block.
 */
function toRows(parts: TranscriptPart[], marks: TranscriptMark[], partSeq: Record<string, number>): Row[] {
  const rows: Row[] = [];
  const answered = new Set(marks.flatMap((m) => (m.type === "decision" ? [m.askId] : [])));
  let k = 0;
  const marksBefore = (seq: number) => {
    for (; k < marks.length && marks[k]!.seq < seq; k++) {
      const m = marks[k]!;
      rows.push({ key: `mark:${m.seq}`, mark: m, answered: m.type !== "ask" || answered.has(m.askId) });
    }
  };
  for (const p of parts) {
    marksBefore(partSeq[p.partId] ?? Number.POSITIVE_INFINITY);
    if (p.kind !== "text" || !p.text || p.text.length < 4000) {
      rows.push({ key: p.partId, part: p });
      continue;
    }
    // Blocks end only outside a code fence, so each renders as markdown on its own.
    const lines = p.text.split("\n");
    let start = 0;
    let fence = false;
    let b = 0;
    for (let i = 0; i < lines.length; i++) {
      if (/^\s*(```|~~~)/.test(lines[i]!)) fence = !fence;
      if ((i + 1 - start >= BLOCK_LINES && !fence) || i === lines.length - 1) {
        rows.push({ key: `${p.partId}#${b}`, part: p, block: lines.slice(start, i + 1).join("\n"), cont: b > 0 });
        start = i + 1;
        b++;
      }
    }
  }
  marksBefore(Number.POSITIVE_INFINITY);
  return rows;
}

const Block = memo(function Block({ text, cont }: { text: string; cont: boolean }) {
  return (
    <div className={`part text ${cont ? "cont" : ""}`}>
      {!cont && <WorkerWho />}
      <Markdown className="part-text" text={text} />
    </div>
  );
});

const NO_MARKS: TranscriptMark[] = [];
const NO_SEQS: Record<string, number> = {};
const NO_CALLS: ReadonlySet<string> = new Set();

/**
 * The live transcript, virtualized: only the rows on screen are in the DOM, so long sessions stay smooth. `marks`
 * (steers, asks, decisions) are shown between the parts by their place in the worker's log (`partSeq`).
 */
export function Transcript({
  parts,
  marks = NO_MARKS,
  partSeq = NO_SEQS,
  root = null,
  ended = false,
  waiting = NO_CALLS,
}: {
  parts: TranscriptPart[];
  marks?: TranscriptMark[];
  partSeq?: Record<string, number>;
  /** The worker's workspace: paths in it are shown relative to it. */
  root?: string | null;
  ended?: boolean;
  /** The tool calls pending asks hold (their callId). */
  waiting?: ReadonlySet<string>;
}) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const [follow, setFollow] = useState(true);
  const followRef = useRef(true);
  const rows = useMemo(() => toRows(parts, marks, partSeq), [parts, marks, partSeq]);
  // A tool of an earlier model message that still says running was cut off (a stop, then Resume): the model has
  // answered since, so it never finished. Only the latest message's tools can still run.
  const lastMessageId = useMemo(() => {
    for (let i = parts.length - 1; i >= 0; i--) if (parts[i]!.kind !== "user" && parts[i]!.messageId) return parts[i]!.messageId;
    return null;
  }, [parts]);
  const v = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => 48,
    overscan: 6,
    getItemKey: (i) => rows[i]?.key ?? i,
  });

  useLayoutEffect(() => {
    if (!followRef.current || !rows.length) return;
    const id = requestAnimationFrame(() => {
      const el = scrollRef.current;
      if (el) el.scrollTop = el.scrollHeight;
    });
    return () => cancelAnimationFrame(id);
  }, [rows, v]);

  useEffect(() => {
    const el = scrollRef.current;
    if (!el) return;
    const onScroll = () => {
      const atEnd = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
      followRef.current = atEnd;
      setFollow(atEnd);
    };
    el.addEventListener("scroll", onScroll, { passive: true });
    return () => el.removeEventListener("scroll", onScroll);
  }, []);

  return (
    <div className="transcript-wrap">
      <div className="transcript" ref={scrollRef} role="log" aria-label="Transcript" aria-live="off">
        {rows.length === 0 && <div className="muted pad">No transcript yet.</div>}
        <div className="vlist" style={{ height: v.getTotalSize() }}>
          {v.getVirtualItems().map((item) => {
            const row = rows[item.index]!;
            return (
              <div key={item.key} className="vrow" data-index={item.index} ref={v.measureElement} style={{ transform: `translateY(${item.start}px)` }}>
                {row.mark ? (
                  <Mark mark={row.mark} answered={row.answered} root={root} />
                ) : row.block !== undefined ? (
                  <Block text={row.block} cont={!!row.cont} />
                ) : (
                  <Part
                    part={row.part}
                    ended={ended || (!!lastMessageId && row.part.kind === "tool" && row.part.messageId !== lastMessageId)}
                    waiting={!!row.part.callId && waiting.has(row.part.callId)}
                  />
                )}
              </div>
            );
          })}
        </div>
      </div>
      {!follow && (
        <button
          type="button"
          className="btn small follow"
          onClick={() => {
            followRef.current = true;
            setFollow(true);
            const el = scrollRef.current;
            if (el) el.scrollTop = el.scrollHeight;
          }}
        >
          ↓ Follow
        </button>
      )}
    </div>
  );
}
