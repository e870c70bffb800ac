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
    from ascendops_trainer.metrics import PEAK_SOURCES, PEAK_TFLOPS_BF16, peak_source_for, peak_tflops_for

    assert {k for k, _ in PEAK_TFLOPS_BF16} == set(PEAK_SOURCES)
    assert "datasheet" in peak_source_for("NVIDIA H100 80GB HBM3")
    assert peak_tflops_for("Some Unknown Accelerator") is None
    assert peak_source_for("Some Unknown Accelerator") is None
