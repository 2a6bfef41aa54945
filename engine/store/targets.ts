import path from "node:path";
import { Target } from "../../shared/target";
import { InputError } from "../../shared/errors";
import { redactUrlCredentials, urlHasCredentials } from "../../shared/remote-url";
import { readJson, writeJsonAtomic } from "./json-file";
import { stateDir } from "./paths";

interface TargetsFile {
  active: string | null;
  targets: Target[];
}

/** Persisted targets (`targets.json` in the state dir) and which one is active. */
export class TargetStore {
  constructor(private readonly file = path.join(stateDir(), "targets.json")) {}

  private load(): TargetsFile {
    const raw = readJson<TargetsFile>(this.file, { active: null, targets: [] });
    return { active: raw.active ?? null, targets: (raw.targets ?? []).map((t) => Target.parse(t)) };
  }

  list(): { active: string | null; targets: Target[] } {
    return this.load();
  }

  get(id: string): Target | undefined {
    return this.load().targets.find((t) => t.id === id);
  }

  active(): Target | undefined {
    const f = this.load();
    return f.targets.find((t) => t.id === f.active);
  }

  /** Saves (replacing a target with the same id); makes it active when `activate`. */
  save(target: Target, activate = false): Target {
    const parsed = Target.parse(target);
    // A user:secret@ in a URL would be stored in targets.json, written into opencode's config, recorded with each
    // worker and shown by every listing: refused, the key goes to the keychain instead.
    const withSecret = [parsed.endpoint, ...parsed.serving.endpoints.map((e) => e.url)].find(urlHasCredentials);
    if (withSecret)
      throw new InputError(
        `the endpoint ${redactUrlCredentials(withSecret)} holds credentials (user:password@), which are never stored in a URL: save it with the URL alone, then set the key with \`ocw target key ${parsed.id}\` (kept in the OS keychain) or name its variable (--api-key-env VAR)`,
      );
    // Evidence quotes what a server or a request said: any URL credentials in it are not kept.
    parsed.checks = parsed.checks.map((c) => ({ ...c, evidence: redactUrlCredentials(c.evidence) }));
    const f = this.load();
    f.targets = [...f.targets.filter((t) => t.id !== parsed.id), parsed];
    if (activate) f.active = parsed.id;
    writeJsonAtomic(this.file, f);
    return parsed;
  }

  /** Deletes a target (no longer active if it was). Throws when there is none by that id. */
  remove(id: string): { active: string | null } {
    const f = this.load();
    if (!f.targets.some((t) => t.id === id)) throw new Error(`no target "${id}". Run \`ocw targets\` to list them.`);
    f.targets = f.targets.filter((t) => t.id !== id);
    if (f.active === id) f.active = null;
    writeJsonAtomic(this.file, f);
    return { active: f.active };
  }

  use(id: string): Target {
    const f = this.load();
    const t = f.targets.find((x) => x.id === id);
    if (!t) throw new Error(`no target "${id}". Run \`ocw targets\` to list them.`);
    f.active = id;
    writeJsonAtomic(this.file, f);
    return t;
  }
}
