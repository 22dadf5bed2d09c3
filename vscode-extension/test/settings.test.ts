import * as assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { explicitServerSettings, sectionOf, serverSettings } from "../src/settings";

// What the server accepts, with its defaults: written from kernel_lsp/config.py (tests/test_config.py keeps it
// current). Compiled tests run from out/test, three levels below the repository root.
const manifest = JSON.parse(readFileSync(path.join(__dirname, "..", "..", "..", "kernel_lsp", "schemas",
  "settings.json"), "utf8")) as { settings: Record<string, unknown>; llm: Record<string, unknown> };

test("server settings keep the server's keys and drop client-only ones", () => {
  const s = serverSettings(sectionOf({
    interpreter: "/venv/bin/python", trace: { server: "verbose" }, targets: ["sm_80", "sm_90"], verify: "change",
    device: "cpu", timeout: 30, workers: 3, llm: { endpoint: "http://127.0.0.1:8000/v1", model: "m", apiKeyEnv: "MY_KEY" },
  }));
  assert.deepEqual(s.llm.endpoint, "http://127.0.0.1:8000/v1");
  assert.deepEqual(s.llm.apiKeyEnv, "MY_KEY");
  assert.deepEqual([s.targets, s.verify, s.device, s.timeout, s.workers], [["sm_80", "sm_90"], "change", "cpu", 30, 3]);
  assert.equal("interpreter" in s, false);
});

test("every key sent is one the server accepts, and the defaults are the server's", () => {
  const s = serverSettings(sectionOf({})) as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(s)) {
    if (key === "llm" || key === "measure") {
      const table = (manifest as unknown as Record<string, Record<string, unknown>>)[key];
      for (const [sub, v] of Object.entries(value as Record<string, unknown>)) {
        assert.ok(sub in table, `the server does not accept ${key}.${sub}`);
        assert.deepEqual(v, table[sub], `default of ${key}.${sub} differs from the server's`);
      }
      continue;
    }
    assert.ok(key in manifest.settings, `the server does not accept the setting ${key}`);
    assert.deepEqual(value, manifest.settings[key], `default of ${key} differs from the server's`);
  }
});

test("a runner typed as one string is split like a shell's words", () => {
  assert.deepEqual(serverSettings(sectionOf({ runner: "ssh gpu-box 'kernel-lsp worker'" })).runner,
    ["ssh", "gpu-box", "kernel-lsp worker"]);
  assert.deepEqual(serverSettings(sectionOf({})).runner, []);
});

test("dotted keys resolve like VS Code's configuration", () => {
  assert.equal(sectionOf({ "llm.model": "flat" }).get("llm.model"), "flat");
  assert.equal(sectionOf({ llm: { model: "nested" } }).get("llm.model"), "nested");
  assert.equal(sectionOf({}).get("llm.model"), undefined);
});

test("only the settings the user set are sent, so the project's pyproject.toml is not overridden by defaults", () => {
  assert.deepEqual(explicitServerSettings(sectionOf({})), {});
  assert.deepEqual(explicitServerSettings(sectionOf({ timeout: 30, llm: { model: "m" } })),
    { timeout: 30, llm: { model: "m" } });
  assert.deepEqual(explicitServerSettings(sectionOf({ "measure.cache": "hot" })), { measure: { cache: "hot" } });
});
