import { useState } from "react";
import { grantInForce, grantShown } from "../../../shared/grants";
import type { Grant } from "../../../shared/permission";
import { showUntrusted } from "../../../shared/untrusted";
import { api, errorText } from "../api";
import { ago, byText, toolShown, useNow } from "../format";
import { href } from "../router";
import { pushNotice } from "../store";

/**
 * "Always" answers the engine holds (kept in each worker's picture through grant.added / grant.revoked events): what
 * each allows, who granted it, and a Revoke button. A revoked grant answers nothing more; later asks wait for a person.
 * A grant expires when its worker's run ends (shown as expired, no button). Paths inside a worker's workspace are
 * shown relative to it (`worktreeOf`), never as another worker's absolute path.
 */
export function GrantList({
  grants,
  showWorker = true,
  label,
  worktreeOf,
  expiredLeftOut = 0,
}: {
  grants: Grant[];
  showWorker?: boolean;
  label: string;
  worktreeOf: (workerId: string) => string | null | undefined;
  /** Expired grants the caller left out of `grants` (said under the table). */
  expiredLeftOut?: number;
}) {
  const leftOut =
    expiredLeftOut > 0 ? (
      <p className="muted small" aria-label="expired grants">
        {expiredLeftOut} expired grant{expiredLeftOut === 1 ? "" : "s"} of finished workers not listed: a grant lasts one run of its worker.
      </p>
    ) : null;
  const now = useNow();
  const [busy, setBusy] = useState<string | null>(null);
  if (!grants.length)
    return (
      <>
        <p className="muted small">
          No grants: nothing is answered without a person{showWorker ? "" : " for this worker"} (apart from policy rules in Settings).
        </p>
        {leftOut}
      </>
    );
  const revoke = async (g: Grant) => {
    setBusy(g.id);
    try {
      await api.approvals.revokeGrant.mutate({ grantId: g.id });
      pushNotice(
        "info",
        `revoked: ${toolShown(g.tool)} ${showUntrusted(grantShown(g.pattern, worktreeOf(g.workerId)), { max: 300, lines: false })} for ${g.workerId}`,
      );
    } catch (err) {
      pushNotice("error", `revoke the ${toolShown(g.tool)} grant of ${g.workerId}: ${errorText(err)}`);
    } finally {
      setBusy(null);
    }
  };
  return (
    <>
      <table className="grants" aria-label={label}>
        <thead>
          <tr>
            {showWorker && <th>worker</th>}
            <th>tool</th>
            <th>allows</th>
            <th>granted</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {grants.map((g) => {
            const shown = grantShown(g.pattern, worktreeOf(g.workerId));
            const live = grantInForce(g);
            return (
              <tr
                key={g.id}
                aria-label={`grant ${toolShown(g.tool)} ${showUntrusted(shown, { max: 300, lines: false })} for ${g.workerId}${live ? "" : " (expired)"}`}
                className={live ? undefined : "muted"}
              >
                {showWorker && (
                  <td>
                    <a className="mono" href={href({ name: "worker", id: g.workerId })}>
                      {g.workerId}
                    </a>
                  </td>
                )}
                <td>
                  <code>{toolShown(g.tool)}</code>
                </td>
                <td className="mono untrusted">{showUntrusted(shown, { max: 300, lines: false })}</td>
                <td className="small muted">
                  {ago(g.createdAt, now)} by {byText(g.by)}
                  {g.expiredAt !== undefined && <> · expired {ago(g.expiredAt, now)} (the worker's run ended)</>}
                </td>
                <td>
                  {live ? (
                    <button type="button" className="btn small bad" disabled={busy === g.id} onClick={() => void revoke(g)}>
                      Revoke
                    </button>
                  ) : (
                    <span className="chip chip-idle">expired</span>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {leftOut}
    </>
  );
}
