"""MFU accounting for packed batches, checked against hand-computed numbers."""

from ascendops_trainer.metrics import hfu_flops_factor, packed_attention_flops


def test_packed_attention_one_document_matches_palm_term():
    # one document of the whole length S=8: PaLM's 12*L*H*Dh*S per token times S tokens, halved (causal)
    assert packed_attention_flops([[8]], n_layers=2, n_heads=4, head_dim=16, causal=False) == 12 * 2 * 4 * 16 * 8 * 8
    assert packed_attention_flops([[8]], 2, 4, 16) == 6 * 2 * 4 * 16 * 64


def test_packed_attention_documents_by_hand():
    # sample 1: docs 3+5 -> 9+25=34; sample 2: docs 2+2+4 -> 4+4+16=24; sum 58
    # 12 * L(1) * H(2) * Dh(8) * 58 = 11136, causal half = 5568
    assert packed_attention_flops([[3, 5], [2, 2, 4]], 1, 2, 8) == 5568
    # masking with two 4k documents in an 8k sample charges half of the single-document term
    one = packed_attention_flops([[8192]], 32, 32, 128)
    two = packed_attention_flops([[4096, 4096]], 32, 32, 128)
    assert two * 2 == one


def test_hfu_factor_per_recompute_mode():
    assert hfu_flops_factor("none", 32) == 1.0
    assert hfu_flops_factor("full", 32) == 8.0 / 6.0
    # every 2nd of 4 layers: layers 0 and 2 recomputed -> 1 + (2/6) * 2/4
    assert abs(hfu_flops_factor("every_k", 4, 2) - (1 + 1 / 6)) < 1e-12
    assert hfu_flops_factor("selective", 32) == 1.0


def test_every_peak_entry_has_a_source():
    from ascendops_trainer.metrics import PEAK_SOURCES, PEAK_TABLE, PEAK_TFLOPS_BF16, peak_source_for, peak_tflops_for

    assert {k for k, _ in PEAK_TFLOPS_BF16} == set(PEAK_SOURCES) == {k for k, _, _ in PEAK_TABLE}
    for name, _, source in PEAK_TABLE:
        assert "datasheet" in source or "vendor facts" in source, (name, source)
        assert "estimate" not in source.lower(), (name, source)
    assert "H100 SXM" in peak_source_for("NVIDIA H100 80GB HBM3")
    assert peak_tflops_for("Some Unknown Accelerator") is None
    assert peak_source_for("Some Unknown Accelerator") is None


def test_peak_sources_arithmetic_is_right():
    """Where a source works a figure out as cores x FLOP per clock x clock (or as half the datasheet's
    with-sparsity figure), the arithmetic gives the table's figure; where it says the figure is NOT
    reproduced, it is not."""
    import re

    from ascendops_trainer.metrics import PEAK_TABLE

    checked = 0
    for name, tflops, source in PEAK_TABLE:
        m = re.search(r"(\d+) AI cores x (\d+) FLOP/clock x ([\d.]+) GHz = ([\d.]+)", source)
        if m:
            cores, per_clock, ghz, written = int(m[1]), int(m[2]), float(m[3]), float(m[4])
            computed = cores * per_clock * ghz / 1000
            assert round(computed, 1) == written, (name, computed, written)
            assert per_clock == 16 * 16 * 16 * 2  # one cube: 16x16x16 multiply-adds per clock
            assert (round(computed, 1) == tflops) == ("NOT reproduced" not in source), (name, computed, tflops)
            checked += 1
        m = re.search(r"([\d,]+) TFLOPS with sparsity, (\d+) dense", source)
        if m:
            sparse, dense = float(m[1].replace(",", "")), float(m[2])
            assert dense == tflops and abs(sparse / 2 - dense) < 1, (name, sparse, dense)
            checked += 1
    assert checked == len(PEAK_TABLE) - 1  # all but A100 (its datasheet gives the dense figure itself)
