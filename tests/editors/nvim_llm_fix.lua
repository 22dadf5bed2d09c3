-- Headless Neovim applies one verified LLM fix: open a kernel with a compile error, wait for KL100, ask for the
-- code actions at it, run "Fix with LLM", answer the server's question with "Apply" (Neovim has no preview for
-- annotated edits), wait for the fixed line in the buffer, save, and wait until the diagnostics are gone.
-- Run by test_neovim.py: nvim --headless --clean --cmd "luafile nvim_llm_fix.lua"; KL_MODE as in nvim_check.lua.
local env = vim.env
local mode, file, root, result_path = env.KL_MODE, env.KL_FILE, env.KL_ROOT, env.KL_RESULT
local wait_ms = tonumber(env.KL_WAIT_MS or "300000")
local statuses, asked = {}, {}

local cfg = {
  name = "kernel_lsp",
  cmd = { env.KL_PYTHON, "-m", "kernel_lsp.cli", "serve" },
  root_dir = root,
  handlers = {
    ["kernelLsp/status"] = function(_, result) table.insert(statuses, result) end,
    ["window/showMessageRequest"] = function(_, result)
      table.insert(asked, result.message)
      for _, action in ipairs(result.actions or {}) do
        if action.title == "Apply" then return action end
      end
      return vim.NIL
    end,
  },
}

local function finish(result)
  result.asked = asked
  local f = assert(io.open(result_path, "w"))
  f:write(vim.fn.json_encode(result))
  f:close()
  vim.cmd("qall!")
end

local function codes(buf)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if d.source and d.source:find("kernel%-lsp") then
      table.insert(out, d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code))
    end
  end
  return out
end

local function body()
  local buf, client
  if mode == "start_client" then
    vim.cmd("edit " .. vim.fn.fnameescape(file))
    buf = vim.api.nvim_get_current_buf()
    local id = vim.lsp.start_client(cfg)
    vim.lsp.buf_attach_client(buf, id)
    client = vim.lsp.get_client_by_id(id)
  else
    cfg.filetypes = { "python" }
    vim.lsp.config("kernel_lsp", cfg)
    vim.lsp.enable("kernel_lsp")
    vim.cmd("edit " .. vim.fn.fnameescape(file))
    buf = vim.api.nvim_get_current_buf()
    vim.wait(30000, function() return #vim.lsp.get_clients({ bufnr = buf }) > 0 end, 50)
    client = vim.lsp.get_clients({ bufnr = buf })[1]
  end
  local diag
  local found = vim.wait(wait_ms, function()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
      if code == "KL100" then diag = d; return true end
    end
    return false
  end, 100)
  if not found then return finish({ stage = "no-diagnostic", ok = false, codes = codes(buf) }) end
  -- The diagnostic as LSP has it (Neovim 0.7 keeps only part of it in user_data, so it is rebuilt here).
  local lsp_diag = {
    range = { start = { line = diag.lnum, character = diag.col },
              ["end"] = { line = diag.end_lnum or diag.lnum, character = diag.end_col or diag.col } },
    severity = diag.severity, code = "KL100", source = diag.source, message = diag.message,
  }
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    range = { start = { line = diag.lnum, character = diag.col }, ["end"] = { line = diag.lnum, character = diag.col } },
    context = { diagnostics = { lsp_diag } },
  }
  local responses, request_err = vim.lsp.buf_request_sync(buf, "textDocument/codeAction", params, 30000)
  responses = responses or {}
  local action
  for _, r in pairs(responses) do
    for _, a in ipairs(r.result or {}) do
      if a.title:find("^Fix with LLM") then action = a end
    end
  end
  if not action then return finish({ stage = "no-action", ok = false, responses = responses, sent = params, err = tostring(request_err) }) end
  client.request("workspace/executeCommand", { command = action.command.command, arguments = action.command.arguments },
    function() end, buf)
  local fixed = vim.wait(wait_ms, function()
    return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n"):find("* 2.0, mask=mask)", 1, true) ~= nil
  end, 100)
  if not fixed then return finish({ stage = "not-applied", ok = false }) end
  vim.cmd("write")
  local version = vim.lsp.util.buf_versions[buf]
  local verified = vim.wait(wait_ms, function()
    for _, s in ipairs(statuses) do
      if s.state == "idle" and s.verified and not s.cancelled and s.version == version then return true end
    end
    return false
  end, 100)
  finish({ stage = "fixed", ok = verified, after = codes(buf) })
end

vim.api.nvim_create_autocmd("VimEnter", {
  once = true,
  nested = true,
  callback = function()
    local ok, err = pcall(body)
    if not ok then finish({ stage = "error", ok = false, error = tostring(err) }) end
  end,
})
