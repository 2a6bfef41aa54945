// Small formatting helpers for the setup wizard (sizes, context, placement words).
import { CPU_SLOTS_NOTE, type Placement } from "../../../../shared/fit";

export const GiB = 1024 ** 3;

export function gib(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined) return "?";
  return `${(bytes / GiB).toFixed(bytes >= 10 * GiB ? 0 : 1)} GiB`;
}

/**
 * A catalog entry's GGUF quants: how many and their size range, one size when all are the same; an entry with none
 * (served by vLLM / SGLang only) says so, never "0 · Infinity GiB–-Infinity GiB".
 */
export function quantsText(sizes: number[]): string {
  if (!sizes.length) return "none (no GGUF)";
  const lo = gib(Math.min(...sizes));
  const hi = gib(Math.max(...sizes));
  return `${sizes.length} · ${lo === hi ? lo : `${lo}–${hi}`}`;
}

export function ctxText(tokens: number): string {
  return tokens >= 1024 && tokens % 1024 === 0 ? `${tokens / 1024}k` : tokens.toLocaleString();
}

export const PLACEMENT: Record<Placement, { label: string; tone: "ok" | "warn" }> = {
  gpu: { label: "fits · on GPU", tone: "ok" },
  "moe-offload": { label: "fits · experts in RAM", tone: "ok" },
  partial: { label: "fits · partial offload (slow)", tone: "warn" },
  cpu: { label: "fits · CPU only (slow)", tone: "warn" },
};

/** A shell word, quoted when it needs to be. */
export function sh(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * A start phase's chip: its status, except that Verify is not green when the verdict is not "built" (an underpowered or
 * unverified model finished verifying, but did not pass it).
 */
export function phaseChip(
  p: { name: string; status: "pending" | "running" | "done" | "failed" | "skipped" },
  outcome?: "built" | "underpowered" | "cannot-build" | "unverified" | null,
): { tone: "ok" | "warn" | "bad" | "busy" | "idle"; text: string } {
  if (p.name === "verify" && p.status === "done" && outcome && outcome !== "built") return { tone: outcome === "cannot-build" ? "bad" : "warn", text: outcome };
  const tone = p.status === "done" ? "ok" : p.status === "failed" ? "bad" : p.status === "running" ? "busy" : "idle";
  return { tone, text: p.status };
}

/**
 * A job's picture from an answer or an event: answers and events of one job can cross (its end shown before the answer
 * that started it), and an ended job never goes back to running.
 */
export function newerJob<J extends { jobId: string; state: string }>(prev: J | null, j: J): J {
  return prev && prev.jobId === j.jobId && prev.state !== "running" && j.state === "running" ? prev : j;
}

/**
 * A hardware note as the Setup screen shows it: the CPU-only slots note points at the Slots field on this screen (it
 * said "set Slots in Setup" to a person on Setup); `slotsShown`: that field is on screen (the route "Run a model on
 * this machine" is chosen). Every other note is the engine's words as they are.
 */
export function hardwareNote(note: string, slotsShown: boolean): string {
  if (note !== CPU_SLOTS_NOTE) return note;
  const head = "CPU only: 1 slot by default (decode speed is shared by all slots); for more, ";
  return head + (slotsShown ? "set Slots below" : "choose “Run a model on this machine” below and set its Slots");
}
