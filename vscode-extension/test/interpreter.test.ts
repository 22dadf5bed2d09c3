import * as assert from "node:assert/strict";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { chooseInterpreter, findClone, installAdvice, installCommand, probe } from "../src/interpreter";

test("the setting wins, then the Python extension, then python3 on PATH", () => {
  assert.deepEqual(chooseInterpreter("${workspaceFolder}/.venv/bin/python", "/ext/python", "/ws"),
                   { command: "/ws/.venv/bin/python", source: "setting" });
  assert.deepEqual(chooseInterpreter("  ", "/ext/python", "/ws"), { command: "/ext/python", source: "python-extension" });
  assert.deepEqual(chooseInterpreter(undefined, undefined, undefined), { command: "python3", source: "path" });
  assert.equal(chooseInterpreter("~/py", undefined, undefined).command, path.join(os.homedir(), "py"));
});

test("a missing interpreter and a missing package are told apart", async () => {
  const absent = await probe("/nonexistent/python3");
  assert.equal(absent.ok, false);
  assert.match(absent.problem ?? "", /was not found/);
  // A real Python without kernel-lsp: isolated mode (-I) hides the user's site-packages and the cwd.
  const bare = await probe(process.env.KERNEL_LSP_TEST_BARE_PYTHON ?? "/usr/bin/python3");
  if (bare.ok) return; // that Python has kernel-lsp: nothing to tell apart here
  assert.match(bare.problem ?? "", /kernel-lsp is not installed in|No module named/);
});

test("the install command quotes paths with spaces", () => {
  assert.equal(installCommand("/opt/my env/bin/python", "/src/kernel-lsp"), '"/opt/my env/bin/python" -m pip install -e /src/kernel-lsp');
  assert.equal(installCommand("python3"), "python3 -m pip install -e /path/to/kernel-lsp");
  assert.match(installAdvice("python3"), /from a clone of kernel-lsp: python3 -m pip install -e \/path\/to\/kernel-lsp \(or a wheel built there with `python -m build`/);
  const files: Record<string, string> = { "/src/kernel-lsp/pyproject.toml": '[project]\nname = "kernel-lsp"\n' };
  assert.equal(findClone("/src/kernel-lsp/tasks", (p) => files[p]), "/src/kernel-lsp");
  assert.equal(findClone("/elsewhere", (p) => files[p]), undefined);
});

test("kernel-lsp importable without its server's dependencies is reported, not started", async () => {
  const fs = await import("node:fs");
  const { execFileSync } = await import("node:child_process");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kl-probe-"));
  fs.mkdirSync(path.join(dir, "kernel_lsp", "lsp"), { recursive: true });
  fs.writeFileSync(path.join(dir, "kernel_lsp", "__init__.py"), "__version__ = '0'\n");
  fs.writeFileSync(path.join(dir, "kernel_lsp", "lsp", "__init__.py"), "");
  fs.writeFileSync(path.join(dir, "kernel_lsp", "lsp", "server.py"), "import pygls_that_is_missing\n");
  const wrapper = path.join(dir, "python");
  const real = execFileSync("sh", ["-c", "command -v python3"]).toString().trim();
  fs.writeFileSync(wrapper, `#!/bin/sh\nPYTHONPATH=${dir} exec ${real} -S "$@"\n`);  // -S: no site-packages
  fs.chmodSync(wrapper, 0o755);
  const got = await probe(wrapper);
  assert.equal(got.ok, false);
  assert.match(got.problem ?? "", /not installed completely in .* \(no module pygls_that_is_missing\)/);
});
