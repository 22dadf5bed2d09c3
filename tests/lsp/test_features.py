"""Hover, in-process on a report (lsp/features.py): what verification concluded, in words, and each skipped
variant named once."""

from kernel_lsp.lsp.features import hover_markdown
from kernel_lsp.lsp.scheduler import Document
from kernel_lsp.model import FileReport, KernelFacts, SkippedVariant, VariantRow, Verification


def test_features_the_hover_names_a_skipped_variant_once_and_never_calls_a_failed_kernel_verified(tmp_path):
    failed = Verification([VariantRow(v, "", "(8,)", "KL200") for v in ("seed-1", "strided")],
                          [SkippedVariant("special", "the reference overflows"), SkippedVariant("special", "again")])
    doc = Document("file:///k.py", tmp_path / "k.py", report=FileReport("k.py", kernels={"k": KernelFacts(
        verification=failed)}))
    text = hover_markdown(doc, "k")
    assert "Verified on" not in text and "Failed verification on cpu-interpreter: every input variant (2)" in text
    assert text.count("special") == 1 and "Skipped: special (the reference overflows)" in text, text
