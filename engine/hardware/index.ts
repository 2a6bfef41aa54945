// The hardware surface: GPU and memory detection, parsed GPU specs, the one-line summary.
// Code outside engine/hardware/ imports only this file (scripts/layers.mjs).
export { budgetsFromReport, detectHardware, type HardwareReport, listLlamaDevices } from "./detect";
export { type DeviceBudget, type Gpu, parseGpuSpec } from "./parse";
export { hardwareSummary } from "./summary";
