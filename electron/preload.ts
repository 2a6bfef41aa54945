// Sandboxed preload: exposes the engine's URL and token, and a native directory picker. Nothing else.
import { contextBridge, ipcRenderer } from "electron";

const info = ipcRenderer.sendSync("ocw:engine") as { engineUrl: string; token: string } | null;

contextBridge.exposeInMainWorld("ocw", {
  engineUrl: info?.engineUrl ?? "",
  token: info?.token ?? "",
  pickDirectory: (): Promise<string | null> => ipcRenderer.invoke("ocw:pick-directory"),
});
