import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { WorkerEvent } from "../../shared/worker";

export interface LoadedLog {
  workerId: string;
  events: WorkerEvent[];
  /** Lines that could not be parsed (a torn last line after a crash, or a write cut short by a full disk). */
  skipped: number;
}

/**
 * Append-only event logs, one JSONL file per worker: `<root>/<workerId>/events.jsonl`.
 * Appends are synchronous so the order on disk is the order of events, and a kill -9 loses nothing already emitted.
 */
export class WorkerLogStore {
  private readonly broken = new Set<string>();

  constructor(private readonly root: string) {
    mkdirSync(root, { recursive: true, mode: 0o700 });
  }

  file(workerId: string): string {
    return path.join(this.root, workerId, "events.jsonl");
  }

  dir(workerId: string): string {
    return path.join(this.root, workerId);
  }

  /** Throws (ENOSPC, EACCES…) with a message that names the log; a failed append never glues onto the next one. */
  append(event: WorkerEvent): void {
    const file = this.file(event.workerId);
    const prefix = this.broken.has(file) ? "\n" : "";
    try {
      mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      appendFileSync(file, prefix + JSON.stringify(event) + "\n", { mode: 0o600 });
      this.broken.delete(file);
    } catch (err) {
      this.broken.add(file);
      const code = (err as NodeJS.ErrnoException).code;
      const hint = code === "ENOSPC" ? "the disk holding the state dir is full; free space" : "check the state dir's permissions";
      throw new Error(`cannot append to ${file} (${code ?? (err as Error).message}): ${hint}`);
    }
  }

  load(workerId: string): LoadedLog {
    const file = this.file(workerId);
    if (!existsSync(file)) return { workerId, events: [], skipped: 0 };
    const events: WorkerEvent[] = [];
    let skipped = 0;
    for (const line of readFileSync(file, "utf8").split("\n")) {
      if (!line.trim()) continue;
      try {
        const parsed = WorkerEvent.safeParse(JSON.parse(line));
        if (parsed.success) events.push(parsed.data);
        else skipped++;
      } catch {
        skipped++;
      }
    }
    return { workerId, events, skipped };
  }

  list(): string[] {
    return readdirSync(this.root, { withFileTypes: true })
      .filter((d) => d.isDirectory() && existsSync(path.join(this.root, d.name, "events.jsonl")))
      .map((d) => d.name)
      .sort();
  }
}
