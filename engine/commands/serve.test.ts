// `ocw serve --port N`: a port another program holds is said in words (it was Node's EADDRINUSE stack trace), and a
// --port that differs from the running engine's is said to be ignored (it printed the other URL without a word).
import { describe, expect, it } from "vitest";
import { listenProblem, portIgnored, stoppedBy } from "./serve";

const errno = (code: string) => Object.assign(new Error(`listen ${code}: 127.0.0.1:8080`), { code });

describe("ocw serve --port", () => {
  it("a taken port or one this user may not open: what is wrong and what to do, without Node's words", () => {
    expect(listenProblem(errno("EADDRINUSE"), 8080)).toBe(
      "port 8080 on 127.0.0.1 is already in use by another program: pick another --port, or leave --port out for a free one",
    );
    expect(listenProblem(errno("EACCES"), 1)).toBe(
      "port 1 on 127.0.0.1 may not be opened by this user (ports below 1024 need root privileges): pick one from 1024 to 65535, or leave --port out for a free one",
    );
    expect(listenProblem(new Error("something else"), 8080)).toBeNull();
    expect(listenProblem(undefined, 8080)).toBeNull();
  });

  it("attaching to an engine on another port says --port was ignored and how to move it; the same port or none says nothing", () => {
    expect(portIgnored(9000, 41234)).toBe(
      "--port 9000 is ignored: the engine already runs on port 41234 (its URL above); to move it, `ocw stop`, then `ocw serve --port 9000`",
    );
    expect(portIgnored(41234, 41234)).toBeNull();
    expect(portIgnored(undefined, 41234)).toBeNull();
  });

  it("a foreground engine stopped by another client says who asked, in words", () => {
    expect(stoppedBy({ kind: "cli", name: "ocw stop" })).toBe("engine stopped (ocw stop from another client)");
    expect(stoppedBy({ kind: "mcp", name: "claude-code" })).toBe("engine stopped (a stop request from an MCP client)");
    expect(stoppedBy({ kind: "person", name: "gui" })).toBe("engine stopped (a stop request from another client)");
  });
});
