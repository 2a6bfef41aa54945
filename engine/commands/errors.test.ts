// `fail`: the one line an `ocw` command prints when it fails, and its exit code.
import { afterEach, describe, expect, it, vi } from "vitest";
import { fail } from "./errors";

afterEach(() => vi.restoreAllMocks());

function failed(err: unknown): { line: string; code: number | undefined } {
  const lines: string[] = [];
  vi.spyOn(console, "error").mockImplementation((l: unknown) => void lines.push(String(l)));
  let code: number | undefined;
  vi.spyOn(process, "exit").mockImplementation(((c?: number) => {
    code = c;
    throw new Error("exit");
  }) as never);
  expect(() => fail(err)).toThrow("exit");
  return { line: lines.at(-1) ?? "", code };
}

describe("fail", () => {
  it("a request that got no answer says the engine did not answer and what to do, not a bare 'fetch failed'", () => {
    const { line, code } = failed(new TypeError("fetch failed"));
    expect(line).toBe("ocw: the engine did not answer (fetch failed): it may have stopped — start it with `ocw serve` (or reopen the app), then try again");
    expect(code).toBe(2);
  });

  it("the engine's own words are printed as they are, with the exit code of their error code", () => {
    const err = Object.assign(new Error('unknown worker "w1": no worker has that id'), { data: { ocwCode: "not-found" } });
    expect(failed(err)).toEqual({ line: 'ocw: unknown worker "w1": no worker has that id', code: 2 });
  });

  it("a runtime error of the command itself is said as a bug of ocw, exit 1; one from a request with no answer stays the engine's", () => {
    const { line, code } = failed(new TypeError("Cannot read properties of undefined (reading 'state')"));
    expect(line).toBe(
      "ocw: an internal error (TypeError: Cannot read properties of undefined (reading 'state')): a bug in ocw, not a fault of the command; run it again with OCW_DEBUG=1 for the stack, and please report it",
    );
    expect(code).toBe(1);
    expect(failed(new TypeError("fetch failed")).line).toMatch(/^ocw: the engine did not answer/);
  });
});
