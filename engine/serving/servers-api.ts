/**
 * The model servers the engine started (serving.json), on the typed API: list them with whether they run, stop,
 * restart (same binary, arguments, port and generated key), delete (stop and forget), and "keep running after
 * `ocw stop`". `ocw stop` stops every server not marked kept (stopUnkeptServing, called by the engine's shutdown) and
 * remembers it stopped, to be restarted later.
 */
import { rmSync } from "node:fs";
import path from "node:path";
import { OcwError } from "../../shared/errors";
import type { ServerView } from "../../shared/servers";
import { readKey } from "./keys";
import { startLlamaServer } from "./llama-server";
import { classifyLog } from "./start-common";
import { processStartTime } from "../process";
import { listServing, putServing, type ServingRecord, updateServing, servingAlive, startSupervised, stopServing, supervisorCommand } from "./setup";

/** A server record as a person sees it (no key, no environment values). */
function view(r: ServingRecord): ServerView {
  return {
    targetId: r.targetId,
    replicaOf: r.replicaOf ?? null,
    pid: r.pid,
    port: r.port,
    running: servingAlive(r),
    supervised: !!r.supervisorPid,
    restarts: r.restarts ?? 0,
    keep: !!r.keep,
    startedAt: r.startedAt,
    logFile: r.logFile,
    bin: r.bin,
    runtime: r.runtime ?? "llama.cpp",
    lastCrash: r.lastCrash ?? null,
    gaveUp: r.gaveUp ?? null,
  };
}

/** Records of a target: itself, or the replicas of a pool. */
function recordsOf(id: string): ServingRecord[] {
  const recs = listServing().filter((r) => r.targetId === id || r.replicaOf === id);
  if (!recs.length)
    throw new OcwError("not-found", `no model server started by the engine for "${id}" (servers you started yourself are stopped where you started them)`);
  return recs;
}

export function serversListApi(): ServerView[] {
  return listServing().map(view);
}

export async function serverStopApi(id: string): Promise<ServerView[]> {
  return (await stopRemembered(recordsOf(id), id)).recs.map(view);
}

/** Stops a target's server(s) and remembers them stopped (the record stays with no live pid), so they can be restarted. */
async function stopRemembered(recs: ServingRecord[], id: string): Promise<{ recs: ServingRecord[]; stopped: boolean }> {
  const r = await stopServing(id);
  const keep = recs.map((r) => ({ ...r, pid: 0, startTime: null, supervisorPid: null, supervisorStartTime: null }));
  updateServing((all) => [...all.filter((r) => !keep.some((k) => k.targetId === r.targetId)), ...keep]);
  return { recs: keep, stopped: r.stopped.length > 0 };
}

/** Stops the server(s) and starts them again exactly as recorded: same binary, arguments, environment, port and key. */
export async function serverRestartApi(id: string, o: { readyTimeoutMs?: number } = {}): Promise<ServerView[]> {
  const recs = recordsOf(id);
  // vLLM / SGLang take their key and launch differently (start-runtimes.ts): those are started again by a new start
  const other = recs.find((r) => !path.basename(r.bin).startsWith("llama-server"));
  if (other)
    throw new OcwError(
      "bad-input",
      `${id} runs ${path.basename(other.bin)}, not llama-server: start it again from "Start … here" (or \`ocw setup\`); Stop and Delete work for it`,
    );
  await stopServing(id);
  const sup = supervisorCommand();
  const out: ServingRecord[] = [];
  for (const r of recs) {
    const base: ServingRecord = { ...r, pid: 0, startTime: null, supervisorPid: null, supervisorStartTime: null, startedAt: new Date().toISOString() };
    putServing(base);
    try {
      if (sup) {
        await startSupervised(sup, base, o.readyTimeoutMs ?? 600_000);
        out.push(listServing().find((x) => x.targetId === r.targetId) ?? base);
      } else {
        const apiKey = r.keyFile ? readKey(r.keyFile) : null;
        const s = await startLlamaServer({
          bin: r.bin,
          args: r.args,
          env: r.env,
          apiKey,
          logFile: r.logFile,
          port: r.port,
          detached: true,
          readyTimeoutMs: o.readyTimeoutMs ?? 600_000,
        });
        const rec = { ...base, pid: s.pid, startTime: processStartTime(s.pid) };
        putServing(rec);
        out.push(rec);
      }
    } catch (e) {
      throw new OcwError("unavailable", restartFailure(r.targetId, (e as Error).message, null, r.logFile, r.port));
    }
  }
  return out.map(view);
}

/**
 * Why a recorded server did not start again, with what to do. The commonest: its port, recorded with the target (the
 * workers' endpoint), was taken by another process while the server was stopped.
 */
export function restartFailure(id: string, message: string, logLine: string | null, logFile: string, port: number): string {
  const c = classifyLog(logLine ?? message);
  if (c?.kind === "port")
    return `${id} did not start again: port ${port} is taken by another process now (${c.logLine}): stop what holds it (\`ss -ltnp 'sport = :${port}'\` names it) and restart, or set the model up again with \`ocw setup\` (a free port) (log: ${logFile})`;
  return `${id} did not start again: ${message.split("\n")[0]} (log: ${logFile})`;
}

/** Stops the server(s) and forgets them, with their generated key. The target stays (delete it on its own). */
export async function serverDeleteApi(id: string): Promise<{ deleted: string[] }> {
  const recs = recordsOf(id);
  await stopServing(id);
  for (const r of recs) if (r.keyFile && !listServing().some((x) => x.keyFile === r.keyFile)) rmSync(r.keyFile, { force: true });
  return { deleted: recs.map((r) => r.targetId) };
}

/** The server(s) of a target being deleted, stopped and forgotten; nothing when the engine started none for it. */
export async function serverDeleteOf(targetId: string): Promise<string[]> {
  if (!listServing().some((r) => r.targetId === targetId || r.replicaOf === targetId)) return [];
  return (await serverDeleteApi(targetId)).deleted;
}

/** Keep (or no longer keep) the server(s) running when the engine is stopped with `ocw stop`. */
export function serverKeepApi(id: string, keep: boolean): ServerView[] {
  const ids = new Set(recordsOf(id).map((r) => r.targetId));
  const recs = updateServing((all) => all.map((r) => (ids.has(r.targetId) ? { ...r, keep } : r)));
  return recs.filter((r) => ids.has(r.targetId)).map(view);
}

/** `ocw stop`: every server the engine started stops with it, unless the person chose to keep it. */
export async function stopUnkeptServing(): Promise<string[]> {
  const ids = [
    ...new Set(
      listServing()
        .filter((r) => !r.keep)
        .map((r) => r.replicaOf ?? r.targetId),
    ),
  ];
  const stopped: string[] = [];
  for (const id of ids) {
    // remembered stopped, as the servers panel's Stop does: after the engine starts again, `ocw serving restart ID`
    // (or Restart) starts it as it was (same port and key); `ocw serving stop` / Delete forget it
    const r = await stopRemembered(
      listServing().filter((x) => x.targetId === id || x.replicaOf === id),
      id,
    ).catch(() => null);
    if (r?.stopped) stopped.push(id);
  }
  return stopped;
}
