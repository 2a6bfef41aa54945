// The model servers' surface: setup (fit, start, capture, providers, verify), the servers ocw started and their keys, as
// the engine's API and the workers' harness use them. Code outside engine/serving/ imports only this file
// (scripts/layers.mjs); each name here has a user outside.
export { deployK8s } from "./k8s-deploy";
export { forgetApiKey, keyForProbe, resolveKey } from "./keys";
export { cancelLlamaBuild, llamaBuildJob, startLlamaBuild } from "./llama-build";
export { describeError } from "./provider-errors";
export { providerModelsApi } from "./providers-api";
export { serverDeleteApi, serverDeleteOf, serverKeepApi, serverRestartApi, serversListApi, serverStopApi, stopUnkeptServing } from "./servers-api";
export { superviseServing } from "./setup";
export {
  setupCancelApi,
  setupCaptureApi,
  setupCatalog,
  setupFit,
  setupHardware,
  setupJobApi,
  setupProviderApi,
  setupProviderKeyApi,
  setupStartApi,
  setTargetKey,
} from "./setup-api";
export { doctor, fitFile, fitPlan, setupVerify, stopRecorded } from "./setup-commands";
export { OPENCODE_FIRST_REQUEST_TOKENS } from "./verify";
