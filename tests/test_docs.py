"""Every diagnostic code and setting is documented."""

import dataclasses
import re

from kernel_lsp.codes import CODES
from kernel_lsp.config import Settings
from tests.conftest import ROOT


def test_docs_every_code_has_a_section():
    text = (ROOT / "docs" / "diagnostics.md").read_text()
    sections = re.findall(r"^## (KL\d{3})$", text, re.M)
    assert sections == list(CODES)


def test_docs_every_setting_is_documented():
    text = (ROOT / "docs" / "configuration.md").read_text()
    for field in dataclasses.fields(Settings):
        assert f"`{field.name.replace('_', '-') if field.name == 'cache_dir' else field.name}`" in text, field.name
