// Which release an engine runs, and whether a client should replace it. Engines outlive their clients (a plugin update
// brings a new bridge while the engine the old one started keeps running): a client that finds an engine older than
// itself replaces it once no worker is at work (engine/api/launcher.ts). Pure: a function of the two builds.
import type { EngineBuild } from "./api";

/**
 * Compares two release versions ("0.1.22" < "0.1.23" < "0.2.0"), numerically part by part; a missing part counts as 0
 * and anything after the numbers ("-rc1") is ignored. Null when either is not a version at all.
 */
export function compareVersions(a: string, b: string): -1 | 0 | 1 | null {
  const parts = (v: string) => /^v?(\d+(?:\.\d+)*)/.exec(v.trim())?.[1]?.split(".").map(Number) ?? null;
  const x = parts(a);
  const y = parts(b);
  if (!x || !y) return null;
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}

/**
 * Whether the running engine (its /health `build`) is older than a client of release `client`. An engine without a
 * build predates the handshake: older than any client that knows its own version. Only a lower version is older: an
 * equal version of another bundle (a rebuilt checkout) and a newer engine are used as they are, so two installs of
 * different versions never replace each other's engine back and forth. A client or engine whose version is unknown
 * replaces nothing.
 */
export function engineIsOlder(engine: EngineBuild | undefined, client: string | null): boolean {
  if (!client || compareVersions(client, client) === null) return false;
  if (!engine) return true;
  if (!engine.version) return false;
  return compareVersions(engine.version, client) === -1;
}

/** An engine's release in words: "0.1.22", or what an engine from before the handshake is. */
export function engineVersionText(engine: EngineBuild | undefined): string {
  return engine?.version ?? (engine ? "of an unknown version" : "0.1.22 or older");
}
