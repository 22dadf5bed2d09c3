// Which Python runs `kernel-lsp serve`, chosen like the Python tools extension template does: the
// `kernelLsp.interpreter` setting, else the Python extension's active environment, else python3 on PATH.

import { execFile } from "child_process";
import * as os from "os";
import * as path from "path";

export interface Choice {
  command: string;
  source: "setting" | "python-extension" | "path";
}

export function chooseInterpreter(setting: string | undefined, fromPythonExtension: string | undefined,
                                  workspaceFolder: string | undefined): Choice {
  const configured = (setting ?? "").trim();
  if (configured) {
    let command = configured.replace(/\$\{workspaceFolder\}/g, workspaceFolder ?? "");
    if (command.startsWith("~/")) command = path.join(os.homedir(), command.slice(2));
    return { command, source: "setting" };
  }
  if (fromPythonExtension) return { command: fromPythonExtension, source: "python-extension" };
  return { command: process.platform === "win32" ? "python" : "python3", source: "path" };
}

export interface Installed {
  ok: boolean;
  version?: string;
  problem?: string;
}

// Does this interpreter have kernel-lsp? Runs `python -c "import kernel_lsp"` (no torch import: fast).
export function probe(command: string, timeoutMs = 20000): Promise<Installed> {
  return new Promise((resolve) => {
    execFile(command, ["-c", "import kernel_lsp; print(kernel_lsp.__version__)"], { timeout: timeoutMs },
      (error, stdout, stderr) => {
        if (!error) return resolve({ ok: true, version: stdout.trim() });
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "ENOENT") return resolve({ ok: false, problem: `${command} was not found` });
        const missing = /No module named '?kernel_lsp/.test(stderr);
        resolve({ ok: false, problem: missing ? `kernel-lsp is not installed in ${command}` : (stderr || String(error)).trim().split("\n").pop() });
      });
  });
}

export function installCommand(command: string): string {
  const quoted = /\s/.test(command) ? `"${command}"` : command;
  return `${quoted} -m pip install kernel-lsp`;
}
