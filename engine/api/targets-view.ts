import { endpointsOf } from "../../shared/target";
import { type EndpointStatus, readEndpoint } from "../admission";
import { keyForProbe } from "../serving/keys";
import type { TargetStore } from "../store";

/**
 * `ocw targets --json`: every target with `endpoints: [{url, healthy, slots, inUse, …}]` — as admission sees them
 * (`live`: the engine's rows, which know the workers on each endpoint), else probed now (nothing in use).
 */
export async function targetsWithEndpoints(store: TargetStore, live: Map<string, EndpointStatus[]> | null = null) {
  const { active, targets } = store.list();
  const out = await Promise.all(
    targets.map(async (t) => {
      const endpoints = live?.get(t.id) ?? (await Promise.all(endpointsOf(t).map((e) => readEndpoint(e, keyForProbe(t)))));
      return { ...t, endpoints };
    }),
  );
  return { active, targets: out };
}
