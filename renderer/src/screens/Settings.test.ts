// The settings screen's list of the engine's clients: times written as everywhere else in the app ("5s ago", "2m 05s
// ago", not "125 s ago"), and one request is not "1 requests".
import { describe, expect, it, vi } from "vitest";

vi.mock("../api", () => ({ errorText: (e: unknown) => String(e), api: {} }));

const { clientSeen } = await import("./Settings");

describe("a client of the engine", () => {
  it("says when it was last heard from as other screens do", () => {
    expect(clientSeen({ name: "gui", lastSeen: 10_000, requests: 52 }, 15_400)).toBe("gui — last request 5s ago (52 requests)");
    expect(clientSeen({ name: "claude-code", lastSeen: 0, requests: 1 }, 125_000)).toBe("claude-code — last request 2m 05s ago (1 request)");
  });

  it("a clock a little behind the engine's never says a negative time", () => {
    expect(clientSeen({ name: "gui", lastSeen: 2000, requests: 3 }, 1000)).toBe("gui — last request 0s ago (3 requests)");
  });
});
