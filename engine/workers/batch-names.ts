/**
 * Batch names: what people read instead of a batch id (the dashboard, `ocw list`, the MCP batch answer). Any batch can
 * be named (at its start: `ocw batch --name`, a batch file's `name`, delegate_batch, the GUI; later: workers.nameBatch),
 * so names live beside the batch plans, in `<state>/batch-names.json` ({batchId: name}), not in the workers' logs.
 */
import path from "node:path";
import { readJson, writeJsonAtomic } from "../store";

export class BatchNames {
  private readonly file: string;
  private names: Record<string, string>;

  constructor(stateDir: string, log: (line: string) => void) {
    this.file = path.join(stateDir, "batch-names.json");
    try {
      const v = readJson<unknown>(this.file, {});
      this.names = v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).filter(([, n]) => typeof n === "string")) : {};
    } catch (err) {
      log(`[warn] ${(err as Error).message}`);
      this.names = {};
    }
  }

  get(batchId: string): string | null {
    return this.names[batchId] ?? null;
  }

  all(): Record<string, string> {
    return { ...this.names };
  }

  /** Names a batch ("" takes its name away). */
  set(batchId: string, name: string): void {
    const next = { ...this.names };
    if (name) next[batchId] = name;
    else delete next[batchId];
    writeJsonAtomic(this.file, next);
    this.names = next;
  }
}
