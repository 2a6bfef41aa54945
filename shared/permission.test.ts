import { describe, expect, it } from "vitest";
import { ASK_ID_MAX, Decision } from "./permission";

describe("Decision", () => {
  it("takes an ask id of opencode's length", () => {
    expect(Decision.safeParse({ askId: "per_0123456789abcdefABCDEF01", decision: "once" }).success).toBe(true);
  });

  it("refuses an askId longer than any ask's, without echoing it", () => {
    const askId = `per_${"A".repeat(ASK_ID_MAX)}`;
    const r = Decision.safeParse({ askId, decision: "once" });
    expect(r.success).toBe(false);
    const message = r.error!.issues[0]!.message;
    expect(message).toMatch(/askId is longer than any ask's id/);
    expect(message).not.toContain("AAAA");
  });
});
