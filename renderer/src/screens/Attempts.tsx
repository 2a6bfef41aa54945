import { useEffect, useMemo, useRef, useState } from "react";
import { attemptGroup, type AttemptRow } from "../../../shared/attempts";
import { showUntrusted, showUntrustedLines } from "../../../shared/untrusted";
import { api, errorText } from "../api";
import { Empty, lostToName, Modal, StateChip, useLostTo, VerdictChips } from "../components/common";
import { Diff } from "../components/LazyDiff";
import { duration, STATE_LABEL, taskTitle, tokens } from "../format";
import { href } from "../router";
import { pushNotice, useStore } from "../store";

/**
 * The attempts of one task side by side (verdict, claim, tokens, time, changed lines, diff) and the winner the held-back
 * checks picked: built and honest, fewest changed lines, then earliest verdict. The engine picks it (shared/attempts.ts);
 * this screen folds the same workers with the same function.
 */
export function Attempts({ groupId }: { groupId: string }) {
  const workers = useStore((s) => s.workers);
  const g = useMemo(() => attemptGroup(groupId, Object.values(workers)), [groupId, workers]);
  const winner = g.winner ? workers[g.winner] : undefined;
  const [shown, setShown] = useState<string | null>(null);
  const [confirm, setConfirm] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const headRef = useRef<HTMLHeadingElement>(null);
  const diffOf = shown ?? g.winner ?? g.attempts.find((a) => a.verdict)?.workerId ?? null;

  if (!g.attempts.length) return <Empty title={`No attempts ${groupId}`}>It may belong to another engine run. Go back to the dashboard.</Empty>;
  const first = workers[g.attempts[0]!.workerId]!;
  const canMerge = !!winner && winner.state === "built" && !winner.merged && !winner.discarded;

  return (
    <div className="detail attempts-screen">
      <section className="panel detail-head" aria-label="Attempts">
        <div className="detail-title">
          {/* Focusable from a script: attempts started from New task put the focus here. */}
          <h2 tabIndex={-1} ref={headRef}>
            {taskTitle(first.spec)}
          </h2>
          <span className="chip chip-idle">{g.attempts.length} attempts</span>
          {g.all && (
            <span className="chip chip-idle" title="Every attempt runs to its verdict">
              all run to the end
            </span>
          )}
        </div>
        <p className="small" aria-label="Winner">
          {winner ? (
            <>
              The checks picked{" "}
              <a href={href({ name: "worker", id: winner.id })} className="mono">
                {winner.id}
              </a>{" "}
              (attempt {winner.attempt?.index}, on {winner.targetId ?? "?"}): built and honest
              {g.attempts.filter((a) => a.verdict === "built").length > 1 ? ", with the fewest changed lines" : ""}.
              {winner.merged ? ` Merged into ${winner.merged.into} (${winner.merged.commit.slice(0, 8)}).` : ""}
            </>
          ) : g.settled ? (
            "No attempt was built and honest: nothing to merge. Read the failing checks of each attempt."
          ) : (
            `No winner yet: ${attemptsNow(g.attempts)}. Once one is built and honest, the others still running are stopped` +
            (g.all ? " — not here: every attempt runs to the end." : ".")
          )}
        </p>
        {/* Gone once there is nothing left to merge: the winner merged (the line above says where), or none at all. */}
        {!winner?.merged && (winner || !g.settled) && (
          <div className="actions">
            <button type="button" className="btn primary" disabled={!canMerge || busy} onClick={() => (setError(null), setConfirm(true))}>
              Merge the winner…
            </button>
          </div>
        )}
        {error && (
          <div className="field-error" role="alert">
            Merge refused: {showUntrusted(error, { lines: false, max: 2000 })}
          </div>
        )}
      </section>

      {confirm && winner && (
        <Modal label="Confirm merge of the winner" onClose={() => setConfirm(false)}>
          <h3>
            Merge the winner {winner.id} ({winner.branch}) into {winner.baseBranch ?? "its base branch"}?
          </h3>
          <p className="small">
            Exactly the commit its checks ran on is merged into <code>{winner.repo}</code>. The other attempts are left as they are (discard them from their
            pages).
          </p>
          {winner.verdict?.diffStat && <pre className="diffstat">{showUntrustedLines(winner.verdict.diffStat)}</pre>}
          <div className="actions">
            <button
              type="button"
              className="btn primary"
              onClick={() => {
                setConfirm(false);
                setBusy(true);
                api.workers.merge
                  .mutate({ workerId: winner.id })
                  .then(
                    (r) => {
                      pushNotice("info", `merged the winner ${winner.id} into ${r.into} (${r.commit.slice(0, 8)})`);
                      // Merge the winner… is gone once merged: the focus goes to the page's heading, not the page's top.
                      headRef.current?.focus();
                    },
                    (err) => setError(errorText(err)),
                  )
                  .finally(() => setBusy(false));
              }}
            >
              Merge
            </button>
            <button type="button" className="btn" onClick={() => setConfirm(false)}>
              Cancel
            </button>
          </div>
        </Modal>
      )}

      <section className="panel" aria-label="Attempts side by side">
        <div className="attempt-grid" style={{ gridTemplateColumns: `repeat(${Math.min(g.attempts.length, 4)}, minmax(220px, 1fr))` }}>
          {g.attempts.map((a) => (
            <AttemptCard key={a.workerId} a={a} winner={a.workerId === g.winner} shown={a.workerId === diffOf} onDiff={() => setShown(a.workerId)} />
          ))}
        </div>
      </section>

      {diffOf && (
        <AttemptDiff
          id={diffOf}
          lastSeq={workers[diffOf]?.lastSeq ?? 0}
          index={workers[diffOf]?.attempt?.index ?? 0}
          merged={workers[diffOf]?.merged ?? null}
          discarded={!!workers[diffOf]?.discarded}
        />
      )}
    </div>
  );
}

function AttemptCard({ a, winner, shown, onDiff }: { a: AttemptRow; winner: boolean; shown: boolean; onDiff: () => void }) {
  const w = useStore((s) => s.workers[a.workerId]);
  // A losing attempt names the attempt that was built (it said "another attempt" where its page and card named it).
  const lostTo = useLostTo(w);
  if (!w) return null;
  return (
    <article className={`panel attempt-card ${winner ? "attempt-winner" : ""}`} aria-label={`Attempt ${a.index}`}>
      <header className="attempt-head">
        <strong>Attempt {a.index}</strong>
        {winner && <span className="chip chip-ok big">winner</span>}
        <StateChip state={a.state} />
      </header>
      <div className="small muted">
        on <code>{a.target ?? "?"}</code> ·{" "}
        <a href={href({ name: "worker", id: a.workerId })} className="mono">
          {a.workerId}
        </a>
      </div>
      <div className="attempt-chips">
        {w.verdict ? <VerdictChips verdict={w.verdict} /> : <span className="chip chip-idle">no verdict</span>}
        {a.noop && (
          <span className="chip chip-warn" title="It changed nothing: never a winner">
            no change
          </span>
        )}
        {/* The verdict chips say it already when the verdict itself carries it: once per card. */}
        {a.weakEvidence && !w.verdict?.weakEvidence && (
          <span className="chip chip-warn" title="Its checks also pass on the base commit: they prove little">
            weak evidence
          </span>
        )}
      </div>
      <dl className="attempt-facts">
        <dt>claim</dt>
        <dd aria-label="claim">
          {w.verdict ? (w.verdict.claim === "built" ? "said built" : w.verdict.claim === "honest-failure" ? "said failed" : "no OUTCOME line") : "—"}
        </dd>
        <dt>changed lines</dt>
        <dd aria-label="changed lines">{a.changedLines ?? "—"}</dd>
        <dt>tokens</dt>
        <dd>{a.tokens ? tokens(a.tokens) : "0"}</dd>
        <dt>time</dt>
        <dd>{a.durationSec !== null ? duration(a.durationSec * 1000) : "—"}</dd>
      </dl>
      {a.stoppedForWinner && <p className="small muted">Stopped: {lostTo ? lostToName(lostTo) : "another attempt"} was built.</p>}
      {!a.stoppedForWinner && w.stateReason && !w.verdict && (
        <p className="small muted untrusted">{showUntrusted(w.stateReason, { lines: false, max: 1000 })}</p>
      )}
      <div className="actions">
        <button type="button" className={`btn ${shown ? "on" : ""}`} aria-pressed={shown} disabled={!w.verdict && !w.worktree} onClick={onDiff}>
          Diff
        </button>
      </div>
    </article>
  );
}

/**
 * One attempt's diff. Merged or discarded, its workspace is gone and the engine's diff is empty: that is said (where its
 * change is now, or that it was removed), never "No changes." (the worker page's Diff tab says the same).
 */
function AttemptDiff({
  id,
  lastSeq,
  index,
  merged,
  discarded,
}: {
  id: string;
  lastSeq: number;
  index: number;
  merged: { into: string; commit: string } | null;
  discarded: boolean;
}) {
  const [diff, setDiff] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    api.workers.diff.query({ workerId: id }).then(
      (r) => live && (setDiff(r.diff), setError(null)),
      (err) => live && setError(errorText(err)),
    );
    return () => {
      live = false;
    };
  }, [id, lastSeq]);
  return (
    <section className="panel" aria-label={`Diff of attempt ${index}`}>
      <h2>
        Diff of attempt {index} <span className="mono small muted">{id}</span>
      </h2>
      {error ? (
        <div className="field-error">{error}</div>
      ) : diff === null ? (
        <div className="muted pad">Loading diff…</div>
      ) : !diff.trim() && merged ? (
        <div className="muted pad" role="status">
          Merged into <code>{merged.into}</code> as <code>{merged.commit.slice(0, 12)}</code>: its changes are in that branch now (
          <code>git show {merged.commit.slice(0, 12)}</code>).
        </div>
      ) : !diff.trim() && discarded ? (
        <div className="muted pad" role="status">
          Discarded: its workspace and branch were removed, so there is no diff to show.
        </div>
      ) : !diff.trim() ? (
        <div className="muted pad">No changes.</div>
      ) : (
        <Diff text={diff} label={`Diff of attempt ${index}`} compact />
      )}
    </section>
  );
}

/**
 * Where the attempts of a group without a winner are, in words: "2 running, 1 queued" (it said "the attempts are still
 * running" while every one was queued for a model slot).
 */
export function attemptsNow(rows: readonly Pick<AttemptRow, "state">[]): string {
  const by = new Map<string, number>();
  for (const r of rows) by.set(STATE_LABEL[r.state], (by.get(STATE_LABEL[r.state]) ?? 0) + 1);
  const parts = [...by].map(([label, n]) => `${n} ${label}`);
  return by.get("queued") === rows.length ? "every attempt is queued for a model slot" : parts.join(", ");
}
