// The bench's comparison of the two opencode serves' environments: what differs by design, and what is a fairness problem.
import { describe, expect, it } from "vitest";
import { compareEnv, engineOnlyPlugin } from "./procs";

const config = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    $schema: "https://opencode.ai/config.json",
    provider: { ocw: { npm: "@ai-sdk/openai-compatible" } },
    agent: { w: { steps: 40 } },
    ...extra,
  });
const PLUGIN = "file:///state/sandbox/ocw-workspace.js";

describe("the engine's serve against the bare one", () => {
  it("the engine's one plugin (its config entry, OPENCODE_PURE unset) differs by design; nothing else is a fairness problem", () => {
    const r = compareEnv(
      { OPENCODE_CONFIG_CONTENT: config({ plugin: [PLUGIN] }), HOME: "/a", Malloc: "1" },
      { OPENCODE_CONFIG_CONTENT: config(), OPENCODE_PURE: "1", HOME: "/b", Malloc: "1" },
    );
    expect(r.unexpected).toEqual({});
    expect(r.identical).toBe(true);
    expect(r.perInstance.OPENCODE_CONFIG_CONTENT).toMatch(/^the same config but for the engine's one plugin \(ocw-workspace\.js\)/);
    expect(r.perInstance.OPENCODE_PURE).toMatch(/loads that one plugin/);
  });

  it("any other difference in the config, a second plugin, or OPENCODE_PURE without a plugin stays a fairness problem", () => {
    const other = compareEnv(
      { OPENCODE_CONFIG_CONTENT: config({ plugin: [PLUGIN], agent: { w: { steps: 80 } } }) },
      { OPENCODE_CONFIG_CONTENT: config(), OPENCODE_PURE: "1" },
    );
    expect(Object.keys(other.unexpected)).toEqual(["OPENCODE_CONFIG_CONTENT", "OPENCODE_PURE"]);
    expect(engineOnlyPlugin(config({ plugin: [PLUGIN, "file:///x.js"] }), config())).toBeNull();
    expect(engineOnlyPlugin(config({ plugin: [PLUGIN] }), config({ plugin: [] }))).toBeNull();
    expect(engineOnlyPlugin("{", config())).toBeNull();
    const pure = compareEnv({ OPENCODE_CONFIG_CONTENT: config() }, { OPENCODE_CONFIG_CONTENT: config(), OPENCODE_PURE: "1" });
    expect(pure.unexpected).toEqual({ OPENCODE_PURE: { engine: null, bare: "1" } });
  });

  it("key order in the config is not a difference", () => {
    const a = JSON.stringify({ provider: { ocw: { npm: "x", name: "y" } }, $schema: "s", plugin: [PLUGIN] });
    const b = JSON.stringify({ $schema: "s", provider: { ocw: { name: "y", npm: "x" } } });
    expect(engineOnlyPlugin(a, b)).toBe("ocw-workspace.js");
  });

  it("the engine's egress proxy differs by design; a credential in any value shown is never printed", () => {
    const proxy = "http://s1:SECRETKEY@127.0.0.1:40997";
    const r = compareEnv({ HTTP_PROXY: proxy, https_proxy: proxy, NO_PROXY: "127.0.0.1:9", ODD: proxy }, {});
    expect(Object.keys(r.perInstance).sort()).toEqual(["HTTP_PROXY", "NO_PROXY", "https_proxy"]);
    expect(r.unexpected).toEqual({ ODD: { engine: "http://…@127.0.0.1:40997", bare: null } });
    expect(JSON.stringify(r)).not.toContain("SECRETKEY");
  });
});
