// What the Electron preload exposes (nothing in a browser).
export interface DesktopBridge {
  engineUrl: string;
  token: string;
  pickDirectory(): Promise<string | null>;
  openPath?(path: string): Promise<string>;
  /** A native notification that opens `hash` when clicked (not offered by the preload yet: the main process notifies asks and finished workers itself). */
  notify?(title: string, body: string, hash: string): Promise<void> | void;
}

declare global {
  interface Window {
    ocw?: DesktopBridge;
  }
}

export const desktop: DesktopBridge | undefined = typeof window !== "undefined" ? window.ocw : undefined;
