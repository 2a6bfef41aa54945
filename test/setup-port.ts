// The `ocw` setup commands' port (engine/commands/model-setup.ts: SetupPort) without an engine: the functions the API
// runs for them, called in this process on hardware or a store of the test's own.
import type { HardwareReport } from "../engine/hardware";
import { targetsWithEndpoints } from "../engine/api/targets-view";
import { doctor, fitFile, fitPlan, setupVerify, stopRecorded } from "../engine/serving/setup-commands";
import { serverKeepApi, serverRestartApi, serversListApi } from "../engine/serving/servers-api";
import { TargetStore } from "../engine/store";
import type { FitFileInput, FitPlanInput } from "../shared/fit";
import { adhocUnused } from "../shared/target";
import type { SetupJob, SetupStartInput, SetupVerifyInput } from "../shared/setup";
import { runStartJob } from "../engine/serving/start";
import { setTargetKey } from "../engine/serving/setup-api";
import { forgetApiKey } from "../engine/serving/keys";

/** The port: each method the function its API procedure calls. */
export function localSetupPort(o: { hardware?: HardwareReport; store?: TargetStore; env?: NodeJS.ProcessEnv } = {}) {
  const store = () => o.store ?? new TargetStore();
  return {
    estimate: (i: FitFileInput) => fitFile(i, o),
    plan: (i: FitPlanInput) => fitPlan(i, o),
    doctor: (i: { llamaServer?: string; cwd?: string }) => doctor(i, o),
    targets: async () => store().list(),
    targetsWithEndpoints: () => targetsWithEndpoints(store()),
    useTarget: async (id: string) => store().use(id),
    setKey: async (id: string, key: string) => setTargetKey(store(), id, key),
    removeTarget: async (id: string) => {
      const r = store().remove(id);
      forgetApiKey(id);
      return r;
    },
    // no engine, so no workers here: every ad-hoc target but the active one is unused
    removeAdhocTargets: async () => {
      const { active, targets } = store().list();
      const { remove, kept } = adhocUnused(targets, active, []);
      for (const id of remove) {
        store().remove(id);
        forgetApiKey(id);
      }
      return { removed: remove, kept };
    },
    stopServing: (target?: string) => stopRecorded(target),
    servers: async () => serversListApi(),
    restartServer: (id: string) => serverRestartApi(id),
    keepServer: async (id: string, keep: boolean) => serverKeepApi(id, keep),
    // capture / provider in this process, on the test's environment (its log lines as they come)
    verify: async (input: SetupVerifyInput, log: (l: string) => void) => (await setupVerify(input, store(), o.env ?? process.env, log)).result,
    // the start by phases in this process, its question asked with the job once planned (as the engine's own start)
    start: (input: SetupStartInput, s: { yes: boolean; confirm: (j: SetupJob) => Promise<boolean>; onUpdate: (j: SetupJob) => void }) =>
      runStartJob({
        input,
        store: store(),
        hardware: o.hardware,
        llamaServer: input.llamaServer,
        confirm: s.yes ? undefined : s.confirm,
        onUpdate: s.onUpdate,
      }),
  };
}
