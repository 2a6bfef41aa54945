import { z } from "zod";
import { SetupProviderInput } from "./setup";

/** A model server the engine started (serving.json), as the wizard shows it: never its key nor its environment. */
export const ServerView = z.object({
  /** The target it serves (`ID@N` for replica N of a pool; then replicaOf is the target). */
  targetId: z.string(),
  replicaOf: z.string().nullable(),
  /** 0 once stopped (the record stays so it can be restarted). */
  pid: z.number().int(),
  port: z.number().int(),
  running: z.boolean(),
  supervised: z.boolean(),
  restarts: z.number().int(),
  /** Kept running when the engine stops (`ocw stop`); by default a server stops with the engine. */
  keep: z.boolean(),
  startedAt: z.string(),
  logFile: z.string(),
  bin: z.string(),
  /** The runtime it runs (llama.cpp, vllm, sglang); the supervisor's last crash and when it gave up (null: none). */
  runtime: z.string().optional(),
  lastCrash: z.string().nullable().optional(),
  gaveUp: z.string().nullable().optional(),
});
export type ServerView = z.infer<typeof ServerView>;

/** An OpenAI-compatible API provider the wizard offers: its base URL and the environment variable its key is usually in. */
interface ProviderPreset {
  id: string;
  name: string;
  url: string;
  keyEnv: string;
  /** Where a person gets a key. */
  keysPage: string;
}

export const PROVIDER_PRESETS: readonly ProviderPreset[] = [
  { id: "openrouter", name: "OpenRouter", url: "https://openrouter.ai/api/v1", keyEnv: "OPENROUTER_API_KEY", keysPage: "https://openrouter.ai/keys" },
  { id: "deepseek", name: "DeepSeek", url: "https://api.deepseek.com/v1", keyEnv: "DEEPSEEK_API_KEY", keysPage: "https://platform.deepseek.com/api_keys" },
  {
    id: "together",
    name: "Together AI",
    url: "https://api.together.xyz/v1",
    keyEnv: "TOGETHER_API_KEY",
    keysPage: "https://api.together.ai/settings/api-keys",
  },
  {
    id: "fireworks",
    name: "Fireworks AI",
    url: "https://api.fireworks.ai/inference/v1",
    keyEnv: "FIREWORKS_API_KEY",
    keysPage: "https://fireworks.ai/account/api-keys",
  },
  { id: "groq", name: "Groq", url: "https://api.groq.com/openai/v1", keyEnv: "GROQ_API_KEY", keysPage: "https://console.groq.com/keys" },
];

/** setup.models: the model ids an OpenAI-compatible endpoint lists at GET {url}/models, with the key the variable holds. */
export const ProviderModelsInput = z.object({
  url: z.string().trim().url("the URL must be an http(s) URL such as https://api.example.com/v1"),
  apiKeyEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name (letters, digits, _)")
    .max(200, "an environment variable name is at most 200 characters")
    .optional(),
  /** A key typed in the wizard, used for this one request only (never stored by this call). */
  key: z.string().trim().min(1).max(4096).optional(),
});
export type ProviderModelsInput = z.input<typeof ProviderModelsInput>;

/**
 * setup.providerKey: an API provider verified with a key typed in the wizard (not an environment variable). The engine
 * stores it (0600 file in its state dir, or the OS keychain) and the target refers to it; it never comes back.
 */
export const SetupProviderKeyInput = SetupProviderInput.omit({ apiKeyEnv: true }).extend({
  key: z
    .string()
    .trim()
    .min(1, "type the provider's API key")
    .max(4096)
    .refine((k) => !/[\r\n]/.test(k), "the key must be one line"),
});
export type SetupProviderKeyInput = z.input<typeof SetupProviderKeyInput>;
