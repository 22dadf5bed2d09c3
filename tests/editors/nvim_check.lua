-- Headless Neovim drives kernel-lsp like a user: open a buggy Triton file, wait for the diagnostic, fix the
-- line, save, wait for the verification of the saved text, report what Neovim shows. Run by test_neovim.py:
--   nvim --headless --clean --cmd "luafile nvim_check.lua"
-- KL_MODE = "start_client" (Neovim 0.7 to 0.10) or "config" (vim.lsp.config / vim.lsp.enable, 0.11+).
local env = vim.env
local mode, file, root, result_path = env.KL_MODE, env.KL_FILE, env.KL_ROOT, env.KL_RESULT
local want_code, fix_line, fix_text = env.KL_CODE, tonumber(env.KL_FIX_LINE), env.KL_FIX_TEXT
local wait_ms = tonumber(env.KL_WAIT_MS or "240000")
local statuses = {}

local cfg = {
  name = "kernel_lsp",
  cmd = { env.KL_PYTHON, "-m", "kernel_lsp.cli", "serve" },
  root_dir = root,
  handlers = {
    ["kernelLsp/status"] = function(_, result) table.insert(statuses, result) end,
  },
}

local function finish(result)
  result.version = vim.version and tostring(vim.version().major) .. "." .. tostring(vim.version().minor)
  result.statuses = #statuses
  local f = assert(io.open(result_path, "w"))
  f:write(vim.fn.json_encode(result))
  f:close()
  vim.cmd("qall!")
end

local function ours(buf)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if d.source and d.source:find("kernel%-lsp") then
      local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
      table.insert(out, { lnum = d.lnum, col = d.col, code = code, message = d.message, source = d.source })
    end
  end
  return out
end

local function body()
  local buf
  if mode == "start_client" then
    vim.cmd("edit " .. vim.fn.fnameescape(file))
    buf = vim.api.nvim_get_current_buf()
    local id = vim.lsp.start_client(cfg)
    vim.lsp.buf_attach_client(buf, id)
  else
    cfg.filetypes = { "python" }
    vim.lsp.config("kernel_lsp", cfg)
    vim.lsp.enable("kernel_lsp")
    vim.cmd("edit " .. vim.fn.fnameescape(file)) -- FileType fires here and attaches the client
    buf = vim.api.nvim_get_current_buf()
  end
  local found = vim.wait(wait_ms, function()
    for _, d in ipairs(ours(buf)) do
      if d.code == want_code then return true end
    end
    return false
  end, 100)
  local before = ours(buf)
  local clients = vim.lsp.get_active_clients and #vim.lsp.get_active_clients() or #vim.lsp.get_clients()
  if not found then
    return finish({ stage = "bug", ok = false, before = before, clients = clients })
  end
  vim.api.nvim_buf_set_lines(buf, fix_line, fix_line + 1, false, { fix_text })
  vim.cmd("write")
  local version = vim.lsp.util.buf_versions[buf] -- what the server must have verified
  local verified = vim.wait(wait_ms, function()
    for _, s in ipairs(statuses) do
      if s.state == "idle" and s.verified and not s.cancelled and s.version == version then return true end
    end
    return false
  end, 100)
  finish({ stage = "fixed", ok = verified, before = before, after = ours(buf), clients = clients })
end

vim.api.nvim_create_autocmd("VimEnter", {
  once = true,
  nested = true,
  callback = function()
    local ok, err = pcall(body)
    if not ok then finish({ stage = "error", ok = false, error = tostring(err) }) end
  end,
})
