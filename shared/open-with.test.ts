import { describe, expect, it } from "vitest";
import { editorLaunches, launchesFor, terminalLaunches, words } from "./open-with";

const dir = "/s/workspaces/repo-1/w_1";

describe("open with: editor and terminal commands (argument lists, never a shell line)", () => {
  it("splits $VISUAL / $EDITOR into words, quotes honoured", () => {
    expect(words(`"/opt/My Editor/bin/ed" --new-window`)).toEqual(["/opt/My Editor/bin/ed", "--new-window"]);
    expect(words("  ")).toEqual([]);
  });
  it("the editor: $VISUAL first, then $EDITOR, then code; the workspace is the last argument", () => {
    expect(editorLaunches(dir, { VISUAL: "subl -n", EDITOR: "vim" }, "linux")).toEqual([{ command: "subl", args: ["-n", dir], cwd: dir }]);
    expect(editorLaunches(dir, { EDITOR: "code --wait" }, "linux")).toEqual([{ command: "code", args: ["--wait", dir], cwd: dir }]);
    expect(editorLaunches(dir, {}, "linux")).toEqual([{ command: "code", args: [dir], cwd: dir }]);
    expect(editorLaunches(dir, {}, "win32")).toEqual([{ command: "code.cmd", args: [dir], cwd: dir }]);
    // a semicolon is an argument, not a second command
    expect(editorLaunches(dir, { VISUAL: "ed;rm -rf ~" }, "linux")).toEqual([{ command: "ed;rm", args: ["-rf", "~", dir], cwd: dir }]);
  });
  it("an editor that draws in a terminal opens inside one", () => {
    const l = editorLaunches(dir, { EDITOR: "nvim" }, "linux");
    expect(l.find((x) => x.command === "gnome-terminal")).toEqual({
      command: "gnome-terminal",
      args: [`--working-directory=${dir}`, "--", "nvim", dir],
      cwd: dir,
    });
    expect(l.find((x) => x.command === "xterm")).toEqual({ command: "xterm", args: ["-e", "nvim", dir], cwd: dir });
    expect(editorLaunches(dir, { EDITOR: "emacs -nw" }, "linux")[0]!.command).toBe("x-terminal-emulator");
  });
  it("the terminal per platform: macOS Terminal, Windows Terminal then cmd, Linux $TERMINAL then the common ones", () => {
    expect(terminalLaunches(dir, {}, "darwin")).toEqual([{ command: "open", args: ["-a", "Terminal", dir], cwd: dir }]);
    expect(terminalLaunches(dir, {}, "win32").map((l) => l.command)).toEqual(["wt.exe", "cmd.exe"]);
    const linux = terminalLaunches(dir, { TERMINAL: "alacritty" }, "linux");
    expect(linux[0]).toEqual({ command: "alacritty", args: [], cwd: dir });
    expect(linux.map((l) => l.command)).toContain("gnome-terminal");
    expect(linux.every((l) => l.cwd === dir)).toBe(true);
    expect(launchesFor("terminal", dir, {}, "linux")[0]!.command).toBe("x-terminal-emulator");
  });
});
