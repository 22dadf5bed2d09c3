// The status bar's text from the server's `kernelLsp/status` notifications (see docs/editors.md):
// {state: "compiling" | "verifying" | <stage> | "idle", uri, version, kernels?, detail?, cancelled?, verified?,
//  last?: {kernels, findings: {error?, warning?, ...}, cached}}.

export interface StatusParams {
  state: string;
  uri: string;
  version?: number | null;
  kernels?: number | null;
  detail?: string;
  cancelled?: boolean;
  verified?: boolean;
  last?: { kernels: number; findings: Record<string, number>; cached: boolean } | null;
}

export interface StatusView {
  text: string;
  tooltip: string;
  level: "ok" | "busy" | "warning" | "error";
}

interface Running {
  verifying: boolean;
  kernels?: number | null;
  stage: string;
  detail: string;
}

function baseName(uri: string): string {
  return decodeURIComponent(uri.split("/").pop() ?? uri);
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

export class StatusModel {
  private running = new Map<string, Running>();
  private last?: { uri: string; params: StatusParams };
  state: "starting" | "running" | "stopped" | "missing" = "starting";
  restricted = false; // an untrusted workspace: the server only parses
  problem = "";

  update(p: StatusParams): void {
    if (p.state === "idle") {
      this.running.delete(p.uri);
      if (!p.cancelled && p.last) this.last = { uri: p.uri, params: p };
      return;
    }
    const prev = this.running.get(p.uri);
    const starting = p.state === "compiling" || p.state === "verifying";
    this.running.set(p.uri, {
      verifying: starting ? p.state === "verifying" : prev?.verifying ?? false,
      kernels: starting ? p.kernels : prev?.kernels,
      stage: starting ? p.state : p.state,
      detail: p.detail ?? "",
    });
  }

  view(): StatusView {
    if (this.state === "starting") return { text: "$(loading~spin) kernel-lsp", tooltip: "kernel-lsp: starting the server", level: "busy" };
    if (this.state === "missing") return { text: "$(warning) kernel-lsp: not installed", tooltip: this.problem, level: "warning" };
    if (this.state === "stopped") return { text: "$(error) kernel-lsp: stopped", tooltip: this.problem || "the server stopped; run 'kernel-lsp: Restart Server'", level: "error" };
    if (this.restricted) return { text: "$(shield) kernel-lsp: Restricted Mode (parsing only)", tooltip: "This workspace is not trusted: kernel-lsp shows syntax and linking problems, and imports or runs nothing until you trust the workspace.", level: "warning" };
    if (this.running.size > 0) {
      const runs = [...this.running.entries()];
      const verifying = runs.filter(([, r]) => r.verifying);
      const kernels = verifying.reduce((n, [, r]) => n + (r.kernels ?? 0), 0);
      let text: string;
      if (verifying.length > 0) {
        text = kernels > 0 ? `verifying ${plural(kernels, "kernel")}` : `verifying ${baseName(verifying[0][0])}`;
      } else {
        text = `compiling ${runs.length === 1 ? baseName(runs[0][0]) : plural(runs.length, "file")}`;
      }
      const tooltip = runs.map(([uri, r]) => `${baseName(uri)}: ${r.stage}${r.detail ? ` (${r.detail})` : ""}`).join("\n");
      return { text: `$(sync~spin) kernel-lsp: ${text}`, tooltip, level: "busy" };
    }
    if (!this.last) return { text: "$(check) kernel-lsp", tooltip: "kernel-lsp: idle", level: "ok" };
    const { uri, params } = this.last;
    const f = params.last?.findings ?? {};
    const errors = f.error ?? 0;
    const warnings = f.warning ?? 0;
    const name = baseName(uri);
    const what = params.verified ? "verified" : "compiled";
    const cached = params.last?.cached ? " (from cache)" : "";
    if (errors > 0) return { text: `$(error) kernel-lsp: ${name} ${plural(errors, "error")}`, tooltip: `${name}: ${what}${cached}, ${plural(errors, "error")}, ${plural(warnings, "warning")}`, level: "error" };
    if (warnings > 0) return { text: `$(warning) kernel-lsp: ${name} ${plural(warnings, "warning")}`, tooltip: `${name}: ${what}${cached}, ${plural(warnings, "warning")}`, level: "warning" };
    return { text: `$(check) kernel-lsp: ${name} ${what}`, tooltip: `${name}: ${what}${cached}, no problems (${plural(params.last?.kernels ?? 0, "kernel")})`, level: "ok" };
  }
}
