import { describe, expect, it } from "vitest";
import { inOrder } from "./reads";

/** A promise resolved or rejected from outside. */
function later<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const p = new Promise<T>((a, b) => ((resolve = a), (reject = b)));
  return { p, resolve, reject };
}

describe("inOrder", () => {
  it("an older read answered after a newer one is not applied", async () => {
    const read = inOrder();
    const shown: string[] = [];
    const first = later<string>();
    const second = later<string>();
    const a = read(first.p, (v) => shown.push(v));
    const b = read(second.p, (v) => shown.push(v));
    second.resolve("new");
    await b;
    first.resolve("old");
    await a;
    expect(shown).toEqual(["new"]);
  });

  it("answers in order are all applied; a newer failure stands over an older answer", async () => {
    const read = inOrder();
    const shown: string[] = [];
    await read(Promise.resolve("one"), (v) => shown.push(v));
    await read(Promise.resolve("two"), (v) => shown.push(v));
    const first = later<string>();
    const second = later<string>();
    const a = read(
      first.p,
      (v) => shown.push(v),
      () => shown.push("error 1"),
    );
    const b = read(
      second.p,
      (v) => shown.push(v),
      () => shown.push("error 2"),
    );
    second.reject(new Error("gone"));
    await b;
    first.resolve("three");
    await a;
    expect(shown).toEqual(["one", "two", "error 2"]);
  });
});
