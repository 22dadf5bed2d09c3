// The server's settings from the `kernelLsp` configuration section. Client-only keys (interpreter, trace) are
// left out: the server rejects keys it does not know. The API key's *name* is passed, never a key.

export interface ServerSettings {
  targets: string[];
  verify: string;
  device: string;
  timeout: number;
  workers: number;
  runner: string[];
  measure: { mode: string; cache: string; compile: boolean; compileSeverity: string; seconds: number; precision: number };
  llm: {
    endpoint: string; model: string; apiKeyEnv: string; temperature: number; candidates: number; rounds: number;
    maxTokens: number; maxSeconds: number;
  };
}

// `has` says whether the user set the key (in any scope); `get` falls back to the declared default.
type Section = { get<T>(key: string): T | undefined; has?(key: string): boolean };

// A runner typed as one string is split as a shell splits words (the server accepts a list).
export function splitCommand(text: string): string[] {
  const words: string[] = [];
  const re = /"((?:\\.|[^"\\])*)"|'([^']*)'|(\S+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    words.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : m[2] !== undefined ? m[2] : m[3]);
  }
  return words;
}

export function serverSettings(section: Section): ServerSettings {
  const runner = section.get<string | string[]>("runner") ?? "";
  return {
    targets: section.get<string[]>("targets") ?? ["sm_90"],
    verify: section.get<string>("verify") ?? "save",
    device: section.get<string>("device") ?? "auto",
    timeout: section.get<number>("timeout") ?? 60,
    workers: section.get<number>("workers") ?? 2,
    runner: Array.isArray(runner) ? runner : splitCommand(runner),
    measure: {
      mode: section.get<string>("measure.mode") ?? "auto",
      cache: section.get<string>("measure.cache") ?? "cold",
      compile: section.get<boolean>("measure.compile") ?? true,
      compileSeverity: section.get<string>("measure.compileSeverity") ?? "info",
      seconds: section.get<number>("measure.seconds") ?? 1.0,
      precision: section.get<number>("measure.precision") ?? 0.005,
    },
    llm: {
      endpoint: section.get<string>("llm.endpoint") ?? "",
      model: section.get<string>("llm.model") ?? "",
      apiKeyEnv: section.get<string>("llm.apiKeyEnv") ?? "OPENAI_API_KEY",
      temperature: section.get<number>("llm.temperature") ?? 0.2,
      candidates: section.get<number>("llm.candidates") ?? 2,
      rounds: section.get<number>("llm.rounds") ?? 2,
      maxTokens: section.get<number>("llm.maxTokens") ?? 60000,
      maxSeconds: section.get<number>("llm.maxSeconds") ?? 600,
    },
  };
}

// What the server is sent: only the settings the user set. A default of the extension must not override the
// project's pyproject.toml (the server's order is defaults, then pyproject, then the editor's settings); within a
// table (llm, measure) only the keys set are sent, and the server merges them into the project's table.
export function explicitServerSettings(section: Section): Partial<Record<string, unknown>> {
  const full = serverSettings(section) as unknown as Record<string, unknown>;
  const isSet = (key: string) => (section.has ? section.has(key) : section.get(key) !== undefined);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(full)) {
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      const sub: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        if (isSet(`${key}.${k}`)) sub[k] = v;
      }
      if (Object.keys(sub).length) out[key] = sub;
    } else if (isSet(key)) {
      out[key] = value;
    }
  }
  return out;
}

// VS Code's configuration: a key is set when any scope holds a value for it.
export function vscodeSection(config: {
  get<T>(key: string): T | undefined;
  inspect(key: string): { globalValue?: unknown; workspaceValue?: unknown; workspaceFolderValue?: unknown } | undefined;
}): Section {
  return {
    get: <T>(key: string) => config.get<T>(key),
    has: (key: string) => {
      const i = config.inspect(key);
      return !!i && (i.globalValue !== undefined || i.workspaceValue !== undefined || i.workspaceFolderValue !== undefined);
    },
  };
}

// A plain object (as JSON settings are) seen through the same `get("a.b")` lookup as VS Code's configuration.
export function sectionOf(values: Record<string, unknown>): Section {
  const lookup = (key: string): unknown => {
    if (key in values) return values[key];
    let node: unknown = values;
    for (const part of key.split(".")) {
      if (node === null || typeof node !== "object" || !(part in (node as object))) return undefined;
      node = (node as Record<string, unknown>)[part];
    }
    return node;
  };
  return {
    get<T>(key: string): T | undefined {
      return lookup(key) as T | undefined;
    },
    has: (key: string) => lookup(key) !== undefined,
  };
}

// Settings whose change needs a new server process rather than a didChangeConfiguration.
export const RESTART_KEYS = ["kernelLsp.interpreter"];
