// The setup most GUI specs share: a scripted model, the real engine (`ocw serve`) with a target on that model made
// active, approval rules, git repos and a logged-in page, with one close() for the lot; and where screenshots go.
// What a spec does differently (its scripts, slots, serving engine, viewport, extra steps) stays at its call site.
import { mkdirSync } from "node:fs";
import path from "node:path";
import type { Browser, Locator, Page } from "@playwright/test";
import type { PolicyRule } from "../shared/permission";
import type { ServingEngine } from "../shared/target";
import { startScriptedModel, type ScriptedModel, type ScriptedModelOptions } from "../test/fixtures/scripted-model";
import { cleanup, makeRepo, openUi, startEngine, type E2EEngine, type UiOptions } from "./engine";

/** Where screenshots go: OCW_SHOTS_DIR keeps a run's apart (global setup empties the default folder on every run). */
export const SHOTS = process.env.OCW_SHOTS_DIR ?? path.resolve(__dirname, "..", "test-results", "screenshots");

/**
 * A screenshot taker: `shot(page, "x")` saves SHOTS/<prefix>x.png, of the whole page when `fullPage` (one call may say
 * otherwise with its third argument); a locator's shot is of its own box.
 */
export function shots(prefix: string, { fullPage }: { fullPage: boolean }) {
  mkdirSync(SHOTS, { recursive: true });
  return (what: Page | Locator, name: string, full = fullPage): Promise<Buffer> => {
    const file = path.join(SHOTS, `${prefix}${name}.png`);
    return "goto" in what ? what.screenshot({ path: file, fullPage: full }) : what.screenshot({ path: file });
  };
}

export interface ScriptedEngineOptions {
  /** The scripted model: its scripts, its pacing (chunkDelayMs) and the rest (test/fixtures/scripted-model.ts). */
  model: ScriptedModelOptions;
  /** The target on that model (model "scripted-1") that is saved and made active: its id ("scripted" unless given), serving engine and slots. */
  target: { id?: string; engine: ServingEngine; slots: number };
  /** Ids of more targets like it (same model, endpoint and serving), saved before it and not made active. */
  inactiveTargets?: string[];
  /** Approval rules set once the target is active (none set: every ask waits for a person). */
  policies?: PolicyRule[];
  /** More environment for `ocw serve` (startEngine's own comes first). */
  env?: NodeJS.ProcessEnv;
  /** The files of each git repository to make, in order (default: one repository with makeRepo's README). */
  repos?: Record<string, string>[];
  /** How close() ends the engine: "kill" (SIGTERM, the default) or "stop" (`ocw stop`: the model servers it started stop too). */
  end?: "kill" | "stop";
}

export interface ScriptedEngine {
  model: ScriptedModel;
  /** The engine close() ends: a spec that starts it again on the same state dir puts the new one here. */
  engine: E2EEngine;
  /** The first of `repos`. */
  repo: string;
  repos: string[];
  /**
   * Closes the page's browser context (scriptedUi), ends the engine, closes the model, and removes the state dir and
   * the repos. Setup that fails part-way closes what it had started itself, so `afterAll(() => setup?.close())` is enough.
   */
  close(): Promise<void>;
}

export interface ScriptedUi extends ScriptedEngine {
  /** A page in its own browser context, logged in through the URL `ocw serve` printed (openUi). */
  page: Page;
}

/** A scripted model and the real engine with a target on it made active, approval rules and repos (see the options). */
export async function scriptedEngine(o: ScriptedEngineOptions): Promise<ScriptedEngine> {
  // One object, filled in as things start: close() reads it when called (a replaced engine, a page added by scriptedUi).
  const s: Partial<ScriptedUi> & { repos: string[] } = { repos: [] };
  const close = async () => {
    await s.page?.context().close();
    await (o.end === "stop" ? s.engine?.stop() : s.engine?.kill());
    await s.model?.close();
    cleanup(s.engine?.stateDir ?? "", ...s.repos);
  };
  try {
    const model = (s.model = await startScriptedModel(o.model));
    const engine = (s.engine = await startEngine(undefined, o.env));
    const target = (id: string) => ({
      id,
      model: "scripted-1",
      endpoint: model.url,
      serving: { engine: o.target.engine, endpoints: [], slots: o.target.slots },
      checks: [],
    });
    for (const id of o.inactiveTargets ?? []) await engine.client.targets.save.mutate({ target: target(id), activate: false });
    await engine.client.targets.save.mutate({ target: target(o.target.id ?? "scripted"), activate: true });
    if (o.policies) await engine.client.policies.set.mutate({ rules: o.policies });
    for (const files of o.repos ?? [undefined]) s.repos.push(makeRepo(files));
  } catch (err) {
    await close();
    throw err;
  }
  return Object.assign(s, { repo: s.repos[0]!, close }) as ScriptedEngine;
}

/** scriptedEngine, then a page logged in to it (openUi, with the viewport and permissions given); close() closes it too. */
export async function scriptedUi(browser: Browser, o: ScriptedEngineOptions & UiOptions): Promise<ScriptedUi> {
  const s = (await scriptedEngine(o)) as ScriptedEngine & { page?: Page };
  try {
    s.page = await openUi(browser, s.engine, o);
  } catch (err) {
    await s.close();
    throw err;
  }
  return s as ScriptedUi;
}
