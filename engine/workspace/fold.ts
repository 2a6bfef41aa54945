// Path names as a case-insensitive, normalising file system sees them (macOS, Windows): `.GitAttributes`,
// `.GITHUB/Workflows/x.yml` and a decomposed (NFD) name open the same file as their plain forms there, so every pattern
// that decides what a path *is* (a flagged file, a test runner's configuration) is matched against the folded name.
// Pure.

/**
 * A path folded for matching: Unicode NFC, full case folding (upper then lower: `ſ` → `s`, the Kelvin sign → `k`), and
 * the trailing dots and spaces Windows drops from each name (`.npmrc.` opens `.npmrc` there).
 */
export function foldPath(p: string): string {
  return p
    .normalize("NFC")
    .toUpperCase()
    .toLowerCase()
    .normalize("NFC")
    .split("/")
    .map((part) => (part === "." || part === ".." ? part : part.replace(/[. ]+$/, "") || part))
    .join("/");
}
