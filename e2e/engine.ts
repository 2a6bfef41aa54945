// Test plumbing for the e2e suite: the real `ocw serve` bundle in an isolated state dir, a typed client of it, git repos.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect, type Browser, type Page, type ViewportSize } from "@playwright/test";
import { connect, type EngineClient } from "../engine/api/client";

export const ROOT = path.resolve(__dirname, "..");
export const BUNDLE = path.join(ROOT, "dist", "ocw.mjs");

export function tempDir(prefix: string): string {
  return mkdtempSync(path.join(os.tmpdir(), `ocw-${prefix}-`));
}

export function cleanup(...dirs: string[]): void {
  for (const d of dirs) if (d) rmSync(d, { recursive: true, force: true });
}

/** A real git repository with one commit holding `files`, on branch main. */
export function makeRepo(files: Record<string, string> = { "README.md": "# test repo\n" }): string {
  const dir = tempDir("repo");
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), content);
  }
  const git = (...args: string[]) => execFileSync("git", args, { cwd: dir, stdio: "pipe" });
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init");
  return dir;
}

export interface E2EEngine {
  stateDir: string;
  proc: ChildProcess;
  /** The URL `ocw serve` printed (carries the token). */
  url: string;
  origin: string;
  client: EngineClient;
  stderr: () => string;
  kill(): Promise<void>;
  /**
   * `ocw stop` as a person does it (the engine's shutdown): the model servers it started stop with it, their
   * `ocw serving supervise` processes too — a SIGTERM (kill) leaves those running. SIGTERM after 20 s as a last resort.
   */
  stop(): Promise<void>;
}

export async function startEngine(stateDir = tempDir("state"), env: NodeJS.ProcessEnv = {}): Promise<E2EEngine> {
  const proc = spawn(process.execPath, [BUNDLE, "serve"], {
    env: { ...process.env, OCW_STATE_DIR: stateDir, OCW_STALL_SEC: "600", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  proc.stderr!.on("data", (b) => (err += b.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    proc.stdout!.on("data", (b) => {
      out += b.toString();
      const line = out.split("\n")[0];
      if (out.includes("\n") && line) resolve(line.trim());
    });
    proc.once("exit", (code) => reject(new Error(`ocw serve exited ${code}: ${err}`)));
    setTimeout(() => reject(new Error(`ocw serve printed no URL in 20 s: ${err}`)), 20_000);
  });
  const lock = JSON.parse(readFileSync(path.join(stateDir, "engine.json"), "utf8")) as { port: number; token: string };
  const client = connect(lock, "gui:e2e");
  return {
    stateDir,
    proc,
    url,
    origin: new URL(url).origin,
    client,
    stderr: () => err,
    kill: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null || proc.signalCode) return resolve();
        proc.once("exit", () => resolve());
        proc.kill("SIGTERM");
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null || proc.signalCode) return resolve();
        const last = setTimeout(() => proc.kill("SIGTERM"), 20_000);
        proc.once("exit", () => {
          clearTimeout(last);
          resolve();
        });
        client.shutdown.mutate().catch(() => proc.kill("SIGTERM"));
      }),
  };
}

/** A worker as the engine's `workers.get` returns it. */
export type WorkerView = Awaited<ReturnType<EngineClient["workers"]["get"]["query"]>>;

/**
 * `expect.poll` of `read(worker)` that approves (once) each ask the worker has pending on every look, as a person who
 * answers every ask would; chain the assertion: `await approvingPoll(engine, id, (w) => w.state).toBe("built")`.
 */
export function approvingPoll<T>(engine: E2EEngine, workerId: string, read: (w: WorkerView) => T, timeout = 120_000) {
  return expect.poll(
    async () => {
      const w = await engine.client.workers.get.query({ workerId });
      for (const a of w.asks.filter((x) => x.status === "pending"))
        await engine.client.approvals.decide.mutate({ askId: a.id, decision: "once" }).catch(() => undefined);
      return read(w);
    },
    { timeout },
  );
}

/** How the browser context of `openUi` differs from Playwright's default one. */
export interface UiOptions {
  /** The context's window size (default: playwright.config.ts's). */
  viewport?: ViewportSize;
  /** Browser permissions granted to the engine's origin before the page opens (e.g. "notifications"). */
  permissions?: string[];
}

/** A page in its own browser context, logged in through the URL `ocw serve` printed; the page's errors go to the test log. */
export async function openUi(browser: Browser, engine: E2EEngine, { viewport, permissions }: UiOptions = {}): Promise<Page> {
  const context = await browser.newContext(viewport ? { viewport } : undefined);
  if (permissions) await context.grantPermissions(permissions, { origin: engine.origin });
  const page = await context.newPage();
  page.on("pageerror", (err) => console.error("[page error]", err.message));
  await page.goto(engine.url);
  return page;
}
