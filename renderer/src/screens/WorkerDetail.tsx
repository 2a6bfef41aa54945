import { type RefObject, useEffect, useRef, useState } from "react";
import { askHoldingCall, isActive, isAtRest, pendingAsks, type Worker } from "../../../shared/worker";
import { showUntrusted, showUntrustedLines } from "../../../shared/untrusted";
import { discardable, retryable, retryWorker } from "../actions";
import { api, errorText } from "../api";
import { AskCard, AskFlags } from "../components/AskCard";
import { Empty, Modal, RetryOfChip, StateChip, useFocusKept, useLostTo, useMergedSibling } from "../components/common";
import { GrantList } from "../components/Grants";
import { Diff } from "../components/LazyDiff";
import { Transcript } from "../components/Transcript";
import { RoundHistory, VerdictCard } from "../components/VerdictCard";
import type { DraftComment } from "../components/Diff";
import { baselineWarning } from "../../../shared/verdict";
import { desktop } from "../desktop";
import { counted, duration, phaseOf, taskTitle, tokens, toolShown, useNow } from "../format";
import { throughput } from "../../../shared/metrics";
import { spendText, workerSpend, type Price } from "../../../shared/cost";
import { inOrder } from "../reads";
import { goAndFocus, href } from "../router";
import { closeTranscript, loadTranscript, pushNotice, refreshTargets, useStore, ENGINE_WORDS } from "../store";

const EMPTY: never[] = [];
const NO_SEQS: Record<string, number> = {};

/**
 * Opens another worker's page from an action on this one ("Retry as new worker", "Continue on the new base"): that
 * page is a new one (keyed by its id), so the focus the pressed button held fell to the page's top. It goes to the new
 * page's heading once its worker is shown (the new worker may reach the store after its page opened): that page's own
 * heading, never this page's, still shown for a moment after the address changed.
 */
function openFromAction(workerId: string): void {
  goAndFocus({ name: "worker", id: workerId }, `.detail[data-worker="${CSS.escape(workerId)}"] .detail-head h2`);
}

export function WorkerDetail({ id }: { id: string }) {
  const w = useStore((s) => s.workers[id]);
  const parts = useStore((s) => s.transcripts[id]) ?? EMPTY;
  const marks = useStore((s) => s.marks[id]) ?? EMPTY;
  const partSeq = useStore((s) => s.partSeqs[id]) ?? NO_SEQS;
  const retry = useStore((s) => s.retries[id]);
  // A losing attempt (the engine stopped it because another attempt of its task was built) is no ordinary stopped
  // worker: its note leads to the attempt that was built. No Stop (disabled) or Resume as its main actions, no Retry
  // (its task again, done already); it can still be resumed anyway, to its own verdict beside the winner's (not once the
  // winner is merged: the engine would refuse to land it), and discarded.
  const lostTo = useLostTo(w);
  // Another attempt of its task was merged: the task is done, so no Retry (the engine refuses it) and no Continue… (its
  // new round could never land: the engine refuses a second attempt's merge, as for a loser's "Resume anyway"); a note says why.
  const mergedSibling = useMergedSibling(w);
  const now = useNow();
  const [tab, setTab] = useState<"transcript" | "diff" | "task">("transcript");
  const [steer, setSteer] = useState("");
  /** The steer this page just sent, confirmed under the box (the transcript shows it where it happened). */
  const [sent, setSent] = useState<{ id: string; text: string } | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [confirmMerge, setConfirmMerge] = useState(false);
  const [confirmStop, setConfirmStop] = useState(false);
  // After Stop, focus goes to Resume once it can be used (never to a destructive button such as Discard…).
  const resumeRef = useRef<HTMLButtonElement>(null);
  const [focusResume, setFocusResume] = useState(false);
  const [confirmDiscard, setConfirmDiscard] = useState(false);
  const headRef = useRef<HTMLHeadingElement>(null);
  const stopRef = useRef<HTMLButtonElement>(null);
  const mergeRef = useRef<HTMLButtonElement>(null);
  const pushRef = useRef<HTMLButtonElement>(null);
  const continueRef = useRef<HTMLButtonElement>(null);
  const discardRef = useRef<HTMLButtonElement>(null);
  // Where the focus goes back to once an action is over: the control it came from (a dialog's: the button that opened
  // the dialog), while that can still be used (below).
  const cameFrom = useRef<HTMLElement | RefObject<HTMLElement | null> | null>(null);
  const [mergeError, setMergeError] = useState<string | null>(null);
  const [acceptFlagged, setAcceptFlagged] = useState(false);
  const [pushOpen, setPushOpen] = useState(false);
  const [pushRemote, setPushRemote] = useState("origin");
  const [pushBranch, setPushBranch] = useState("");
  const [pushPr, setPushPr] = useState(true);
  const [continueOpen, setContinueOpen] = useState(false);
  const [followUp, setFollowUp] = useState("");
  const resumable = !!w && (w.state === "stopped" || w.state === "interrupted" || w.state === "error");
  useEffect(() => {
    if (!focusResume || !resumable || busy) return;
    resumeRef.current?.focus();
    setFocusResume(false);
  }, [focusResume, resumable, busy]);

  // A decided ask's card goes away with the button pressed on it, and the focus with it (to the page's top: a keyboard
  // user lost their place after every decision). It goes on to the next ask's first choice, else to the steering box,
  // without scrolling the page (a mouse click focuses the button too).
  const asksRef = useRef<HTMLElement>(null);
  const steerRef = useRef<HTMLTextAreaElement>(null);
  const keepFocus = useFocusKept(
    w
      ? pendingAsks(w)
          .map((a) => a.id)
          .join()
      : "",
    () => asksRef.current?.querySelector<HTMLElement>(".ask-actions button:not(:disabled)") ?? steerRef.current,
  );
  // An action's button is disabled while it runs, and a dialog's or a form's goes with it: the focus fell to the page's
  // top (Merge… went away once merged, Discard… once discarded, Publish branch came back enabled with the focus lost).
  // Once the action is over, it goes back to where the action came from while that can still be used, else to the
  // page's heading, the worker's title, with its chips ("merged into …", "discarded: …") read next; a control the
  // worker's record takes away later (its event may come after the call returns) sends it there then. Focus that
  // something else took meanwhile (a click elsewhere) stays where it is.
  const keepPlace = useFocusKept(`${busy} ${w?.state} ${!!w?.merged} ${!!w?.reverted} ${!!w?.discarded} ${pushOpen} ${confirmStop}`, () => {
    if (busy) return null;
    const from = cameFrom.current && "current" in cameFrom.current ? cameFrom.current.current : cameFrom.current;
    return from?.isConnected && !(from as HTMLButtonElement).disabled ? from : headRef.current;
  });

  useEffect(() => {
    void loadTranscript(id);
    return () => closeTranscript(id);
  }, [id]);

  if (!w) return <Empty title={`No worker ${id}`}>It may belong to another engine run. Go back to the dashboard.</Empty>;

  /** Runs an action (one at a time); `from`: where the focus goes back to after it, unless the control focused now. */
  const run = async (label: string, fn: () => Promise<unknown>, from?: HTMLElement | RefObject<HTMLElement | null>) => {
    cameFrom.current = from ?? (document.activeElement as HTMLElement | null);
    setBusy(label);
    setError(null);
    try {
      await fn();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(null);
    }
  };
  const canStop = isActive(w.state) || w.state === "queued";
  const canResume = (w.state === "stopped" || w.state === "interrupted" || w.state === "error") && !w.discarded;
  const canMerge = w.state === "built" && !w.merged && !w.discarded;
  /** Its life as a worker is over: discarded, or merged (its merge reverted too: it is not continued either). */
  const over = !!w.discarded || !!w.merged;
  // A graded worker is continued (a new round), retried or discarded, never stopped or resumed: no Stop, no Resume
  // (they were shown disabled beside Continue…); continued, it runs again and has its Stop back.
  const graded = w.state === "built" || w.state === "honest-failure";
  const canDiscard = discardable(w);
  const canRetry = retryable(w) && !mergedSibling;
  // A graded worker takes a follow-up in its session (a new round); a merged or discarded one has no workspace left.
  const canContinue = graded && !over && !!w.sessionId && !mergedSibling;
  const weak = baselineWarning(w.baseline);
  const asks = pendingAsks(w);
  const elapsed = (w.endedAt ?? now) - (w.startedAt ?? w.createdAt);
  /** The tool calls its pending asks hold: their transcript rows say they wait, not that they run. */
  const heldCalls = new Set(pendingAsks(w).flatMap((a) => (a.callId ? [a.callId] : [])));
  /** The ask that holds the current tool call: the header says the call waits for it, as its transcript row does. */
  const holding = askHoldingCall(w);

  return (
    <div className="detail" data-worker={w.id} {...keepPlace}>
      <section className="panel detail-head" aria-label="Worker">
        <div className="detail-title">
          <h2 ref={headRef} tabIndex={-1}>
            {taskTitle(w.spec)}
          </h2>
          <StateChip state={w.state} />
          {w.sandbox === "none" && (
            <span className="chip chip-bad" title="This worker runs without the OS sandbox: it can read your files and secrets">
              unsandboxed
            </span>
          )}
          {w.sandbox === "bwrap" && (
            <span className="chip chip-idle" title="Contained by bubblewrap: writes only its workspace, no network, no secrets">
              sandboxed (bwrap)
            </span>
          )}
          {w.discarded && <span className="chip chip-idle">discarded: workspace and branch removed</span>}
          <RetryOfChip of={w.retryOf} />
          {w.attempt && (
            <>
              <span className="chip chip-idle">
                attempt {w.attempt.index} of {w.attempt.of}
              </span>
              <a className="small" href={href({ name: "attempts", id: w.attempt.groupId })} title="every attempt at this task side by side, and the winner">
                all {w.attempt.of} attempts
              </a>
            </>
          )}
        </div>
        <div className="facts small">
          <span className="mono">{w.id}</span>
          <span>{phaseOf(w)}</span>
          <span>elapsed {duration(elapsed)}</span>
          {w.endpoint && (
            <span>
              on <code>{w.endpoint}</code>
            </span>
          )}
          {w.branch && (
            <span>
              branch <code>{w.branch}</code>
              {w.baseBranch ? ` from ${w.baseBranch}` : ""}
            </span>
          )}
          <WorkerTokens w={w} now={now} />
          {w.currentTool && (
            <span>
              {holding ? (holding.kind === "question" ? "waiting for your answer to " : "waiting for approval of ") : "running "}
              <code>{toolShown(w.currentTool)}</code>
            </span>
          )}
          {/* The verdict's reason is said on the verdict card, a losing attempt's in its note: not twice. */}
          {w.stateReason && w.stateReason !== w.verdict?.reason && !lostTo && (
            <span className="muted untrusted">{showUntrusted(w.stateReason, { lines: false, max: 1000 })}</span>
          )}
          {w.toolFailures > 0 && <span className="chip chip-warn">{counted(w.toolFailures, "tool failure")}</span>}
          {w.stalled && <span className="chip chip-warn">stalled</span>}
          {retry && isActive(w.state) && (
            <span className="chip chip-warn">
              retry {retry.attempt}: {showUntrusted(retry.message, { max: 300, lines: false })}
            </span>
          )}
          {w.merged && (
            <span className="chip chip-ok">
              merged into {w.merged.into} ({w.merged.commit.slice(0, 8)})
            </span>
          )}
        </div>
        {lostTo && (
          <p className="attempt-lost small" role="note">
            {lostTo.index !== null ? <a href={href({ name: "worker", id: lostTo.id })}>Attempt {lostTo.index}</a> : "Another attempt"} was built, so this
            attempt was stopped before its verdict.{w.discarded ? "" : " Its transcript and diff stay here."}
            {/* Resumed now, it could never land: the engine refuses a second attempt of a merged task. */}
            {lostTo.mergedInto &&
              !w.discarded &&
              ` That attempt was merged into ${lostTo.mergedInto}, so this one cannot be merged: discard it, or revert that merge first to take this one instead.`}
          </p>
        )}
        {/* A losing attempt's note says it already (that attempt was merged); a graded one's sibling stands merged. */}
        {mergedSibling && !lostTo && !w.merged && (
          <p className="attempt-lost small" role="note">
            {mergedSibling.index !== null ? <a href={href({ name: "worker", id: mergedSibling.id })}>Attempt {mergedSibling.index}</a> : "Another attempt"} of
            this task was merged into {mergedSibling.into}, so its task is done: this attempt is not retried or continued (its work could not land beside that
            merge). Revert that merge first to try the task again.
          </p>
        )}
        <div className="actions">
          {/* A discarded, merged or graded worker is never stopped or resumed: no Stop, no Resume; a losing attempt
              only resumed anyway (below). */}
          {over || graded || lostTo ? null : confirmStop && canStop ? (
            <span className="confirm-inline" role="group" aria-label="Confirm stop">
              <span className="small">Stop this worker? Its session can be resumed later.</span>
              <button
                type="button"
                className="btn bad"
                disabled={!!busy}
                onClick={() => (setConfirmStop(false), setFocusResume(true), void run("stop", () => api.workers.stop.mutate({ workerId: id })))}
              >
                Stop now
              </button>
              <button type="button" className="btn" autoFocus onClick={() => ((cameFrom.current = stopRef), setConfirmStop(false))}>
                Cancel
              </button>
            </span>
          ) : (
            <button ref={stopRef} type="button" className="btn bad" disabled={!canStop || !!busy} onClick={() => setConfirmStop(true)}>
              Stop
            </button>
          )}
          {!over && !graded && !lostTo && (
            <button
              ref={resumeRef}
              type="button"
              className="btn"
              disabled={!canResume || !!busy}
              onClick={() => void run("resume", () => api.workers.resume.mutate({ workerId: id }))}
            >
              Resume
            </button>
          )}
          {canContinue && (
            <button
              ref={continueRef}
              type="button"
              className="btn"
              disabled={!!busy}
              title="a follow-up in the same session: a new round, graded again"
              onClick={() => setContinueOpen(true)}
            >
              Continue…
            </button>
          )}
          {canMerge && (
            <button ref={mergeRef} type="button" className="btn primary" disabled={!!busy} onClick={() => (setMergeError(null), setConfirmMerge(true))}>
              Merge…
            </button>
          )}
          {w.merged && !w.reverted && (
            <button
              type="button"
              className="btn"
              disabled={!!busy}
              title="undo the merge as a new commit on the branch (refused, changing nothing, when later work conflicts)"
              onClick={() =>
                void run("revert", async () => {
                  const r = await api.workers.revert.mutate({ workerId: id });
                  pushNotice("info", `reverted ${id}'s merge on ${r.into} (${r.commit.slice(0, 8)})`);
                })
              }
            >
              Revert merge
            </button>
          )}
          {canMerge && (
            <button ref={pushRef} type="button" className="btn" disabled={!!busy} onClick={() => setPushOpen((x) => !x)}>
              Push…
            </button>
          )}
          {canMerge && (
            <button
              type="button"
              className="btn"
              disabled={!!busy}
              title={`grading put nothing into your repository: this adds exactly the graded commit there as branch ${w.branch ?? `ocw/${id}`}, to review or merge with your own git tools (nothing is merged)`}
              onClick={() =>
                void run("publish", async () => {
                  const r = await api.workers.publish.mutate({ workerId: id });
                  pushNotice("info", `published ${r.branch} at ${r.commit.slice(0, 8)} in ${r.repo}: review it with git, or merge it here`);
                })
              }
            >
              Publish branch
            </button>
          )}
          {canRetry && (
            <button
              type="button"
              className="btn"
              disabled={!!busy}
              title="the same task as a new worker, in a fresh workspace"
              onClick={() =>
                void run("retry", async () => {
                  const nid = await retryWorker(w);
                  pushNotice("info", `retry of ${id} started as ${nid}`);
                  openFromAction(nid);
                })
              }
            >
              Retry as new worker
            </button>
          )}
          {canDiscard && (
            <button type="button" className="btn bad" ref={discardRef} disabled={!!busy} onClick={() => setConfirmDiscard(true)}>
              Discard…
            </button>
          )}
          {lostTo && !lostTo.mergedInto && canResume && (
            <button
              type="button"
              className="btn"
              disabled={!!busy}
              title="run this attempt on to its own verdict, to compare it with the one that was built (only one attempt of a task can be merged)"
              onClick={() => void run("resume", () => api.workers.resume.mutate({ workerId: id }))}
            >
              Resume anyway
            </button>
          )}
          {w.worktree && !w.discarded && <OpenWorkspace workerId={w.id} worktree={w.worktree} />}
          {busy && <span className="small muted">{busy}…</span>}
        </div>
        {error && (
          <div className="field-error" role="alert">
            {error}
          </div>
        )}
        {mergeError && (
          <div className="field-error merge-error" role="alert">
            Merge refused: {showUntrusted(mergeError, { lines: false, max: 2000 })}
            {/conflicts in /.test(mergeError) && canMerge && (
              <>
                {" "}
                <button
                  type="button"
                  className="btn small"
                  disabled={!!busy}
                  title="its task again as a new worker from the current HEAD, told which files conflicted"
                  onClick={() =>
                    void run("continue on the new base", async () => {
                      const r = await api.workers.onNewBase.mutate({ workerId: id });
                      pushNotice("info", `${id} continues on the new base as ${r.workerId}`);
                      openFromAction(r.workerId);
                    })
                  }
                >
                  Continue on the new base
                </button>
              </>
            )}
          </div>
        )}
        {pushOpen && canMerge && (
          <form
            className="push-form"
            aria-label="Push"
            onSubmit={(e) => {
              e.preventDefault();
              void run("push", async () => {
                const r = await api.workers.push.mutate({
                  workerId: id,
                  remote: pushRemote,
                  ...(pushBranch ? { branch: pushBranch } : {}),
                  pr: pushPr,
                  acceptFlagged,
                });
                pushNotice(
                  "info",
                  `pushed ${r.commit.slice(0, 8)} to ${r.remote} ${r.branch}${r.pr ? ` · pull request ${r.pr.url}` : r.prProblem ? ` · no pull request: ${r.prProblem}` : ""}`,
                );
                setPushOpen(false);
                // Pushed, the form goes: back to the button that opened it (a refused push: its form's button).
                cameFrom.current = pushRef;
              });
            }}
          >
            <label className="small">
              remote <input aria-label="remote" value={pushRemote} onChange={(e) => setPushRemote(e.target.value)} placeholder="origin" required />
            </label>{" "}
            <label className="small">
              branch <input aria-label="branch" value={pushBranch} onChange={(e) => setPushBranch(e.target.value)} placeholder={`ocw/${id}`} />
            </label>{" "}
            <label className="small">
              <input type="checkbox" aria-label="open a pull request" checked={pushPr} onChange={(e) => setPushPr(e.target.checked)} /> open a pull request (gh)
            </label>{" "}
            <button type="submit" className="btn primary small" disabled={!!busy || !pushRemote}>
              Push graded commit
            </button>
            <span className="small muted"> never forced, never to the default branch</span>
          </form>
        )}
      </section>

      {confirmMerge && (
        <Modal label="Confirm merge" onClose={() => setConfirmMerge(false)}>
          <h3>
            Merge {w.branch} into {w.baseBranch ?? "its base branch"}?
          </h3>
          <p className="small">
            A merge commit is made in <code>{w.repo}</code>. If the base branch moved and the changes conflict, nothing is changed and you get the conflicting
            files.
          </p>
          {w.verdict?.diffStat && <pre className="diffstat">{showUntrustedLines(w.verdict.diffStat)}</pre>}
          {w.verdict?.flags?.length ? (
            <div className="flags" role="group" aria-label="Flagged files to accept">
              <p className="small">
                <strong>This change holds files that do more than their diff shows.</strong> They are merged exactly as graded (no filter runs), but they act
                once in your checkout:
              </p>
              <ul>
                {w.verdict.flags.map((f) => (
                  <li key={`${f.path}:${f.kind}`}>
                    <code>{showUntrusted(f.path, { lines: false, max: 300 })}</code>{" "}
                    <span className="muted small">{showUntrusted(f.detail, { lines: false, max: 300 })}</span>
                  </li>
                ))}
              </ul>
              <label className="small">
                <input type="checkbox" aria-label="accept flagged files" checked={acceptFlagged} onChange={(e) => setAcceptFlagged(e.target.checked)} /> I
                reviewed these files and accept them
              </label>
            </div>
          ) : null}
          <div className="actions">
            <button
              type="button"
              className="btn primary"
              disabled={!!w.verdict?.flags?.length && !acceptFlagged}
              onClick={() => {
                setConfirmMerge(false);
                void run(
                  "merge",
                  async () => {
                    try {
                      const r = await api.workers.merge.mutate({ workerId: id, acceptFlagged });
                      pushNotice(
                        "info",
                        r.alreadyIn
                          ? `${id} was already in ${r.into} (it came in with a worker that started from it): recorded as merged`
                          : `merged ${id} into ${r.into} (${r.commit.slice(0, 8)})${r.alsoLanded.length ? `; it brought in ${r.alsoLanded.join(", ")} (it started from their graded work)` : ""}`,
                      );
                    } catch (err) {
                      setMergeError(errorText(err));
                    }
                  },
                  mergeRef,
                );
              }}
            >
              Merge
            </button>
            <button type="button" className="btn" onClick={() => setConfirmMerge(false)}>
              Cancel
            </button>
          </div>
        </Modal>
      )}

      {continueOpen && (
        <Modal
          label="Continue the worker"
          onClose={() => setContinueOpen(false)}
          onSubmit={(e) => {
            e.preventDefault();
            const message = followUp.trim();
            if (!message) return;
            setContinueOpen(false);
            void run(
              "continue",
              async () => {
                await api.workers.continue.mutate({ workerId: id, message });
                setFollowUp("");
                pushNotice("info", `${id}: round ${(w.rounds?.length ?? 1) + 1} started`);
              },
              continueRef,
            );
          }}
        >
          <h3>Continue {w.id}</h3>
          <p className="small">
            The worker goes on in its same session and files; when it settles, the new round is graded again from a fresh checkout. Say what to change, add or
            fix.
          </p>
          <textarea aria-label="Follow-up message" rows={5} autoFocus value={followUp} onChange={(e) => setFollowUp(e.target.value)} />
          <div className="actions">
            <button type="submit" className="btn primary" disabled={!followUp.trim()}>
              Send follow-up
            </button>
            <button type="button" className="btn" onClick={() => setContinueOpen(false)}>
              Cancel
            </button>
          </div>
        </Modal>
      )}

      {confirmDiscard && (
        <Modal label="Confirm discard" onClose={() => setConfirmDiscard(false)}>
          <h3>Discard {w.id}?</h3>
          <p className="small">
            Its workspace
            {w.worktree ? (
              <>
                {" "}
                (<code>{w.worktree}</code>)
              </>
            ) : null}
            , its private repository and its branch
            {w.branch ? (
              <>
                {" "}
                <code>{w.branch}</code>
              </>
            ) : null}{" "}
            are removed. {w.state === "built" && !w.merged ? <strong>Its built work is not merged and is lost.</strong> : "Nothing of it is merged."} Its
            record, transcript and verdict stay.
          </p>
          <div className="actions">
            <button
              type="button"
              className="btn bad"
              onClick={() => {
                setConfirmDiscard(false);
                // Refused, the focus goes back to Discard… (the error is announced as an alert); done, Discard… goes.
                void run(
                  "discard",
                  async () => {
                    await api.workers.discard.mutate({ workerId: id });
                    pushNotice("info", `discarded ${id}: workspace and branch removed`);
                  },
                  discardRef,
                );
              }}
            >
              Discard
            </button>
            {/* focus starts on Cancel, never on the destructive button */}
            <button type="button" className="btn" autoFocus onClick={() => setConfirmDiscard(false)}>
              Cancel
            </button>
          </div>
        </Modal>
      )}

      {asks.length > 0 && (
        <section className="panel" aria-label="Pending approvals of this worker" ref={asksRef} {...keepFocus}>
          <h2>Waiting for you</h2>
          {asks.map((a) => (
            <AskCard key={a.id} ask={a} showWorker={false} />
          ))}
        </section>
      )}

      {weak && (
        <div className="field-error page-warning" role="alert" aria-label="Checks that prove nothing">
          Warning: {weak}
        </div>
      )}

      {w.verdict && <VerdictCard verdict={w.verdict} workerId={w.id} />}

      {(w.rounds?.length ?? 0) > 1 && <RoundHistory rounds={w.rounds} workerId={w.id} state={w.state} />}

      <RefusedByEngine asks={w.asks} />

      {w.grants.length > 0 && (
        <section className="panel" aria-label="Grants of this worker">
          <h2>
            Grants{" "}
            <span className="muted small">
              · “always” answers the engine gives this worker's matching asks
              {w.grants.every((g) => g.expiredAt !== undefined) ? " — expired: they lasted the run that ended" : ", for this run only"}
            </span>
          </h2>
          <GrantList grants={w.grants} showWorker={false} label={`grants of ${w.id}`} worktreeOf={() => w.worktree} />
        </section>
      )}

      <section className="panel grow-panel">
        <div className="tabs" role="tablist" aria-label="Worker views">
          {(["transcript", "diff", "task"] as const).map((t) => (
            <button key={t} type="button" role="tab" aria-selected={tab === t} className={`tab ${tab === t ? "on" : ""}`} onClick={() => setTab(t)}>
              {t === "transcript" ? `Transcript (${parts.length})` : t === "diff" ? "Diff" : "Task & checks"}
            </button>
          ))}
        </div>
        {tab === "transcript" && <Transcript parts={parts} marks={marks} partSeq={partSeq} root={w.worktree} ended={isAtRest(w.state)} waiting={heldCalls} />}
        {tab === "diff" && (
          <WorktreeDiff id={id} lastSeq={w.lastSeq} reviewable={canContinue} round={w.rounds?.length ?? 1} merged={w.merged} discarded={w.discarded} />
        )}
        {tab === "task" && (
          <div className="task-view">
            <pre className="task-text">{w.spec.task}</pre>
            <TaskRules spec={w.spec} />
          </div>
        )}
        {/* A merged or discarded worker is never steered again: no steering box. */}
        {!over && (
          <form
            className="steer"
            onSubmit={(e) => {
              e.preventDefault();
              const text = steer.trim();
              if (!text) return setError("the steer text is empty");
              void run("steer", async () => {
                await api.workers.steer.mutate({ workerId: id, text });
                setSteer("");
                setSent({ id, text });
              });
            }}
          >
            <textarea
              ref={steerRef}
              aria-label="Steering message"
              rows={2}
              placeholder={
                isActive(w.state)
                  ? "Steer this worker: the message reaches its next model request"
                  : canContinue
                    ? "This worker is graded: Continue… sends it a follow-up, a new round graded again"
                    : "The worker is not running; steering applies to running workers"
              }
              value={steer}
              onChange={(e) => setSteer(e.target.value)}
              onKeyDown={(e) => {
                if (e.key === "Enter" && (e.metaKey || e.ctrlKey)) (e.currentTarget.form as HTMLFormElement).requestSubmit();
              }}
            />
            <button
              type="submit"
              className="btn primary"
              disabled={!!busy || !isActive(w.state)}
              title={isActive(w.state) ? "Ctrl+Enter" : "only a running worker can be steered"}
            >
              Send steer
            </button>
          </form>
        )}
        {sent?.id === id && (
          <div className="small muted steer-sent ellipsis" role="status">
            Sent: “{sent.text}” · in the transcript at the point it was sent
          </div>
        )}
      </section>
    </div>
  );
}

/** The task's held-back checks, scope, protected paths and budget, in words. */
function TaskRules({ spec }: { spec: import("../../../shared/worker").WorkerSpec }) {
  const { checks, scope, protect, budget } = spec;
  return (
    <>
      <div className="io-label">held-back checks (run after the worker ends; it never sees them)</div>
      {checks.length === 0 ? (
        <p className="small muted">None: the verdict rests on the scope check alone.</p>
      ) : (
        <ol className="rules" aria-label="held-back checks">
          {checks.map((c, i) => (
            <li key={i}>
              {c.name && <strong>{c.name}: </strong>}
              {"run" in c ? (
                <>
                  <code>{c.run}</code> exits {c.expectExit ?? 0}
                  {c.timeoutSec ? ` within ${c.timeoutSec} s` : ""}
                </>
              ) : (
                <>
                  file <code>{c.file}</code>{" "}
                  {[
                    c.exists === false ? "does not exist" : c.exists || (c.equals === undefined && c.matches === undefined) ? "exists" : null,
                    c.equals !== undefined ? `has exactly the given content (${c.equals.length.toLocaleString()} characters)` : null,
                    c.matches !== undefined ? (
                      <span key="m">
                        matches <code>/{c.matches}/</code>
                      </span>
                    ) : null,
                  ]
                    .filter(Boolean)
                    .map((x, k) => (
                      <span key={k}>
                        {k > 0 ? " and " : ""}
                        {x}
                      </span>
                    ))}
                </>
              )}
            </li>
          ))}
        </ol>
      )}
      <div className="io-label">scope</div>
      <p className="small">
        {scope.length ? (
          <>
            may change only{" "}
            {scope.map((g, i) => (
              <span key={g}>
                {i ? ", " : ""}
                <code>{g}</code>
              </span>
            ))}
          </>
        ) : (
          "may change any file of the repository"
        )}
      </p>
      <div className="io-label">protected</div>
      <p className="small">
        {protect.length ? (
          <>
            must not change{" "}
            {protect.map((g, i) => (
              <span key={g}>
                {i ? ", " : ""}
                <code>{g}</code>
              </span>
            ))}
          </>
        ) : (
          "none named for this task"
        )}
      </p>
      <div className="io-label">budget</div>
      <p className="small">
        {budget.wallSec || budget.tokens
          ? [budget.wallSec ? `${budget.wallSec.toLocaleString()} s of wall time` : null, budget.tokens ? `${budget.tokens.toLocaleString()} tokens` : null]
              .filter(Boolean)
              .join(", ")
          : "none set for this task"}
      </p>
    </>
  );
}

function WorktreeDiff({
  id,
  lastSeq,
  reviewable,
  round,
  merged,
  discarded,
}: {
  id: string;
  lastSeq: number;
  reviewable: boolean;
  round: number;
  merged: { into: string; commit: string } | null;
  /** Its workspace and branch are gone: an empty diff is not "no changes". */
  discarded: boolean;
}) {
  const [diff, setDiff] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const last = useRef(0);
  const [read] = useState(inOrder);
  // A review in progress: comments collected on lines and files, sent together ("start a review → submit").
  const [reviewing, setReviewing] = useState(false);
  const [comments, setComments] = useState<DraftComment[]>([]);
  const [message, setMessage] = useState("");
  const [sending, setSending] = useState(false);
  const [reviewError, setReviewError] = useState<string | null>(null);
  useEffect(() => {
    // A new round: the comments of the last one were sent with it (its round keeps them).
    setReviewing(false);
    setComments([]);
  }, [round]);
  useEffect(() => {
    // Refetch as the worker changes, at most every 2 s.
    const wait = Math.max(0, last.current + 2000 - Date.now());
    const t = setTimeout(() => {
      last.current = Date.now();
      void read(
        api.workers.diff.query({ workerId: id }),
        (r) => (setDiff(r.diff), setError(null)),
        (err) => setError(errorText(err)),
      );
    }, wait);
    return () => clearTimeout(t);
  }, [id, lastSeq, read]);
  if (error) return <div className="field-error">{error}</div>;
  if (diff === null) return <div className="muted pad">Loading diff…</div>;
  if (!diff.trim())
    return merged ? (
      <div className="muted pad" role="status">
        Merged into <code>{merged.into}</code> as <code>{merged.commit.slice(0, 12)}</code>: its changes are in that branch now (
        <code>git show {merged.commit.slice(0, 12)}</code>).
      </div>
    ) : discarded ? (
      <div className="muted pad" role="status">
        Discarded: its workspace and branch were removed, so there is no diff to show. What it changed is in the verdict above.
      </div>
    ) : (
      <div className="muted pad">No changes in the worktree yet.</div>
    );
  const review = reviewing
    ? { comments, add: (c: DraftComment) => setComments((cs) => [...cs, c]), remove: (c: DraftComment) => setComments((cs) => cs.filter((x) => x !== c)) }
    : undefined;
  return (
    <>
      {reviewable && (
        <div className="review-bar" role="group" aria-label="Review">
          {!reviewing ? (
            <>
              <span className="small muted grow">
                Comment on lines (the + beside a line number) and files, then send them together: the worker gets one follow-up quoting each file:line.
              </span>
              <button type="button" className="btn" onClick={() => setReviewing(true)}>
                Start a review
              </button>
            </>
          ) : (
            <>
              <span className="small" role="status">
                {comments.length} comment{comments.length === 1 ? "" : "s"} pending
              </span>
              <input
                aria-label="Review message"
                className="grow"
                placeholder="An overall remark (optional)"
                value={message}
                onChange={(e) => setMessage(e.target.value)}
              />
              <button
                type="button"
                className="btn primary"
                disabled={!comments.length || sending}
                onClick={() => {
                  setSending(true);
                  setReviewError(null);
                  api.workers.review
                    .mutate({ workerId: id, comments, ...(message.trim() ? { message: message.trim() } : {}) })
                    .then(
                      () => (pushNotice("info", `review of ${id} sent: round ${round + 1} started`), setMessage("")),
                      (err) => setReviewError(errorText(err)),
                    )
                    .finally(() => setSending(false));
                }}
              >
                Submit review
              </button>
              <button type="button" className="btn" onClick={() => (setReviewing(false), setComments([]))}>
                Discard review
              </button>
            </>
          )}
        </div>
      )}
      {reviewError && (
        <div className="field-error" role="alert">
          {reviewError}
        </div>
      )}
      <Diff text={diff} label="Worktree diff" review={review} />
    </>
  );
}

/** Flagged asks the engine answered itself (a write outside the workspace is refused before anyone sees it): what and why. */
function RefusedByEngine({ asks }: { asks: import("../../../shared/permission").PermissionAsk[] }) {
  const flagged = asks.filter((a) => a.status !== "pending" && a.flags?.length && a.by?.kind === "engine");
  if (!flagged.length) return null;
  return (
    <section className="panel" aria-label="Answered by the engine">
      <h2>
        Answered by the engine <span className="muted small">· flagged asks it decided without you</span>
      </h2>
      {flagged.map((a) => (
        <div key={a.id} className="ask" data-ask-id={a.id}>
          <div className="ask-head">
            <span className="chip chip-bad">{a.decision === "reject" ? "refused" : (a.decision ?? a.status)}</span>
            <code className="ellipsis">
              {toolShown(a.tool)}: {showUntrusted(a.what, { max: 300, lines: false })}
            </code>
            <span className="small muted">{a.by?.name ?? "engine"}</span>
          </div>
          <AskFlags ask={a} />
          {/* The engine's refusal quotes the asked path, the worker's text: made safe. */}
          {a.message && <div className="small muted untrusted">told the worker: {showUntrusted(a.message, { max: 1000, lines: false })}</div>}
        </div>
      ))}
    </section>
  );
}

/**
 * The worker's workspace on the desktop: in the app, its folder, an editor or a terminal (the main process asks the
 * engine for the folder by worker id; the page never hands it a path); in a browser, its path copied.
 */
function OpenWorkspace({ workerId, worktree }: { workerId: string; worktree: string }) {
  const [busy, setBusy] = useState(false);
  const open = async (how: "folder" | "editor" | "terminal") => {
    setBusy(true);
    try {
      const r = await desktop!.openWorker!(workerId, how);
      if (r.ok) pushNotice("info", `Opened the workspace of ${workerId} (${r.detail})`);
      else pushNotice("error", `Could not open the workspace of ${workerId}: ${r.detail}`);
    } finally {
      setBusy(false);
    }
  };
  const copy = async () => {
    setBusy(true);
    try {
      const { path } = await api.workers.workspace.query({ workerId });
      try {
        await navigator.clipboard.writeText(path);
        pushNotice("info", `Copied the workspace path: ${path}`);
      } catch {
        pushNotice("info", `This browser refused the clipboard; the workspace path is ${path}`);
      }
    } catch (err) {
      pushNotice("error", `No workspace to copy: ${errorText(err)}`, ENGINE_WORDS);
    } finally {
      setBusy(false);
    }
  };
  if (desktop?.openWorker)
    return (
      <span className="open-ws" role="group" aria-label="Open the workspace">
        <button type="button" className="btn" disabled={busy} onClick={() => void open("folder")}>
          Open folder
        </button>
        <button type="button" className="btn" disabled={busy} onClick={() => void open("editor")}>
          Open in editor
        </button>
        <button type="button" className="btn" disabled={busy} onClick={() => void open("terminal")}>
          Open terminal
        </button>
      </span>
    );
  return (
    <span className="open-ws" role="group" aria-label="Open the workspace">
      <button type="button" className="btn" disabled={busy} title={worktree} onClick={() => void copy()}>
        Copy workspace path
      </button>
    </span>
  );
}

/**
 * Tokens (reported, plus the text streamed since the last report, estimated), tok/s over the time on the model
 * (waiting for a person, queued and grading left out: shared/metrics.ts) and what it cost (shared/cost.ts).
 */
function WorkerTokens({ w, now }: { w: Worker; now: number }) {
  const streamed = useStore((s) => s.streamed[w.id] ?? 0);
  const target = useStore((s) => s.targets.find((t) => t.id === w.targetId));
  const tp = throughput(w, now, isActive(w.state) ? streamed : 0);
  const spend = workerSpend(w, target);
  return (
    <>
      <span aria-label={`tokens of ${w.id}`}>
        tokens in {w.usage.input.toLocaleString()} · out {w.usage.output.toLocaleString()}
        {tp.estimated ? ` + ~${tp.estimated.toLocaleString()} streaming` : ""}
        {tp.tokens > 0 ? ` (${tp.estimated ? "~" : ""}${tokens(tp.tokens)} total)` : ""}
      </span>
      <span aria-label={`speed of ${w.id}`} title="output tokens per second over the time on the model (time waiting for you, queued or grading left out)">
        {tp.tokPerSec !== null ? `${tp.tokPerSec.toFixed(1)} tok/s` : "— tok/s"} over {duration(tp.modelSec * 1000)} on the model
      </span>
      <span aria-label={`cost of ${w.id}`} title="money on API targets (the provider's report, else the target's price), tokens on your own model">
        cost {spendText(spend, tokens)}
      </span>
      {target?.serving.engine === "api" && <TargetPrice targetId={target.id} price={target.price ?? null} />}
    </>
  );
}

/** An API target's price per million tokens, set or changed in place (targets.setPrice); every cost follows it. */
function TargetPrice({ targetId, price }: { targetId: string; price: Price | null }) {
  const [open, setOpen] = useState(false);
  const [input, setInput] = useState(price ? String(price.inputPerMTok) : "");
  const [output, setOutput] = useState(price ? String(price.outputPerMTok) : "");
  const [busy, setBusy] = useState(false);
  if (!open)
    return (
      <span>
        {price ? `$${price.inputPerMTok} in / $${price.outputPerMTok} out per M tokens ` : "no price for this API target "}
        <button type="button" className="btn ghost small" aria-label={`Set the price of ${targetId}`} onClick={() => setOpen(true)}>
          {price ? "Change…" : "Set price…"}
        </button>
      </span>
    );
  const num = (v: string) => (v.trim() === "" ? Number.NaN : Number(v));
  const valid = Number.isFinite(num(input)) && num(input) >= 0 && Number.isFinite(num(output)) && num(output) >= 0;
  return (
    <form
      className="price-form"
      aria-label={`price of ${targetId}`}
      onSubmit={(e) => {
        e.preventDefault();
        setBusy(true);
        void api.targets.setPrice
          .mutate({ id: targetId, price: { inputPerMTok: num(input), outputPerMTok: num(output) } })
          .then(
            () => refreshTargets().then(() => setOpen(false)),
            (err) => pushNotice("error", `price of ${targetId}: ${errorText(err)}`, ENGINE_WORDS),
          )
          .finally(() => setBusy(false));
      }}
    >
      $
      <input aria-label="dollars per million input tokens" inputMode="decimal" value={input} onChange={(e) => setInput(e.target.value)} size={6} /> in · $
      <input aria-label="dollars per million output tokens" inputMode="decimal" value={output} onChange={(e) => setOutput(e.target.value)} size={6} /> out per M
      tokens{" "}
      <button type="submit" className="btn primary small" disabled={busy || !valid}>
        Save
      </button>
      <button type="button" className="btn small" onClick={() => setOpen(false)}>
        Cancel
      </button>
    </form>
  );
}
