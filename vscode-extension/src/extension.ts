// kernel-lsp for VS Code: starts `python -m kernel_lsp.cli serve` and makes it feel native (status bar,
// commands, settings). All checking happens in the server; this file only wires it to VS Code.

import * as vscode from "vscode";
import {
  ConfigurationParams, DidChangeConfigurationNotification, LanguageClient, LanguageClientOptions, ServerOptions,
  State, TransportKind,
} from "vscode-languageclient/node";

import { readFileSync } from "node:fs";

import { chooseInterpreter, findClone, installAdvice, installCommand, probe } from "./interpreter";
import { RESTART_KEYS, explicitServerSettings, vscodeSection } from "./settings";
import { StatusModel, StatusParams } from "./status";

const SECTION = "kernelLsp";
let client: LanguageClient | undefined;
let output: vscode.OutputChannel;
let statusItem: vscode.StatusBarItem;
const model = new StatusModel();

function render(): void {
  const view = model.view();
  statusItem.text = view.text;
  statusItem.tooltip = view.tooltip;
  statusItem.backgroundColor = view.level === "error" ? new vscode.ThemeColor("statusBarItem.errorBackground")
    : view.level === "warning" ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
  statusItem.show();
}

async function pythonExtensionInterpreter(resource?: vscode.Uri): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension("ms-python.python");
  if (!ext) return undefined;
  try {
    const api: any = ext.isActive ? ext.exports : await ext.activate();
    const env = api?.environments?.getActiveEnvironmentPath?.(resource);
    if (env?.path) {
      const resolved = await api.environments.resolveEnvironment?.(env);
      return resolved?.executable?.uri?.fsPath ?? env.path;
    }
    const details = api?.settings?.getExecutionDetails?.(resource);
    return details?.execCommand?.[0];
  } catch (e) {
    output.appendLine(`Python extension did not give an interpreter: ${e}`);
    return undefined;
  }
}

async function start(context: vscode.ExtensionContext): Promise<void> {
  model.state = "starting";
  model.restricted = !vscode.workspace.isTrusted;
  render();
  const config = vscode.workspace.getConfiguration(SECTION);
  const folder = vscode.workspace.workspaceFolders?.[0];
  const choice = chooseInterpreter(config.get<string>("interpreter"), await pythonExtensionInterpreter(folder?.uri),
                                   folder?.uri.fsPath);
  output.appendLine(`interpreter: ${choice.command} (from ${choice.source})`);
  const installed = await probe(choice.command, folder?.uri.fsPath);
  if (!installed.ok) {
    model.state = "missing";
    const clone = findClone(folder?.uri.fsPath, (p) => { try { return readFileSync(p, "utf8"); } catch { return undefined; } });
    model.problem = `${installed.problem}; ${installAdvice(choice.command, clone)}`;
    output.appendLine(model.problem);
    render();
    const copy = "Copy install command";
    // Not awaited: activation must finish while the message waits for the user.
    void vscode.window.showErrorMessage(`kernel-lsp: ${model.problem}`, copy, "Choose interpreter", "Show output")
      .then(async (pick) => {
        if (pick === copy) await vscode.env.clipboard.writeText(installCommand(choice.command, clone));
        if (pick === "Choose interpreter") await vscode.commands.executeCommand("workbench.action.openSettings", `${SECTION}.interpreter`);
        if (pick === "Show output") output.show();
      });
    return;
  }
  output.appendLine(`kernel-lsp ${installed.version}`);
  const serverOptions: ServerOptions = {
    command: choice.command,
    args: ["-m", "kernel_lsp.cli", "serve"],
    transport: TransportKind.stdio,
    options: { cwd: folder?.uri.fsPath },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file", language: "python" }],
    outputChannel: output,
    traceOutputChannel: output,
    // In Restricted Mode the server only parses: nothing of an untrusted workspace is imported or run.
    initializationOptions: { [SECTION]: explicitServerSettings(vscodeSection(config)), trusted: vscode.workspace.isTrusted },
    middleware: {
      workspace: {
        // The server asks for section "kernelLsp": answer with the server's keys only.
        configuration: async (params: ConfigurationParams, token, next) => {
          const result = await next(params, token);
          if (!Array.isArray(result)) return result;
          return params.items.map((item, i) => item.section === SECTION
            ? explicitServerSettings(vscodeSection(vscode.workspace.getConfiguration(SECTION, item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined)))
            : result[i]);
        },
      },
    },
  };
  client = new LanguageClient("kernelLsp", "kernel-lsp", serverOptions, clientOptions);
  client.onDidChangeState((e) => {
    if (e.newState === State.Running) model.state = "running";
    if (e.newState === State.Stopped) model.state = model.state === "missing" ? "missing" : "stopped";
    render();
  });
  try {
    await client.start();
  } catch (e) {
    model.state = "stopped";
    model.problem = `the server failed to start: ${e}`;
    output.appendLine(model.problem);
    render();
    return;
  }
  context.subscriptions.push(client.onNotification("kernelLsp/status", (params: StatusParams) => {
    model.update(params);
    render();
  }));
  model.state = "running";
  render();
}

async function stop(): Promise<void> {
  const c = client;
  client = undefined;
  if (c) {
    try {
      await c.stop(5000);
    } catch (e) {
      output.appendLine(`stopping the server: ${e}`);
    }
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("kernel-lsp");
  statusItem = vscode.window.createStatusBarItem("kernelLsp.status", vscode.StatusBarAlignment.Left, 10);
  statusItem.name = "kernel-lsp";
  statusItem.command = "kernelLsp.showOutput";
  context.subscriptions.push(output, statusItem);
  context.subscriptions.push(
    vscode.commands.registerCommand("kernelLsp.restart", async () => {
      await stop();
      await start(context);
    }),
    vscode.commands.registerCommand("kernelLsp.showOutput", () => output.show(true)),
    vscode.commands.registerCommand("kernelLsp.verifyNow", async () => {
      const editor = vscode.window.activeTextEditor;
      if (!client || !editor) {
        void vscode.window.showWarningMessage("kernel-lsp: open a Python file with a Triton kernel first");
        return;
      }
      if (editor.document.isDirty) await editor.document.save();
      await client.sendRequest("workspace/executeCommand", {
        command: "kernel-lsp.verifyNow", arguments: [editor.document.uri.toString()],
      });
    }),
    // Trusting the workspace starts kernel-lsp fully: a new server that verifies and times.
    vscode.workspace.onDidGrantWorkspaceTrust(async () => {
      await stop();
      await start(context);
    }),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (!e.affectsConfiguration(SECTION)) return;
      if (RESTART_KEYS.some((k) => e.affectsConfiguration(k)) || !client) {
        await stop();
        await start(context);
        return;
      }
      await client.sendNotification(DidChangeConfigurationNotification.type, {
        settings: { [SECTION]: explicitServerSettings(vscodeSection(vscode.workspace.getConfiguration(SECTION))) },
      });
    }),
  );
  await start(context);
}

export async function deactivate(): Promise<void> {
  await stop();
}
