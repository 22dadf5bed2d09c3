import * as assert from "node:assert/strict";
import { test } from "node:test";

import { sectionOf, serverSettings } from "../src/settings";

test("server settings keep the server's keys and drop client-only ones", () => {
  const s = serverSettings(sectionOf({
    interpreter: "/venv/bin/python", trace: { server: "verbose" }, targets: ["sm_80", "sm_90"], verify: "change",
    device: "cpu", timeout: 30, workers: 3, llm: { endpoint: "http://127.0.0.1:8000/v1", model: "m", apiKeyEnv: "MY_KEY" },
  }));
  assert.deepEqual(s, {
    targets: ["sm_80", "sm_90"], verify: "change", device: "cpu", timeout: 30, workers: 3,
    llm: { endpoint: "http://127.0.0.1:8000/v1", model: "m", apiKeyEnv: "MY_KEY" },
  });
  assert.equal("interpreter" in s, false);
});

test("defaults mirror the server's", () => {
  const s = serverSettings(sectionOf({}));
  assert.deepEqual(s.targets, ["sm_90"]);
  assert.equal(s.verify, "save");
  assert.equal(s.llm.apiKeyEnv, "OPENAI_API_KEY");
});

test("dotted keys resolve like VS Code's configuration", () => {
  assert.equal(sectionOf({ "llm.model": "flat" }).get("llm.model"), "flat");
  assert.equal(sectionOf({ llm: { model: "nested" } }).get("llm.model"), "nested");
  assert.equal(sectionOf({}).get("llm.model"), undefined);
});
