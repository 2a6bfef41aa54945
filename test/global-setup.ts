import { execFileSync } from "node:child_process";
import { optOutWhereNoSandbox } from "./sandbox-optout";

/** Integration tests drive the real `ocw` bundle, so build it once before they start. */
export default async function setup() {
  execFileSync(process.execPath, ["scripts/build.mjs"], { stdio: "inherit" });
  optOutWhereNoSandbox();
}
