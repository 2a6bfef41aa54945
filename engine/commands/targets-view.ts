import { connect, healthy } from "../api/client";
import { readLock } from "../api/lock";
import { keyForProbe } from "../serving/keys";
import { stateDir, TargetStore } from "../store";
import { endpointsOf } from "../../shared/target";
import { type EndpointStatus, readEndpoint } from "../admission";

/**
 * `ocw targets --json`: every target with `endpoints: [{url, healthy, slots, inUse, …}]` — from the running engine
 * (which knows the workers on each endpoint), else probed here (no engine, so nothing in use).
 */
export async function targetsWithEndpoints(store = new TargetStore()): Promise<{ active: string | null; targets: unknown[] }> {
  const { active, targets } = store.list();
  let live: Map<string, EndpointStatus[]> | null = null;
  const lock = readLock(stateDir());
  if (lock && (await healthy(lock).catch(() => false))) {
    const rows = await connect(lock, "cli")
      .targets.endpoints.query()
      .catch(() => null);
    if (rows) live = new Map(rows.map((r) => [r.targetId, r.endpoints]));
  }
  const out = await Promise.all(
    targets.map(async (t) => {
      const endpoints = live?.get(t.id) ?? (await Promise.all(endpointsOf(t).map((e) => readEndpoint(e, keyForProbe(t)))));
      return { ...t, endpoints };
    }),
  );
  return { active, targets: out };
}
