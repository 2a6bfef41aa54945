// The CPU of `opencode serve` alone for one batch, in variants that differ in one thing each from the engine's serve
// (sandbox, worker shell + plugin, instance disposal), driven the same way (the bare SDK, no engine beside it), taking
// turns. A scratch tool of the cost investigation (issue 31): `npx jiti bench/serve-ab.ts N REPS variant,variant,…`.
// Variants: bare (unconfined, no shell/plugin) · engine (bwrap + worker shell + plugin) · nosandbox (kind none + shell +
// plugin) · noplugin (bwrap + shell, OPENCODE_PURE) · shellonly (no sandbox, shell, no plugin) · noevent (engine, the
// plugin without its `event` hook) · emptyplugin (engine, a plugin of no hooks: OPENCODE_PURE off alone); suffix `+dispose`: each
// task's instance is disposed after its task, as the engine does.
import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { WORKER_AGENT } from "../engine/harness/config";
import { OpencodeServer } from "../engine/harness/opencode-server";
import { sandboxStatus, WORKSPACE_PLUGIN, writeWorkerShell, writeWorkspacePlugin } from "../engine/sandbox";
import { createWorkspace, inspectRepo } from "../engine/workspace";
import { startScriptedModel, writeFile } from "../test/fixtures/scripted-model";
import { cleanup, makeRepo, tempDir } from "../test/helpers";
import { bareSdk, benchTarget } from "./batch";
import { opencodeServeUnder, rssMbOf } from "./procs";
import { cpuWithChildren, median, round, untilQuiet } from "./stats";

const execFileP = promisify(execFile);
const n = Number(process.argv[2] ?? 16);
const reps = Number(process.argv[3] ?? 2);
const variants = (process.argv[4] ?? "bare,engine").split(",");

const model = await startScriptedModel({
  scripts: [
    {
      name: "batch",
      match: /BENCH-BATCH (\d+)/,
      script: (c) => (c.turnStep === 0 ? writeFile(`f${/BENCH-BATCH (\d+)/.exec(c.firstUserText)![1]}.txt`, "x\n") : { text: "OUTCOME: built" }),
    },
  ],
});

const BURNER = `
const { execFileSync } = require("node:child_process");
const dir = process.argv[1];
setInterval(() => { const t = Date.now(); while (Date.now() - t < 20) {} }, 100);
const git = () => { try { execFileSync("git", ["-C", dir, "rev-parse", "HEAD"], { stdio: "ignore" }); } catch {} setTimeout(git, 12); };
git();
`;

async function rig(variant: string) {
  const [kind, ...flags] = variant.split("+");
  const dispose = flags.includes("dispose");
  const release = flags.includes("release");
  // Work beside the serve like the engine's during a batch (its node thread ~20% of a core, its git ~60 processes a second).
  const burn = flags.includes("burn");
  // Each task's workspace made the engine's way (createWorkspace: git's init layout, the mirror as alternate, a
  // checkout of the worker's branch), not a clone.
  const engineWs = flags.includes("ws");
  // +origin: that workspace also names an origin remote and its HEAD, as a clone does (opencode reads them).
  const origin = flags.includes("origin");
  const dirs: string[] = [];
  const state = tempDir(`ab-${kind}`);
  const home = path.join(state, "opencode", "scripted");
  const workspacesRoot = path.join(state, "workspaces");
  const tmpRoot = path.join(state, "tmp");
  const mirrorsRoot = path.join(workspacesRoot, ".mirrors");
  for (const d of [workspacesRoot, tmpRoot, mirrorsRoot]) mkdirSync(d, { recursive: true });
  const withPlugin = ["engine", "nosandbox", "noevent", "emptyplugin"].includes(kind!);
  const sbKind = kind === "nosandbox" || kind === "shellonly" || kind === "bare" ? "none" : sandboxStatus().kind;
  const confined = kind !== "bare";
  const shell = confined ? writeWorkerShell(path.join(state, "sandbox", "worker-shell"), { workspacesRoot, tmpRoot, kind: sbKind, stateDir: state }) : "";
  const plugin = withPlugin ? writeWorkspacePlugin(path.join(state, "sandbox", "ocw-workspace.js")) : undefined;
  // The variants of the plugin itself: without its `event` hook (called for every bus event), or with no hook at all.
  if (plugin && kind === "noevent") writeFileSync(plugin, WORKSPACE_PLUGIN.replace(/\n {4}event: async[\s\S]*?\n {4}\},/, ""));
  if (plugin && kind === "emptyplugin") writeFileSync(plugin, "export const OcwWorkspace = async () => ({});\n");
  const server = new OpencodeServer({
    target: benchTarget(model.url),
    home,
    confine: confined ? { kind: sbKind, stateDir: state, workspacesRoot, tmpRoot, mirrorsRoot, shell, plugin } : undefined,
  });
  await server.start();
  const { client, idle: idleOf } = bareSdk(server);
  const firsts: number[] = [];
  const turns: number[] = [];
  const phases = { ws: [] as number[], session: [] as number[], prompt: [] as number[] };
  const one = async (dir: string, _i: number, branch: string, text: string) => {
    const t0 = Date.now();
    let wt = path.join(workspacesRoot, branch, "repo");
    if (engineWs) {
      wt = (await createWorkspace(workspacesRoot, await inspectRepo(dir), branch, path.join(state, "repos", `${branch}.git`))).cwd;
      if (origin) {
        await execFileP("git", ["-C", wt, "remote", "add", "origin", "/nonexistent"]);
        await execFileP("git", ["-C", wt, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main"]);
      }
    } else {
      mkdirSync(path.dirname(wt), { recursive: true });
      await execFileP("git", ["clone", "-q", "--template=", dir, wt]);
      writeFileSync(path.join(wt, ".git", "opencode"), randomBytes(20).toString("hex") + "\n");
    }
    phases.ws.push(Date.now() - t0);
    const s = (await client.session.create({ directory: wt, title: `ab ${branch}` })).data!;
    phases.session.push(Date.now() - t0);
    const idle = idleOf(s.id);
    await client.session.promptAsync({ sessionID: s.id, directory: wt, agent: WORKER_AGENT, parts: [{ type: "text", text }] });
    phases.prompt.push(Date.now() - t0);
    await idle;
    const chats = model.requests.filter((r) => r.kind === "chat" && r.sessionId === s.id);
    const first = chats[0];
    if (first) firsts.push(first.at - t0);
    // The turn after the tool: its ask asked and answered, the write run, the next request made.
    if (chats[1] && first) turns.push(chats[1].at - first.at);
    if (dispose) await client.instance.dispose({ directory: wt });
    else dirs.push(wt);
  };
  await one(makeRepo(), 0, "warm", "BENCH-BATCH 0 warm-up");
  const pid = opencodeServeUnder(server.pid!)!;
  return {
    variant,
    async run(tag: string) {
      const dir = makeRepo();
      firsts.length = 0;
      turns.length = 0;
      for (const k of Object.keys(phases) as (keyof typeof phases)[]) phases[k].length = 0;
      await untilQuiet([pid]);
      const rss0 = rssMbOf(pid);
      const c0 = cpuWithChildren(pid)!;
      const burner = burn ? spawn(process.execPath, ["-e", BURNER, dir], { stdio: "ignore" }) : null;
      const t0 = Date.now();
      await Promise.all(Array.from({ length: n }, (_, i) => one(dir, i, `${tag}-w${i}`, `BENCH-BATCH ${i} ${tag}`)));
      const wall = Date.now() - t0;
      burner?.kill();
      const c1 = cpuWithChildren(pid)!;
      await untilQuiet([pid]);
      const c2 = cpuWithChildren(pid)!;
      let released = 0;
      if (release) {
        // the engine's way: every finished worker's instance at once, when none is at work
        await Promise.all(dirs.map((d) => client.instance.dispose({ directory: d })));
        await untilQuiet([pid]);
        const c3 = cpuWithChildren(pid)!;
        released = round(c3.self + c3.children - c2.self - c2.children, 2);
      }
      dirs.length = 0;
      cleanup(dir);
      const rss1 = rssMbOf(pid);
      return {
        rss: `${round(rss0 ?? 0, 0)} → ${round(rss1 ?? 0, 0)} MB; workspace ${round(median(phases.ws), 0)}/${Math.max(...phases.ws)}, session ${round(median(phases.session), 0)}/${Math.max(...phases.session)}, prompted ${round(median(phases.prompt), 0)}/${Math.max(...phases.prompt)} ms`,
        wall,
        cpu: round(c1.self - c0.self, 2),
        kids: round(c1.children - c0.children, 2),
        after: round(c2.self + c2.children - c1.self - c1.children, 2),
        first: round(median(firsts), 0),
        firstMax: Math.max(...firsts),
        turn: round(median(turns), 0),
        released,
      };
    },
    close: async () => {
      await server.stop();
      cleanup(state);
    },
  };
}

const rigs = [];
for (const v of variants) rigs.push(await rig(v));
const res: Record<
  string,
  { rss: string; cpu: number; kids: number; after: number; first: number; firstMax: number; turn: number; wall: number; released: number }[]
> = {};
try {
  for (let rep = 0; rep < reps; rep++) {
    for (const r of rep % 2 ? [...rigs].reverse() : rigs) {
      const x = await r.run(`r${rep}`);
      (res[r.variant] ??= []).push(x);
      console.log(
        `${r.variant} rep ${rep}: serve CPU ${x.cpu}+${x.kids} s (+${x.after} s after, disposals ${x.released} s), first request ${x.first}/${x.firstMax} ms, tool turn ${x.turn} ms, wall ${x.wall} ms, serve RSS ${x.rss}`,
      );
    }
  }
  for (const [v, xs] of Object.entries(res)) {
    const m = (f: (x: (typeof xs)[number]) => number) => round(median(xs.map(f)), 2);
    console.log(
      `${v}: median serve CPU ${m((x) => x.cpu)}+${m((x) => x.kids)} s, after ${m((x) => x.after)} s, total ${m((x) => x.cpu + x.kids + x.after)} s, disposals ${m((x) => x.released)} s; first ${m((x) => x.first)}/${m((x) => x.firstMax)} ms; tool turn ${m((x) => x.turn)} ms; wall ${m((x) => x.wall)} ms`,
    );
  }
} finally {
  for (const r of rigs) await r.close();
  await model.close();
}
process.exit(0);
