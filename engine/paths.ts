import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { config } from "./config";

/** The opencode-worker checkout/install root (holds protocol/, packs/, node_modules/). */
export function projectRoot(): string {
  const configured = config().OCW_ROOT;
  if (configured) return configured;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(path.join(dir, "protocol")) && existsSync(path.join(dir, "package.json"))) return dir;
    dir = path.dirname(dir);
  }
  throw new Error("cannot find the opencode-worker root (protocol/ and package.json); set OCW_ROOT");
}
