import { useEffect, useRef, useState, type FormEvent, type ReactNode } from "react";
import type { CheckSpec } from "../../../shared/check";
import { WorkerSpec, type WorkerSpecInput } from "../../../shared/worker";
import { api, errorText } from "../api";
import { Warning } from "../components/common";
import { desktop } from "../desktop";
import { go, goAndFocus } from "../router";
import { pushNotice, useStore } from "../store";

interface CheckRow {
  kind: "run" | "file";
  name: string;
  run: string;
  expectExit: string;
  file: string;
  mode: "exists" | "absent" | "equals" | "matches";
  value: string;
}

interface TaskRow {
  key: number;
  title: string;
  task: string;
  directory: string;
  checks: CheckRow[];
  scope: string;
  protect: string;
  wallSec: string;
  tokens: string;
  fixRounds: string;
  /** Its checks are a copy of the task's before it ("+ Add another task"), not edited yet: the form says so. */
  checksCopied?: boolean;
}

let keySeq = 0;
const LAST_DIR = "ocw.lastDirectory";
const blankCheck = (): CheckRow => ({ kind: "run", name: "", run: "", expectExit: "", file: "", mode: "exists", value: "" });
const blankTask = (directory = localStorage.getItem(LAST_DIR) ?? ""): TaskRow => ({
  key: ++keySeq,
  title: "",
  task: "",
  directory,
  checks: [blankCheck()],
  scope: "",
  protect: "",
  wallSec: "",
  tokens: "",
  fixRounds: "",
});

const globs = (s: string) =>
  s
    .split(/[\n,]/)
    .map((x) => x.trim())
    .filter(Boolean);

function toCheck(c: CheckRow): CheckSpec | null {
  const name = c.name.trim() || undefined;
  if (c.kind === "run") {
    if (!c.run.trim() && !name) return null;
    return { ...(name ? { name } : {}), run: c.run, ...(c.expectExit.trim() ? { expectExit: Number(c.expectExit) } : {}) };
  }
  if (!c.file.trim() && !name) return null;
  const base = { ...(name ? { name } : {}), file: c.file.trim() };
  if (c.mode === "absent") return { ...base, exists: false };
  if (c.mode === "equals") return { ...base, equals: c.value };
  if (c.mode === "matches") return { ...base, matches: c.value };
  return base;
}

function toSpec(t: TaskRow, targetId: string | undefined): WorkerSpecInput {
  const budget: { wallSec?: number; tokens?: number } = {};
  if (t.wallSec.trim()) budget.wallSec = Number(t.wallSec);
  if (t.tokens.trim()) budget.tokens = Number(t.tokens);
  return {
    task: t.task,
    directory: t.directory.trim(),
    ...(t.title.trim() ? { title: t.title.trim() } : {}),
    checks: t.checks.map(toCheck).filter((c): c is CheckSpec => c !== null),
    scope: globs(t.scope),
    protect: globs(t.protect),
    budget,
    ...(t.fixRounds.trim() ? { fixRounds: Number(t.fixRounds) } : {}),
    ...(targetId ? { targetId } : {}),
  };
}

/** A message under one field of one task (`task` -1: under the whole form). */
interface FieldError {
  task: number;
  field: string;
  text: string;
}

/**
 * The number fields that hold something else, as the message a person reads under that field. Sent as they are, a word
 * went out as null and came back as "Invalid input: expected number, received null" (under the token budget even for
 * the wall clock), and an exit code as the whole check's schema.
 */
function badNumbers(t: TaskRow): { field: string; text: string }[] {
  const whole = (s: string, min: number, max: number) => /^\d+$/.test(s.trim()) && Number(s) >= min && Number(s) <= max;
  const bad: { field: string; text: string }[] = [];
  const exit = t.checks.find((c) => c.kind === "run" && c.expectExit.trim() && !whole(c.expectExit, 0, 255));
  if (exit) bad.push({ field: "checks", text: `the expected exit code must be a whole number from 0 to 255: got "${exit.expectExit.trim()}"` });
  if (t.wallSec.trim() && !(Number(t.wallSec) > 0))
    bad.push({ field: "wallSec", text: `the wall-clock budget is a number of seconds above 0: got "${t.wallSec.trim()}"` });
  if (t.tokens.trim() && !whole(t.tokens, 1, Number.MAX_SAFE_INTEGER))
    bad.push({ field: "tokens", text: `the token budget is a whole number above 0: got "${t.tokens.trim()}"` });
  if (t.fixRounds.trim() && !whole(t.fixRounds, 0, 10))
    bad.push({ field: "fixRounds", text: `fix rounds are a whole number from 0 to 10: got "${t.fixRounds.trim()}"` });
  return bad;
}

/** The field a message about `field` (and its part `sub`) goes under: a budget's under its own (budget.wallSec, budget.tokens). */
const fieldFor = (field: string, sub?: unknown): string => (field === "budget" && (sub === "wallSec" || sub === "tokens") ? sub : field);

/** The fields with a place for their message under them (`budget`: under the token budget). */
const PLACED = new Set(["directory", "task", "checks", "scope", "protect", "budget", "wallSec", "tokens", "fixRounds"]);

/**
 * Every field of a task the form can tell is wrong before sending, one message each, in the engine's own words (its
 * schema of a task, shared/worker.ts): an empty form says all of its problems at once, where the engine's refusal names
 * one field. The engine stays the judge of the rest (a folder that is no git repository, a target, a batch's plan).
 */
function taskProblems(t: TaskRow, spec: WorkerSpecInput): { field: string; text: string }[] {
  const found = badNumbers(t);
  const parsed = WorkerSpec.safeParse(spec);
  if (!parsed.success)
    for (const issue of parsed.error.issues) {
      const [head, sub] = issue.path;
      // A check's under the checks; one about a field without a place for messages (the title) under the task as a whole.
      const field = typeof head === "string" && PLACED.has(head) ? fieldFor(head, sub) : "form";
      if (!found.some((f) => f.field === field)) found.push({ field, text: issue.message });
    }
  return found;
}

/** Where an API message belongs: "tasks.1.directory: …" or a message naming the field. */
function place(message: string, many: boolean): FieldError {
  const n = /^task (\d+): (.*)$/s.exec(message);
  if (n) return { ...place(n[2]!, false), task: Number(n[1]) - 1, text: message };
  const m = /^(?:tasks\.(\d+)\.)?([a-zA-Z]+)(?:\.([\w.]+))?: (.*)$/s.exec(message);
  if (m && (m[1] !== undefined || !many)) return { task: Number(m[1] ?? 0), field: fieldFor(m[2]!, m[3]), text: m[4]! };
  const field = /director|git repository|does not exist/i.test(message)
    ? "directory"
    : /task is/i.test(message)
      ? "task"
      : /check/i.test(message)
        ? "checks"
        : /scope|glob/i.test(message)
          ? "scope"
          : "form";
  return { task: many ? -1 : 0, field, text: message };
}

export function NewTask() {
  const [tasks, setTasks] = useState<TaskRow[]>(() => [blankTask()]);
  const [busy, setBusy] = useState(false);
  /** The messages under the form's fields: every problem the form found, or the engine's refusal. */
  const [errors, setErrors] = useState<FieldError[]>([]);
  const targets = useStore((s) => s.targets);
  const active = useStore((s) => s.status?.activeTarget ?? null);
  const [targetId, setTargetId] = useState<string>("");
  /** Best-of-N: attempts per task (the checks pick the winner; the rest are stopped once one is built). */
  const [attempts, setAttempts] = useState(1);

  const update = (i: number, patch: Partial<TaskRow>) => {
    // Checks edited are this task's own: no longer "copied from the task before".
    setTasks((ts) => ts.map((t, j) => (j === i ? { ...t, ...patch, ...("checks" in patch ? { checksCopied: false } : {}) } : t)));
    // An edited field no longer shows the message about its old value (the others stay).
    setErrors((es) => {
      const left = es.filter((e) => !((e.task === i || e.task === -1) && (e.field === "form" || Object.keys(patch).includes(e.field))));
      return left.length === es.length ? es : left;
    });
  };
  const many = tasks.length > 1;
  // Start worker is disabled while the engine answers, and the focus with it fell to the page's top: a refused form
  // puts it on the first field with a message (else on the message), so the keyboard is where the fix is typed. The
  // form's own check moves it there from Start worker too (`checked`).
  const formRef = useRef<HTMLFormElement>(null);
  const checked = useRef(false);
  useEffect(() => {
    const form = formRef.current;
    const moveFocus = checked.current;
    checked.current = false;
    if (!errors.length || !form || (!moveFocus && document.activeElement && document.activeElement !== document.body)) return;
    (form.querySelector<HTMLElement>('[aria-invalid="true"]:not(:disabled)') ?? form.querySelector<HTMLElement>(".field-error[role=alert]"))?.focus();
  }, [errors]);

  async function submit(e: FormEvent) {
    e.preventDefault();
    const specs = tasks.map((t) => toSpec(t, targetId || undefined));
    const found = tasks.flatMap((t, i) => taskProblems(t, specs[i]!).map((p) => ({ task: i, ...p })));
    if (found.length) {
      checked.current = true;
      return setErrors(found);
    }
    setBusy(true);
    setErrors([]);
    try {
      localStorage.setItem(LAST_DIR, tasks[tasks.length - 1]!.directory.trim());
      if (specs.length === 1 && attempts > 1) {
        const r = await api.workers.startAttempts.mutate({ ...specs[0]!, attempts } as never);
        pushNotice("info", `started ${r.workerIds.length} attempts (${r.groupId})`);
        if (r.groupId) goAndFocus({ name: "attempts", id: r.groupId }, ".attempts-screen .detail-head h2");
        else go({ name: "dashboard" });
      } else if (specs.length === 1) {
        const r = await api.workers.start.mutate(specs[0]!);
        pushNotice("info", `started ${r.workerId}`);
        goAndFocus({ name: "worker", id: r.workerId }, ".detail-head h2");
      } else {
        const r = await api.workers.startBatch.mutate({ tasks: (attempts > 1 ? specs.map((x) => ({ ...x, attempts })) : specs) as never });
        pushNotice("info", `started batch ${r.batchId} (${r.workerIds.length} workers)`);
        goAndFocus({ name: "dashboard" }, `section[aria-label="batch ${r.batchId}"] .batch-head :is(h2[tabindex], h2 button)`);
      }
    } catch (err) {
      setErrors([place(errorText(err), many)]);
    } finally {
      setBusy(false);
    }
  }

  const errorOf = (i: number, field: string) => errors.find((e) => e.task === i && e.field === field);
  const fieldError = (i: number, field: string) => {
    const error = errorOf(i, field);
    return error ? (
      <div className="field-error" role="alert" id={`err-${i}-${field}`} tabIndex={-1}>
        {error.text}
      </div>
    ) : null;
  };
  // A field's message sits inside its <label>, and so was read as part of the field's name ("Task the task is empty: …"):
  // a field with a message is named by its label's own words only (the message is its description).
  const labelId = (i: number, field: string) => `lbl-${i}-${field}`;
  const describedBy = (i: number, field: string) => (errorOf(i, field) ? `err-${i}-${field}` : undefined);
  /** A field's accessible name (its label's words), and its message as its description while it has one. */
  const fieldNamed = (i: number, field: string) => ({
    "aria-labelledby": labelId(i, field),
    "aria-invalid": !!describedBy(i, field),
    "aria-describedby": describedBy(i, field),
  });
  /** A number field of task `i` (its budget's or its fix rounds'), with its own error under it (and `also`). */
  const numberField = (i: number, name: "wallSec" | "tokens" | "fixRounds", label: string, opts: { title?: string; also?: ReactNode } = {}) => (
    <label className="field" title={opts.title}>
      <span id={labelId(i, name)}>{label}</span>
      <input
        name={name}
        {...fieldNamed(i, name)}
        inputMode="numeric"
        value={tasks[i]![name]}
        placeholder="none"
        onChange={(e) => update(i, { [name]: e.target.value })}
      />
      {fieldError(i, name)}
      {opts.also}
    </label>
  );

  return (
    <form className="new-task" ref={formRef} onSubmit={submit} noValidate aria-label="New task">
      {!active && !targetId && (
        <Warning title="No active target.">
          Workers will be refused until you <a href="#/setup">set up a model</a>.
        </Warning>
      )}
      {tasks.map((t, i) => (
        <fieldset key={t.key} className="panel task-row" aria-label={many ? `Task ${i + 1}` : "Task"}>
          <legend>{many ? `Task ${i + 1}` : "Task"}</legend>
          <div className="grid2">
            <label className="field">
              <span id={labelId(i, "directory")}>Directory (git repository)</span>
              <div className="inline">
                <input
                  name="directory"
                  value={t.directory}
                  placeholder="/absolute/path/to/repo"
                  onChange={(e) => update(i, { directory: e.target.value })}
                  {...fieldNamed(i, "directory")}
                  spellCheck={false}
                />
                {desktop && (
                  <button
                    type="button"
                    className="btn"
                    onClick={async () => {
                      const dir = await desktop!.pickDirectory();
                      if (dir) update(i, { directory: dir });
                    }}
                  >
                    Browse…
                  </button>
                )}
              </div>
              {fieldError(i, "directory")}
            </label>
            <label className="field">
              <span>Title (optional)</span>
              <input name="title" value={t.title} onChange={(e) => update(i, { title: e.target.value })} placeholder="short name for the card" />
            </label>
          </div>
          <label className="field">
            <span id={labelId(i, "task")}>Task</span>
            <textarea
              name="task"
              rows={4}
              value={t.task}
              onChange={(e) => update(i, { task: e.target.value })}
              placeholder="What the worker should do. Say what done looks like; the checks below stay hidden from it."
              {...fieldNamed(i, "task")}
            />
            {fieldError(i, "task")}
          </label>

          <div className="checks" role="group" aria-label="Checks">
            <div className="sub-head">
              <span>Held-back checks</span>
              <span className="muted small">run on a fresh checkout of the worker's committed files once it settles; the worker never sees them</span>
            </div>
            {t.checksCopied && t.checks.length > 0 && (
              <p className="field-note" role="note">
                Copied from the task before this one: edit them for this task, or remove them.
              </p>
            )}
            {t.checks.map((c, ci) => (
              <div className="check-row" key={ci} role="group" aria-label={`Check ${ci + 1}`}>
                <select
                  aria-label="Check kind"
                  value={c.kind}
                  onChange={(e) => update(i, { checks: t.checks.map((x, k) => (k === ci ? { ...x, kind: e.target.value as CheckRow["kind"] } : x)) })}
                >
                  <option value="run">command</option>
                  <option value="file">file</option>
                </select>
                {c.kind === "run" ? (
                  <>
                    <input
                      aria-label="Command"
                      className="grow mono"
                      placeholder="npm test -- --run"
                      value={c.run}
                      onChange={(e) => update(i, { checks: t.checks.map((x, k) => (k === ci ? { ...x, run: e.target.value } : x)) })}
                    />
                    <input
                      aria-label="Expected exit code"
                      className="narrow"
                      placeholder="exit 0"
                      value={c.expectExit}
                      onChange={(e) => update(i, { checks: t.checks.map((x, k) => (k === ci ? { ...x, expectExit: e.target.value } : x)) })}
                    />
                  </>
                ) : (
                  <>
                    <input
                      aria-label="File path"
                      className="grow mono"
                      placeholder="relative/path.txt"
                      value={c.file}
                      onChange={(e) => update(i, { checks: t.checks.map((x, k) => (k === ci ? { ...x, file: e.target.value } : x)) })}
                    />
                    <select
                      aria-label="File condition"
                      value={c.mode}
                      onChange={(e) => update(i, { checks: t.checks.map((x, k) => (k === ci ? { ...x, mode: e.target.value as CheckRow["mode"] } : x)) })}
                    >
                      <option value="exists">exists</option>
                      <option value="absent">does not exist</option>
                      <option value="equals">equals</option>
                      <option value="matches">matches regex</option>
                    </select>
                    {(c.mode === "equals" || c.mode === "matches") && (
                      <input
                        aria-label="Expected content"
                        className="grow mono"
                        value={c.value}
                        onChange={(e) => update(i, { checks: t.checks.map((x, k) => (k === ci ? { ...x, value: e.target.value } : x)) })}
                      />
                    )}
                  </>
                )}
                <input
                  aria-label="Check name"
                  className="narrow2"
                  placeholder="name (optional)"
                  value={c.name}
                  onChange={(e) => update(i, { checks: t.checks.map((x, k) => (k === ci ? { ...x, name: e.target.value } : x)) })}
                />
                <button
                  type="button"
                  className="btn ghost small"
                  aria-label={`Remove check ${ci + 1}`}
                  onClick={(e) => {
                    // The removed row took the focus with it (to the page's top): it goes to "+ Add check" of these checks.
                    const group = e.currentTarget.closest<HTMLElement>(".checks");
                    update(i, { checks: t.checks.filter((_, k) => k !== ci) });
                    requestAnimationFrame(() => group?.querySelector<HTMLElement>(":scope > button")?.focus());
                  }}
                >
                  ×
                </button>
              </div>
            ))}
            <button type="button" className="btn small" onClick={() => update(i, { checks: [...t.checks, blankCheck()] })}>
              + Add check
            </button>
            {fieldError(i, "checks")}
          </div>

          <div className="grid4">
            <label className="field">
              <span id={labelId(i, "scope")}>Scope (globs the diff may touch)</span>
              <textarea
                name="scope"
                rows={2}
                className="mono"
                value={t.scope}
                placeholder="src/**"
                onChange={(e) => update(i, { scope: e.target.value })}
                {...fieldNamed(i, "scope")}
              />
              {fieldError(i, "scope")}
            </label>
            <label className="field">
              <span id={labelId(i, "protect")}>Protected globs (must not change)</span>
              <textarea
                name="protect"
                rows={2}
                className="mono"
                value={t.protect}
                placeholder="test/**"
                onChange={(e) => update(i, { protect: e.target.value })}
                {...fieldNamed(i, "protect")}
              />
              {fieldError(i, "protect")}
            </label>
            {numberField(i, "wallSec", "Wall-clock budget (s)")}
            {numberField(i, "tokens", "Token budget", { also: fieldError(i, "budget") })}
            {numberField(i, "fixRounds", "Fix rounds (0–10)", {
              title: "on honest-failure, the engine sends the failing checks' names and output back to the worker, at most this many times",
            })}
          </div>
          {many && (
            <div className="row-actions">
              <button
                type="button"
                className="btn ghost small"
                onClick={(e) => {
                  // The removed task took the focus with it: it goes to "+ Add another task (batch)".
                  const form = e.currentTarget.form;
                  setTasks((ts) => ts.filter((_, j) => j !== i));
                  requestAnimationFrame(() => form?.querySelector<HTMLElement>(".form-foot > button")?.focus());
                }}
              >
                Remove task {i + 1}
              </button>
            </div>
          )}
          {fieldError(i, "form")}
        </fieldset>
      ))}
      {errors
        .filter((e) => e.task === -1)
        .map((e) => (
          <div key={e.text} className="field-error" role="alert" tabIndex={-1}>
            {e.text}
          </div>
        ))}
      <div className="form-foot">
        <button
          type="button"
          className="btn"
          onClick={() =>
            setTasks((ts) => [
              ...ts,
              {
                ...blankTask(ts[ts.length - 1]?.directory ?? ""),
                checks: ts[ts.length - 1]?.checks.map((c) => ({ ...c })) ?? [blankCheck()],
                // Copied only where the task before had a check written (a blank row is just a row).
                checksCopied: !!ts[ts.length - 1]?.checks.some((c) => (c.kind === "run" ? c.run.trim() : c.file.trim())),
              },
            ])
          }
        >
          + Add another task (batch)
        </button>
        <label className="field inline-field">
          <span>Target</span>
          <select aria-label="Target" value={targetId} onChange={(e) => setTargetId(e.target.value)}>
            <option value="">active{active ? ` (${active.id})` : ""}</option>
            {targets.map((t) => (
              <option key={t.id} value={t.id}>
                {t.id} — {t.model}
              </option>
            ))}
          </select>
        </label>
        <label
          className="field inline-field"
          title="Best-of-N: this many workers per task; the held-back checks pick the winner and the rest are stopped once one is built"
        >
          <span>Attempts</span>
          <input
            aria-label="Attempts"
            type="number"
            min={1}
            max={16}
            value={attempts}
            onChange={(e) => setAttempts(Math.max(1, Math.min(16, Math.floor(Number(e.target.value) || 1))))}
            style={{ width: 64 }}
          />
        </label>
        <span className="grow" />
        <button type="submit" className="btn primary" disabled={busy}>
          {busy
            ? "Starting…"
            : many
              ? `Start batch of ${tasks.length}${attempts > 1 ? ` × ${attempts} attempts` : ""}`
              : attempts > 1
                ? `Start ${attempts} attempts`
                : "Start worker"}
        </button>
      </div>
    </form>
  );
}
