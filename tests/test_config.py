"""Settings validation: the LLM table takes an endpoint URL and the *name* of the key's variable, never a key."""

import pytest

from kernel_lsp.config import ConfigError, Settings, apply_overrides


def test_llm_settings_accept_the_editor_and_pyproject_spellings():
    s = apply_overrides(Settings(), {"llm": {"endpoint": "http://127.0.0.1:8000/v1", "model": "m", "apiKeyEnv": "K"}})
    assert s.llm == {"endpoint": "http://127.0.0.1:8000/v1", "model": "m", "api_key_env": "K"}
    s = apply_overrides(Settings(), {"llm": {"api-key-env": "MY_KEY"}})
    assert s.llm["api_key_env"] == "MY_KEY" and s.llm["endpoint"] == ""
    assert Settings().llm["api_key_env"] == "OPENAI_API_KEY"


@pytest.mark.parametrize("llm, key", [
    ({"endpoint": "ftp://host"}, "llm.endpoint"),
    ({"apiKeyEnv": "sk-live-1234 5678"}, "llm.api-key-env"),  # a key pasted where its variable's name belongs
    ({"temperature": 0}, "unknown key"),
    ("http://x", "expected a table"),
])
def test_bad_llm_settings_name_the_key(llm, key):
    with pytest.raises(ConfigError, match=key):
        apply_overrides(Settings(), {"llm": llm})


def test_the_vscode_extensions_settings_payload_is_accepted():
    """What vscode-extension/src/settings.ts sends (its defaults) must pass the server's validation as is."""
    payload = {"targets": ["sm_90"], "verify": "save", "device": "auto", "timeout": 60, "workers": 2,
               "llm": {"endpoint": "", "model": "", "apiKeyEnv": "OPENAI_API_KEY"}}
    s = apply_overrides(Settings(), payload)
    assert s.targets == ["sm_90"] and s.llm["api_key_env"] == "OPENAI_API_KEY"
