// The diff viewer: @git-diff-view/react (GitHub-style, line numbers, unified/split, syntax highlighting) for each
// file, with a file list and per-file collapse. A large file is virtualised: cut into pieces of PIECE lines (each a
// valid diff with the file's own line numbers) in a @tanstack/react-virtual list, so only the pieces in view (and a
// few around them) are in the page, whatever the file's size.
import { onThemeChange, themeIsDark } from "../theme";
import { showUntrustedLines } from "../../../shared/untrusted";
import { DiffModeEnum, DiffView, SplitSide } from "@git-diff-view/react";
import "@git-diff-view/react/styles/diff-view-pure.css";
import { useVirtualizer } from "@tanstack/react-virtual";
import { memo, useMemo, useRef, useState, useSyncExternalStore, type ReactNode } from "react";
import { chunkFileDiff, relativeTo, splitDiff, type FileDiff } from "./diffParse";

/** Files with more hunk lines than this are virtualised; highlighting a whole file stops being cheap above HIGHLIGHT_MAX. */
const VIRTUAL_MIN = 600;
const PIECE = 150;
const HIGHLIGHT_MAX = 800;
/** A diff row's height in px at the 12 px font: the estimate before a piece is measured, and a floor below it. */
const ROW_PX = 19.2;
const ROW_MIN_PX = 18;
/** Files past this many start folded, so a diff of hundreds of files paints the list first. */
const OPEN_FILES = 25;

type Mode = "unified" | "split";
const MODE_KEY = "ocw.diffMode";

function useMode(fallback: Mode): [Mode, (m: Mode) => void] {
  const [mode, setMode] = useState<Mode>(() => {
    try {
      const v = localStorage.getItem(MODE_KEY);
      return v === "split" || v === "unified" ? v : fallback;
    } catch {
      return fallback;
    }
  });
  return [
    mode,
    (m) => {
      setMode(m);
      try {
        localStorage.setItem(MODE_KEY, m);
      } catch {
        /* private mode: not remembered */
      }
    },
  ];
}

/** Whether the dark theme shows (the person's choice in the header, else the system's). */
function useDarkTheme(): boolean {
  return useSyncExternalStore(onThemeChange, themeIsDark);
}

const STATUS_MARK: Record<FileDiff["status"], string> = { added: "A", deleted: "D", modified: "M", renamed: "R", binary: "B" };

/** A comment a person is writing on the diff: a file, optionally a line of its new version, and the text. */
export interface DraftComment {
  file: string;
  line?: number;
  body: string;
}

/** Review mode: line and file comments are collected here until the person sends them as one review. */
interface ReviewDraft {
  comments: DraftComment[];
  add: (c: DraftComment) => void;
  remove: (c: DraftComment) => void;
}

/** The little editor for one comment (a line's or a file's). */
function CommentEditor({ label, onSave, onCancel }: { label: string; onSave: (body: string) => void; onCancel: () => void }) {
  const [body, setBody] = useState("");
  return (
    <form
      className="review-editor"
      aria-label={label}
      onSubmit={(e) => {
        e.preventDefault();
        if (body.trim()) onSave(body.trim());
      }}
    >
      <textarea aria-label="Comment" rows={2} autoFocus value={body} placeholder="What should change here?" onChange={(e) => setBody(e.target.value)} />
      <div className="actions">
        <button type="submit" className="btn primary small" disabled={!body.trim()}>
          Add comment
        </button>
        <button type="button" className="btn small" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function CommentShown({ c, review, children }: { c: DraftComment; review: ReviewDraft; children?: ReactNode }) {
  return (
    <div className="review-comment" role="note" aria-label={`comment on ${c.file}${c.line ? `:${c.line}` : ""}`}>
      <span className="mono small">
        {c.file}
        {c.line ? `:${c.line}` : ""}
      </span>{" "}
      <span>{c.body}</span>
      {children}
      <button type="button" className="linklike small" onClick={() => review.remove(c)} title="remove this comment">
        remove
      </button>
    </div>
  );
}

/**
 * A unified diff of one or more files. `root` makes absolute paths inside a worktree relative. `compact` is for
 * approval cards: unified by default, no file list for a single file, bounded height.
 */
export function Diff({
  text: given,
  label = "diff",
  root,
  compact = false,
  review,
}: {
  text: string;
  label?: string;
  root?: string | null;
  compact?: boolean;
  review?: ReviewDraft;
}) {
  // The engine cuts a diff past its size limit and says so on a last line: that line is not diff text (the parser would
  // throw on it), so it is shown apart.
  const cut = /\n… diff truncated at (\d+) bytes\s*$/.exec(given);
  // Worker-written: every line made safe (bidi, zero-width and control characters shown as ⟪U+XXXX⟫; shared/untrusted.ts).
  const text = useMemo(() => showUntrustedLines(cut ? given.slice(0, cut.index) + "\n" : given), [given, cut?.index]);
  const files = useMemo(() => splitDiff(text), [text]);
  const [mode, setMode] = useMode("unified");
  const dark = useDarkTheme();
  const added = files.reduce((n, f) => n + f.added, 0);
  const removed = files.reduce((n, f) => n + f.removed, 0);
  const ids = useMemo(() => files.map((_, i) => `dv-${Math.random().toString(36).slice(2, 8)}-${i}`), [files]);

  if (!files.length)
    return (
      <pre className="diff-raw" aria-label={label}>
        {text}
      </pre>
    );
  return (
    <div className={`dv ${compact ? "dv-compact" : ""}`} role="group" aria-label={label}>
      <div className="dv-bar small">
        <span>
          {files.length} file{files.length === 1 ? "" : "s"} · <span className="ok-text">+{added}</span> <span className="bad-text">−{removed}</span>
        </span>
        <span className="grow" />
        <div className="seg-toggle" role="radiogroup" aria-label="Diff layout">
          {(["unified", "split"] as const).map((m) => (
            <button key={m} type="button" role="radio" aria-checked={mode === m} className={`btn small ${mode === m ? "on" : ""}`} onClick={() => setMode(m)}>
              {m === "unified" ? "Unified" : "Split"}
            </button>
          ))}
        </div>
      </div>
      {(files.length > 1 || !compact) && (
        <ul className="dv-files" aria-label="Changed files">
          {files.map((f, i) => (
            <li key={ids[i]}>
              <button
                type="button"
                className="linklike"
                onClick={() => document.getElementById(ids[i]!)?.scrollIntoView({ block: "start", behavior: "smooth" })}
              >
                <span className={`dv-status dv-${f.status}`} title={f.status}>
                  {STATUS_MARK[f.status]}
                </span>
                <span className="mono ellipsis">{relativeTo(root, f.name)}</span>
                <span className="small ok-text">+{f.added}</span>
                <span className="small bad-text">−{f.removed}</span>
              </button>
            </li>
          ))}
        </ul>
      )}
      {cut && (
        <div className="field-error" role="note">
          This diff is longer than {Number(cut[1]).toLocaleString()} bytes: it is cut there, and the last file shown is incomplete. The whole change is in the
          worker&apos;s branch (<code>git diff</code> in its worktree).
        </div>
      )}
      {files.map((f, i) => (
        <FileBlock key={ids[i]} id={ids[i]!} file={f} root={root} mode={mode} dark={dark} startOpen={i < OPEN_FILES} compact={compact} review={review} />
      ))}
    </div>
  );
}

const FileBlock = memo(function FileBlock({
  id,
  file,
  root,
  mode,
  dark,
  startOpen,
  compact,
  review,
}: {
  id: string;
  file: FileDiff;
  root?: string | null;
  mode: Mode;
  dark: boolean;
  startOpen: boolean;
  compact: boolean;
  review?: ReviewDraft;
}) {
  const [open, setOpen] = useState(startOpen);
  const [fileEditor, setFileEditor] = useState(false);
  const name = relativeTo(root, file.name);
  // Comments on this file: the file's own (no line), and per line of its new version (shown under the line).
  const mine = review?.comments.filter((c) => c.file === name) ?? [];
  const extendData = useMemo(() => {
    const newFile: Record<string, { data: DraftComment[] }> = {};
    for (const c of mine) if (c.line) (newFile[String(c.line)] ??= { data: [] }).data.push(c);
    return { newFile };
  }, [mine]);
  const oldName = file.oldName && relativeTo(root, file.oldName);
  const data = useMemo(
    () => ({ oldFile: { fileName: file.oldName ?? file.newName ?? name }, newFile: { fileName: file.newName ?? file.oldName ?? name }, hunks: [file.text] }),
    [file, name],
  );
  return (
    <section id={id} className="dv-file" aria-label={`diff of ${name}`}>
      <header className="dv-file-head">
        <button
          type="button"
          className="linklike"
          aria-expanded={open}
          onClick={() => setOpen(!open)}
          title={open ? "fold" : "unfold"}
          aria-label={`${open ? "Fold" : "Unfold"} ${name}`}
        >
          {open ? "▾" : "▸"}
        </button>
        <span className={`dv-status dv-${file.status}`}>{STATUS_MARK[file.status]}</span>
        <span className="mono ellipsis">
          {file.status === "renamed" && oldName && oldName !== name ? `${oldName} → ` : ""}
          {name}
        </span>
        <span className="grow" />
        <span className="small ok-text">+{file.added}</span>
        <span className="small bad-text">−{file.removed}</span>
        {review && (
          <button type="button" className="btn small" onClick={() => setFileEditor(true)} aria-label={`Comment on ${name}`}>
            Comment on file
          </button>
        )}
      </header>
      {review && (
        <div className="review-file">
          {mine
            .filter((c) => !c.line)
            .map((c, k) => (
              <CommentShown key={k} c={c} review={review} />
            ))}
          {fileEditor && (
            <CommentEditor
              label={`comment on ${name}`}
              onCancel={() => setFileEditor(false)}
              onSave={(body) => (review.add({ file: name, body }), setFileEditor(false))}
            />
          )}
        </div>
      )}
      {!open ? (
        <button type="button" className="btn small dv-unfold" onClick={() => setOpen(true)}>
          Show {file.lines.toLocaleString()} diff lines
        </button>
      ) : file.status === "binary" || file.lines === 0 ? (
        <div className="muted small pad">{file.status === "binary" ? "Binary file: no text diff." : "No content change (mode or name only)."}</div>
      ) : file.lines > VIRTUAL_MIN ? (
        <VirtualBody file={file} mode={mode} dark={dark} compact={compact} />
      ) : (
        <div className={`dv-body ${compact ? "dv-body-compact" : ""}`}>
          <DiffView
            data={data}
            diffViewMode={mode === "split" ? DiffModeEnum.Split : DiffModeEnum.Unified}
            diffViewWrap
            diffViewHighlight={file.lines <= HIGHLIGHT_MAX}
            diffViewTheme={dark ? "dark" : "light"}
            diffViewFontSize={12}
            {...(review
              ? {
                  diffViewAddWidget: true,
                  extendData,
                  renderExtendLine: ({ data }: { data: DraftComment[] }) => (
                    <div className="review-line">
                      {data.map((c, k) => (
                        <CommentShown key={k} c={c} review={review} />
                      ))}
                    </div>
                  ),
                  renderWidgetLine: ({ lineNumber, side, onClose }: { lineNumber: number; side: SplitSide; onClose: () => void }) => (
                    <CommentEditor
                      label={`comment on ${name}:${lineNumber}`}
                      onCancel={onClose}
                      onSave={(body) => {
                        // A line of the new version is named by its number; a removed line by its old number, in words.
                        review.add(
                          side === SplitSide.new ? { file: name, line: lineNumber, body } : { file: name, body: `(on removed line ${lineNumber}) ${body}` },
                        );
                        onClose();
                      }}
                    />
                  ),
                }
              : {})}
          />
        </div>
      )}
    </section>
  );
});

/**
 * A large file, a piece at a time: the pieces in view of its own scroll box (and OVERSCAN around them) are rendered by
 * the diff library, the rest are space. Each piece is measured once rendered, so scrolling stays true to the content.
 */
function VirtualBody({ file, mode, dark, compact }: { file: FileDiff; mode: Mode; dark: boolean; compact: boolean }) {
  const pieces = useMemo(() => chunkFileDiff(file.text, PIECE), [file.text]);
  const total = pieces.reduce((n, p) => n + p.lines, 0);
  const box = useRef<HTMLDivElement>(null);
  const list = useVirtualizer({
    count: pieces.length,
    getScrollElement: () => box.current,
    // A hunk header row per piece, plus its lines (a split row holds a removed and an added line side by side).
    estimateSize: (i) => (pieces[i]!.lines + 1) * ROW_PX,
    overscan: 1,
  });
  return (
    <div
      ref={box}
      className={`dv-body dv-virtual ${compact ? "dv-body-compact" : ""}`}
      data-pieces={pieces.length}
      aria-label={`${total.toLocaleString("en-US")} diff lines, shown as you scroll`}
    >
      <div style={{ height: list.getTotalSize(), position: "relative" }}>
        {list.getVirtualItems().map((v) => (
          <div
            key={v.key}
            data-index={v.index}
            ref={list.measureElement}
            className="dv-piece"
            style={{ position: "absolute", top: 0, left: 0, width: "100%", transform: `translateY(${v.start}px)` }}
          >
            {/* Never measured empty: the diff library fills a piece after its first paint, and an empty piece would let
                the list take every piece for "in view" (and its scroll correction walk the box to the end). */}
            <div style={{ minHeight: pieces[v.index]!.lines * ROW_MIN_PX }}>
              <Piece text={pieces[v.index]!.text} name={file.newName ?? file.oldName ?? file.name} mode={mode} dark={dark} />
            </div>
          </div>
        ))}
      </div>
    </div>
  );
}

const Piece = memo(function Piece({ text, name, mode, dark }: { text: string; name: string; mode: Mode; dark: boolean }) {
  const data = useMemo(() => ({ oldFile: { fileName: name }, newFile: { fileName: name }, hunks: [text] }), [text, name]);
  return (
    <DiffView
      data={data}
      diffViewMode={mode === "split" ? DiffModeEnum.Split : DiffModeEnum.Unified}
      diffViewWrap
      diffViewHighlight
      diffViewTheme={dark ? "dark" : "light"}
      diffViewFontSize={12}
    />
  );
});
