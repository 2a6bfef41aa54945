import { execSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { optOutWhereNoSandbox } from "../test/sandbox-optout";

/** Builds the engine bundle and the renderer (the UI `ocw serve` serves), as `npm run build` does. */
export default async function setup() {
  const root = path.resolve(__dirname, "..");
  execSync("node scripts/build.mjs && npx electron-vite build", { cwd: root, stdio: "inherit" });
  optOutWhereNoSandbox();
  if (!existsSync(path.join(root, "out", "renderer", "index.html"))) throw new Error("electron-vite build did not produce out/renderer/index.html");
  // Leftovers of an earlier, interrupted run (state dirs, repos) in the run's TMPDIR.
  const tmp = process.env.TMPDIR;
  if (tmp && existsSync(tmp) && tmp.includes("ocw-e2e-"))
    for (const name of readdirSync(tmp)) if (name.startsWith("ocw-")) rmSync(path.join(tmp, name), { recursive: true, force: true });
  const shots = path.join(root, "test-results", "screenshots");
  rmSync(shots, { recursive: true, force: true });
  mkdirSync(shots, { recursive: true });
}
