// What the dashboard shows first, and what its filters keep: pure functions over the workers (unit-tested in
// dashboard.test.ts), so the order a person sees is decided in one place. Needs-you first: a worker waiting for a
// person, then running ones, then queued, then settled; a batch ranks by its most urgent worker.
import { isAtRest, type Worker } from "./worker";

/** 0 asks a person, 1 running (starting … grading), 2 queued, 3 settled. */
type Urgency = 0 | 1 | 2 | 3;

export function urgency(w: Worker): Urgency {
  if (w.state === "waiting-approval" || w.asks.some((a) => a.status === "pending")) return 0;
  if (w.state === "queued") return 2;
  if (isAtRest(w.state)) return 3;
  return 1;
}

export type StateFilter = "all" | "needs-you" | "running" | "queued" | "settled";
export const STATE_FILTERS: readonly StateFilter[] = ["all", "needs-you", "running", "queued", "settled"];

export interface DashboardFilter {
  state: StateFilter;
  /** A worker's repository (its spec's directory); "" = any. */
  repo: string;
  /** A target id; "" = any. */
  target: string;
  /** A batch id, "single" for tasks outside a batch; "" = any. */
  batch: string;
  /**
   * Words that must all appear in the task text, the worker id or its batch's name (case-insensitive); a worker whose
   * transcript the engine found them in (workers.search: `Context.hits`) matches too.
   */
  search: string;
}

/** What the filter needs beyond a worker: the engine's transcript search hits for `search`, batch names. */
interface FilterContext {
  /** Workers whose transcript holds the search words (null: not searched, or not answered yet). */
  hits?: ReadonlySet<string> | null;
  /** Batch names by batch id. */
  names?: Readonly<Record<string, string>>;
}
export const NO_FILTER: DashboardFilter = { state: "all", repo: "", target: "", batch: "", search: "" };

const STATE_URGENCY: Record<Exclude<StateFilter, "all">, Urgency> = { "needs-you": 0, running: 1, queued: 2, settled: 3 };

export function matches(w: Worker, f: DashboardFilter, ctx: FilterContext = {}): boolean {
  if (f.state !== "all" && urgency(w) !== STATE_URGENCY[f.state]) return false;
  if (f.repo && w.spec.directory !== f.repo) return false;
  if (f.target && (w.targetId ?? "") !== f.target) return false;
  if (f.batch && (f.batch === "single" ? w.batchId !== null : w.batchId !== f.batch)) return false;
  const words = f.search.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length) {
    const hay = `${w.id}\n${w.spec.task}\n${w.spec.title ?? ""}\n${(w.batchId && ctx.names?.[w.batchId]) || ""}`.toLowerCase();
    if (!words.every((x) => hay.includes(x)) && !ctx.hits?.has(w.id)) return false;
  }
  return true;
}

export interface DashboardGroup {
  /** "" for single tasks. */
  batchId: string;
  workers: Worker[];
  /** Its most urgent worker's urgency. */
  urgency: Urgency;
  /** Every worker of it is settled (a candidate for collapse and archive). */
  settled: boolean;
}

/**
 * Groups `workers` (already in submission order) by batch and orders them needs-you first: groups by their most
 * urgent worker, then newest first; inside a group, by urgency, keeping submission order among equals. `archived`
 * batches are left out unless `showArchived`. Filters apply to workers; a group with none left is dropped.
 */
export function dashboardGroups(
  workers: Worker[],
  filter: DashboardFilter = NO_FILTER,
  archived: ReadonlySet<string> = new Set(),
  showArchived = false,
  ctx: FilterContext = {},
): DashboardGroup[] {
  const m = new Map<string, Worker[]>();
  for (const w of workers) {
    const k = w.batchId ?? "";
    if (k && archived.has(k) !== showArchived) continue;
    if (!k && showArchived) continue;
    if (!matches(w, filter, ctx)) continue;
    if (!m.has(k)) m.set(k, []);
    m.get(k)!.push(w);
  }
  const groups = [...m.entries()].map(([batchId, ws]): DashboardGroup => {
    const ranked = ws.map((w, i) => ({ w, i, u: urgency(w) })).sort((a, b) => a.u - b.u || a.i - b.i);
    return { batchId, workers: ranked.map((r) => r.w), urgency: Math.min(...ranked.map((r) => r.u)) as Urgency, settled: ranked.every((r) => r.u === 3) };
  });
  const newest = (g: DashboardGroup) => Math.max(...g.workers.map((w) => w.createdAt));
  return groups.sort((a, b) => a.urgency - b.urgency || newest(b) - newest(a) || (a.batchId === "" ? 1 : b.batchId === "" ? -1 : 0));
}

/** How many workers of each urgency, for the filter's counts. */
export function urgencyCounts(workers: Worker[]): Record<StateFilter, number> {
  const c: Record<StateFilter, number> = { all: workers.length, "needs-you": 0, running: 0, queued: 0, settled: 0 };
  for (const w of workers) c[(["needs-you", "running", "queued", "settled"] as const)[urgency(w)]]++;
  return c;
}

/** A batch as people read it: its name when it has one, else its id. */
export function batchLabel(batchId: string, names: Readonly<Record<string, string>> = {}): string {
  return names[batchId] || batchId;
}
