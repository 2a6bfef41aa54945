import { endpointsOf } from "../../shared/target";
import { type EndpointStatus, readEndpoint } from "../admission";
import { keyForProbe } from "../serving";
import type { TargetStore } from "../store";

/**
 * `ocw targets --json`: every target with `endpoints: [{url, healthy, slots, inUse, …}]`, each endpoint probed now
 * (health as it is, not as of admission's last refresh); `live`: admission's rows, which know the engine's workers on
 * each endpoint (`inUse`; none without them).
 */
export async function targetsWithEndpoints(store: TargetStore, live: Map<string, EndpointStatus[]> | null = null) {
  const { active, targets } = store.list();
  const out = await Promise.all(
    targets.map(async (t) => {
      const rows = live?.get(t.id) ?? [];
      const endpoints = await Promise.all(
        endpointsOf(t).map(async (e) => {
          const now = await readEndpoint(e, keyForProbe(t));
          const row = rows.find((r) => r.url === now.url);
          return row ? { ...now, inUse: row.inUse } : now;
        }),
      );
      return { ...t, endpoints };
    }),
  );
  return { active, targets: out };
}
