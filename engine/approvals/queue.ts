import { isIP } from "node:net";
import path from "node:path";
import { z } from "zod";
import { InputError } from "../../shared/errors";
import { noAnswer, type PortResult } from "../harness";
import { newId, quotedId } from "../../shared/ids";
import { firstIssue } from "../../shared/issues";
import { Decision, rejectionMessage, type DecidedBy, type Grant, type PermissionAsk, PolicyRule } from "../../shared/permission";
import { quoteUntrusted } from "../../shared/untrusted";
import { pendingAsks, type Worker } from "../../shared/worker";
import type { WorkerRegistry } from "../registry";
import { readJson, writeJsonAtomic } from "../store";
import { bypassesProxy, localTarget, type Lookup, lookupHost, resolvesLocal } from "../net";
import { asOpened, grantFor, grantOffer, inspectAsk, realLocation, pickRule } from "./inspect";
import { writesOutside } from "./worktree-guard";
import { counted } from "../../shared/words";

/**
 * The approvals queue. Its data lives in the workers' logs: an ask is `ask.opened` until `ask.resolved` (decided by a
 * person, Claude, a policy, a grant or the engine's guards; or cancelled), a grant is `grant.added` until
 * `grant.revoked`. Policies are the user's rules in `policies.json`. Nothing else is kept here but the asks whose
 * answer is on its way to opencode right now (so opencode's echo of it is not taken for a decision of its own).
 */
interface ApprovalsOptions {
  stateDir: string;
  registry: WorkerRegistry;
  /** The addresses a host name resolves to (a test's stand-in); default: the system's resolver (dns.lookup). */
  lookup?: Lookup;
  /**
   * The NO_PROXY entries opencode serve is given (the model's endpoints, the key gateway): a fetch whose first URL
   * matches one goes straight out, past the egress proxy, and so do its redirects; default: none.
   */
  direct?: () => string[];
  /**
   * A note for a worker that its answer cannot carry (opencode's question dismissal takes no message): sent as a steer,
   * which reaches the worker at its next step. Absent: such a note is recorded only.
   */
  note?: (workerId: string, text: string, by: DecidedBy) => Promise<void>;
}

/** How long what a host name resolved to is taken as its answer (a later ask of it looks it up again). */
const LOOKUP_TTL_MS = 60_000;

/** The tools that only look: the engine answers them itself, yes inside the workspace and no outside it. */
const LOOKS = new Set(["read", "glob", "grep"]);
/** How long an answer may take to reach opencode before it counts as not given (the SDK client has no limit of its own). */
const REPLY_TIMEOUT_MS = 30_000;

type AutoAnswer = { decision: Omit<Decision, "askId">; by: DecidedBy & { name: string } };

/** The rules as saved, and as read back (a file that does not parse is no rules). Built once: a zod schema costs more to make than to use. */
const POLICY_RULES = z.array(PolicyRule);
const POLICY_FILE = POLICY_RULES.catch([]);

export class Approvals {
  /** Asks whose answer is on its way to opencode, and who gave it. */
  private readonly deciding = new Map<string, DecidedBy>();
  /** Told each time an answer on its way ends, taken or not (a wait looks again whether its workers are blocked). */
  private readonly answerEnded = new Set<() => void>();
  /** What opencode announced for an ask while our answer was on its way (usually the echo of ours). */
  private readonly echoed = new Map<string, string>();
  /** Answers on their way that end as soon as opencode announces it took them (its stream often runs ahead of its HTTP answer). */
  private readonly echoWaiters = new Map<string, (reply: string) => void>();
  private readonly reg: WorkerRegistry;
  /**
   * What a webfetch's host name resolved to, when that is this machine or its private network (else null), and when:
   * opencode fetches with the host's network, and a public name may resolve to one (`127.0.0.1.nip.io`, `localtest.me`).
   */
  private readonly resolved = new Map<string, { local: string | null; at: number }>();
  /** Asks held while their host name is looked up, and those opencode said are gone meanwhile. */
  private readonly lookingUp = new Set<string>();

  constructor(private readonly opts: ApprovalsOptions) {
    this.reg = opts.registry;
  }

  /** The webfetch URL's host name, when it is a name (not an address) not already refused by its spelling. */
  private nameToResolve(url: string): string | null {
    if (localTarget(url)) return null;
    try {
      const host = new URL(url).hostname.replace(/\.$/, "");
      return host && !isIP(host.replace(/^\[|\]$/g, "")) ? host.toLowerCase() : null;
    } catch {
      return null;
    }
  }

  /** Looks `host` up (bounded in time) and keeps whether it resolves to a local or private address. */
  private async resolve(host: string): Promise<void> {
    this.resolved.set(host, { local: resolvesLocal(host, await lookupHost(host, this.opts.lookup)), at: Date.now() });
    if (this.resolved.size > 1000) this.resolved.delete(this.resolved.keys().next().value!);
  }

  /** Why a webfetch's URL would go past the egress proxy (it names a model endpoint opencode reaches directly), or null. */
  private direct(url: string): string | null {
    const entry = bypassesProxy(url, this.opts.direct?.() ?? []);
    return entry ? `${entry} (the model's endpoint, which opencode reaches past the network guard)` : null;
  }

  /** Why a webfetch's host name is local by what it resolved to, or null. */
  private resolvedLocal(url: string): string | null {
    const host = this.nameToResolve(url);
    return host ? (this.resolved.get(host)?.local ?? null) : null;
  }

  /** A new ask from opencode: answered at once when nobody needs to decide it, else it waits (waiting-approval). */
  onAsk(workerId: string, raw: PermissionAsk): void {
    const w = this.reg.get(workerId);
    if (w.asks.some((a) => a.id === raw.id)) return;
    // A webfetch of a name: looked up first, so a name of this machine or its private network is refused like its address.
    const host = raw.kind === "permission" && raw.tool === "webfetch" ? this.nameToResolve(raw.what) : null;
    const known = host ? this.resolved.get(host) : undefined;
    if (host && (!known || Date.now() - known.at > LOOKUP_TTL_MS)) {
      this.lookingUp.add(raw.id);
      void this.resolve(host).then(() => {
        if (this.lookingUp.delete(raw.id)) this.onAsk(workerId, raw);
      });
      return;
    }
    if (raw.kind === "permission" && LOOKS.has(raw.tool) && this.looksInside(w, raw)) {
      // A read or search of the worker's own files: answered at once and not recorded (nobody decides it).
      const c = this.reg.portOf(workerId);
      void c?.port.replyPermission({ requestID: raw.id, directory: c.directory, reply: "once" });
      return;
    }
    const ws = this.reg.workspaceOf(w);
    const flags = ws ? inspectAsk(raw, ws, w.spec) : [];
    const ask: PermissionAsk = flags.length ? { ...raw, flags } : raw;
    this.reg.safeRecord(workerId, { type: "ask.opened", ask });
    const auto = this.answerWithoutPerson(w, ask);
    if (auto) {
      void this.decide({ askId: ask.id, ...auto.decision }, auto.by).catch((err) => {
        this.reg.notice("warn", `${auto.by.kind} (${auto.by.name}) could not answer ${ask.id}: ${(err as Error).message}`);
        // Still open: it waits for a person now, and the worker says so (the engine's refusals hold whoever answers).
        const still = this.reg.workers.get(workerId);
        if (still?.state === "running" && still.asks.some((a) => a.id === ask.id && a.status === "pending")) this.reg.fire(workerId, "ask");
      });
      return;
    }
    if (w.state === "running") this.reg.fire(workerId, "ask");
  }

  /** opencode says an ask is gone: answered inside opencode itself (e.g. rejecting one of parallel asks rejects its siblings). */
  onAskGone(workerId: string, askId: string, reply: string): void {
    if (this.lookingUp.delete(askId)) return;
    const ask = this.reg.get(workerId).asks.find((a) => a.id === askId);
    if (this.deciding.has(askId)) {
      this.echoed.set(askId, reply);
      this.echoWaiters.get(askId)?.(reply);
      return;
    }
    if (!ask || ask.status !== "pending") return;
    this.recordOpencodeAnswer(workerId, askId, reply);
  }

  private recordOpencodeAnswer(workerId: string, askId: string, reply: string): void {
    const decision = reply === "once" || reply === "always" || reply === "reject" ? reply : undefined;
    this.reg.safeRecord(workerId, { type: "ask.resolved", askId, status: "decided", decision, by: { kind: "engine", name: "opencode" } });
    this.afterAsk(workerId);
  }

  /** Cancels every pending ask of a worker with the reason (a stop, a crash, a restart); throws when one cannot be recorded. */
  cancelAll(workerId: string, by: DecidedBy, message: string, opts: { safe?: boolean } = {}): void {
    for (const ask of pendingAsks(this.reg.get(workerId))) {
      const body = { type: "ask.resolved", askId: ask.id, status: "cancelled", by, message } as const;
      if (opts.safe) this.reg.safeRecord(workerId, body);
      else this.reg.record(workerId, body);
    }
  }

  private afterAsk(workerId: string): void {
    const w = this.reg.get(workerId);
    if (w.state === "waiting-approval" && pendingAsks(w).length === 0) this.reg.fire(workerId, "answered");
  }

  pending(): (PermissionAsk & { ageSec: number })[] {
    const now = Date.now();
    return this.reg
      .list()
      .flatMap((w) => pendingAsks(w))
      .sort((a, b) => a.createdAt - b.createdAt)
      .map((a) => ({ ...a, ageSec: Math.round((now - a.createdAt) / 1000) }));
  }

  async decide(d: Decision, by: DecidedBy): Promise<PermissionAsk> {
    const askId = (d as { askId?: unknown })?.askId;
    if (typeof askId !== "string") return this.decideNow(d, by);
    // One answer at a time: the engine's own refusal of an outside read is on its way to opencode while the ask still
    // reads pending, and an approval sent meanwhile (a person's "approve all", Claude's approve) reached opencode too and
    // was recorded in its place (seen under load: a search of / approved by a person).
    const other = this.deciding.get(askId);
    if (other) throw new InputError(`ask ${askId} is already being answered by ${byWhom(other)}: read it again in a moment to see the answer`, "conflict");
    // opencode announces the reply on its event stream, often before its HTTP answer: that echo is ours, not a
    // decision made inside opencode, so it must not be recorded as one.
    this.deciding.set(askId, by);
    try {
      return await this.decideNow(d, by);
    } finally {
      this.deciding.delete(askId);
      this.echoed.delete(askId);
      for (const fn of this.answerEnded) fn();
    }
  }

  /**
   * The answers on their way to opencode: whether an ask's is, and a listener told when any ends. A worker whose ask is
   * being answered is about to move, so a wait does not call it blocked (shared/wait.ts).
   */
  readonly answers = {
    has: (askId: string): boolean => this.deciding.has(askId),
    ended: (fn: () => void): (() => void) => {
      this.answerEnded.add(fn);
      return () => this.answerEnded.delete(fn);
    },
  };

  private async decideNow(d: Decision, by: DecidedBy): Promise<PermissionAsk> {
    const parsed = Decision.safeParse(d);
    if (!parsed.success) throw new InputError(firstIssue(parsed.error));
    const decision = parsed.data;
    const w = this.reg.list().find((x) => x.asks.some((a) => a.id === decision.askId));
    const ask = w?.asks.find((a) => a.id === decision.askId);
    if (!w || !ask)
      throw new InputError(
        `unknown ask ${quotedId(decision.askId)}: no ask has that id (\`ocw asks\` or the approvals inbox lists the pending ones)`,
        "not-found",
      );
    if (ask.status !== "pending") {
      throw new InputError(
        `ask ${ask.id} is no longer pending (${ask.status}${ask.decision ? `: ${ask.decision}` : ""}${ask.by ? ` by ${byWhom(ask.by)}` : ""})`,
        "conflict",
      );
    }
    const c = this.reg.portOf(w.id);
    if (!c) throw new InputError(`worker ${w.id}'s opencode server is not running (the ask was lost): resume the worker`);
    const { port, directory } = c;
    let message: string | undefined;
    let offer: ReturnType<typeof grantOffer> | undefined;
    // What opencode hears: "always" is the engine's grant, and opencode hears "once" (so every later ask still reaches
    // the engine's checks); an answered question is announced as "once".
    let sent: string = decision.decision === "reject" ? "reject" : "once";
    let call: Promise<PortResult<void>>;
    const limit = { signal: AbortSignal.timeout(REPLY_TIMEOUT_MS) };
    if (ask.kind === "question") {
      if (decision.decision === "reject") {
        call = port.rejectQuestion({ requestID: ask.id, directory }, limit);
        // opencode's dismissal carries no message: the note is recorded with the answer and reaches the worker as a steer.
        const note = decision.message?.trim();
        if (note) message = note;
      } else {
        // Never answer a question on the person's behalf: an approval without answers is refused.
        const want = ask.questions?.length ?? 1;
        if (!decision.answers || decision.answers.length !== want) {
          throw new InputError(
            `ask ${ask.id} is a question ${quoteUntrusted(ask.what, "the worker's words", 500)}: pass answers — ${counted(want, "array")} of chosen option labels or free text, one per question — or reject to dismiss it`,
          );
        }
        call = port.replyQuestion({ requestID: ask.id, directory, answers: decision.answers }, limit);
      }
    } else {
      if (decision.decision !== "reject") {
        // The engine's refusals hold whoever answers, looked at again now: a symlink swapped in since the ask arrived
        // would move an approved write outside, and the engine's own refusal may have failed to reach opencode and
        // left the ask pending.
        const ws = this.reg.workspaceOf(w);
        const flags = ws ? inspectAsk(ask, ws, w.spec) : [];
        const refused = this.refusal(w, { ...ask, flags });
        if (refused) {
          const swapped = !ask.flags?.some((f) => f.kind === "outside-workspace") && flags.find((f) => f.kind === "outside-workspace");
          decision.decision = "reject";
          decision.message = swapped
            ? `${swapped.detail} (a symlink changed since the ask); write only inside your working directory`
            : refused.decision.message;
          by = refused.by;
        }
      }
      if (decision.decision === "always") {
        // "always" grants exactly what the clients showed (grantOffer); where nothing can be granted it is refused, so
        // nobody believes a grant was made. The flags looked at again now count too.
        const ws = this.reg.workspaceOf(w);
        offer = grantOffer({ ...ask, flags: [...(ask.flags ?? []), ...(ws ? inspectAsk(ask, ws, w.spec) : [])] });
        if (!offer.ok) throw new InputError(`"always" is not offered for ask ${ask.id}: ${offer.why}; answer once or reject`);
      }
      message = decision.decision === "reject" ? rejectionMessage(ask, decision.message) : decision.message;
      sent = decision.decision === "reject" ? "reject" : "once";
      call = port.replyPermission({ requestID: ask.id, directory, reply: sent as "once" | "reject", ...(message ? { message } : {}) }, limit);
    }
    // No HTTP answer (`no-answer`) is an answer opencode may not have taken: a failed call, or one whose body could not be read.
    // opencode announcing our very answer on its stream is opencode taking it: the answer is recorded then, without
    // waiting for its HTTP reply (which comes after, from the same busy thread). Any other announcement, or none,
    // waits for the HTTP reply as before.
    const taken: PortResult<void> = { ok: true, value: undefined };
    const announced = new Promise<"announced">((resolve) => this.echoWaiters.set(ask.id, (reply) => reply === sent && resolve("announced")));
    let res: PortResult<void>;
    try {
      // Announced already (while the request was being sent): recorded now, before anything opencode does next.
      if (this.echoed.get(ask.id) === sent) {
        call.catch(() => undefined);
        res = taken;
      } else {
        const first = await Promise.race([call, announced]);
        res = first === "announced" ? taken : first;
      }
    } finally {
      this.echoWaiters.delete(ask.id);
    }
    const current = this.reg.get(w.id).asks.find((a) => a.id === ask.id)!;
    if (!res.ok && res.kind === "no-answer") {
      // No HTTP answer (opencode hung, restarting, past the limit, or an unreadable answer). What opencode announced on
      // its stream meanwhile is what it did: our answer, or another one (recorded as opencode's, with no grant). With
      // nothing announced it may not have the answer: none is recorded, and the ask stays open to be answered again.
      const heard = this.echoed.get(ask.id);
      if (heard === undefined) {
        throw new Error(
          `opencode did not take the answer to ${ask.id} (${noAnswer(res.error)}): the ask is still pending; answer it again, or stop the worker if this goes on`,
        );
      }
      if (heard !== sent) {
        if (current.status === "pending") this.recordOpencodeAnswer(w.id, ask.id, heard);
        throw new InputError(`opencode answered ${ask.id} "${heard}" on its own, not "${decision.decision}": its answer is recorded`, "conflict");
      }
    }
    if (!res.ok && res.kind === "status") {
      if (current.status === "pending") {
        this.reg.record(w.id, {
          type: "ask.resolved",
          askId: ask.id,
          status: "cancelled",
          by: { kind: "engine", name: "opencode" },
          message: `opencode no longer has this ask (HTTP ${res.status})`,
        });
        this.afterAsk(w.id);
      }
      throw new InputError(`opencode refused the answer to ${ask.id} (HTTP ${res.status}): the ask is gone, probably answered elsewhere or cancelled`);
    }
    if (current.status === "pending") {
      try {
        this.reg.record(w.id, { type: "ask.resolved", askId: ask.id, status: "decided", decision: decision.decision, by, ...(message ? { message } : {}) });
        if (decision.decision === "always" && ask.kind === "permission" && offer?.ok) {
          // One grant per simple command, each matched exactly; one already held is not added twice.
          const held = new Set(
            this.reg
              .get(w.id)
              .grants.filter((g) => g.tool === ask.tool)
              .map((g) => g.pattern),
          );
          for (const pattern of offer.patterns) {
            if (held.has(pattern)) continue;
            const grant: Grant = { id: newId("g"), workerId: w.id, tool: ask.tool, pattern, askId: ask.id, by, createdAt: Date.now() };
            this.reg.record(w.id, { type: "grant.added", grant });
          }
        }
      } catch (err) {
        // The worker already has the answer: a bare append error would read as "not approved" and invite a retry.
        throw new Error(`the worker got the answer to ${ask.id} (${decision.decision}), but it could not be recorded: ${(err as Error).message}`);
      }
    }
    this.afterAsk(w.id);
    if (ask.kind === "question" && decision.decision === "reject" && message && this.opts.note) {
      await this.opts
        .note(w.id, message, by)
        .catch((err: Error) => this.reg.notice("warn", `the note sent with the dismissal of ${ask.id} did not reach worker ${w.id}: ${err.message}`));
    }
    return this.reg.get(w.id).asks.find((a) => a.id === ask.id)!;
  }

  /** Every "always" answer the engine holds, across workers. */
  grants(): Grant[] {
    return this.reg.list().flatMap((w) => w.grants);
  }

  revokeGrant(grantId: string, by: DecidedBy = { kind: "person" }): Grant {
    const w = this.reg.list().find((x) => x.grants.some((g) => g.id === grantId));
    const g = w?.grants.find((x) => x.id === grantId);
    if (!w || !g) throw new InputError(`unknown grant ${quotedId(grantId)}: no grant in force has that id (\`ocw grants\` lists them)`, "not-found");
    this.reg.record(w.id, { type: "grant.revoked", grantId, by });
    return g;
  }

  /** The user's approval rules (policies.json in the state dir, read at every ask: a hand edit counts); none by default. */
  policies(): PolicyRule[] {
    return POLICY_FILE.parse(readJson(path.join(this.opts.stateDir, "policies.json"), []));
  }

  setPolicies(rules: PolicyRule[]): PolicyRule[] {
    writeJsonAtomic(path.join(this.opts.stateDir, "policies.json"), POLICY_RULES.parse(rules));
    return this.policies();
  }

  /** Where a read or search ask really looks (symlinks resolved): a read names a file relative to the workspace, a search its root. */
  private lookTarget(w: Worker, ask: PermissionAsk): string | null {
    const ws = this.reg.workspaceOf(w);
    if (!ws) return null;
    // A read names only opencode's lexical reading of its path (its pattern); a search its path as written. The plugin
    // refuses a path whose `..` the kernel reads otherwise (engine/sandbox WORKSPACE_PLUGIN) before it asks.
    return ask.tool === "read" ? realLocation(path.resolve(ws.worktree, ask.patterns[0] ?? ask.what)) : realLocation(asOpened(ws.cwd, ask.what || "."));
  }

  private looksInside(w: Worker, ask: PermissionAsk): boolean {
    const ws = this.reg.workspaceOf(w);
    const real = this.lookTarget(w, ask);
    if (!ws || !real) return false;
    const root = realLocation(ws.worktree);
    return real === root || real.startsWith(root + path.sep);
  }

  /**
   * The engine's own refusals, which no grant, rule or person overrides: a read or search outside the workspace, a write
   * that lands outside it (its `outside-workspace` flag), a shell command that writes outside the worktree.
   */
  private refusal(w: Worker, ask: PermissionAsk): AutoAnswer | null {
    if (ask.kind !== "permission") return null;
    if (LOOKS.has(ask.tool)) {
      if (this.looksInside(w, ask)) return null;
      return {
        decision: { decision: "reject", message: `${this.lookTarget(w, ask) ?? ask.what} is outside your workspace; read only your own files` },
        by: { kind: "engine", name: "workspace guard" },
      };
    }
    // opencode fetches with the host's network: nothing on this machine or its private network is the worker's to read.
    // Every fetch of opencode's goes through the engine's egress proxy, which checks each hop again when opencode
    // connects (redirects, DNS rebinding) — but the model's own endpoints, which opencode reaches directly: a fetch that
    // starts there is not checked again at all, nor are its redirects.
    const local = ask.tool === "webfetch" ? (localTarget(ask.what) ?? this.resolvedLocal(ask.what) ?? this.direct(ask.what)) : null;
    if (local)
      return {
        decision: { decision: "reject", message: `${local} is not a public page; fetch only public pages` },
        by: { kind: "engine", name: "network guard" },
      };
    const outside = ask.flags?.find((f) => f.kind === "outside-workspace");
    if (outside) {
      return {
        decision: { decision: "reject", message: `${outside.detail}; write only inside your working directory` },
        by: { kind: "engine", name: "workspace guard" },
      };
    }
    const escapes = ask.tool === "bash" && w.worktree ? writesOutside(ask.what, w.worktree, this.reg.workspaceOf(w)?.cwd) : [];
    if (escapes.length) {
      const message = `it writes outside the worktree (${escapes.join(", ")}); write only inside your working directory`;
      return { decision: { decision: "reject", message }, by: { kind: "engine", name: "worktree guard" } };
    }
    return null;
  }

  /** The answer an ask gets without a person: the engine's refusal, else the worker's grant ("always" held by the engine), else the user's matching policy rule. */
  private answerWithoutPerson(w: Worker, ask: PermissionAsk): AutoAnswer | null {
    // A question is answered by someone who reads it: no rule can give its answers.
    if (ask.kind === "question") return null;
    const refused = this.refusal(w, ask);
    if (refused) return refused;
    const granted = grantFor(ask, w.grants);
    if (granted?.length) {
      const name = granted.map((g) => `grant ${g.tool} ${g.pattern} (always, by ${byWhom(g.by)})`).join("; ");
      return { decision: { decision: "once" }, by: { kind: "policy", name: name.length > 200 ? name.slice(0, 199) + "…" : name } };
    }
    const rule = this.policyFor(ask);
    return rule ? { decision: { decision: rule.decision }, by: { kind: "policy", name: `${rule.tool} ${rule.pattern} → ${rule.decision}` } } : null;
  }

  private policyFor(ask: PermissionAsk): PolicyRule | undefined {
    // A rejecting rule wins over an approving one; an approving rule answers a shell command only when it matches
    // every simple command of it (inspect.ts ruleMatches).
    return pickRule(this.policies(), ask);
  }
}

const byWhom = (by: DecidedBy): string => `${by.kind}${by.name ? " " + by.name : ""}`;
