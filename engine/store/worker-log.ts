import {
  closeSync,
  existsSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import path from "node:path";
import { WorkerEvent } from "../../shared/worker";

interface LoadedLog {
  workerId: string;
  events: WorkerEvent[];
  /** Lines that could not be parsed (a torn last line after a crash, or a write cut short by a full disk). */
  skipped: number;
}

/** Open log files kept at most (least recently appended closed first): a worker at rest closes its own. */
const OPEN_LOGS_CAP = 256;

/**
 * Append-only event logs, one JSONL file per worker: `<root>/<workerId>/events.jsonl`.
 * Appends are synchronous so the order on disk is the order of events, and a kill -9 loses nothing already emitted.
 * A live worker's log stays open between appends (one write per event, not open + write + close): `release` closes it
 * when the worker is at rest, and at most `cap` stay open. Before each write the path is checked to still name the
 * open file (one stat), so a log moved or replaced under the engine is reopened, as a fresh open per append would.
 */
export class WorkerLogStore {
  private readonly broken = new Set<string>();
  /** Open logs by worker id, least recently appended first. */
  private readonly open = new Map<string, { file: string; fd: number; dev: number; ino: number }>();

  constructor(
    private readonly root: string,
    private readonly cap = OPEN_LOGS_CAP,
  ) {
    mkdirSync(root, { recursive: true, mode: 0o700 });
  }

  file(workerId: string): string {
    return path.join(this.root, workerId, "events.jsonl");
  }

  dir(workerId: string): string {
    return path.join(this.root, workerId);
  }

  /** How many logs are open now. */
  get openCount(): number {
    return this.open.size;
  }

  /**
   * Throws (ENOSPC, EACCES…) with a message that names the log. A write cut short (a full disk fits only part of the
   * line) is cut back, so the log holds whole events only; where even that fails, the next append starts a fresh line.
   */
  append(event: WorkerEvent): void {
    const id = event.workerId;
    let h = this.open.get(id);
    const file = h?.file ?? this.file(id);
    let prefix = this.broken.size && this.broken.has(file) ? "\n" : "";
    const line = JSON.stringify(event) + "\n";
    let madeDir: string | undefined;
    let fd: number | undefined;
    let size = 0;
    try {
      // The size before this write (for the cut-back) and whether the path still names the open file.
      const st = h ? statSync(file, { throwIfNoEntry: false }) : undefined;
      if (h && st && st.ino === h.ino && st.dev === h.dev) {
        this.open.delete(id); // re-inserted below: most recently appended last
        size = st.size;
      } else {
        if (h) this.closeOne(id);
        madeDir = mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
        fd = openSync(file, "a+", 0o600);
        const ost = fstatSync(fd);
        h = { file, fd, dev: ost.dev, ino: ost.ino };
        size = ost.size;
        // A log opened anew may end in a line torn by a crash (kill -9 mid-write) of an earlier engine: this event starts
        // on a line of its own, not glued onto that one (both would be lost). One byte read per open, not per append.
        if (size > 0 && !prefix) {
          const last = Buffer.alloc(1);
          try {
            if (readSync(fd, last, 0, 1, size - 1) === 1 && last[0] !== 0x0a) prefix = "\n";
          } catch {
            /* not a plain file (a device): appended to as before */
          }
        }
      }
      fd = h.fd;
      this.open.set(id, h);
      const data = Buffer.from(prefix + line);
      for (let off = 0; off < data.length; ) off += writeSync(fd, data, off);
      if (prefix) this.broken.delete(file);
      if (this.open.size > this.cap) this.closeOne(this.open.keys().next().value!);
    } catch (err) {
      this.cutBack(file, fd, size, madeDir);
      // A failed append leaves the log closed: the next one opens it again.
      if (fd !== undefined && this.open.get(id)?.fd !== fd) closeSync(fd);
      this.closeOne(id);
      const code = (err as NodeJS.ErrnoException).code;
      const hint =
        code === "ENOSPC"
          ? "the disk holding the state dir is full; free space"
          : code === "EMFILE" || code === "ENFILE"
            ? "the engine has too many files open; raise its open-file limit (ulimit -n) or run fewer workers at once"
            : "check the state dir's permissions";
      throw new Error(`cannot append to ${file} (${code ?? (err as Error).message}): ${hint}`);
    }
  }

  /** Closes a worker's log (it is at rest); its next append opens it again. */
  release(workerId: string): void {
    this.closeOne(workerId);
  }

  /** Closes every open log (the engine stops); appends after this open them again. */
  close(): void {
    for (const id of [...this.open.keys()]) this.closeOne(id);
  }

  private closeOne(workerId: string): void {
    const h = this.open.get(workerId);
    if (!h) return;
    this.open.delete(workerId);
    try {
      closeSync(h.fd);
    } catch {
      /* already closed */
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
