import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { WorkerState } from "./worker";
import { nextState, WORKER_TRANSITIONS, WorkerTransition } from "./worker-machine";

const states = WorkerState.options;
const transitions = WorkerTransition.options;

describe("the worker state machine", () => {
  it("has a row for every state, and every target is a state", () => {
    expect(Object.keys(WORKER_TRANSITIONS).sort()).toEqual([...states].sort());
    for (const row of Object.values(WORKER_TRANSITIONS)) for (const to of Object.values(row)) expect(states).toContain(to);
  });

  it.each(states.flatMap((s) => transitions.map((t) => [s, t] as const)))("%s × %s is legal only as the table says", (from, t) => {
    const to = nextState(from, t);
    expect(to).toBe(WORKER_TRANSITIONS[from][t] ?? null);
  });

  it("built and honest-failure leave only by continue (a new round), to the queue; stopped, interrupted and error only by resume", () => {
    for (const t of transitions) {
      expect(nextState("built", t)).toBe(t === "continue" ? "queued" : null);
      expect(nextState("honest-failure", t)).toBe(t === "continue" ? "queued" : null);
      for (const s of ["stopped", "interrupted", "error"] as const) expect(nextState(s, t)).toBe(t === "resume" ? "queued" : null);
    }
  });

  it("continue is legal only from a verdict, fix only from grading: a running, stopped or errored worker takes no follow-up", () => {
    for (const s of states) {
      expect(nextState(s, "continue")).toBe(s === "built" || s === "honest-failure" ? "queued" : null);
      expect(nextState(s, "fix")).toBe(s === "grading" ? "queued" : null);
    }
  });

  it("the stop bug cannot happen: interrupted → settled → grading → built is not a path", () => {
    expect(nextState("interrupted", "settle")).toBeNull();
    expect(nextState("stopped", "settle")).toBeNull();
    expect(nextState("interrupted", "grade")).toBeNull();
    expect(nextState("stopped", "pass")).toBeNull();
  });

  it("any sequence of events: a verdict (built/honest-failure) is reached only through settle then grade (of its own round), after the last stop or interrupt a resume came first", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...transitions), { maxLength: 60 }), (events) => {
        let s: WorkerState = "queued";
        let settledSinceHalt = false;
        let haltedWithoutResume = false;
        for (const t of events) {
          const to = nextState(s, t);
          if (!to) continue; // illegal: not applied
          if (t === "stop" || t === "interrupt" || t === "fail-run") (haltedWithoutResume = true), (settledSinceHalt = false);
          if (t === "resume") haltedWithoutResume = false;
          // A new round (a follow-up, a fix round) is graded only after its own settle.
          if (t === "continue" || t === "fix") settledSinceHalt = false;
          if (t === "settle") settledSinceHalt = true;
          if (to === "built" || to === "honest-failure") {
            expect(haltedWithoutResume).toBe(false);
            expect(settledSinceHalt).toBe(true);
          }
          s = to;
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe("asks on a terminal", async () => {
  const { terminalSafe } = await import("./permission");
  it("control characters are shown, never interpreted", () => {
    expect(terminalSafe("rm -rf x\u001b[2K\u001b[1Aecho harmless\r")).toBe("rm -rf x\\x1b[2K\\x1b[1Aecho harmless\\x0d");
    expect(terminalSafe("a\nb\tc\u0007")).toBe("a\\nb\\tc\\x07");
    expect(terminalSafe("plain ünïcode ✓")).toBe("plain ünïcode ✓");
  });
});

describe("the error model", async () => {
  const { ERROR_MAP, ErrorCode, InputError, OcwError, codeOf } = await import("./errors");
  it("maps every code once to an HTTP status, a tRPC code and an exit code; codes travel with the error", () => {
    for (const c of ErrorCode.options) expect(ERROR_MAP[c]).toBeDefined();
    expect(new Set(ErrorCode.options.map((c) => ERROR_MAP[c].http)).size).toBe(ErrorCode.options.length);
    expect(codeOf(new InputError("x"))).toBe("bad-input");
    expect(codeOf(new InputError("gone", "not-found"))).toBe("not-found");
    expect(new InputError("x")).toBeInstanceOf(OcwError);
    expect(codeOf(new Error("plain"))).toBe("internal");
  });
});
