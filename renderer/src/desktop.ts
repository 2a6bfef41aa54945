// What the Electron preload exposes (nothing in a browser).
import type { DesktopNote } from "../../shared/desktop";
interface DesktopBridge {
  engineUrl: string;
  token: string;
  pickDirectory(): Promise<string | null>;
  /** Opens a worker's workspace in the file manager, an editor or a terminal (the main process gets the folder from the engine). */
  openWorker?(workerId: string, how: "folder" | "editor" | "terminal"): Promise<{ ok: boolean; path?: string; detail: string }>;
  /** A native notification (Electron's, shown by the main process) that brings the window to `note.hash` when clicked. */
  notify?(note: DesktopNote): Promise<void> | void;
}

declare global {
  interface Window {
    ocw?: DesktopBridge;
  }
}

export const desktop: DesktopBridge | undefined = typeof window !== "undefined" ? window.ocw : undefined;
