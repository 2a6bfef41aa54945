// The `pure` tier's guard (vitest.config.mts): a test file there that starts a process fails with a line that says
// where the file belongs, instead of the tier slowly growing past its 10 s (three gaming-attack files, each running
// git, python3 and bash, had made it 32 s). Node's child_process is replaced before any test module is loaded; ESM
// imports of it see the replacement through syncBuiltinESMExports.
import { createRequire, syncBuiltinESMExports } from "node:module";

const cp = createRequire(import.meta.url)("node:child_process") as Record<string, unknown>;
for (const name of ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"]) {
  cp[name] = () => {
    throw new Error(
      `the pure tier starts no process (child_process.${name} was called): list this test file in vitest.config.mts's NEEDS_TOOLS or STARTS_PROCESSES`,
    );
  };
}
syncBuiltinESMExports();
