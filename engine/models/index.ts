// The model files' surface: the catalog, sizing and planning (pure), the Hub and GGUF readers, and the setup error,
// as engine/serving/ uses them. Code outside engine/models/ imports only this file (scripts/layers.mjs), except a
// client, which takes a pure module by name (scripts/layers.mjs PURE).
export {
  CATALOG,
  type CatalogEntry,
  catalogHparams,
  type CatalogWeights,
  DEFAULT_IMAGES,
  findCatalog,
  makerRepo,
  rankByLedger,
  runtimeFamily,
  servedBy,
} from "./catalog";
export { DownloadError, downloadFile, type DownloadProgress } from "./download";
export { isSetupError, SetupError, type SetupErrorData } from "./errors";
export { type DeviceBudget, type Estimate, estimate, GiB, MiB } from "./estimate";
export type { KvCacheType } from "./ggml-types";
export { HUB_CONFIG_MAX_BYTES, hubEndpoint, type HubFile, hubHeaders, listRepoFiles, readHubJson, resolveUrl } from "./hf";
export { hparamsFromMetadata } from "./hparams";
export { readHubSizes, refreshHubSizes, withHubSizes } from "./hub-sizes";
export { MTP_OFF, mtpOf, mtpPlan, mtpState, sglangMtpArgs, vllmMtpArgs } from "./mtp";
export {
  commandWords,
  DEFAULT_MIN_CTX,
  defaultSlots,
  devicesFromHardware,
  gpuWords,
  modelFromInfo,
  PARALLEL_OVERHEAD,
  type ParallelModel,
  type ParallelPlan,
  parallelSpeed,
  type PlanDevices,
  planModel,
  propose,
  shellQuote,
  sizeParallel,
  slowProblem,
} from "./plan";
export { localPathFor, parseRepoRef, planRepo } from "./resolve";
export { loadGguf, loadMetadataFile, type ModelInfo } from "./source";
export { hasFp8, isDatacenterGpu, MIN_AGENT_TOK_PER_SEC } from "./speed";
