import { useVirtualizer } from "@tanstack/react-virtual";
import { memo, useEffect, useLayoutEffect, useMemo, useRef, useState } from "react";
import type { TranscriptPart } from "../../../shared/worker";

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
  return typeof key === "string" ? key : "";
}

const Part = memo(function Part({ part, ended }: { part: TranscriptPart; ended?: boolean }) {
  if (part.kind === "reasoning")
    return (
      <details className="part reasoning">
        <summary>Reasoning · {(part.text ?? "").length} chars</summary>
        <div className="part-text">{part.text}</div>
      </details>
    );
  if (part.kind === "tool") {
    // A tool still "running" in a worker that has ended was cut off (stop, crash, engine restart): it never finished.
    const cut = ended && (part.status === "running" || part.status === "pending");
    const status = cut ? "not finished" : (part.status ?? "…");
    return (
      <details className={`part tool tool-${part.status ?? "unknown"}`}>
        <summary>
          <span className="tool-name">{part.tool ?? "tool"}</span> <span className="mono small ellipsis">{toolHeadline(part)}</span>
          <span className={`chip chip-${cut ? "warn" : part.status === "completed" ? "ok" : part.status === "error" ? "bad" : "busy"}`}>{status}</span>
        </summary>
        <div className="tool-io">
          <div className="io-label">input</div>
          <pre>{show(part.input)}</pre>
          {(part.output || part.error) && (
            <>
              <div className="io-label">{part.error ? "error" : "output"}</div>
              <pre className={part.error ? "err" : ""}>{part.error ?? part.output}</pre>
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
        <div className="part-text">{part.text}</div>
      </div>
    );
  return (
    <div className="part text">
      <div className="part-text">{part.text}</div>
    </div>
  );
});

interface Row {
  key: string;
  part: TranscriptPart;
  /** For text parts split into blocks: this block's text, and whether it continues an earlier block. */
  block?: string;
  cont?: boolean;
}

const BLOCK_LINES = 40;

/** Long text parts become several rows of BLOCK_LINES lines, so streaming only re-lays out the last block. */
function toRows(parts: TranscriptPart[]): Row[] {
  const rows: Row[] = [];
  for (const p of parts) {
    if (p.kind !== "text" || !p.text || p.text.length < 4000) {
      rows.push({ key: p.partId, part: p });
      continue;
    }
    const lines = p.text.split("\n");
    for (let i = 0, k = 0; i < lines.length; i += BLOCK_LINES, k++) rows.push({ key: `${p.partId}#${k}`, part: p, block: lines.slice(i, i + BLOCK_LINES).join("\n"), cont: k > 0 });
  }
  return rows;
}

const Block = memo(function Block({ text, cont }: { text: string; cont: boolean }) {
  return (
    <div className={`part text ${cont ? "cont" : ""}`}>
      <div className="part-text">{text}</div>
    </div>
  );
});

/** The live transcript, virtualized: only the rows on screen are in the DOM, so long sessions stay smooth. */
export function Transcript({ parts, ended = false }: { parts: TranscriptPart[]; ended?: boolean }) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const [follow, setFollow] = useState(true);
  const followRef = useRef(true);
  const rows = useMemo(() => toRows(parts), [parts]);
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
        {parts.length === 0 && <div className="muted pad">No transcript yet.</div>}
        <div className="vlist" style={{ height: v.getTotalSize() }}>
          {v.getVirtualItems().map((item) => {
            const row = rows[item.index]!;
            return (
              <div key={item.key} className="vrow" data-index={item.index} ref={v.measureElement} style={{ transform: `translateY(${item.start}px)` }}>
                {row.block !== undefined ? <Block text={row.block} cont={!!row.cont} /> : <Part part={row.part} ended={ended} />}
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
