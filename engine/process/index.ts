// The process layer's surface: who a process is, stopping it or its group, pid files, running a command, and the one
// supervisor of long-running children. Code outside engine/process/ imports only this file (scripts/layers.mjs).
export {
  alive,
  childPids,
  killGroup,
  pidAlive,
  type ProcessIdentity,
  processStartTime,
  readPidFile,
  selfIdentity,
  signalablePid,
  stopPid,
  writePidFile,
} from "./process";
export { type CommandResult, losslessUtf8, runCommand, trimFinalNewline } from "./run";
export { GiveUp, type Launched, Supervisor, type SupervisorEvents, type SupervisorOptions } from "./supervisor";
