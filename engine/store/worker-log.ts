import { closeSync, existsSync, fstatSync, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from "node:fs";
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

  /**
   * Throws (ENOSPC, EACCES…) with a message that names the log. A write cut short (a full disk fits only part of the
   * line) is cut back, so the log holds whole events only; where even that fails, the next append starts a fresh line.
   */
  append(event: WorkerEvent): void {
    const file = this.file(event.workerId);
    const prefix = this.broken.has(file) ? "\n" : "";
    const data = Buffer.from(prefix + JSON.stringify(event) + "\n");
    let madeDir: string | undefined;
    let fd: number | undefined;
    let size = 0;
    try {
      madeDir = mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      fd = openSync(file, "a", 0o600);
      size = fstatSync(fd).size;
      for (let off = 0; off < data.length; ) off += writeSync(fd, data, off);
      this.broken.delete(file);
    } catch (err) {
      this.cutBack(file, fd, size, madeDir);
      const code = (err as NodeJS.ErrnoException).code;
      const hint = code === "ENOSPC" ? "the disk holding the state dir is full; free space" : "check the state dir's permissions";
      throw new Error(`cannot append to ${file} (${code ?? (err as Error).message}): ${hint}`);
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  private cutBack(file: string, fd: number | undefined, size: number, madeDir: string | undefined): void {
    try {
      if (fd !== undefined) ftruncateSync(fd, size);
      // A worker whose first event failed does not exist: leave no folder that list() would report.
      if (madeDir && size === 0) rmSync(madeDir, { recursive: true, force: true });
    } catch {
      this.broken.add(file);
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
