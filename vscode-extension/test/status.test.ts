import * as assert from "node:assert/strict";
import { test } from "node:test";

import { StatusModel } from "../src/status";

const uri = "file:///ws/relu.py";

test("status follows a run from start to result", () => {
  const m = new StatusModel();
  assert.match(m.view().text, /loading/);
  m.state = "running";
  assert.equal(m.view().text, "$(check) kernel-lsp");
  m.update({ state: "verifying", uri, version: 3, kernels: 2 });
  assert.equal(m.view().text, "$(sync~spin) kernel-lsp: verifying 2 kernels");
  m.update({ state: "verify", uri, version: 3, detail: "variant special" });
  assert.equal(m.view().text, "$(sync~spin) kernel-lsp: verifying 2 kernels");
  assert.match(m.view().tooltip, /relu.py: verify \(variant special\)/);
  m.update({ state: "idle", uri, version: 3, cancelled: false, verified: true, last: { kernels: 2, findings: { error: 1 }, cached: false } });
  assert.equal(m.view().text, "$(error) kernel-lsp: relu.py 1 error");
  assert.equal(m.view().level, "error");
});

test("compiling without kernel counts, cancelled runs keep the last result", () => {
  const m = new StatusModel();
  m.state = "running";
  m.update({ state: "compiling", uri, version: 1, kernels: null });
  assert.equal(m.view().text, "$(sync~spin) kernel-lsp: compiling relu.py");
  m.update({ state: "idle", uri, version: 1, cancelled: false, verified: false, last: { kernels: 1, findings: {}, cached: true } });
  assert.equal(m.view().text, "$(check) kernel-lsp: relu.py compiled");
  m.update({ state: "verifying", uri, version: 2, kernels: null });
  assert.equal(m.view().text, "$(sync~spin) kernel-lsp: verifying relu.py");
  m.update({ state: "idle", uri, version: 2, cancelled: true });
  assert.equal(m.view().text, "$(check) kernel-lsp: relu.py compiled");
});

test("missing and stopped servers say so", () => {
  const m = new StatusModel();
  m.state = "missing";
  m.problem = "kernel-lsp is not installed in python3";
  assert.equal(m.view().text, "$(warning) kernel-lsp: not installed");
  m.state = "stopped";
  assert.match(m.view().text, /stopped/);
});

test("an untrusted workspace says Restricted Mode", () => {
  const m = new StatusModel();
  m.state = "running";
  m.restricted = true;
  assert.match(m.view().text, /Restricted Mode \(parsing only\)/);
  assert.equal(m.view().level, "warning");
});
