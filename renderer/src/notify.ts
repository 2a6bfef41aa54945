// Notifications for what needs a person: a new ask, a verdict, a stalled worker. In a browser through the Notification
// API (after the person allowed it, from Settings); in Electron through the desktop bridge when the preload offers
// `notify`. Settings live in this browser's localStorage. A short tone (Web Audio, no file) when sound is on.
import { useSyncExternalStore } from "react";
import { noteFor, type DesktopNote } from "../../shared/desktop";
import type { EngineEvent } from "../../shared/events";
import type { Worker } from "../../shared/worker";
import { desktop } from "./desktop";
import { taskTitle } from "./format";
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
// In the desktop app notifications are on until the person turns them off (the app has no permission prompt); in a
// browser they wait for the person to allow them.
const DEFAULTS: NotifySettings = { enabled: !!desktop?.notify, sound: false, whenFocused: false, asks: true, verdicts: true, stalls: true };

function load(): NotifySettings {
  try {
    return { ...DEFAULTS, ...(JSON.parse(localStorage.getItem(KEY) ?? "{}") as Partial<NotifySettings>) };
  } catch {
    return DEFAULTS;
  }
}

let settings = typeof window === "undefined" ? DEFAULTS : load();
const subs = new Set<() => void>();

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

type Shown = DesktopNote;

/** What was shown, newest last (Settings lists the last few; tests read it through window.__ocwNotifications). */
const shown: Shown[] = [];

function show(n: Shown): void {
  const s = settings;
  if (!s.enabled) return;
  if (!s.whenFocused && document.hasFocus() && document.visibilityState === "visible") return;
  if (desktop?.notify) {
    void desktop.notify(n);
  } else {
    // An Electron preload without `notify` (older builds): the main process notifies by itself.
    if (desktop) return;
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
  if (!after) return;
  const n = noteFor(e, { title: taskTitle(after.spec), wasStalled: before?.stalled });
  if (!n) return;
  const on = { ask: settings.asks, verdict: settings.verdicts, stalled: settings.stalls }[n.kind];
  if (on) show(n);
}

let started = false;
export function startNotifications(): void {
  if (started) return;
  started = true;
  onWorkerEvent(onEvent);
  (window as unknown as { __ocwNotifications: { shown: Shown[]; tones: () => number } }).__ocwNotifications = { shown, tones: () => tones };
}
