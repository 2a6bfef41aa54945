import { createHash } from "node:crypto";
import { ADHOC_PREFIX, type Target } from "../../shared/target";
import { type ClientKind, connect, type EngineClient } from "../api/client";
import { ensureEngine, stateDir } from "../api/launcher";
import { InputError } from "../../shared/errors";
import { quoteUntrustedList } from "../../shared/untrusted";
import { redactUrlCredentials } from "../../shared/remote-url";
import { CliError } from "./errors";

/**
 * A model endpoint given on the command line (`--endpoint`, `--provider`, `--capture`), refused before it is used when
 * it cannot work, and said without its secret: a user:password@ in it (fetch refuses such a URL, and every message
 * quoted it whole), a query or fragment (the API paths were appended after it: `…?key=s/v1`), a scheme other than http(s).
 */
export function checkEndpointUrl(flag: string, endpoint: string): URL {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new InputError(`${flag} ${redactUrlCredentials(endpoint)} is not a URL: give e.g. http://127.0.0.1:8080/v1`);
  }
  const shown = `${url.protocol}//${url.username || url.password ? "***@" : ""}${url.host}${url.pathname}`;
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new InputError(`${flag} ${shown} is not an http(s) URL: give e.g. http://127.0.0.1:8080/v1`);
  if (url.username || url.password)
    throw new InputError(
      `${flag} ${shown} holds credentials (user:password@), which are never sent as a key: put the key in a variable and pass --api-key-env VAR, with the URL alone`,
    );
  if (url.search || url.hash)
    throw new InputError(`${flag} ${shown} has a query or fragment ("?…" or "#…"): give the base URL alone (a key goes in a variable: --api-key-env VAR)`);
  return url;
}

/** The target behind `--endpoint URL --model ID [--api-key-env VAR]`: saved (not made active) so workers can name it. */
export function adhocTarget(endpoint: string, model: string, keyRef?: string): Target {
  const url = checkEndpointUrl("--endpoint", endpoint);
  const base = url.href.replace(/\/+$/, "");
  const id =
    ADHOC_PREFIX +
    createHash("sha256")
      .update(`${base} ${model} ${keyRef ?? ""}`)
      .digest("hex")
      .slice(0, 10);
  return {
    id,
    model,
    // A server's root (llama-server, vLLM: http://host:8080) gets /v1; a base with a path is used as given, as
    // `ocw setup --provider` uses it (Gemini's …/v1beta/openai, OpenRouter's …/api/v1): it became …/v1beta/openai/v1.
    endpoint: /\/v1$/.test(base) || url.pathname.replace(/\/+$/, "") !== "" ? base : `${base}/v1`,
    keyRef: keyRef ?? null,
    serving: { engine: "api", endpoints: [], slots: 4 },
    checks: [],
  };
}

export interface TargetFlags {
  endpoint?: string;
  model?: string;
  apiKeyEnv?: string;
}

/**
 * Connects to the user's engine (starting it if absent). With --endpoint/--model, the engine first checks the endpoint
 * answers (targets.preflight, with the key the engine holds), then saves it as a target: no target is created for an
 * endpoint that is down.
 */
export async function connectWithTarget(
  o: TargetFlags,
  clientName: ClientKind,
  /** Checks that need the engine and must pass before anything is saved (e.g. the task's directories). */
  check?: (client: EngineClient) => Promise<void>,
): Promise<{ client: EngineClient; targetId?: string; warnings: string[] }> {
  if (!!o.endpoint !== !!o.model) throw new CliError("--endpoint and --model go together: give both, or neither to use the active target");
  let target: Target | undefined;
  const warnings: string[] = [];
  // A key pasted where its variable's name belongs is not echoed back (it was: "--api-key-env sk-… is not set").
  if (o.apiKeyEnv !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(o.apiKeyEnv))
    throw new CliError(
      `--api-key-env takes the NAME of an environment variable (got "${o.apiKeyEnv.slice(0, 4)}…"), not the key itself: export the key (e.g. OPENAI_API_KEY=…) and pass --api-key-env OPENAI_API_KEY`,
    );
  if (o.endpoint && o.model) {
    if (o.apiKeyEnv && !process.env[o.apiKeyEnv]) throw new CliError(`--api-key-env ${o.apiKeyEnv} is not set in this environment: export it first`);
    target = adhocTarget(o.endpoint, o.model, o.apiKeyEnv);
  }
  const lock = await ensureEngine(stateDir(), { env: o.apiKeyEnv ? { [o.apiKeyEnv]: process.env[o.apiKeyEnv] } : {} });
  const client = connect(lock, clientName);
  await check?.(client);
  if (target) {
    // the key exported here: an engine started earlier (the desktop app) may not hold the variable
    const key = o.apiKeyEnv ? process.env[o.apiKeyEnv] : undefined;
    const pre = await client.targets.preflight.mutate({ target, ...(key ? { key } : {}) }).catch((err) => {
      throw new CliError((err as Error).message);
    });
    // Said, not refused: llama-server and proxies serve names they do not list.
    if (pre.unlisted)
      warnings.push(
        `the model endpoint does not list the model ${JSON.stringify(o.model)} ${quoteUntrustedList(pre.unlisted, "the models it lists")}: the worker's first model call may fail with HTTP 404 (vLLM, Ollama and the providers serve only the names they list; a proxy may route others): if it does, run again with one of these as --model`,
      );
    await client.targets.save.mutate({ target });
    // it does not: the engine keeps this key for the target (the OS keychain, else a 0600 file; never targets.json),
    // so its workers can start without restarting the engine
    if (key && !pre.keyHeld) {
      const r = await client.targets.setKey.mutate({ id: target.id, key });
      process.stderr.write(
        `ocw: the engine's environment does not hold ${o.apiKeyEnv}: it keeps the key for ${target.id} (${r.stored === "keychain" ? "the OS keychain" : "a 0600 file of its state dir"})\n`,
      );
    }
  }
  return { client, targetId: target?.id, warnings };
}
