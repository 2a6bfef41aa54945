import { describe, expect, it } from "vitest";
import { outageNotes } from "./follow";

describe("outageNotes: the event stream's connection as a person hears of it", () => {
  it("says 'lost' once per outage (in words, not a class name) and 'back' once it is open again", () => {
    const heard: string[] = [];
    const note = outageNotes((state, detail) => heard.push(detail ? `${state}: ${detail}` : state));
    note({ state: "pending" });
    note({ state: "connecting", error: { message: "TypeError: fetch failed" } });
    note({ state: "connecting", error: { message: "TypeError: fetch failed" } });
    note({ state: "idle" });
    note({ state: "pending" });
    note({ state: "pending" });
    note({ state: "connecting", error: { message: "TRPCClientError: TypeError: connection refused" } });
    note({ state: "pending" });
    expect(heard).toEqual(["lost: fetch failed", "back", "lost: connection refused", "back"]);
  });

  it("a connecting state without an error (the first connection) is no outage; no listener, nothing said", () => {
    const heard: string[] = [];
    const note = outageNotes((state) => heard.push(state));
    note({ state: "connecting", error: null });
    note({ state: "pending" });
    expect(heard).toEqual([]);
    expect(() => outageNotes(undefined)({ state: "connecting", error: { message: "x" } })).not.toThrow();
  });
});
