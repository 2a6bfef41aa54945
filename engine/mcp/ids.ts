// An id of one kind where another kind belongs (a batch's id as workerId, a worker's as batchId, an ask's as workerId):
// the commonest slip of a model juggling a batch's ids. The engine only answers "unknown worker"/"unknown batch", which
// reads as if the id were wrong; the bridge says which kind it is and the call that takes it, before the engine is asked.
// Ids of no known shape are left to the engine.

type Kind = "worker" | "batch" | "ask" | "attempts group";

const PREFIXES: [string, Kind][] = [
  ["w-", "worker"],
  ["b-", "batch"],
  ["a-", "attempts group"],
  ["per_", "ask"],
  ["que_", "ask"],
];

function kindOf(id: unknown): Kind | null {
  if (typeof id !== "string") return null;
  return PREFIXES.find(([p]) => id.startsWith(p))?.[1] ?? null;
}

/** Tools that take a batchId beside (or instead of) a workerId. */
const TAKES_BATCH = new Set(["wait", "pending_approvals", "merge", "push", "workers"]);
/** Tools that take a workerId beside a batchId. */
const TAKES_WORKER = new Set(["wait", "pending_approvals", "merge", "push"]);

const q = (s: string) => JSON.stringify(s.length > 60 ? `${s.slice(0, 60)}…` : s);

/** What to call with an id of `kind` instead of the argument it was given as, in this tool. */
function instead(tool: string, kind: Kind, id: string): string {
  const v = q(id);
  if (kind === "batch")
    return TAKES_BATCH.has(tool)
      ? `${tool} {"batchId":${v}}`
      : `${tool} takes one worker: workers {"batchId":${v}} lists this batch's workers (give one of their workerIds), and wait {"batchId":${v}} follows them all`;
  if (kind === "worker")
    return TAKES_WORKER.has(tool)
      ? `${tool} {"workerId":${v}}`
      : tool === "approve"
        ? `pending_approvals {"workerId":${v}} lists this worker's asks; approve each by its askId`
        : `worker_status {"workerId":${v}} shows that worker (workers lists the batches' workers)`;
  if (kind === "ask")
    return tool === "approve"
      ? `approve {"askId":${v},"decision":"once"|"always"|"reject"}`
      : `it is answered with approve {"askId":${v},"decision":…}; pending_approvals shows it with its worker's id`;
  return `result of any of its workers shows every attempt and the winner (workers lists them)`;
}

/**
 * The message for an id given as the wrong kind in these raw arguments (workerId, workerIds, batchId, askId), or null.
 * approve's askId with a worker's or batch's id is left to approve's own answer (it knows the ask is unknown first).
 */
export function idSlip(tool: string, raw: Record<string, unknown>): string | null {
  const check = (arg: string, want: Kind, id: unknown): string | null => {
    const kind = kindOf(id);
    if (!kind || kind === want) return null;
    const article = kind === "ask" || kind === "attempts group" ? "an" : "a";
    return `${q(id as string)} is ${article} ${kind} id, not a ${arg}: ${instead(tool, kind, id as string)}`;
  };
  const ids = Array.isArray(raw.workerIds) ? raw.workerIds : [];
  return (
    check("workerId", "worker", raw.workerId) ??
    ids.map((id) => check("workerIds entry", "worker", id)).find(Boolean) ??
    check("batchId", "batch", raw.batchId) ??
    null
  );
}
