import { endpointsOf, isPool, type Target } from "../../shared/target";
import { isActive, type Worker } from "../../shared/worker";
import type { WorkerRegistry } from "../registry";
import type { TargetStore } from "../store";
import { keyForProbe } from "../serving";
import { chooseEndpoint, EndpointProbes, type EndpointStatus } from "./capacity";

/**
 * What admission knows about the model servers: the live state of every endpoint of pool targets (by target id, then
 * URL; read every OCW_POOL_PROBE_MS while they have work), and whether each target's model server answers (the active
 * target and those with work; every OCW_MODEL_PROBE_MS). A single-endpoint target admits by its slot count; a pool by
 * live capacity, each worker staying on its endpoint.
 */
interface ModelHealth {
  healthy: boolean;
  problem: string | null;
  checkedAt: number;
}

interface PoolsOptions {
  registry: WorkerRegistry;
  targets: TargetStore;
  poolProbeMs: number;
  modelProbeMs: number;
  /** An endpoint of a pool stopped answering: its workers move to another endpoint. */
  endpointDown: (target: Target, url: string, problem: string) => void;
  /** Something changed that may let queued workers in. */
  changed: () => void;
  /** How long a worker waiting for a person keeps its model slot (see holdsSlot); default 30 s. */
  handoverMs?: number;
}

/** Where a queued worker may start now: `wait` (no room, or the pool not read yet), or go (on `url` for a pool). */
type Admission = { go: false } | { go: true; url?: string };

/**
 * Whether a worker holds a model slot of its target now: starting or running; waiting for a person, until its oldest
 * open ask has waited `handoverMs` (a person who answers within it never loses the slot, so quick answers — Claude,
 * a policy, a person at the screen — never let the target run over its slots). Past it, the slot goes to the next
 * queued worker; answered, the worker goes on at once, ahead of every queued one, so a target can run over its slots
 * until that many end or ask (the engine answers opencode at once, never holding an answer back for a slot).
 */
function holdsSlot(w: Pick<Worker, "state" | "asks">, now: number, handoverMs: number): boolean {
  if (w.state === "starting" || w.state === "running") return true;
  if (w.state !== "waiting-approval") return false;
  let oldest = Number.POSITIVE_INFINITY;
  for (const a of w.asks) if (a.status === "pending" && a.createdAt < oldest) oldest = a.createdAt;
  return now - oldest < handoverMs;
}

export class Pools {
  private readonly endpointState = new Map<string, Map<string, EndpointStatus>>();
  private readonly refreshing = new Set<string>();
  private readonly modelHealth = new Map<string, ModelHealth>();
  /** Targets whose model API asked to wait (a long Retry-After): none of their workers starts before `until`. */
  private readonly holds = new Map<string, { until: number; reason: string; timer: NodeJS.Timeout }>();
  private readonly poolTimer: NodeJS.Timeout;
  private readonly modelTimer: NodeJS.Timeout;
  private closed = false;
  private readonly reg: WorkerRegistry;
  /** One probe per endpoint per pool period, shared by the pool refresh and the model-health check. */
  readonly probes: EndpointProbes;

  constructor(private readonly opts: PoolsOptions) {
    this.reg = opts.registry;
    this.probes = new EndpointProbes(opts.poolProbeMs);
    this.poolTimer = setInterval(() => this.refreshPools(), opts.poolProbeMs);
    this.poolTimer.unref();
    this.modelTimer = setInterval(() => void this.checkModels(), opts.modelProbeMs);
    this.modelTimer.unref();
    setImmediate(() => void this.checkModels());
  }

  close(): void {
    this.closed = true;
    for (const h of this.holds.values()) clearTimeout(h.timer);
    this.holds.clear();
    clearInterval(this.poolTimer);
    clearInterval(this.modelTimer);
  }

  /** How long a worker waiting for a person keeps its model slot. */
  get handoverMs(): number {
    return this.opts.handoverMs ?? 30_000;
  }

  /** Workers holding a model slot of a target (see holdsSlot). */
  activeCount(targetId: string): number {
    let n = 0;
    const now = Date.now();
    for (const w of this.reg.workers.values()) if (w.targetId === targetId && holdsSlot(w, now, this.handoverMs)) n++;
    return n;
  }

  /** Workers of a target waiting for a person whose slot went to another worker. */
  waitingCount(targetId: string): number {
    let n = 0;
    const now = Date.now();
    for (const w of this.reg.workers.values()) if (w.targetId === targetId && w.state === "waiting-approval" && !holdsSlot(w, now, this.handoverMs)) n++;
    return n;
  }

  /**
   * The target's model API asked to wait until `until` (a rate limit's Retry-After past what a worker sits through):
   * its queued workers stay queued until then, instead of each starting, asking once and being interrupted in turn.
   */
  hold(targetId: string, until: number, reason: string): void {
    const prev = this.holds.get(targetId);
    if (prev && prev.until >= until) return;
    if (prev) clearTimeout(prev.timer);
    const timer = setTimeout(() => this.release(targetId), Math.max(0, until - Date.now()));
    timer.unref();
    this.holds.set(targetId, { until, reason, timer });
  }

  /** The wait is over (its time came, or a person resumed a worker of the target to try again now). */
  release(targetId: string): void {
    const h = this.holds.get(targetId);
    if (!h) return;
    clearTimeout(h.timer);
    this.holds.delete(targetId);
    if (!this.closed) this.opts.changed();
  }

  /** Until when, and why, the target's workers wait for its model API (null: they do not). */
  heldUntil(targetId: string): { until: number; reason: string } | null {
    const h = this.holds.get(targetId);
    return h && h.until > Date.now() ? { until: h.until, reason: h.reason } : null;
  }

  /** Whether a queued worker may start on its target now, and on which endpoint of a pool. */
  admit(w: Worker, target: Target): Admission {
    if (this.heldUntil(target.id)) return { go: false };
    if (!isPool(target)) return this.activeCount(target.id) < target.serving.slots ? { go: true } : { go: false };
    // Admission by live capacity: a worker starts when an endpoint has room, and stays on its endpoint.
    if (!this.endpointState.has(target.id)) {
      void this.refreshTarget(target);
      return { go: false };
    }
    const chosen = chooseEndpoint(this.statusesOf(target), w.endpoint);
    return chosen ? { go: true, url: chosen.url } : { go: false };
  }

  /** Marks an endpoint down at once (a failed model call found it unreachable) until the next read says otherwise. */
  markDown(targetId: string, url: string, problem: string): void {
    const down = { url, healthy: false, slots: 0, inUse: 0, live: null, problem, checkedAt: Date.now() };
    this.endpointState.get(targetId)?.set(url, down);
    this.probes.note(down); // the shared reading too, or the next refresh would take a healthy one from before
  }

  /** Every endpoint of every known target: health, slots, workers on it, and what the server reports. */
  endpoints(): { targetId: string; endpoints: EndpointStatus[] }[] {
    return this.opts.targets.list().targets.map((t) => ({ targetId: t.id, endpoints: this.statusesOf(t) }));
  }

  /** The last health check of each target's model server. */
  models(): ({ targetId: string } & ModelHealth)[] {
    return [...this.modelHealth.entries()].map(([targetId, h]) => ({ targetId, ...h }));
  }

  private workersOn(targetId: string, url: string, single: boolean): number {
    let n = 0;
    const now = Date.now();
    for (const w of this.reg.workers.values()) if (w.targetId === targetId && holdsSlot(w, now, this.handoverMs) && (single || w.endpoint === url)) n++;
    return n;
  }

  private statusesOf(target: Target): EndpointStatus[] {
    const known = this.endpointState.get(target.id);
    const single = !isPool(target);
    return endpointsOf(target).map((e) => {
      const s = known?.get(e.url);
      return {
        url: e.url,
        healthy: s?.healthy ?? true,
        slots: e.slots,
        inUse: this.workersOn(target.id, e.url, single),
        live: s?.live ?? null,
        problem: s?.problem ?? null,
        checkedAt: s?.checkedAt ?? null,
      };
    });
  }

  /** Targets with work (queued or live). */
  private busyTargets(): Set<string> {
    return new Set(
      this.reg
        .list()
        .filter((w) => w.targetId && (w.state === "queued" || isActive(w.state)))
        .map((w) => w.targetId!),
    );
  }

  /** Pools with work are read every couple of seconds: health and live load of each endpoint. */
  private refreshPools(): void {
    for (const id of this.busyTargets()) {
      const t = this.opts.targets.get(id);
      if (t && isPool(t)) void this.refreshTarget(t);
    }
  }

  private async refreshTarget(target: Target): Promise<void> {
    if (this.refreshing.has(target.id) || this.closed) return;
    this.refreshing.add(target.id);
    try {
      // An unreadable key file must not throw out of a timer: the probe shows the refusal instead.
      const key = keyForProbe(target);
      // Published only once every endpoint is read: admission never sees a half-read pool.
      const previous = this.endpointState.get(target.id);
      const map = new Map<string, EndpointStatus>();
      const downs: [string, string][] = [];
      await Promise.all(
        endpointsOf(target).map(async (e) => {
          // Says how many of ours were on it, so another client's load on the server is told apart from ours.
          const now = await this.probes.read(e, key, { ours: this.workersOn(target.id, e.url, false) });
          const { problem } = now;
          const was = previous?.get(e.url);
          map.set(e.url, now);
          if (problem && was?.healthy !== false) downs.push([e.url, problem]);
          if (!problem && was?.healthy === false)
            this.reg.notice("info", `endpoint ${e.url} of ${target.id} answers again: back in admission`, { engineWords: true });
        }),
      );
      this.endpointState.set(target.id, map);
      for (const [url, problem] of downs) this.opts.endpointDown(target, url, problem);
    } finally {
      this.refreshing.delete(target.id);
    }
    this.opts.changed();
  }

  /** The model servers the person cares about now (the active target, targets with work): do they answer? */
  private async checkModels(): Promise<void> {
    if (this.closed) return;
    const ids = this.busyTargets();
    const active = this.opts.targets.active();
    if (active) ids.add(active.id);
    await Promise.all(
      [...ids].map(async (id) => {
        const t = this.opts.targets.get(id);
        if (!t) return;
        const key = keyForProbe(t);
        // With how many of ours are on each endpoint, as the pool refresh reads it: the two share one reading per period,
        // and a reading without it would leave the pool unable to tell another client's load from ours.
        const problems = await Promise.all(endpointsOf(t).map((e) => this.probes.health(e.url, key, { ours: this.workersOn(t.id, e.url, !isPool(t)) })));
        const healthy = problems.some((p) => !p);
        const problem = healthy
          ? null
          : `${endpointsOf(t)
              .map((e) => e.url)
              .join(", ")}: ${problems.join(", ")}`;
        const was = this.modelHealth.get(id);
        this.modelHealth.set(id, { healthy, problem, checkedAt: Date.now() });
        if (was?.healthy !== healthy) {
          this.reg.transient({
            type: "model",
            targetId: id,
            healthy,
            ...(problem ? { message: `the model server does not answer (${problem}): start it, or pick another target` } : {}),
            ts: Date.now(),
          });
        }
      }),
    );
  }
}
