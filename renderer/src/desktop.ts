// What the Electron preload exposes (nothing in a browser).
export interface DesktopBridge {
  engineUrl: string;
  token: string;
  pickDirectory(): Promise<string | null>;
  openPath?(path: string): Promise<string>;
}

declare global {
  interface Window {
    ocw?: DesktopBridge;
  }
}

export const desktop: DesktopBridge | undefined = typeof window !== "undefined" ? window.ocw : undefined;
