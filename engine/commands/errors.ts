/** A user error: printed as one line, exit code 2. */
export class CliError extends Error {}

export function fail(err: unknown): never {
  const e = err as Error;
  const msg = (e?.message ?? String(err)).split("\n")[0];
  // Anything not anticipated is still one line, but keeps its stack for OCW_DEBUG=1.
  if (process.env.OCW_DEBUG) console.error(e?.stack);
  console.error(`ocw: ${msg}`);
  process.exit(2);
}
