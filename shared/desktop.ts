// The desktop shell's pure parts, shared by Electron's main process and the renderer (and unit-tested without an
// Electron binary): the pending-approval count in the window title and on the tray, the notifications for a new ask,
// a verdict and a stalled worker, and deep links to an ask or a worker (`ocw://ask/ID`, or `--ask ID` on the command line).
import { showUntrusted } from "./untrusted";
import { checksWord } from "./vocabulary";
import type { EngineEvent } from "./events";
import { AT_REST_STATES, type WorkerState } from "./worker";
import { counted } from "./words";

const APP_NAME = "opencode-worker";
/** The URL scheme the desktop app registers for deep links. */
export const DEEP_LINK_SCHEME = "ocw";

/** The window (and browser tab) title: the pending count first, so it shows in a task bar. */
export function windowTitle(pending: number, subject?: string | null): string {
  const name = subject ? `${subject.length > 80 ? `${subject.slice(0, 79)}…` : subject} — ${APP_NAME}` : APP_NAME;
  return pending > 0 ? `(${pending}) ${name}` : name;
}

/** The tray: tooltip, the menu's first line, and the short text beside the icon (macOS) or on the badge. */
export function trayText(pending: number): { tooltip: string; menuLabel: string; badge: string } {
  return {
    tooltip: pending > 0 ? `${APP_NAME} — ${counted(pending, "pending approval")}` : `${APP_NAME} — nothing waiting for you`,
    menuLabel: pending > 0 ? `${counted(pending, "pending approval")}…` : "No pending approvals",
    badge: pending <= 0 ? "" : pending > 99 ? "99+" : String(pending),
  };
}

/**
 * The asks waiting for a person, followed from the engine's event stream: opened, resolved, and those of a worker
 * that ended (its asks are cancelled with it). `reset` (the engine restarted or the stream lost its place) empties it:
 * seed it again from `approvals.list`.
 */
export class PendingAsks {
  private readonly asks = new Map<string, string>();

  get count(): number {
    return this.asks.size;
  }

  seed(list: readonly { id: string; workerId: string }[]): void {
    this.asks.clear();
    for (const a of list) this.asks.set(a.id, a.workerId);
  }

  /** Folds one event in; true when the count may have changed. */
  apply(e: EngineEvent): boolean {
    if (e.type === "reset") {
      this.asks.clear();
      return true;
    }
    if (e.type === "ask.opened") {
      if (e.ask.status !== "pending") return false;
      this.asks.set(e.ask.id, e.workerId);
      return true;
    }
    if (e.type === "ask.resolved") return this.asks.delete(e.askId);
    if (e.type === "worker.state" && AT_REST_STATES.includes(e.state as WorkerState)) {
      let changed = false;
      for (const [id, w] of this.asks) if (w === e.workerId) changed = this.asks.delete(id) || changed;
      return changed;
    }
    return false;
  }
}

export interface DesktopNote {
  kind: "ask" | "verdict" | "stalled";
  title: string;
  body: string;
  /** Where a click takes the window (a hash route of the renderer). */
  hash: string;
}

const enc = encodeURIComponent;

/**
 * The notification an event deserves, or null: a new pending ask (the click opens that ask), a verdict (built or
 * failed, and whether the claim was honest; opens the worker), a worker that went quiet (first stall only: pass
 * `wasStalled`). `title` names the worker for a person (its task title; the id when unknown).
 */
export function noteFor(e: EngineEvent, ctx: { title: string; wasStalled?: boolean }): DesktopNote | null {
  if (e.type === "ask.opened" && e.ask.status === "pending") {
    const what = e.ask.kind === "question" ? "question" : e.ask.tool;
    return {
      kind: "ask",
      title: `Approval waiting: ${what}`,
      body: `${showUntrusted(ctx.title, { lines: false, max: 120 })}\n${showUntrusted(e.ask.what.slice(0, 600), { lines: false })}`.slice(0, 240),
      hash: `#/approvals/${enc(e.ask.id)}`,
    };
  }
  if (e.type === "verdict") {
    const v = e.verdict;
    const claim = v.honest ? "claim honest" : v.claim ? "claim false" : "no claim";
    return {
      kind: "verdict",
      title: `${v.verdict === "built" ? "Built" : "Failed"}: ${ctx.title}`,
      body: `${checksWord(v.checks)} · ${claim}`,
      hash: `#/workers/${enc(e.workerId)}`,
    };
  }
  if (e.type === "stalled" && !ctx.wasStalled) {
    return { kind: "stalled", title: `Stalled: ${ctx.title}`, body: `No activity for ${e.idleSec}s (${e.workerId})`, hash: `#/workers/${enc(e.workerId)}` };
  }
  return null;
}

// Ids the engine makes are short and plain; anything else in a link is refused rather than routed.
const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/**
 * The hash route a deep link opens, or null when it is not one of ours: `ocw://ask/ID`, `ocw://worker/ID`,
 * `ocw://approvals`, `ocw://new` (also with three slashes, as some launchers write them).
 */
export function deepLinkHash(link: string): string | null {
  // Parsed by hand: shared/ runs where there is no URL class (no DOM, no Node).
  const m = new RegExp(`^${DEEP_LINK_SCHEME}://?/?([^?#]*)(?:[?#].*)?$`, "i").exec(link.trim());
  if (!m) return null;
  const parts = m[1]!
    .split("/")
    .filter(Boolean)
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return "\0";
      }
    });
  const [what, id, ...rest] = parts;
  if (rest.length) return null;
  if ((what === "ask" || what === "worker") && id && ID.test(id)) return what === "ask" ? `#/approvals/${enc(id)}` : `#/workers/${enc(id)}`;
  if (!id && (what === "approvals" || what === "new" || what === "dashboard")) return what === "dashboard" ? "#/" : `#/${what}`;
  return null;
}

/**
 * The deep link in a command line (the app's own argv, or a second instance's): an `ocw://…` argument, or
 * `--ask ID` / `--ask=ID` / `--worker ID`. The last one wins; null when there is none or it is malformed.
 */
export function deepLinkFromArgv(argv: readonly string[]): string | null {
  let hash: string | null = null;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const flag = /^--(ask|worker)(?:=(.*))?$/.exec(a);
    if (flag) {
      const id = flag[2] ?? argv[i + 1];
      if (flag[2] === undefined) i++;
      if (id && ID.test(id)) hash = flag[1] === "ask" ? `#/approvals/${enc(id)}` : `#/workers/${enc(id)}`;
      continue;
    }
    if (a.startsWith(`${DEEP_LINK_SCHEME}:`)) hash = deepLinkHash(a) ?? hash;
  }
  return hash;
}
