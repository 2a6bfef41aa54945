// What the Electron preload exposes (nothing in a browser).
import type { DesktopNote } from "../../shared/desktop";
export interface DesktopBridge {
  engineUrl: string;
  token: string;
  pickDirectory(): Promise<string | null>;
  openPath?(path: string): Promise<string>;
  /** A native notification (Electron's, shown by the main process) that brings the window to `note.hash` when clicked. */
  notify?(note: DesktopNote): Promise<void> | void;
}

declare global {
  interface Window {
    ocw?: DesktopBridge;
  }
}

export const desktop: DesktopBridge | undefined = typeof window !== "undefined" ? window.ocw : undefined;
