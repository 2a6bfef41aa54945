// Sandboxed preload: exposes the engine's URL and token, a native directory picker, native notifications (the
// main process shows them; a click brings the window to `hash`) and opening a worker's workspace (by worker id: the
// main process asks the engine for the folder). Nothing else.
import { contextBridge, ipcRenderer } from "electron";

const info = ipcRenderer.sendSync("ocw:engine") as { engineUrl: string; token: string } | null;

contextBridge.exposeInMainWorld("ocw", {
  engineUrl: info?.engineUrl ?? "",
  token: info?.token ?? "",
  pickDirectory: (): Promise<string | null> => ipcRenderer.invoke("ocw:pick-directory"),
  openWorker: (workerId: string, how: "folder" | "editor" | "terminal"): Promise<{ ok: boolean; path?: string; detail: string }> =>
    ipcRenderer.invoke("ocw:open-worker", workerId, how),
  notify: (note: { kind: string; title: string; body: string; hash: string }): Promise<void> => ipcRenderer.invoke("ocw:notify", note),
});
