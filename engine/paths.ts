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

/** Where the engine's browser UI (index.html + assets) is, or, when there is none, what a person can do about it. */
export type BrowserUi = { dir: string; missing?: undefined } | { dir?: undefined; missing: string };

/**
 * The built browser UI the engine serves at /: a checkout's `out/renderer` (electron-vite build), else the copy next to
 * the running bundle (`dist/ui`: what `npm run build:cli` builds, and what the Claude Code plugin ships in
 * plugin/dist/ui, where there is no checkout). `here` is this file's folder: the bundle's dist/ in a build.
 */
export function browserUi(root = projectRoot(), here = path.dirname(fileURLToPath(import.meta.url))): BrowserUi {
  const candidates = [path.join(root, "out", "renderer"), path.join(here, "ui"), path.join(root, "dist", "ui")];
  const dir = candidates.find((d) => existsSync(path.join(d, "index.html")));
  if (dir) return { dir };
  const lead = "The opencode-worker engine is running, but its browser UI is missing";
  // A checkout (the renderer's sources are here): build it.
  if (existsSync(path.join(root, "renderer", "index.html"))) return { missing: `${lead}: it is not built. Run \`npm run build\` in ${root}.` };
  const looked = `(looked for ${path.join(here, "ui", "index.html")})`;
  // The Claude Code plugin: its copy lacks the UI; a plugin update or reinstall brings the one its release carries.
  if (existsSync(path.join(root, ".claude-plugin", "plugin.json")))
    return {
      missing:
        `${lead} from this plugin install ${looked}. Update the plugin (\`claude plugin marketplace update opencode-worker\`, then ` +
        "`claude plugin update opencode-worker@opencode-worker`) or reinstall it, restart Claude Code, and run `ocw stop` so that the " +
        "next call starts the new engine. Until then, `ocw list` and the plugin's MCP tools show the same workers.",
    };
  return {
    missing: `${lead} from this install ${looked}. Reinstall opencode-worker, or build it from a checkout (\`npm run build\`). Until then, \`ocw list\` shows the same workers.`,
  };
}
