// A worker's tokens and speed as every client shows them, in one pure function (unit-tested in metrics.test.ts).
// Tokens: what the target reported (opencode's usage, per finished model step) plus, while it streams, an estimate of
// the text streamed since that report (≈ 4 characters a token), so the count moves while the model writes instead of
// jumping when a step ends. Speed: output tokens over the time the worker was on the model (running with no ask
// waiting for a person): queued, starting, waiting for a person, settled and grading time are left out.
import type { Usage, Worker } from "./worker";

/** Characters per token for the streamed-text estimate (the usual figure for English text and code). */
const CHARS_PER_TOKEN = 4;

interface Throughput {
  /** Input + output + reasoning as reported, plus the estimate of text streamed since. */
  tokens: number;
  /** Output + reasoning as reported, plus the estimate. */
  output: number;
  /** Tokens in `tokens` that are an estimate (streamed text the target has not reported yet); 0 when all are reported. */
  estimated: number;
  /** Seconds on the model so far. */
  modelSec: number;
  /** Output tokens per second over `modelSec`; null with no time on the model or no output yet. */
  tokPerSec: number | null;
}

/** Milliseconds on the model at `now`: the closed intervals plus the open one. */
export function modelMs(w: Pick<Worker, "modelMs" | "modelSince">, now: number): number {
  const open = w.modelSince != null ? Math.max(0, now - w.modelSince) : 0;
  return (w.modelMs ?? 0) + open;
}

/**
 * Tokens and tok/s of a worker at `now`. `streamedChars`: characters of model text streamed since the last usage
 * report the client saw (0 when not known, or once a report has come).
 */
export function throughput(w: Pick<Worker, "usage" | "modelMs" | "modelSince">, now: number, streamedChars = 0): Throughput {
  const u: Usage = w.usage;
  const estimated = Math.max(0, Math.round(streamedChars / CHARS_PER_TOKEN));
  const output = u.output + u.reasoning + estimated;
  const modelSec = modelMs(w, now) / 1000;
  return {
    tokens: u.input + u.output + u.reasoning + estimated,
    output,
    estimated,
    modelSec,
    tokPerSec: modelSec > 0 && output > 0 ? output / modelSec : null,
  };
}
