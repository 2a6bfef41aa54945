// Splits a unified diff (git's `diff --git` output, or opencode's `Index:` patches in asks) into one text per file,
// for the diff viewer library, which renders one file at a time. Hunk line counts are followed, so a removed line
// that starts with "--" is never taken for a file header.

export interface FileDiff {
  /** The path shown: the new name, or the old one for a deletion. */
  name: string;
  oldName: string | null;
  newName: string | null;
  status: "added" | "deleted" | "modified" | "renamed" | "binary";
  added: number;
  removed: number;
  /** This file's part of the diff, from its first header line. */
  text: string;
  /** Lines in its hunks (what rendering costs). */
  lines: number;
}

const HUNK = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/;

function cleanName(raw: string): string | null {
  const p = raw.replace(/\t.*$/, "").trim();
  if (p === "/dev/null") return null;
  return p.replace(/^"(.*)"$/, "$1").replace(/^[ab]\//, "");
}

export function splitDiff(text: string): FileDiff[] {
  const lines = text.replace(/\r\n/g, "\n").split("\n");
  type F = {
    start: number;
    end: number;
    oldName: string | null;
    newName: string | null;
    gitNames: [string, string] | null;
    added: number;
    removed: number;
    binary: boolean;
    renamed: boolean;
    hunkLines: number;
    fromEmpty: boolean;
    toEmpty: boolean;
  };
  const files: F[] = [];
  let cur = null as F | null;
  let oldLeft = 0;
  let newLeft = 0;
  const open = (i: number) => {
    if (cur) cur.end = i;
    cur = {
      start: i,
      end: lines.length,
      oldName: null,
      newName: null,
      gitNames: null,
      added: 0,
      removed: 0,
      binary: false,
      renamed: false,
      hunkLines: 0,
      fromEmpty: true,
      toEmpty: true,
    };
    files.push(cur);
  };
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (oldLeft > 0 || newLeft > 0) {
      // Inside a hunk: count its lines.
      if (l.startsWith("+")) cur!.added++, newLeft--;
      else if (l.startsWith("-")) cur!.removed++, oldLeft--;
      else if (l.startsWith("\\")) continue;
      else oldLeft--, newLeft--;
      cur!.hunkLines++;
      continue;
    }
    if (l.startsWith("diff --git ") || l.startsWith("Index: ")) {
      open(i);
      const m = /^diff --git "?a\/(.+?)"? "?b\/(.+?)"?$/.exec(l);
      if (m) cur!.gitNames = [m[1]!, m[2]!];
      continue;
    }
    if (l.startsWith("--- ") && lines[i + 1]?.startsWith("+++ ")) {
      // A header without a "diff --git"/"Index:" line before it, or a second file in the same block: a new file.
      if (!cur || cur.hunkLines > 0 || cur.oldName !== null || cur.newName !== null) open(i);
      cur!.oldName = cleanName(l.slice(4));
      cur!.newName = cleanName(lines[i + 1]!.slice(4));
      i++;
      continue;
    }
    const h = HUNK.exec(l);
    if (h && cur) {
      oldLeft = h[1] === undefined ? 1 : Number(h[1]);
      newLeft = h[2] === undefined ? 1 : Number(h[2]);
      // opencode's patches name the same path on both sides even for a new file: "@@ -0,0" says it was empty.
      if (oldLeft > 0) cur.fromEmpty = false;
      if (newLeft > 0) cur.toEmpty = false;
      cur.hunkLines++;
      continue;
    }
    if (cur && (l.startsWith("Binary files ") || l === "GIT binary patch")) cur.binary = true;
    if (cur && l.startsWith("rename from ")) cur.renamed = true;
  }
  return files
    .map((f) => {
      const body = lines.slice(f.start, f.end);
      while (body.length && body[body.length - 1] === "") body.pop();
      let oldName = f.oldName;
      let newName = f.newName;
      // git omits ---/+++ for binary files, pure renames and mode changes: take the names from its header.
      if (oldName === null && newName === null && f.gitNames) [oldName, newName] = f.gitNames;
      const noHunks = f.hunkLines === 0;
      const status: FileDiff["status"] = f.binary
        ? "binary"
        : oldName === null || (!noHunks && f.fromEmpty)
          ? "added"
          : newName === null || (!noHunks && f.toEmpty)
            ? "deleted"
            : f.renamed || oldName !== newName
              ? "renamed"
              : "modified";
      return {
        name: newName ?? oldName ?? "(unnamed)",
        oldName,
        newName,
        status,
        added: f.added,
        removed: f.removed,
        text: body.join("\n") + "\n",
        lines: f.hunkLines,
      };
    })
    .filter((f) => f.text.trim());
}

/** Paths inside a worker's worktree read better relative to it. */
export function relativeTo(root: string | null | undefined, name: string): string {
  return root && name.startsWith(root + "/") ? name.slice(root.length + 1) : name;
}

/**
 * One file's diff text cut into pieces of at most `size` hunk lines, each a valid diff of its own (the file's header,
 * then hunks whose `@@ -a,b +c,d @@` headers are recomputed for the piece), so a huge file can be rendered a piece at a
 * time by a virtual list. Line numbers stay those of the file. A "\ No newline" marker stays with the line before it.
 */
export function chunkFileDiff(text: string, size = 200): { text: string; lines: number }[] {
  const lines = text.replace(/\r\n/g, "\n").split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const first = lines.findIndex((l) => HUNK.test(l));
  if (first < 0) return [{ text, lines: 0 }];
  const head = lines.slice(0, first).join("\n");
  const pieces: { text: string; lines: number }[] = [];
  let body: string[] = [];
  let count = 0;
  let oldNext = 0;
  let newNext = 0;
  // The piece being filled: its current hunk's start and counts.
  type Hunk = { oldStart: number; newStart: number; old: number; new: number; lines: string[] };
  let hunk = null as Hunk | null;
  const closeHunk = () => {
    if (!hunk || !hunk.lines.length) return;
    const o = hunk.old ? hunk.oldStart : hunk.oldStart - 1;
    const n = hunk.new ? hunk.newStart : hunk.newStart - 1;
    body.push(`@@ -${o},${hunk.old} +${n},${hunk.new} @@`, ...hunk.lines);
    hunk = null;
  };
  const openHunk = (): Hunk => (hunk = { oldStart: oldNext, newStart: newNext, old: 0, new: 0, lines: [] });
  const closePiece = () => {
    closeHunk();
    if (body.length) pieces.push({ text: `${head ? head + "\n" : ""}${body.join("\n")}\n`, lines: count });
    body = [];
    count = 0;
  };
  for (let i = first; i < lines.length; i++) {
    const l = lines[i]!;
    const h = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(l);
    if (h) {
      closeHunk();
      oldNext = h[2] === "0" ? Number(h[1]) + 1 : Number(h[1]);
      newNext = h[4] === "0" ? Number(h[3]) + 1 : Number(h[3]);
      openHunk();
      continue;
    }
    // Only diff lines: anything else (a cut line of a truncated diff, a stray note) would break the parser.
    if (!hunk || !/^([-+ \\]|$)/.test(l)) continue;
    if (l.startsWith("\\")) {
      hunk.lines.push(l);
      continue;
    }
    let cur: Hunk = hunk;
    if (count >= size) {
      closePiece();
      cur = openHunk();
    }
    cur.lines.push(l);
    count++;
    if (l.startsWith("+")) cur.new++, newNext++;
    else if (l.startsWith("-")) cur.old++, oldNext++;
    else cur.old++, cur.new++, oldNext++, newNext++;
  }
  closePiece();
  return pieces.length ? pieces : [{ text, lines: 0 }];
}
