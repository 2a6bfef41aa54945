import { useEffect, useMemo, useRef, useState } from "react";
import { isActive, isAtRest, pendingAsks, type Worker } from "../../../shared/worker";
import { countsAsBuilt, type Verdict } from "../../../shared/verdict";
import { checksWord } from "../../../shared/vocabulary";
import { codePointMark, showUntrusted } from "../../../shared/untrusted";
import { mergeable, mergeAll, retryWorker, type MergeAllResult } from "../actions";
import { api, errorText } from "../api";
import { Empty, RetryOfChip, Sparkline, StateChip, useFocusKept, lostToName, useLostTo, useMergedSibling, VerdictChips } from "../components/common";
import { counted, duration, pct, phaseOf, taskTitle, tokens, toolShown, useNow } from "../format";
import { go, href } from "../router";
import {
  batchLabel,
  dashboardGroups,
  NO_FILTER,
  STATE_FILTERS,
  urgencyCounts,
  type DashboardFilter,
  type DashboardGroup,
  type StateFilter,
} from "../../../shared/dashboard";
import { onBatchEvent, pushNotice, sortedWorkers, useStore, ENGINE_WORDS } from "../store";
import type { BatchSummary } from "../../../shared/batch";
import type { SearchHit } from "../../../shared/api";
import { inOrder } from "../reads";
import { spendBy, spendText } from "../../../shared/cost";
import { throughput } from "../../../shared/metrics";

/** A worker interrupted because its model endpoint stopped answering (the engine's reason says so). */
const MODEL_GONE = /model endpoint .* stopped answering/;

/**
 * The model server of a target is known to be down when its latest news is a worker interrupted for that reason, with
 * no model output from a running worker of it since. (The engine does not probe endpoints on its own yet.)
 */
function modelDown(targetId: string, workers: Worker[]): { since: number; reason: string; interrupted: Worker[] } | null {
  const mine = workers.filter((w) => w.targetId === targetId);
  const gone = mine.filter((w) => w.state === "interrupted" && MODEL_GONE.test(w.stateReason ?? ""));
  if (!gone.length) return null;
  const since = Math.max(...gone.map((w) => w.endedAt ?? w.updatedAt));
  // Back when a running worker of that target has had model output since (the interrupted ones record their last
  // parts as they are cut off, so their own activity does not count).
  if (mine.some((w) => isActive(w.state) && (w.lastActivity?.ts ?? 0) > since)) return null;
  return { since, reason: gone.find((w) => (w.endedAt ?? w.updatedAt) === since)!.stateReason!, interrupted: gone };
}

export function Dashboard() {
  const workers = useStore((s) => s.workers);
  const status = useStore((s) => s.status);
  const opencode = useStore((s) => s.opencode);
  const order = useStore((s) => s.order);
  const connection = useStore((s) => s.connection);
  const targets = useStore((s) => s.targets);
  const pools = useMemo(() => targets.filter((t) => t.serving.endpoints.length > 1).map((t) => t.id), [targets]);
  const endpoints = usePoolEndpoints(pools.length > 0 && connection === "live");
  const offline = connection !== "live" && connection !== "connecting";
  // Until the engine's list has been read once, an empty list means "not known yet", not "no workers".
  const loaded = useStore((s) => s.lastContact !== null);
  const list = useMemo(() => sortedWorkers(workers, order), [workers, order]);
  const [filter, setFilter] = useState<DashboardFilter>(NO_FILTER);
  const [archived, setArchived] = useState<Set<string>>(readSet(ARCHIVE_KEY));
  const [showArchived, setShowArchived] = useState(false);
  const batchNames = useStore((s) => s.batchNames);
  // Transcript text is searched by the engine (workers.search); task text, ids and batch names here.
  const searched = useTranscriptSearch(filter.search, connection === "live");
  const hits = searched?.map ?? null;
  const hitIds = useMemo(() => (hits ? new Set(hits.keys()) : null), [hits]);
  const groups = useMemo(
    () => dashboardGroups(list, filter, archived, showArchived, { hits: hitIds, names: batchNames }),
    [list, filter, archived, showArchived, hitIds, batchNames],
  );
  const archivedCount = useMemo(() => new Set(list.filter((w) => w.batchId && archived.has(w.batchId)).map((w) => w.batchId)).size, [list, archived]);
  // The last archived batch taken back: back to the live view.
  useEffect(() => {
    if (showArchived && archivedCount === 0) setShowArchived(false);
  }, [showArchived, archivedCount]);
  const archive = (batchId: string, on: boolean) => {
    const next = new Set(archived);
    if (on) next.add(batchId);
    else next.delete(batchId);
    writeSet(ARCHIVE_KEY, next);
    setArchived(next);
  };
  const queued = list.filter((w) => w.state === "queued");

  return (
    <div className="dashboard">
      <section className="panel serving" aria-label="Serving">
        <h2>Serving</h2>
        {!status?.activeTarget && (
          <p className="muted">
            No active target. <a href={href({ name: "setup" })}>Set up a model</a> before starting workers.
          </p>
        )}
        <div className="slots-row">
          {(status?.slots ?? []).map((s) => {
            const srv = status?.opencode.find((x) => x.targetId === s.targetId);
            const live = opencode[s.targetId];
            const harness = live?.status ?? (srv ? (srv.ready ? "ready" : "starting") : "idle");
            const down = modelDown(s.targetId, list);
            // What a person needs first: is it working? Unknown when the engine is gone; down when the model is.
            const [label, tone] = offline
              ? ["unknown: engine offline", "idle"]
              : down
                ? ["model server down", "bad"]
                : harness === "ready"
                  ? ["ready", "ok"]
                  : harness === "down"
                    ? ["opencode down", "bad"]
                    : harness === "starting"
                      ? ["starting", "busy"]
                      : ["idle", "idle"];
            return (
              <div key={s.targetId} className={`slot-card ${offline ? "stale" : ""}`} aria-label={`target ${s.targetId}`} role="group">
                <div className="slot-head">
                  <strong>{s.targetId}</strong>
                  <span className={`chip chip-${tone}`} role="status" aria-label={`health of ${s.targetId}: ${label}`}>
                    {label}
                  </span>
                </div>
                <div
                  className="slot-bar"
                  role="meter"
                  aria-label={`slots in use on ${s.targetId}`}
                  aria-valuemin={0}
                  aria-valuemax={s.slots}
                  aria-valuenow={s.inUse}
                >
                  {Array.from({ length: s.slots }, (_, i) => (
                    <span key={i} className={i < s.inUse ? "on" : ""} />
                  ))}
                </div>
                <div className="muted small">
                  {offline ? "last known: " : ""}
                  {s.inUse}/{s.slots} slots on the model
                  {s.waiting ? ` · ${s.waiting} waiting for you (slot handed over)` : ""}
                  {s.queued ? ` · ${s.queued} queued` : ""}
                  {s.heldUntil && !offline
                    ? ` · the model API asked to wait until ${new Date(s.heldUntil).toLocaleTimeString()} (rate limit): none starts before`
                    : ""}
                  {!offline && live?.message ? ` · ${live.message}` : ""}
                </div>
                {down && !offline && <ModelDown targetId={s.targetId} down={down} />}
                {pools.includes(s.targetId) && <EndpointList targetId={s.targetId} rows={endpoints?.[s.targetId]} workers={list} stale={offline} />}
              </div>
            );
          })}
        </div>
      </section>

      {queued.length > 0 && <QueuePanel queued={queued} />}

      {list.length === 0 && !loaded && (
        <div className="muted pad" role="status">
          {offline ? "Workers not loaded: the engine is not reachable." : "Loading workers…"}
        </div>
      )}

      {list.length === 0 && loaded && (
        <Empty title="No workers yet">
          {/* With no model set up, a task would be refused: the first step is the model. */}
          {status && !status.activeTarget ? (
            <p>
              Workers need a model first.{" "}
              <a className="btn primary" href={href({ name: "setup" })}>
                Set up a model
              </a>
            </p>
          ) : (
            <p>
              <a className="btn primary" href={href({ name: "new" })}>
                Start a task
              </a>
            </p>
          )}
        </Empty>
      )}

      {list.length > 0 && (
        <FilterBar
          list={list}
          filter={filter}
          setFilter={setFilter}
          archivedCount={archivedCount}
          showArchived={showArchived}
          setShowArchived={setShowArchived}
        />
      )}

      {searched?.truncated && filter.search.trim() && (
        <p className="muted small" role="status">
          The transcript search stopped early (at most 50 matches, 8 MiB of each log and 96 MiB in all, newest workers first).
        </p>
      )}

      {list.length > 0 && groups.length === 0 && (
        <p className="muted pad" role="status">
          {showArchived ? "No archived batch matches." : "No worker matches these filters."}{" "}
          <button type="button" className="btn ghost small" onClick={() => setFilter(NO_FILTER)}>
            Clear filters
          </button>
        </p>
      )}

      {groups.map((g) => (
        <BatchGroup
          key={g.batchId || "single"}
          group={g}
          archived={archived.has(g.batchId)}
          onArchive={(on) => archive(g.batchId, on)}
          hits={filter.search.trim() ? hits : null}
        />
      ))}

      {list.length > 0 && <RepoCosts workers={list} />}
    </div>
  );
}

/**
 * The engine's transcript search for what is typed in the search box (2 characters or more), 300 ms after the last
 * key; null while there is nothing to search or no answer yet. An answer for an older text is dropped.
 */
function useTranscriptSearch(text: string, live: boolean): { map: Map<string, SearchHit>; truncated: boolean } | null {
  const [hits, setHits] = useState<{ q: string; map: Map<string, SearchHit>; truncated: boolean } | null>(null);
  const q = text.trim();
  useEffect(() => {
    if (q.length < 2 || !live) return;
    let current = true;
    const t = setTimeout(() => {
      void api.workers.search.query({ query: q }).then(
        (r) => current && setHits({ q, map: new Map(r.hits.map((h) => [h.workerId, h])), truncated: r.truncated }),
        (err) => current && pushNotice("warn", `search in transcripts: ${errorText(err)}`, ENGINE_WORDS),
      );
    }, 300);
    return () => {
      current = false;
      clearTimeout(t);
    };
  }, [q, live]);
  return hits && hits.q === q ? hits : null;
}

/** What the workers cost per repository: money on API targets, tokens on a model of one's own (shared/cost.ts). */
function RepoCosts({ workers }: { workers: Worker[] }) {
  const targets = useStore((s) => s.targets);
  const rows = useMemo(() => [...spendBy(workers, targets, (w) => w.spec.directory).entries()].sort((a, b) => a[0].localeCompare(b[0])), [workers, targets]);
  return (
    <section className="panel repo-costs" aria-label="Cost by repository">
      <h2>
        Cost by repository <span className="muted small">· money on API targets, tokens on your own model</span>
      </h2>
      <table className="small">
        <tbody>
          {rows.map(([repo, sp]) => (
            <tr key={repo} aria-label={`cost of ${repo}`}>
              <td className="mono ellipsis" title={repo}>
                {repo.split("/").filter(Boolean).pop() ?? repo}
              </td>
              <td className="muted">
                {sp.workers} worker{sp.workers === 1 ? "" : "s"}
              </td>
              <td>{spendText(sp, tokens)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

const ARCHIVE_KEY = "ocw.dashboard.archived";
const COLLAPSE_KEY = "ocw.dashboard.collapsed";
function readSet(key: string): Set<string> {
  try {
    const v = JSON.parse(localStorage.getItem(key) ?? "[]") as unknown;
    return new Set(Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
  } catch {
    return new Set();
  }
}
function writeSet(key: string, v: Set<string>): void {
  try {
    localStorage.setItem(key, JSON.stringify([...v]));
  } catch {
    /* storage full or off: the choice lasts for this page only */
  }
}

/** State, repository, target and batch filters and a search over task text and id; counts per state. */
function FilterBar(p: {
  list: Worker[];
  filter: DashboardFilter;
  setFilter: (f: DashboardFilter) => void;
  archivedCount: number;
  showArchived: boolean;
  setShowArchived: (v: boolean) => void;
}) {
  const { list, filter, setFilter } = p;
  const counts = useMemo(() => urgencyCounts(list), [list]);
  const repos = useMemo(() => [...new Set(list.map((w) => w.spec.directory))].sort(), [list]);
  const targets = useMemo(() => [...new Set(list.map((w) => w.targetId ?? ""))].filter(Boolean).sort(), [list]);
  const batches = useMemo(() => [...new Set(list.map((w) => w.batchId ?? ""))].filter(Boolean), [list]);
  const names = useStore((s) => s.batchNames);
  const set = (patch: Partial<DashboardFilter>) => setFilter({ ...filter, ...patch });
  const labels: Record<StateFilter, string> = { all: "All", "needs-you": "Needs you", running: "Running", queued: "Queued", settled: "Settled" };
  return (
    <div className="filter-bar" role="search" aria-label="Filter workers">
      <div className="seg" role="radiogroup" aria-label="State">
        {STATE_FILTERS.map((s) => (
          <button
            key={s}
            type="button"
            role="radio"
            aria-checked={filter.state === s}
            className={`seg-btn ${filter.state === s ? "on" : ""} ${s === "needs-you" && counts[s] ? "attn" : ""}`}
            onClick={() => set({ state: s })}
          >
            {labels[s]} <span className="count">{counts[s]}</span>
          </button>
        ))}
      </div>
      <input
        type="search"
        className="filter-search"
        placeholder="Search task, id or transcript"
        title="Words in the task, the worker id, the batch name, or anything in the transcript (model text, tool output, steers)"
        aria-label="Search task or id"
        value={filter.search}
        onChange={(e) => set({ search: e.target.value })}
      />
      {repos.length > 1 && (
        <select aria-label="Repository" value={filter.repo} onChange={(e) => set({ repo: e.target.value })}>
          <option value="">All repositories</option>
          {repos.map((r) => (
            <option key={r} value={r}>
              {r.split("/").filter(Boolean).pop() ?? r}
            </option>
          ))}
        </select>
      )}
      {targets.length > 1 && (
        <select aria-label="Target" value={filter.target} onChange={(e) => set({ target: e.target.value })}>
          <option value="">All targets</option>
          {targets.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
      )}
      {batches.length > 0 && (
        <select aria-label="Batch" value={filter.batch} onChange={(e) => set({ batch: e.target.value })}>
          <option value="">All batches</option>
          <option value="single">Outside batches</option>
          {batches.map((b) => (
            <option key={b} value={b}>
              {batchLabel(b, names)}
            </option>
          ))}
        </select>
      )}
      {(p.archivedCount > 0 || p.showArchived) && (
        <label className="small archived-toggle">
          <input type="checkbox" checked={p.showArchived} onChange={(e) => p.setShowArchived(e.target.checked)} /> Archived ({p.archivedCount})
        </label>
      )}
    </div>
  );
}

export function BatchGroup({
  group,
  archived,
  onArchive,
  hits,
}: {
  group: DashboardGroup;
  archived: boolean;
  onArchive: (on: boolean) => void;
  hits: Map<string, SearchHit> | null;
}) {
  const { batchId, workers } = group;
  const name = useStore((s) => (batchId ? (s.batchNames[batchId] ?? null) : null));
  const targets = useStore((s) => s.targets);
  const spend = useMemo(() => spendBy(workers, targets).get(""), [workers, targets]);
  const [renaming, setRenaming] = useState(false);
  // not in a batch: single tasks and the cards of attempt groups alike
  const label = batchId ? `Batch ${name ?? batchId}` : "Tasks outside batches";
  // A settled batch can be folded to its header line (remembered in this browser); it sinks below what needs you anyway.
  const [collapsedSet, setCollapsedSet] = useState(() => readSet(COLLAPSE_KEY));
  const collapsible = !!batchId && group.settled;
  const collapsed = collapsible && collapsedSet.has(batchId);
  const toggle = () => {
    const next = readSet(COLLAPSE_KEY);
    if (collapsed) next.delete(batchId);
    else next.add(batchId);
    writeSet(COLLAPSE_KEY, next);
    setCollapsedSet(next);
  };
  const graded = workers.filter((w) => w.verdict);
  // A no-op is never built (an older engine's log may say otherwise): it does not count.
  const built = graded.filter((w) => countsAsBuilt(w.verdict)).length;
  const honest = graded.filter((w) => w.verdict!.honest).length;
  const settled = workers.every((w) => isAtRest(w.state));
  const count = (f: (w: Worker) => boolean) => workers.filter(f).length;
  const bar = [
    { key: "graded", n: graded.length, label: "graded" },
    { key: "waiting", n: count((w) => w.state === "waiting-approval"), label: "waiting for you" },
    { key: "running", n: count((w) => ["starting", "running", "settled", "grading"].includes(w.state)), label: "running" },
    { key: "ended", n: count((w) => !w.verdict && isAtRest(w.state)), label: "stopped / interrupted / error" },
    { key: "queued", n: count((w) => w.state === "queued"), label: "queued" },
  ];
  return (
    <section className={`batch ${collapsed ? "collapsed" : ""}`} aria-label={batchId ? `batch ${batchId}` : "tasks outside batches"}>
      {/* Two parts that wrap each on its own: what the batch is (its name, Name…, counts, cost) and what to do with it
          (Merge all built, Archive), kept together on the first line while the window allows, else on a line below. */}
      <header className="batch-head">
        <div className="batch-title">
          {collapsible ? (
            <h2>
              <button type="button" className="btn ghost collapse-btn" aria-expanded={!collapsed} onClick={toggle}>
                <span aria-hidden="true">{collapsed ? "▸" : "▾"}</span> {label}
              </button>
            </h2>
          ) : (
            // Focusable from a script: a batch started from New task puts the focus here.
            <h2 tabIndex={-1}>{label}</h2>
          )}
          {name && <span className="mono small muted">{batchId}</span>}
          {batchId && !renaming && (
            <button type="button" className="btn ghost small" aria-label={`Rename ${batchId}`} onClick={() => setRenaming(true)}>
              {name ? "Rename" : "Name…"}
            </button>
          )}
          {batchId && renaming && <RenameBatch batchId={batchId} name={name ?? ""} done={() => setRenaming(false)} />}
          {/* The counts and the cost, one run of text: beside the name while 12rem are left there, else on a line below. */}
          <span className="batch-stats small">
            <span className="muted">
              {workers.length} worker{workers.length === 1 ? "" : "s"} · built {built}/{graded.length} ({pct(graded.length ? built / graded.length : null)}) ·
              honest {pct(graded.length ? honest / graded.length : null)}
              {settled ? " · settled" : ""}
            </span>
            {spend && (
              <>
                {" "}
                <span
                  className="batch-cost"
                  aria-label={`cost of ${batchId ? `batch ${batchId}` : "tasks outside batches"}`}
                  title="money on API targets, tokens on your own model"
                >
                  {spendText(spend, tokens)}
                </span>
              </>
            )}
          </span>
        </div>
        {batchId && (
          <div className="batch-actions">
            {!collapsed && <MergeAll batchId={batchId} workers={workers} />}
            {collapsible && (
              <button
                type="button"
                className="btn ghost small"
                onClick={() => onArchive(!archived)}
                title={archived ? "show it with the other batches again" : "hide this settled batch (Archived shows it)"}
              >
                {archived ? "Unarchive" : "Archive"}
              </button>
            )}
          </div>
        )}
      </header>
      {batchId && <BatchPlan batchId={batchId} workers={workers} />}
      {batchId && (
        <div className="batch-bar" role="img" aria-label={`progress: ${bar.map((b) => `${b.n} ${b.label}`).join(", ")}`}>
          {bar.map((b) => (b.n ? <span key={b.key} className={`bb-${b.key}`} style={{ flexGrow: b.n }} title={`${b.n} ${b.label}`} /> : null))}
        </div>
      )}
      {!collapsed && (
        <div className="cards">
          {workers.map((w) => (
            <WorkerCard key={w.id} w={w} hit={hits?.get(w.id)} />
          ))}
        </div>
      )}
    </section>
  );
}

/** Names (or renames) a batch in place: Enter saves, Escape cancels; an empty name takes the name away. */
function RenameBatch({ batchId, name, done }: { batchId: string; name: string; done: () => void }) {
  const [value, setValue] = useState(name);
  const [busy, setBusy] = useState(false);
  return (
    <form
      className="rename-batch"
      aria-label={`name of batch ${batchId}`}
      onSubmit={(e) => {
        e.preventDefault();
        setBusy(true);
        void api.workers.nameBatch
          .mutate({ batchId, name: value })
          .then(
            () => done(),
            (err) => pushNotice("error", `name of batch ${batchId}: ${errorText(err)}`, ENGINE_WORDS),
          )
          .finally(() => setBusy(false));
      }}
    >
      <input
        aria-label="Batch name"
        value={value}
        maxLength={80}
        placeholder="a name for this batch"
        autoFocus
        onChange={(e) => setValue(e.target.value)}
        onKeyDown={(e) => e.key === "Escape" && done()}
      />
      <button type="submit" className="btn primary small" disabled={busy}>
        Save
      </button>
      <button type="button" className="btn small" onClick={done}>
        Cancel
      </button>
    </form>
  );
}

/** The longest tool name an ask button's name quotes; past it, cut with "…". */
const TOOL_NAME_MAX = 40;

/**
 * A card's Approve / Reject button named for a screen reader or voice control: which worker's ask it answers and for
 * what tool ("Approve w-1a2b's bash ask"), where every card's buttons were just "Approve" and "Reject". The worker's id is
 * the engine's; the tool name comes with the ask, so it is shown as one word: every character but a letter, digit, "_",
 * "." or "-" as ⟪U+XXXX⟫ (codePointMark, as shared/untrusted.ts marks hidden ones). A name with a space in it could otherwise hold a
 * whole other button's name ("bash ask, Reject w-9c3d's edit") for voice control to match. Worker-written text
 * (its title, its command) is never part of the name: it is shown on the card, as data.
 */
export function askButtonName(verb: "Approve" | "Reject", workerId: string, tool: string): string {
  const chars = [...tool];
  const word = chars
    .slice(0, TOOL_NAME_MAX)
    .map((c) => (/^[A-Za-z0-9_.-]$/.test(c) ? c : codePointMark(c.codePointAt(0)!)))
    .join("");
  return `${verb} ${workerId}'s ${word || "unnamed"}${chars.length > TOOL_NAME_MAX ? "…" : ""} ask`;
}

function WorkerCard({ w, hit }: { w: Worker; hit?: SearchHit }) {
  const now = useNow();
  const rate = useStore((s) => s.rates[w.id]);
  const streamedChars = useStore((s) => s.streamed[w.id] ?? 0);
  const asks = pendingAsks(w);
  const pending = asks.length;
  const [busy, setBusy] = useState(false);
  // Approve or Reject on the card goes away with the focus once decided: it stays on the card, on its title.
  const cardRef = useRef<HTMLElement>(null);
  const keepFocus = useFocusKept(`${w.state} ${asks.map((a) => a.id).join()}`, () => cardRef.current?.querySelector<HTMLElement>(".card-title"));
  const act = async (label: string, fn: () => Promise<unknown>) => {
    setBusy(true);
    try {
      await fn();
    } catch (err) {
      pushNotice("error", `${label} ${w.id}: ${errorText(err)}`, ENGINE_WORDS);
    } finally {
      setBusy(false);
    }
  };
  const resumable = !w.discarded && (w.state === "stopped" || w.state === "interrupted" || w.state === "error");
  // A losing attempt (stopped because another attempt of its task was built) says so, with no Resume or Retry: its
  // task is done; its page can still resume it anyway.
  const lostTo = useLostTo(w);
  // Another attempt of its task was merged: no Retry (the task is done there; the engine refuses it), said on the card.
  const mergedSibling = useMergedSibling(w);
  const start = w.startedAt ?? w.createdAt;
  const elapsed = (w.endedAt ?? now) - start;
  // Tokens: reported, plus the text streamed since the last report (estimated). Tokens/s: over the time on the model
  // (waiting for a person, queued and grading left out); while streaming, the live estimate of the last second.
  const tp = throughput(w, now, isActive(w.state) ? streamedChars : 0);
  const total = tp.tokens;
  const liveRate = isActive(w.state) ? (rate?.[rate.length - 1] ?? null) : null;
  const avgRate = tp.tokPerSec;
  const retry = () =>
    void act("retry", async () => {
      const id = await retryWorker(w);
      pushNotice("info", `retry of ${w.id} started as ${id}`);
      go({ name: "worker", id });
    });
  // Named for its worker (the engine's id), as the ask buttons are: every card's was "Retry".
  const retryButton = mergedSibling ? (
    <span className="muted">{mergedSibling.index !== null ? `Attempt ${mergedSibling.index}` : "Another attempt"} was merged.</span>
  ) : (
    <button
      type="button"
      className="btn small"
      disabled={busy}
      aria-label={`Retry ${w.id}`}
      onClick={retry}
      title="the same task as a new worker, in a fresh workspace"
    >
      Retry
    </button>
  );
  return (
    <section className={`card worker-card tone-${w.state}`} aria-label={w.id} ref={cardRef} {...keepFocus}>
      <div className="card-top">
        <a className="card-title" href={href({ name: "worker", id: w.id })}>
          {taskTitle(w.spec)}
        </a>
        {pending > 0 && (
          <a className="badge warn" href={href({ name: "approvals", ask: asks[0]!.id })} aria-label={`${pending} pending approval${pending === 1 ? "" : "s"}`}>
            {pending} ask{pending === 1 ? "" : "s"}
          </a>
        )}
      </div>
      <div className="card-meta">
        <StateChip state={w.state} />
        {w.sandbox === "none" && (
          <span className="chip chip-bad" title="This worker runs without the OS sandbox: it can read your files and secrets">
            unsandboxed
          </span>
        )}
        {w.discarded && <span className="chip chip-idle">discarded</span>}
        <RetryOfChip of={w.retryOf} />
        {w.attempt && (
          <a
            className="chip chip-idle"
            href={href({ name: "attempts", id: w.attempt.groupId })}
            title="One of several attempts at this task: see them side by side"
          >
            attempt {w.attempt.index}/{w.attempt.of}
          </a>
        )}
        <span className="mono small muted">{w.id}</span>
      </div>
      <div className="card-stats small" aria-label={`progress of ${w.id}`}>
        {isAtRest(w.state) ? (
          <span title="from its start to its end">took {duration(elapsed)}</span>
        ) : (
          <>
            <span className="phase" title="phase">
              {phaseOf(w)}
            </span>
            <span title={w.startedAt ? "elapsed" : "waiting for a slot"}>{duration(elapsed)}</span>
          </>
        )}
        <span
          title={`tokens: in ${w.usage.input.toLocaleString()} · out ${w.usage.output.toLocaleString()}${w.usage.reasoning ? ` · reasoning ${w.usage.reasoning.toLocaleString()}` : ""} (as the target reports them)${tp.estimated ? ` + ~${tp.estimated.toLocaleString()} streamed since its last report (estimated)` : ""}`}
        >
          {total ? `${tp.estimated ? "~" : ""}${tokens(total)} tok` : "— tok"}
        </span>
        <span
          title={
            liveRate !== null
              ? "output tokens in the last second (estimated from streamed text)"
              : `output tokens per second over its ${duration(tp.modelSec * 1000)} on the model (time waiting for you, queued or grading left out)`
          }
        >
          {liveRate !== null && liveRate > 0 ? `~${liveRate} tok/s` : avgRate !== null ? `${avgRate.toFixed(1)} tok/s` : "— tok/s"}
        </span>
      </div>
      <div className="card-row">
        <span className="small">
          {w.currentTool ? (
            <>
              tool <code>{toolShown(w.currentTool)}</code>
            </>
          ) : (
            // The last activity is the model's first line, a reason may name the worker's files: its text, made safe. A
            // losing attempt's reason is said below it in words: its last line here.
            <span className="muted untrusted">
              {w.stalled
                ? "stalled"
                : showUntrusted((isAtRest(w.state) && !w.verdict && !lostTo ? w.stateReason : null) ?? w.lastActivity?.summary ?? w.stateReason ?? "—", {
                    lines: false,
                    max: 300,
                  })}
            </span>
          )}
        </span>
        {/* The live rate chart is for a worker at work; at rest its average is in the stats and its last line gets the width. */}
        {!isAtRest(w.state) && <Sparkline values={rate ?? []} label={`tokens per second of ${w.id}`} />}
      </div>
      {(w.verdict || w.toolFailures > 0 || w.stalled) && (
        <div className="card-foot small">
          {w.verdict && <VerdictChips verdict={w.verdict} />}
          {w.merged && <span className="chip chip-ok">merged</span>}
          {w.toolFailures > 0 && <span className="chip chip-warn">{counted(w.toolFailures, "tool failure")}</span>}
          {w.stalled && <span className="chip chip-warn">stalled</span>}
        </div>
      )}
      {hit && (
        <div className="card-hit small" aria-label={`transcript match in ${w.id}`}>
          <a className="io-label" href={href({ name: "worker", id: w.id })} title="open its transcript">
            {hit.where === "tool" ? "tool" : hit.where === "steer" ? "steer" : "transcript"}
          </a>{" "}
          <span className="untrusted muted" title="text the worker or its model wrote: data, not instructions">
            {hit.untrusted.snippet}
          </span>
        </div>
      )}
      {pending > 0 && (
        <div className="card-ask card-ask-pending small">
          {/* The buttons go below it, together, when it does not fit beside them, and it wraps: cut to one line beside
              them, 900 px wide it read "edit: name…", the file unreadable. */}
          <span className="mono card-ask-what" title={showUntrusted(asks[0]!.what, { max: 1000, lines: false })}>
            {asks[0]!.kind === "question" ? "question" : toolShown(asks[0]!.tool)}:{" "}
            {showUntrusted(w.worktree ? asks[0]!.what.split(w.worktree + "/").join("") : asks[0]!.what, { max: 300, lines: false })}
          </span>
          <span className="card-ask-do">
            {asks[0]!.kind === "permission" && (
              <>
                <button
                  type="button"
                  className="btn ok small"
                  disabled={busy}
                  aria-label={askButtonName("Approve", w.id, asks[0]!.tool)}
                  onClick={() => void act("approve", () => api.approvals.decide.mutate({ askId: asks[0]!.id, decision: "once" }))}
                >
                  Approve
                </button>
                <button
                  type="button"
                  className="btn bad small"
                  disabled={busy}
                  aria-label={askButtonName("Reject", w.id, asks[0]!.tool)}
                  onClick={() => void act("reject", () => api.approvals.decide.mutate({ askId: asks[0]!.id, decision: "reject" }))}
                >
                  Reject
                </button>
              </>
            )}
            <a className="small" href={href({ name: "approvals", ask: asks[0]!.id })}>
              {asks[0]!.kind === "question" ? "Answer…" : "Diff…"}
            </a>
          </span>
        </div>
      )}
      {resumable && lostTo && (
        <div className="card-ask small">
          <span className="muted grow">Stopped: {lostToName(lostTo)} was built.</span>
        </div>
      )}
      {resumable && !lostTo && (
        <div className="card-ask small">
          <span className="muted grow">
            {w.state === "interrupted"
              ? "Interrupted: its session can be resumed."
              : w.state === "stopped"
                ? "Stopped: it can be resumed."
                : "Ended in an error."}
          </span>
          {/* Named for its worker (the engine's id), as the ask buttons are: every card's was "Resume". */}
          <button
            type="button"
            className="btn small"
            disabled={busy}
            aria-label={`Resume ${w.id}`}
            onClick={() => void act("resume", () => api.workers.resume.mutate({ workerId: w.id }))}
          >
            Resume
          </button>
          {retryButton}
        </div>
      )}
      {w.state === "honest-failure" && (
        <div className="card-ask small">
          <span className="muted grow">{failedWhy(w.verdict)}</span>
          {retryButton}
        </div>
      )}
    </section>
  );
}

/**
 * Why a failed worker failed, in one line for its card: its checks only when one of them failed (a worker that changed
 * nothing fails with every check passing, and "failed its checks" would tell it wrong).
 */
export function failedWhy(v: Verdict | null): string {
  if (!v) return "Failed.";
  if (v.scope.snapshotCap) return "Failed: its files were too large to grade.";
  if (v.scope.checkConfig?.length) return "Failed: it changed what its checks run.";
  const failing = v.checks.filter((c) => !c.passed).length;
  if (failing) return failing === v.checks.length ? "Failed its checks." : `Failed ${failing} of its ${v.checks.length} checks.`;
  if (!v.scope.passed) return "Failed: it changed files outside its scope.";
  if (!v.scope.changedFiles.length) return "Failed: it changed no file.";
  return "Failed.";
}

/** Queued workers listed above the cards: the first few (a long queue would push the workers that need you out of view). */
export const QUEUE_SHOWN = 5;

/** The queue, in the order the engine starts them: the first QUEUE_SHOWN, and the rest on request. */
export function QueuePanel({ queued }: { queued: Worker[] }) {
  const [all, setAll] = useState(false);
  const shown = all ? queued : queued.slice(0, QUEUE_SHOWN);
  const more = queued.length - QUEUE_SHOWN;
  return (
    <section className="panel queue" aria-label="Queue">
      <h2>
        Queue <span className="muted">· {queued.length} waiting for a free slot</span>
      </h2>
      <ol className="queue-list">
        {shown.map((w) => (
          <li key={w.id}>
            <a href={href({ name: "worker", id: w.id })}>{w.id}</a> — {taskTitle(w.spec)}
          </li>
        ))}
      </ol>
      {more > 0 && (
        <p className="small muted">
          {all ? "" : `and ${more} more. `}
          <button type="button" className="linklike small" aria-expanded={all} onClick={() => setAll(!all)}>
            {all ? `Show the first ${QUEUE_SHOWN} only` : `Show all ${queued.length} queued`}
          </button>
        </p>
      )}
    </section>
  );
}

function ModelDown({ targetId, down }: { targetId: string; down: NonNullable<ReturnType<typeof modelDown>> }) {
  const [busy, setBusy] = useState(false);
  return (
    <div className="model-down small" role="alert" aria-label={`model server of ${targetId} is down`}>
      {showUntrusted(down.reason, { lines: false, max: 800 })}
      <div className="actions">
        <span className="muted">Restart the model server, then:</span>
        <button
          type="button"
          className="btn small"
          disabled={busy}
          onClick={() => {
            setBusy(true);
            void Promise.all(
              down.interrupted.map((w) =>
                api.workers.resume.mutate({ workerId: w.id }).catch((err) => pushNotice("error", `resume ${w.id}: ${errorText(err)}`, ENGINE_WORDS)),
              ),
            ).finally(() => setBusy(false));
          }}
        >
          Resume {down.interrupted.length} interrupted
        </button>
      </div>
    </div>
  );
}

type EndpointRows = Awaited<ReturnType<typeof api.targets.endpoints.query>>[number]["endpoints"];

/**
 * The endpoints of pool targets as admission sees them. The engine has no event for endpoint health or load (it reads
 * them every couple of seconds while a pool has work), so this view reads them every 3 s while it is shown.
 */
function usePoolEndpoints(on: boolean): Record<string, EndpointRows> | null {
  const [rows, setRows] = useState<Record<string, EndpointRows> | null>(null);
  const [inTurn] = useState(inOrder);
  useEffect(() => {
    if (!on) return;
    let alive = true;
    const read = () => inTurn(api.targets.endpoints.query(), (r) => alive && setRows(Object.fromEntries(r.map((x) => [x.targetId, x.endpoints]))));
    void read();
    const t = setInterval(() => void read(), 3000);
    return () => {
      alive = false;
      clearInterval(t);
    };
  }, [on, inTurn]);
  return rows;
}

/** Each endpoint of a pool: healthy or why not, the engine's workers on it out of its slots, and the server's own load. */
function EndpointList({ targetId, rows, workers, stale }: { targetId: string; rows: EndpointRows | undefined; workers: Worker[]; stale: boolean }) {
  if (!rows) return <div className="muted small">reading endpoints…</div>;
  return (
    <ul className="endpoints" aria-label={`endpoints of ${targetId}`}>
      {rows.map((e) => {
        const on = workers.filter((w) => w.targetId === targetId && w.endpoint === e.url && isActive(w.state)).length;
        const live = e.live;
        return (
          <li key={e.url} className="endpoint" aria-label={`endpoint ${e.url}`}>
            <span className={`chip chip-${stale ? "idle" : e.healthy ? "ok" : "bad"}`}>{stale ? "unknown" : e.healthy ? "healthy" : "down"}</span>
            <span className="mono small ellipsis" title={e.url}>
              {e.url.replace(/^https?:\/\//, "")}
            </span>
            <span className="small" title={`${on} of this dashboard's running workers are on it`}>
              {e.inUse}/{e.slots} slots
            </span>
            <span className="small muted">
              {live
                ? `server: ${live.busy}${live.totalSlots !== null ? `/${live.totalSlots}` : ""} busy · queue ${live.waiting ?? "—"}${live.kvUsage !== null ? ` · KV ${Math.round(live.kvUsage * 100)}%` : ""} (${live.source})`
                : e.healthy
                  ? "server reports no load"
                  : ""}
            </span>
            {!e.healthy && e.problem && <span className="small bad-text">{e.problem}</span>}
          </li>
        );
      })}
    </ul>
  );
}

/** The engine merges every built, unmerged worker of a batch, one by one in submission order, stopping at the first refusal. */
function MergeAll({ batchId, workers }: { batchId: string; workers: Worker[] }) {
  const todo = workers.filter(mergeable);
  const [confirm, setConfirm] = useState(false);
  const [running, setRunning] = useState(false);
  const [result, setResult] = useState<MergeAllResult | null>(null);
  if (!todo.length && !result) return null;
  const start = async () => {
    setConfirm(false);
    setRunning(true);
    setResult(null);
    let r: MergeAllResult;
    try {
      r = await mergeAll(batchId);
    } catch (err) {
      // Refused as a whole (another merge of this batch is under way, the engine is gone): nothing was merged by this call.
      setRunning(false);
      return pushNotice("error", `merge all built of ${batchId}: ${errorText(err)}`, ENGINE_WORDS);
    }
    setResult(r);
    setRunning(false);
    if (!r.stopped) pushNotice("info", `merged ${r.merged.length} worker${r.merged.length === 1 ? "" : "s"}`);
  };
  return (
    <div className="merge-all" role="group" aria-label="Merge all built">
      {confirm ? (
        <>
          <span className="small">
            Merge {todo.length} built worker{todo.length === 1 ? "" : "s"} into their base branch, one by one? A refused merge (a conflict) stops here and
            changes nothing for it.
          </span>
          <button type="button" className="btn primary small" onClick={() => void start()}>
            Merge {todo.length}
          </button>
          <button type="button" className="btn small" onClick={() => setConfirm(false)}>
            Cancel
          </button>
        </>
      ) : (
        todo.length > 0 && (
          <button type="button" className="btn small" disabled={running} onClick={() => setConfirm(true)}>
            {running ? "merging…" : `Merge all built (${todo.length})…`}
          </button>
        )
      )}
      {result && (
        <span className="small" role="status">
          merged {result.merged.length}
          {result.stopped ? "" : " · done"}
        </span>
      )}
      {result?.stopped && (
        <div className="field-error" role="alert" aria-label="merge all stopped">
          Stopped at <a href={href({ name: "worker", id: result.stopped.workerId })}>{result.stopped.workerId}</a>:{" "}
          {showUntrusted(result.stopped.reason, { lines: false, max: 2000 })}
          {result.notTried.length ? ` · not tried: ${result.notTried.join(", ")}` : ""}
        </div>
      )}
    </div>
  );
}

/**
 * The batch's plan as the engine keeps it: each task with the tasks it comes after (drawn as "a → b"), the tasks
 * skipped with why, and the integration verdict beside the workers' own. Refetched on the batch's own events and when
 * its workers change.
 */
function BatchPlan({ batchId, workers }: { batchId: string; workers: Worker[] }) {
  const [plan, setPlan] = useState<BatchSummary | null>(null);
  const [read] = useState(inOrder);
  const sig = workers.map((w) => `${w.id}:${w.state}:${w.merged ? 1 : 0}`).join(",");
  useEffect(() => {
    let live = true;
    // A batch event reads it again while an earlier read may still be on its way: the newest answer stands.
    const load = () => void read(api.workers.batch.query({ batchId }), (b) => live && setPlan(b));
    load();
    const off = onBatchEvent((id) => id === batchId && load());
    return () => {
      live = false;
      off();
    };
  }, [batchId, sig, read]);
  if (!plan || (!plan.tasks.some((t) => t.after.length) && !plan.integration && !plan.skipped.length)) return null;
  const byId = new Map(workers.map((w) => [w.id, w]));
  const stateOf = (t: BatchSummary["tasks"][number]) => (t.skipped ? "skipped" : t.workerId ? (byId.get(t.workerId)?.state ?? "queued") : "waiting");
  const integ = plan.integration;
  const res = integ?.result ?? null;
  return (
    <div className="batch-plan" aria-label={`plan of batch ${batchId}`}>
      {plan.tasks.some((t) => t.after.length) && (
        <ol className="deps" aria-label="task dependencies">
          {plan.tasks.map((t) => (
            <li
              key={t.id}
              className={`dep dep-${stateOf(t)}`}
              aria-label={`task ${t.id}${t.after.length ? ` after ${t.after.join(", ")}` : ""}: ${stateWord(stateOf(t))}`}
            >
              {t.after.length > 0 && <span className="dep-after">{t.after.join(" + ")} →</span>}
              <strong>{t.id}</strong> <span className={`chip chip-${toneOf(stateOf(t))}`}>{stateWord(stateOf(t))}</span>
              {t.workerId ? (
                <a className="small" href={href({ name: "worker", id: t.workerId })}>
                  {t.workerId}
                </a>
              ) : null}
              {t.skipped && <span className="small muted"> skipped: {showUntrusted(t.skipped, { lines: false, max: 500 })}</span>}
              {!t.workerId && !t.skipped && (
                <span className="small muted">
                  {" "}
                  starts once {t.after.join(", ")} {t.after.length === 1 ? "is" : "are"} built
                </span>
              )}
            </li>
          ))}
        </ol>
      )}
      {integ && (
        <div className={`integration integration-${res ? (res.passed ? "passed" : "failed") : integ.state}`} role="group" aria-label="integration verdict">
          <span className="io-label">integration</span>{" "}
          <span
            className={`chip chip-${res ? (res.passed ? "ok" : "bad") : "idle"}`}
            aria-label={`integration: ${res ? (res.passed ? "passed" : "failed") : integ.state}`}
          >
            {res ? (res.passed ? "passed" : "failed") : integ.state === "running" ? "checks running" : "waiting for the tasks"}
          </span>
          {res && (
            <span className="small">
              {" "}
              {checksWord(res.checks)} · {res.workers.length} worker{res.workers.length === 1 ? "" : "s"} combined
              {res.commit ? (
                <>
                  {" "}
                  · <code>{res.commit.slice(0, 8)}</code>
                </>
              ) : null}
              {res.landed ? ` · landed on ${res.landed.into}` : ""}
            </span>
          )}
          {res?.reason && <div className="small field-error">{showUntrusted(res.reason, { lines: false, max: 800 })}</div>}
          {res?.passed && res.commit && <BatchPush batchId={batchId} />}
          {res?.checks.map((c, i) => (
            <div key={i} className="small">
              <span className={`chip chip-${c.passed ? "ok" : "bad"}`}>{c.passed ? "pass" : "fail"}</span> <code>{c.name}</code>
            </div>
          ))}
        </div>
      )}
    </div>
  );
}

const stateWord = (s: string) => (s === "honest-failure" ? "failed" : s);
const toneOf = (s: string) =>
  s === "built" ? "ok" : s === "honest-failure" || s === "error" || s === "skipped" ? "bad" : s === "waiting" || s === "queued" ? "idle" : "busy";

/** Push a batch's passed integration commit to a branch on a remote, and open a pull request with gh. */
function BatchPush({ batchId }: { batchId: string }) {
  const [open, setOpen] = useState(false);
  const [remote, setRemote] = useState("origin");
  const [branch, setBranch] = useState("");
  const [pr, setPr] = useState(true);
  const [busy, setBusy] = useState(false);
  if (!open)
    return (
      <button type="button" className="btn small" onClick={() => setOpen(true)}>
        Push integration commit…
      </button>
    );
  return (
    <form
      className="push-form"
      aria-label={`push batch ${batchId}`}
      onSubmit={(e) => {
        e.preventDefault();
        setBusy(true);
        void api.workers.push
          .mutate({ batchId, remote, ...(branch ? { branch } : {}), pr })
          .then(
            (r) => (
              pushNotice(
                "info",
                `pushed ${r.commit.slice(0, 8)} to ${r.remote} ${r.branch}${r.pr ? ` · pull request ${r.pr.url}` : r.prProblem ? ` · no pull request: ${r.prProblem}` : ""}`,
              ),
              setOpen(false)
            ),
            (err) => pushNotice("error", `push of ${batchId}: ${errorText(err)}`, ENGINE_WORDS),
          )
          .finally(() => setBusy(false));
      }}
    >
      <input aria-label="remote" value={remote} onChange={(e) => setRemote(e.target.value)} placeholder="origin" required />{" "}
      <input aria-label="branch" value={branch} onChange={(e) => setBranch(e.target.value)} placeholder={`ocw/${batchId}`} />{" "}
      <label className="small">
        <input type="checkbox" checked={pr} onChange={(e) => setPr(e.target.checked)} /> pull request
      </label>{" "}
      <button type="submit" className="btn primary small" disabled={busy || !remote}>
        Push
      </button>
    </form>
  );
}
