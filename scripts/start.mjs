// `npm start`: build what is missing or stale, then launch the desktop app — or, where no Electron binary exists,
// say so and run the engine in the foreground (`ocw serve`), which prints the browser UI's URL.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const rel = (p) => path.join(root, p);

function newest(dir) {
  let t = 0;
  const walk = (d) => {
    for (const name of readdirSync(d)) {
      const p = path.join(d, name);
      const s = statSync(p);
      if (s.isDirectory()) walk(p);
      else t = Math.max(t, s.mtimeMs);
    }
  };
  if (existsSync(dir)) walk(dir);
  return t;
}

function stale(output, inputs) {
  if (!existsSync(output)) return true;
  const built = statSync(output).mtimeMs;
  return inputs.some((i) => newest(rel(i)) > built);
}

function run(cmd, args) {
  console.error(`> ${cmd} ${args.join(" ")}`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: "inherit", shell: process.platform === "win32" });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

if (stale(rel("dist/ocw.mjs"), ["engine", "shared", "protocol"])) run(process.execPath, [rel("scripts/build.mjs")]);
if (stale(rel("out/renderer/index.html"), ["renderer", "shared", "electron"]) || !existsSync(rel("out/main/main.js"))) run("npx", ["electron-vite", "build"]);

function electronBinary() {
  const exe = process.platform === "darwin" ? "Electron.app/Contents/MacOS/Electron" : process.platform === "win32" ? "electron.exe" : "electron";
  const dist = process.env.ELECTRON_OVERRIDE_DIST_PATH ?? rel("node_modules/electron/dist");
  const file = path.join(dist, exe);
  return existsSync(file) ? file : null;
}

const bin = electronBinary();
if (bin) {
  const child = spawn(bin, [rel("out/main/main.js"), ...process.argv.slice(2)], { cwd: root, stdio: "inherit", env: { ...process.env, OCW_ROOT: root } });
  child.on("exit", (code) => process.exit(code ?? 0));
} else {
  console.error(
    "ocw: no Electron binary here (node_modules/electron/dist is empty and ELECTRON_OVERRIDE_DIST_PATH is not set), so the desktop app cannot start.\n" +
      "ocw: starting the engine instead — open the URL below in a browser for the same UI.",
  );
  const child = spawn(process.execPath, [rel("dist/ocw.mjs"), "serve", ...process.argv.slice(2)], { cwd: root, stdio: "inherit" });
  for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => child.kill(sig));
  child.on("exit", (code) => process.exit(code ?? 0));
}
