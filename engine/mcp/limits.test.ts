import { describe, expect, it } from "vitest";
import { dropClientSecrets, terminalHint } from "./command";
import { toolTimeoutFromEnv, waitCapSec } from "./server";

describe("wait under the client's tool timeout", () => {
  it("reads MCP_TOOL_TIMEOUT (ms) and keeps a margin below it", () => {
    expect(toolTimeoutFromEnv({})).toBeNull();
    expect(toolTimeoutFromEnv({ MCP_TOOL_TIMEOUT: "abc" })).toBeNull();
    expect(toolTimeoutFromEnv({ MCP_TOOL_TIMEOUT: "30000" })).toBe(30_000);
    expect(waitCapSec(null)).toBe(100);
    expect(waitCapSec(600_000)).toBe(100);
    expect(waitCapSec(60_000)).toBe(55);
    expect(waitCapSec(8_000)).toBe(6);
    expect(waitCapSec(1_000)).toBe(1);
  });
});

describe("the bridge keeps Claude Code's variables from the engine", () => {
  it("drops ANTHROPIC_*, CLAUDE_*, CLAUDECODE and MCP_TOOL_TIMEOUT, and nothing else", () => {
    const env: NodeJS.ProcessEnv = {
      ANTHROPIC_API_KEY: "k",
      ANTHROPIC_BASE_URL: "u",
      CLAUDE_CODE_OAUTH_TOKEN: "t",
      CLAUDECODE: "1",
      CLAUDE_PROJECT_DIR: "/p",
      MCP_TOOL_TIMEOUT: "9",
      PATH: "/bin",
      OCW_STATE_DIR: "/s",
      OPENROUTER_API_KEY: "o",
    };
    expect(dropClientSecrets(env)).toEqual([
      "ANTHROPIC_API_KEY",
      "ANTHROPIC_BASE_URL",
      "CLAUDECODE",
      "CLAUDE_CODE_OAUTH_TOKEN",
      "CLAUDE_PROJECT_DIR",
      "MCP_TOOL_TIMEOUT",
    ]);
    expect(env).toEqual({ PATH: "/bin", OCW_STATE_DIR: "/s", OPENROUTER_API_KEY: "o" });
  });
});

describe("ocw mcp started by hand in a terminal", () => {
  it("says what it is and how Claude Code runs it (it waited in silence and seemed to hang)", () => {
    const hint = terminalHint("node /opt/ocw/dist/ocw.mjs");
    expect(hint).toContain("this is the MCP server Claude Code starts; it reads JSON-RPC on stdin, not commands");
    expect(hint).toContain("`claude mcp add ocw -- node /opt/ocw/dist/ocw.mjs mcp`");
    expect(hint).toContain("`node /opt/ocw/dist/ocw.mjs gui`");
  });
});
