import { sandboxStatus } from "../engine/sandbox/sandbox";

/**
 * Where the OS sandbox cannot run (no bubblewrap, no user namespaces), the suites still test everything else: their
 * engines run workers unsandboxed by the explicit opt-out, said once here, and the containment tests skip themselves
 * with the reason. Where it can run (these machines, CI), nothing changes: every worker is sandboxed.
 */
export function optOutWhereNoSandbox(): void {
  const s = sandboxStatus();
  if (s.kind !== "none" || process.env.OCW_NO_SANDBOX) return;
  process.env.OCW_NO_SANDBOX = "1";
  console.warn(
    `\n[tests] the OS sandbox cannot run here (${s.reason}): engines in these tests run workers unsandboxed; the containment tests report themselves skipped\n`,
  );
}
