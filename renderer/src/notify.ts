// Notifications for what needs a person: a new ask, a verdict, a stalled worker. In a browser through the Notification
// API (after the person allowed it, from Settings); in Electron through the desktop bridge when the preload offers
// `notify`. Settings live in this browser's localStorage. A short tone (Web Audio, no file) when sound is on.
import { useSyncExternalStore } from "react";
import type { EngineEvent } from "../../shared/events";
import type { Worker } from "../../shared/worker";
import { desktop } from "./desktop";
import { taskTitle } from "./format";
import { href } from "./router";
import { onWorkerEvent } from "./store";

export interface NotifySettings {
  /** Show notifications at all (the browser must also allow them). */
  enabled: boolean;
  /** Play a short tone with each notification. */
  sound: boolean;
  /** Also when this window is focused (off: only when the person is elsewhere). */
  whenFocused: boolean;
  /** Which happenings notify. */
  asks: boolean;
  verdicts: boolean;
  stalls: boolean;
}

const KEY = "ocw.notify";
const DEFAULTS: NotifySettings = { enabled: false, sound: false, whenFocused: false, asks: true, verdicts: true, stalls: true };

function load(): NotifySettings {
  try {
    return { ...DEFAULTS, ...(JSON.parse(localStorage.getItem(KEY) ?? "{}") as Partial<NotifySettings>) };
  } catch {
    return DEFAULTS;
  }
}

let settings = typeof window === "undefined" ? DEFAULTS : load();
const subs = new Set<() => void>();

export function notifySettings(): NotifySettings {
  return settings;
}

export function setNotifySettings(patch: Partial<NotifySettings>): void {
  settings = { ...settings, ...patch };
  try {
    localStorage.setItem(KEY, JSON.stringify(settings));
  } catch {
    /* storage off: the settings last as long as the page */
  }
  for (const f of subs) f();
}

export function useNotifySettings(): NotifySettings {
  return useSyncExternalStore(
    (f) => (subs.add(f), () => subs.delete(f)),
    () => settings,
  );
}

/** "granted" | "denied" | "default" (not asked yet) | "unsupported" (no Notification API) | "desktop" (Electron). */
export type Permission = NotificationPermission | "unsupported" | "desktop";

export function permission(): Permission {
  if (desktop?.notify) return "desktop";
  if (typeof Notification === "undefined") return "unsupported";
  return Notification.permission;
}

/** Asks the browser for permission (it shows its prompt once; a "denied" can only be undone in the browser's site settings). */
export async function requestPermission(): Promise<Permission> {
  if (desktop?.notify || typeof Notification === "undefined") return permission();
  const p = await Notification.requestPermission();
  for (const f of subs) f();
  return p;
}

let audio: AudioContext | null = null;
/** A short two-note tone. */
export function playTone(): void {
  try {
    audio ??= new AudioContext();
    const t = audio.currentTime;
    for (const [i, freq] of [880, 1320].entries()) {
      const osc = audio.createOscillator();
      const gain = audio.createGain();
      osc.frequency.value = freq;
      gain.gain.setValueAtTime(0.0001, t + i * 0.12);
      gain.gain.exponentialRampToValueAtTime(0.15, t + i * 0.12 + 0.02);
      gain.gain.exponentialRampToValueAtTime(0.0001, t + i * 0.12 + 0.11);
      osc.connect(gain).connect(audio.destination);
      osc.start(t + i * 0.12);
      osc.stop(t + i * 0.12 + 0.12);
    }
    tones++;
  } catch {
    /* no audio device: the notification still shows */
  }
}
let tones = 0;

export interface Shown {
  kind: "ask" | "verdict" | "stalled";
  title: string;
  body: string;
  hash: string;
}

/** What was shown, newest last (Settings lists the last few; tests read it through window.__ocwNotifications). */
export const shown: Shown[] = [];

function show(n: Shown): void {
  const s = settings;
  if (!s.enabled) return;
  if (!s.whenFocused && document.hasFocus() && document.visibilityState === "visible") return;
  if (desktop?.notify) {
    void desktop.notify(n.title, n.body, n.hash);
  } else {
    // In Electron without a bridge `notify`, the main process already notifies asks and finished workers itself.
    if (desktop && n.kind !== "stalled") return;
    if (typeof Notification === "undefined" || Notification.permission !== "granted") return;
    const note = new Notification(n.title, { body: n.body, tag: `${n.kind}:${n.hash}`, silent: true });
    note.onclick = () => {
      window.focus();
      location.hash = n.hash;
      note.close();
    };
  }
  shown.push(n);
  if (shown.length > 50) shown.shift();
  if (s.sound) playTone();
}

function onEvent(e: EngineEvent, before: Worker | undefined, after: Worker | undefined): void {
  const s = settings;
  if (!after) return;
  const title = taskTitle(after.spec);
  if (e.type === "ask.opened" && e.ask.status === "pending" && s.asks) {
    show({ kind: "ask", title: `Approval waiting: ${e.ask.kind === "question" ? "question" : e.ask.tool}`, body: `${title}\n${e.ask.what}`.slice(0, 240), hash: href({ name: "approvals", ask: e.ask.id }) });
  } else if (e.type === "verdict" && s.verdicts) {
    const v = e.verdict;
    const claim = v.honest ? "claim honest" : v.claim ? "claim false" : "no claim";
    show({ kind: "verdict", title: `${v.verdict === "built" ? "Built" : "Failed"}: ${title}`, body: `${v.checks.filter((c) => c.passed).length}/${v.checks.length} checks · ${claim}`, hash: href({ name: "worker", id: after.id }) });
  } else if (e.type === "stalled" && !before?.stalled && s.stalls) {
    show({ kind: "stalled", title: `Stalled: ${title}`, body: `No activity for ${e.idleSec}s (${after.id})`, hash: href({ name: "worker", id: after.id }) });
  }
}

let started = false;
export function startNotifications(): void {
  if (started) return;
  started = true;
  onWorkerEvent(onEvent);
  (window as unknown as { __ocwNotifications: { shown: Shown[]; tones: () => number } }).__ocwNotifications = { shown, tones: () => tones };
}
