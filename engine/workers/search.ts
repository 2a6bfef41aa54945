/**
 * workers.search: the workers whose stored transcript holds every word of a query (case-insensitive), newest first,
 * each with a snippet around the first word's first place. What is read: each worker's log (`part` events — model
 * text, reasoning, tool calls and their output — and steers), plus the text of parts still streaming. Bounded: at most
 * `PER_LOG_BYTES` of each log and `TOTAL_BYTES` per query are read, and at most `limit` workers are returned;
 * `truncated` says when a bound cut the search short. Snippets are a worker's or a model's text: returned under
 * `untrusted`, made visible by the shared sanitizer (shared/untrusted.ts), never instructions.
 */
import { closeSync, existsSync, openSync, readSync, statSync } from "node:fs";
import type { SearchHit, SearchResult } from "../../shared/api";
import { showUntrusted } from "../../shared/untrusted";
import type { TranscriptPart, Worker } from "../../shared/worker";

export const PER_LOG_BYTES = 8 * 1024 * 1024;
const TOTAL_BYTES = 96 * 1024 * 1024;
const SNIPPET = 70;

interface SearchSource {
  /** Workers, any order (searched newest first). */
  workers: readonly Worker[];
  /** The path of a worker's events.jsonl. */
  logFile: (workerId: string) => string;
  /** Parts still streaming (not logged yet). */
  streaming: (workerId: string) => Iterable<TranscriptPart>;
}

type Where = SearchHit["where"];

/** The searchable texts of one logged event line (a part or a steer), or none. */
function textsOf(line: string): { where: Where; text: string }[] {
  // Cheap filter before parsing: only parts and steers hold transcript text.
  if (!line.includes('"type":"part"') && !line.includes('"type":"steer.sent"')) return [];
  let e: { type?: string; part?: TranscriptPart; text?: string };
  try {
    e = JSON.parse(line);
  } catch {
    return []; // a torn line
  }
  if (e.type === "steer.sent" && typeof e.text === "string") return [{ where: "steer", text: e.text }];
  if (e.type === "part" && e.part) return partTexts(e.part);
  return [];
}

function partTexts(p: TranscriptPart): { where: Where; text: string }[] {
  if (p.kind === "user") return [];
  if (p.kind === "tool") {
    const out: { where: Where; text: string }[] = [];
    if (p.input !== undefined) out.push({ where: "tool", text: typeof p.input === "string" ? p.input : JSON.stringify(p.input) });
    if (p.output) out.push({ where: "tool", text: p.output });
    if (p.error) out.push({ where: "tool", text: p.error });
    return out;
  }
  return p.text ? [{ where: p.kind === "reasoning" ? "reasoning" : "text", text: p.text }] : [];
}

function snippetOf(text: string, at: number, len: number): string {
  const from = Math.max(0, at - SNIPPET);
  const to = Math.min(text.length, at + len + SNIPPET);
  const piece = `${from > 0 ? "…" : ""}${text.slice(from, to)}${to < text.length ? "…" : ""}`;
  return showUntrusted(piece.replace(/\s+/g, " "), { lines: false, max: 2 * SNIPPET + len + 2 });
}

/** The first `max` bytes of a file (a log over it is searched in its first part only). */
function readHead(file: string, max: number): { text: string; cut: boolean } {
  const size = statSync(file).size;
  const n = Math.min(size, max);
  const buf = Buffer.alloc(n);
  const fd = openSync(file, "r");
  try {
    let off = 0;
    while (off < n) {
      const r = readSync(fd, buf, off, n - off, off);
      if (!r) break;
      off += r;
    }
  } finally {
    closeSync(fd);
  }
  return { text: buf.toString("utf8"), cut: size > max };
}

export function searchTranscripts(src: SearchSource, query: string, limit: number): SearchResult {
  const words = [...new Set(query.toLowerCase().split(/\s+/).filter(Boolean))];
  const hits: SearchHit[] = [];
  let budget = TOTAL_BYTES;
  let scanned = 0;
  let truncated = false;
  const newest = [...src.workers].sort((a, b) => b.createdAt - a.createdAt || (b.createdSeq ?? 0) - (a.createdSeq ?? 0));
  for (const w of newest) {
    if (hits.length >= limit) {
      truncated = true;
      break;
    }
    if (budget <= 0) {
      truncated = true;
      break;
    }
    const found = new Set<string>();
    let first: SearchHit | null = null;
    const look = (where: Where, text: string) => {
      if (found.size === words.length && first) return;
      const low = text.toLowerCase();
      for (const word of words) {
        const at = low.indexOf(word);
        if (at < 0) continue;
        found.add(word);
        if (!first && word === words[0]) first = { workerId: w.id, where, untrusted: { snippet: snippetOf(text, at, word.length) } };
      }
    };
    const file = src.logFile(w.id);
    if (existsSync(file)) {
      const { text, cut } = readHead(file, Math.min(PER_LOG_BYTES, budget));
      budget -= Buffer.byteLength(text);
      if (cut) truncated = true;
      scanned++;
      for (const line of text.split("\n")) {
        for (const t of textsOf(line)) look(t.where, t.text);
        if (found.size === words.length && first) break;
      }
    }
    if (found.size < words.length || !first) for (const p of src.streaming(w.id)) for (const t of partTexts(p)) look(t.where, t.text);
    if (found.size === words.length && first) hits.push(first);
  }
  return { hits, scanned, truncated };
}
