import { useState } from "react";
import type { Grant } from "../../../shared/permission";
import { showUntrusted } from "../../../shared/untrusted";
import { api, errorText } from "../api";
import { ago, useNow } from "../format";
import { href } from "../router";
import { pushNotice } from "../store";

/**
 * "Always" answers the engine holds (kept in each worker's picture through grant.added / grant.revoked events): what
 * each allows, who granted it, and a Revoke button. A revoked grant answers nothing more; later asks wait for a person.
 */
export function GrantList({ grants, showWorker = true, label }: { grants: Grant[]; showWorker?: boolean; label: string }) {
  const now = useNow();
  const [busy, setBusy] = useState<string | null>(null);
  if (!grants.length)
    return (
      <p className="muted small">
        No grants: nothing is answered without a person{showWorker ? "" : " for this worker"} (apart from policy rules in Settings).
      </p>
    );
  const revoke = async (g: Grant) => {
    setBusy(g.id);
    try {
      await api.approvals.revokeGrant.mutate({ grantId: g.id });
      pushNotice("info", `revoked: ${g.tool} ${showUntrusted(g.pattern, { max: 300, lines: false })} for ${g.workerId}`);
    } catch (err) {
      pushNotice("error", `revoke ${g.id}: ${errorText(err)}`);
    } finally {
      setBusy(null);
    }
  };
  return (
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
        {grants.map((g) => (
          <tr key={g.id} aria-label={`grant ${g.tool} ${g.pattern} for ${g.workerId}`}>
            {showWorker && (
              <td>
                <a className="mono" href={href({ name: "worker", id: g.workerId })}>
                  {g.workerId}
                </a>
              </td>
            )}
            <td>
              <code>{g.tool}</code>
            </td>
            <td className="mono untrusted">{showUntrusted(g.pattern, { max: 300, lines: false })}</td>
            <td className="small muted">
              {ago(g.createdAt, now)} by {g.by.kind}
              {g.by.name ? ` (${g.by.name})` : ""}
            </td>
            <td>
              <button type="button" className="btn small bad" disabled={busy === g.id} onClick={() => void revoke(g)}>
                Revoke
              </button>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
