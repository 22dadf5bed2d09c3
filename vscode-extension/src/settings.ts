// The server's settings from the `kernelLsp` configuration section. Client-only keys (interpreter, trace) are
// left out: the server rejects keys it does not know. The API key's *name* is passed, never a key.

export interface ServerSettings {
  targets: string[];
  verify: string;
  device: string;
  timeout: number;
  workers: number;
  llm: { endpoint: string; model: string; apiKeyEnv: string };
}

type Section = { get<T>(key: string): T | undefined };

export function serverSettings(section: Section): ServerSettings {
  return {
    targets: section.get<string[]>("targets") ?? ["sm_90"],
    verify: section.get<string>("verify") ?? "save",
    device: section.get<string>("device") ?? "auto",
    timeout: section.get<number>("timeout") ?? 60,
    workers: section.get<number>("workers") ?? 2,
    llm: {
      endpoint: section.get<string>("llm.endpoint") ?? "",
      model: section.get<string>("llm.model") ?? "",
      apiKeyEnv: section.get<string>("llm.apiKeyEnv") ?? "OPENAI_API_KEY",
    },
  };
}

// A plain object (as JSON settings are) seen through the same `get("a.b")` lookup as VS Code's configuration.
export function sectionOf(values: Record<string, unknown>): Section {
  return {
    get<T>(key: string): T | undefined {
      if (key in values) return values[key] as T;
      let node: unknown = values;
      for (const part of key.split(".")) {
        if (node === null || typeof node !== "object" || !(part in (node as object))) return undefined;
        node = (node as Record<string, unknown>)[part];
      }
      return node as T;
    },
  };
}

// Settings whose change needs a new server process rather than a didChangeConfiguration.
export const RESTART_KEYS = ["kernelLsp.interpreter"];
