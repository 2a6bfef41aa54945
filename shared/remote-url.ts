// Remote URLs as they are shown (output, logs, errors) and as a pull request's repository. Pure.

/** Text with the credentials of every URL in it removed: `https://user:token@host/…` → `https://***@host/…`. */
export function redactUrlCredentials(text: string): string {
  return String(text ?? "").replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^/?#\s@]*@/gi, "$1***@");
}

/**
 * The repository a remote URL names on a hosting service, as `gh --repo` takes it (`HOST/OWNER/REPO`), or null when it
 * is not one (a local path, a `file://` URL, a path of other depth). https, ssh and scp-like (`git@host:owner/repo`) forms.
 */
export function hostedRepo(url: string): string | null {
  const u = String(url ?? "").trim();
  let host: string;
  let repoPath: string;
  const full = /^(?:https?|ssh|git):\/\/(?:[^/?#@]*@)?([^/?#:]+)(?::\d+)?\/([^?#]+)$/i.exec(u);
  const scp = /^(?:[^/@:\s]+@)?([^/:\s]+):(?!\/)([^?#\s]+)$/.exec(u);
  if (full) [host, repoPath] = [full[1]!, full[2]!];
  else if (scp) [host, repoPath] = [scp[1]!, scp[2]!];
  else return null;
  const parts = repoPath
    .replace(/\/+$/, "")
    .replace(/\.git$/, "")
    .split("/");
  if (parts.length !== 2 || parts.some((p) => !/^[\w.-]+$/.test(p) || p === "." || p === "..")) return null;
  return `${host.toLowerCase()}/${parts[0]}/${parts[1]}`;
}

/**
 * Whether a URL carries credentials (`scheme://user:secret@host`); false for text that is not a URL. Read as a URL
 * parser reads the authority (tabs and line breaks dropped, `\\` a path separator as in http(s)), without the URL
 * global: shared/ runs where only the language is (tsconfig.shared.json).
 */
export function urlHasCredentials(url: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\/[^/?#\\@]*@/i.test(
    String(url ?? "")
      .trim()
      .replace(/[\t\n\r]/g, ""),
  );
}

/** A target as it is shown (a listing, the GUI, MCP): its endpoint URLs and its checks' evidence with any URL credentials replaced by `***`. */
export function targetShown<T extends { endpoint: string; serving: { endpoints: { url: string }[] }; checks?: { evidence: string }[] }>(t: T): T {
  return {
    ...t,
    endpoint: redactUrlCredentials(t.endpoint),
    ...(t.checks ? { checks: t.checks.map((c) => ({ ...c, evidence: redactUrlCredentials(c.evidence) })) } : {}),
    serving: { ...t.serving, endpoints: t.serving.endpoints.map((e) => ({ ...e, url: redactUrlCredentials(e.url) })) },
  };
}
