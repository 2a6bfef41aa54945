import os from "node:os";
import { describe, expect, it } from "vitest";
import { writesOutside } from "./worktree-guard";

const wt = "/state/worktrees/repo/w1";

describe("writesOutside", () => {
  it.each([
    ["echo x > /tmp/escape", ["/tmp/escape"]],
    ["echo x >> /etc/profile", ["/etc/profile"]],
    ["echo x>/tmp/a", ["/tmp/a"]],
    ["make 2> ../build.log", ["../build.log"]],
    ["run &> '/var/tmp/out file'", ["/var/tmp/out file"]],
    ["echo hi | tee -a notes.txt ~/.bashrc", ["~/.bashrc"]],
    ["echo x > $HOME/.profile", ["$HOME/.profile"]],
    ["dd if=/dev/zero of=/tmp/disk bs=1M count=1", ["/tmp/disk"]],
    ["cd src && echo x > ../../escape", ["../../escape"]],
  ])("%s → %j", (command, expected) => {
    expect(writesOutside(command, wt)).toEqual(expected);
  });

  it.each([
    "echo x > out.txt",
    "npm test 2>&1 | tail -5",
    "ls missing 2>/dev/null || true",
    "echo err >&2",
    "cat /etc/os-release",
    "grep -r 'a > /b' src",
    "echo x > src/../in.txt",
    `echo x > ${wt}/abs.txt`,
    'echo x > "$OUT"',
    "cat > index.html <<'EOF'\n<p>a > /etc/passwd</p>\nEOF\necho done",
    "tee out.log < input",
    "true && false; echo > ok",
  ])("%s → nothing outside", (command) => {
    expect(writesOutside(command, wt)).toEqual([]);
  });

  it("resolves relative targets against the command's workdir", () => {
    expect(writesOutside("echo x > ../x", wt, `${wt}/sub`)).toEqual([]);
    expect(writesOutside("echo x > ../x", wt, wt)).toEqual(["../x"]);
  });

  it("finds a write after a here-document", () => {
    expect(writesOutside("cat <<EOF > inside.txt\n> /nope\nEOF\necho y > /tmp/after", wt)).toEqual(["/tmp/after"]);
  });

  it("expands ~ to this user's home", () => {
    expect(writesOutside("echo x > ~/x", os.homedir())).toEqual([]);
  });
});
