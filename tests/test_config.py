"""Settings validation: the LLM table takes an endpoint URL and the *name* of the key's variable, never a key."""

import json
import os
import shlex
from pathlib import Path

import pytest

from kernel_lsp.config import ConfigError, Settings, apply_overrides, settings_manifest

ROOT = Path(__file__).resolve().parent.parent
CLIENT_ONLY = {"interpreter", "trace.server"}  # settings of the extension itself, never sent to the server


def test_llm_settings_accept_the_editor_and_pyproject_spellings():
    s = apply_overrides(Settings(), {"llm": {"endpoint": "http://127.0.0.1:8000/v1", "model": "m", "apiKeyEnv": "K",
                                             "maxTokens": 5000, "max-seconds": 60}})
    assert {k: getattr(s.llm, k) for k in ("endpoint", "model", "api_key_env", "max_tokens", "max_seconds")} == \
        {"endpoint": "http://127.0.0.1:8000/v1", "model": "m", "api_key_env": "K", "max_tokens": 5000, "max_seconds": 60}
    s = apply_overrides(Settings(), {"llm": {"api-key-env": "MY_KEY"}})
    assert s.llm.api_key_env == "MY_KEY" and s.llm.endpoint == ""
    assert Settings().llm.api_key_env == "OPENAI_API_KEY"


@pytest.mark.parametrize("llm, key", [
    ({"endpoint": "ftp://host"}, "llm.endpoint"),
    ({"apiKeyEnv": "sk-live-1234 5678"}, "llm.api-key-env"),  # a key pasted where its variable's name belongs
    ({"top_p": 0.9}, "unknown key"),
    ({"temperature": 3}, "llm.temperature"),
    ({"candidates": 0}, "llm.candidates"),
    ({"max-tokens": "lots"}, "llm.max-tokens"),
    ("http://x", "expected a table"),
])
def test_bad_llm_settings_name_the_key(llm, key):
    with pytest.raises(ConfigError, match=key):
        apply_overrides(Settings(), {"llm": llm})


def _extension_defaults() -> dict:
    """The payload the extension sends with its declared defaults, read from its package.json (dotted keys nested
    as VS Code nests them), client-only keys left out as settings.ts leaves them out."""
    properties = json.loads((ROOT / "vscode-extension" / "package.json").read_text())["contributes"]["configuration"]
    payload: dict = {}
    for key, spec in properties["properties"].items():
        name = key.removeprefix("kernelLsp.")
        if name in CLIENT_ONLY:
            continue
        *parents, leaf = name.split(".")
        node = payload
        for p in parents:
            node = node.setdefault(p, {})
        # settings.ts sends the runner string split as a shell splits words (splitCommand)
        node[leaf] = shlex.split(spec["default"]) if name == "runner" else spec["default"]
    return payload


def test_the_vscode_extensions_settings_payload_is_accepted_with_the_same_defaults():
    """Every setting the extension declares passes the server's validation with the server's own default."""
    payload = _extension_defaults()
    assert payload, "no settings read from package.json"
    s = apply_overrides(Settings(), payload)
    manifest = settings_manifest()
    for key, value in payload.items():
        if isinstance(value, dict):  # a table (llm, measure): every key the extension sends, with the same default
            for sub, v in value.items():
                assert sub in manifest[key], f"{key}.{sub}: the server does not accept it"
                assert v == manifest[key][sub], f"{key}.{sub}: extension default {v!r}, server's {manifest[key][sub]!r}"
        else:
            assert value == manifest["settings"][key], f"{key}: extension default {value!r}, server's differs"
    assert s.llm.api_key_env == Settings().llm.api_key_env


def test_the_settings_manifest_file_is_current():
    """vscode-extension/test/settings.test.ts reads this file: it must say what config.py accepts today."""
    recorded = json.loads((ROOT / "kernel_lsp" / "schemas" / "settings.json").read_text())
    assert recorded == json.loads(json.dumps(settings_manifest())), \
        "regenerate it: python -m kernel_lsp.config > kernel_lsp/schemas/settings.json"


@pytest.mark.parametrize("precision, ok", [(0.005, True), (0, True), (-0.1, False), (1.0, False), ("tight", False),
                                           (True, False)])
def test_measure_precision_is_a_fraction_below_one(precision, ok):
    if ok:
        assert apply_overrides(Settings(), {"measure": {"precision": precision}}).measure.precision == precision
    else:
        with pytest.raises(ConfigError, match="measure.precision"):
            apply_overrides(Settings(), {"measure": {"precision": precision}})


@pytest.mark.parametrize("overrides, ok", [
    ({"executor": "ray", "ray-address": "10.0.0.5:6379", "retries": 0}, True),
    ({"executor": "ray", "ray_address": "auto"}, True),
    ({"ray-address": "ray://head:10001"}, True),
    ({"executor": "slurm"}, False),
    ({"ray-address": "http://head:6379/path with space"}, False),
    ({"retries": -1}, False),
    ({"retries": True}, False),
])
def test_executor_settings_are_checked(overrides, ok):
    if ok:
        apply_overrides(Settings(), overrides)
    else:
        with pytest.raises(ConfigError, match=next(iter(overrides)).replace("_", "-")):
            apply_overrides(Settings(), overrides)


KEY = "sk-proj-Q3vR9tXw2LmN8pKd4HsYb7Zc1AeF6gJu"  # made up, shaped like an OpenAI project key


@pytest.mark.parametrize("text, hidden", [
    (KEY, True),
    ("ghp_" + "a1B2c3D4" * 5, True),
    ("hf_" + "Ab12Cd34" * 4, True),
    ("AKIAIOSFODNN7EXAMPLE", True),
    ("Authorization: Bearer abcdefgh12345678", True),
    ("https://host/v1?key=AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUv", True),
    ("token " + "Zq8Xw2Lm" * 5, True),  # a long key-like run of mixed-case letters and digits
    ("/home/user/kernels/a_rather_long_module_name_for_a_kernel_file.py", False),
    ("sha256 3f2a9c" + "0123456789abcdef" * 3, False),  # a hex digest is not a key
    ("test_hardening_a_linked_pytorch_only_file_fails_in_a_folder", False),
    ("OPENAI_API_KEY", False),
])
def test_mask_secrets_hides_keys_and_tokens_and_leaves_paths_words_and_digests(text, hidden):
    from kernel_lsp.config import mask_secrets
    masked = mask_secrets(text)
    assert (masked != text) == hidden, masked
    if hidden:
        assert "***" in masked and len(masked) < len(text)


@pytest.mark.parametrize("key", ["api-key-env", "endpoint"])
def test_a_key_pasted_into_the_llm_settings_is_refused_and_never_printed(tmp_path, key):
    """Issue 43 item 5: `llm.api-key-env = "sk-proj-..."` (or the key as `endpoint`) was refused with the key in
    full, into CI logs. Refused still, pointing at its line, with the key masked."""
    from tests.conftest import CORPUS, run_cli
    (tmp_path / "pyproject.toml").write_text(f'[tool.kernel-lsp]\ntimeout = 60\n\n[tool.kernel-lsp.llm]\n'
                                             f'model = "m"\n{key} = "{KEY}"\n')
    (tmp_path / "k.py").write_text((CORPUS / "ok_add_fp32.py").read_text())
    for args in (("check", "k.py"), ("optimize", "k.py", "--format", "json")):
        proc = run_cli(*args, cwd=tmp_path, timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert KEY not in proc.stdout + proc.stderr and KEY[:20] not in proc.stderr, proc.stderr
        assert "pyproject.toml:6:" in proc.stderr and "sk-pro***" in proc.stderr, proc.stderr
        assert "looks like an API key itself" in proc.stderr
    (tmp_path / "pyproject.toml").unlink()
    proc = run_cli("check", "k.py", "--target", KEY, cwd=tmp_path, timeout=120)  # a usage error masks it too
    assert proc.returncode == 2 and KEY not in proc.stderr and "sk-pro***" in proc.stderr, proc.stderr


# The converter: one function from plain data (pyproject, the editor, flags) to nested settings dataclasses ----------

TABLES = {"llm": "LLMSettings", "measure": "MeasureSettings", "sandbox": "SandboxSettings"}


def _spellings(name: str) -> set[str]:
    head, *rest = name.split("_")
    return {name, name.replace("_", "-"), head + "".join(w.capitalize() for w in rest)}


def test_converter_the_tables_are_typed_values():
    import dataclasses

    import kernel_lsp.config as config
    s = Settings()
    for name, cls in TABLES.items():
        table = getattr(s, name)
        assert type(table) is getattr(config, cls) and dataclasses.is_dataclass(table)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(table, dataclasses.fields(table)[0].name, None)


@pytest.mark.parametrize("table", list(TABLES))
def test_converter_every_key_of_a_table_in_every_spelling(table):
    """kebab-case (pyproject), camelCase (the editor) and snake_case name the same key of every table: one rule where
    there were per-table lists of spellings (`apiKeyEnv` beside `api-key-env`, `compileSeverity`...)."""
    import dataclasses
    examples = {"endpoint": "http://127.0.0.1:8000/v1", "model": "m", "api_key_env": "K", "temperature": 1.5,
                "candidates": 3, "rounds": 4, "max_tokens": 5000, "max_seconds": 60, "mode": "off", "cache": "hot",
                "compile": False, "compile_severity": "warning", "seconds": 2.5, "precision": 0.01, "flops": "work",
                "bytes": 1e9, "time": "gpu", "enabled": False, "env": ["HF_HOME"], "writable": ["/data"],
                "network": True}
    for f in dataclasses.fields(getattr(Settings(), table)):
        for key in _spellings(f.name):
            got = getattr(getattr(apply_overrides(Settings(), {table: {key: examples[f.name]}}), table), f.name)
            want = examples[f.name]
            assert got == (tuple(want) if isinstance(want, list) else want), (table, key)


def test_converter_top_level_keys_in_every_spelling():
    for key, value, field in (("cache-dir", "c", "cache_dir"), ("cache_dir", "c", "cache_dir"),
                              ("cacheDir", "c", "cache_dir"), ("isolated-rerun", False, "isolated_rerun"),
                              ("rayAddress", "auto", "ray_address"), ("ray_address", "auto", "ray_address")):
        assert getattr(apply_overrides(Settings(), {key: value}), field) == value, key


@pytest.mark.parametrize("overrides, says", [
    ({"verifcation": False}, "unknown setting 'verifcation'"),
    ({"llm": {"top_p": 0.9}}, "llm: unknown key 'top_p' (expected endpoint, model, api-key-env, temperature, "
                               "candidates, rounds, max-tokens, max-seconds)"),
    ({"measure": {"warmup": 3}}, "measure: unknown key 'warmup' (expected mode, cache, compile, compile-severity, "
                                  "seconds, precision, flops, bytes, time)"),
    ({"sandbox": {"gpu": True}}, "sandbox: unknown key 'gpu' (expected enabled, env, writable, network)"),
    ({"measure": "fast"}, "measure: expected a table with mode, cache"),
    ({"sandbox": "on"}, "sandbox: expected true, false or a table with enabled, env, writable, network"),
    ({"sandbox": {"env": "HF_HOME"}}, "sandbox.env: expected a list of variable names, got 'HF_HOME'"),
    ({"sandbox": {"env": ["1X"]}}, "sandbox.env: expected a list of variable names, got \\['1X'\\]"),
])
def test_converter_an_unknown_key_or_a_bad_value_is_a_config_error_naming_it(overrides, says):
    with pytest.raises(ConfigError, match=says.replace("(", "\\(").replace(")", "\\)")):
        apply_overrides(Settings(), overrides)


def test_converter_a_writable_folder_the_checker_trusts_is_a_config_error_naming_it(tmp_path, monkeypatch):
    """`sandbox.writable` would let checked code write there: an entry that is, holds or lies in the checker's compile
    caches (a symlink to one too), its GPU leases or its CUDA JIT cache is refused, saying which and why; a folder of
    the user's own and a relative one are not."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("KERNEL_LSP_LOCKS_DIR", str(tmp_path / "locks"))
    (tmp_path / "triton").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "triton")
    triton = os.path.realpath(tmp_path / "triton")
    for entry, says in ((str(tmp_path / "triton"), f"is Triton's compile cache ({triton})"),
                        (str(tmp_path), f"holds Triton's compile cache ({triton})"),
                        (str(tmp_path / "link"), f"is Triton's compile cache ({triton})"),
                        (str(tmp_path / "locks" / "x"), "lies in the GPU leases"),
                        (os.path.join(os.path.expanduser("~"), ".nv"), "is the CUDA driver's JIT cache")):
        with pytest.raises(ConfigError) as e:
            apply_overrides(Settings(), {"sandbox": {"writable": ["data", entry]}})
        assert str(e.value).startswith(f"sandbox.writable: {entry} {says}"), str(e.value)
        assert "checked code may not write there" in str(e.value)
    settings = apply_overrides(Settings(), {"sandbox": {"writable": [str(tmp_path / "data"), "out"]}})
    assert settings.sandbox.writable == (str(tmp_path / "data"), "out")


def test_converter_a_table_is_merged_key_by_key_and_none_keeps_the_value():
    s = apply_overrides(Settings(), {"llm": {"model": "m", "rounds": 3}, "measure": {"mode": "off"}})
    s = apply_overrides(s, {"llm": {"endpoint": "http://h/v1", "model": None}, "measure": {"seconds": 2.0},
                            "timeout": None})
    assert (s.llm.model, s.llm.rounds, s.llm.endpoint) == ("m", 3, "http://h/v1")
    assert (s.measure.mode, s.measure.seconds, s.timeout) == ("off", 2.0, 60.0)
    assert apply_overrides(Settings(), {"sandbox": False}).sandbox.enabled is False  # `sandbox = false`


def test_converter_the_cache_fingerprint_keeps_its_shape():
    """The cache key reads the tables as the dicts they were: a cached report stays found across the change."""
    fingerprint = Settings().fingerprint()
    assert fingerprint["measure"] == {"mode": "auto", "cache": "cold", "compile": True, "compile_severity": "info",
                                      "seconds": 1.0, "precision": 0.005, "flops": None, "bytes": None,
                                      "time": "wall"}
    assert fingerprint["sandbox"] == {"enabled": True, "network": False}


def test_the_cache_fingerprint_says_where_the_checks_run():
    """A report checked on a laptop's interpreter is not served once the checks run on a Ray cluster's or a
    runner's GPU, nor one runner's machine's for another's."""
    local = Settings().fingerprint()
    on_ray = apply_overrides(Settings(), {"executor": "ray", "ray-address": "10.0.0.1:6379"}).fingerprint()
    other_ray = apply_overrides(Settings(), {"executor": "ray", "ray-address": "10.0.0.2:6379"}).fingerprint()
    box_a = apply_overrides(Settings(), {"runner": "ssh a100-box kernel-lsp worker"}).fingerprint()
    box_b = apply_overrides(Settings(), {"runner": "ssh h100-box kernel-lsp worker"}).fingerprint()
    assert len({json.dumps(f, sort_keys=True) for f in (local, on_ray, other_ray, box_a, box_b)}) == 5
    assert Settings().fingerprint() == local


def test_converter_a_bad_camel_case_key_in_pyproject_points_at_its_line(tmp_path):
    from kernel_lsp.config import load_pyproject
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.kernel-lsp]\ntimeout = 60\n\n[tool.kernel-lsp.llm]\nmodel = "m"\nmaxTokens = 5\n')
    with pytest.raises(ConfigError, match="llm.max-tokens") as e:
        load_pyproject(config)
    assert e.value.line == 5
