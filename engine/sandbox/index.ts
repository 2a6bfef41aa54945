// The sandbox's surface: bubblewrap policies and their arguments, allow-listed environments, the worker shell and
// per-command cgroups. Code outside engine/sandbox/ imports only this file (scripts/layers.mjs).
export { checkGroup, type CommandGroup, hitNote, joinPrefix, limitSetup, systemdPrefix } from "./cgroup";
export {
  allowListedEnv,
  commandLimits,
  deniedRoots,
  LIMITS_WORDS,
  revealed,
  sandboxed,
  type SandboxKind,
  sandboxStatus,
  servePolicy,
  writeRepoBinds,
  writeWorkerShell,
  WORKSPACE_PLUGIN,
  writeWorkspacePlugin,
} from "./sandbox";
