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

// Does this interpreter have kernel-lsp and what its server imports (pygls, lsprotocol)? No torch import: fast.
// Run where the server will run (`cwd`: the workspace folder), since Python puts the cwd on sys.path.
export function probe(command: string, cwd?: string, timeoutMs = 20000): Promise<Installed> {
  const script = "import kernel_lsp, kernel_lsp.lsp.server; print(kernel_lsp.__version__)";
  return new Promise((resolve) => {
    execFile(command, ["-c", script], { timeout: timeoutMs, cwd }, (error, stdout, stderr) => {
      if (!error) return resolve({ ok: true, version: stdout.trim() });
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return resolve({ ok: false, problem: `${command} was not found` });
      if (/No module named '?kernel_lsp/.test(stderr)) {
        return resolve({ ok: false, problem: `kernel-lsp is not installed in ${command}` });
      }
      const missing = /No module named '([^']+)'/.exec(stderr);
      if (missing) {
        return resolve({ ok: false, problem: `kernel-lsp is not installed completely in ${command} (no module ${missing[1]})` });
      }
      resolve({ ok: false, problem: (stderr || String(error)).trim().split("\n").pop() });
    });
  });
}

// kernel-lsp is installed from a clone of its repository (or a wheel built there with `python -m build`): it is
// not on a package index. When the open folder is that clone, the command installs it from there.
export function installCommand(command: string, clone?: string): string {
  const quoted = /\s/.test(command) ? `"${command}"` : command;
  const where = clone ? (/\s/.test(clone) ? `"${clone}"` : clone) : "/path/to/kernel-lsp";
  return `${quoted} -m pip install -e ${where}`;
}

export function installAdvice(command: string, clone?: string): string {
  if (clone) return `install it from this folder: ${installCommand(command, clone)}`;
  return `install it from a clone of kernel-lsp: ${installCommand(command)} (or a wheel built there with ` +
    "`python -m build`: pip install dist/kernel_lsp-*.whl)";
}

// The folder (or one of its parents) when it is a clone of kernel-lsp: its pyproject.toml names the project.
export function findClone(folder: string | undefined, read: (path: string) => string | undefined): string | undefined {
  let dir = folder;
  for (let i = 0; dir && i < 4; i++) {
    const text = read(`${dir}/pyproject.toml`);
    if (text && /^name\s*=\s*"kernel-lsp"/m.test(text)) return dir;
    const parent = dir.replace(/\/[^/]*$/, "");
    if (!parent || parent === dir) break;
    dir = parent;
  }
  return undefined;
}
