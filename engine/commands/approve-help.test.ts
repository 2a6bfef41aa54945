// `ocw run|continue|resume --help`: --approve says what each mode does, with its default once (it read
// "ask (default: ask on the terminal) | once | always | reject (default: "ask")": two defaults, and no word on "once").
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { registerRunCommand } from "./run";

describe("--approve's help", () => {
  it("names each mode with what it does, and one default", () => {
    const program = new Command("ocw");
    registerRunCommand(program);
    for (const name of ["run", "continue", "resume"]) {
      const help = program.commands
        .find((c) => c.name() === name)!
        .helpInformation()
        .replace(/\s+/g, " ");
      expect(help, name).toContain("ask = on the terminal, one at a time (y once, a always, n no)");
      expect(help, name).toContain("once = allow each, once");
      expect(help, name).toContain("reject = refuse each");
      const approve = help.slice(help.indexOf("--approve"), help.indexOf("--timeout"));
      expect(approve.match(/default:/g), name).toEqual(["default:"]);
    }
  });
});
