"""Models the end-to-end rows need: parameter counts against the published totals."""

from __future__ import annotations

import pytest

from roofline.model import memory
from roofline.specs import load_model

PUBLISHED = {
    # Hugging Face safetensors metadata ("Model size") of meta-llama/Llama-2-7b-hf: 6,738,415,616 params.
    "llama-2-7b": (6_738_415_616, 0.0),
    # meta-llama/Llama-2-70b-hf safetensors total: 68,976,648,192 params ("69B").
    "llama-2-70b": (68_976_648_192, 0.0),
    # meta-llama/Llama-3.1-8B safetensors total: 8,030,261,248 params ("8.03B").
    "llama-3.1-8b": (8_030_261_248, 0.0),
    # meta-llama/Llama-3.1-70B safetensors total: 70,553,706,496 params ("70.6B").
    "llama-3.1-70b": (70_553_706_496, 0.0),
    # meta-llama/Llama-3.3-70B-Instruct: the Llama 3.1 70B architecture, "70.6B" params.
    "llama-3.3-70b": (70.6e9, 0.001),
    # Qwen/Qwen3-32B model card: "Number of Parameters: 32.8B" (1 decimal place printed).
    "qwen3-32b": (32.8e9, 0.002),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_parameter_count_matches_the_published_total(name: str):
    total, rel = PUBLISHED[name]
    counts = memory.param_counts(load_model(name))
    assert counts.total == pytest.approx(total, rel=rel, abs=0 if rel else 0.5)


def test_qwen3_32b_non_embedding_count():
    # Qwen/Qwen3-32B model card: "Number of Parameters (Non-Embedding): 31.2B"; untied 151936 x 5120
    # embedding and LM head are the embedding part.
    counts = memory.param_counts(load_model("qwen3-32b"))
    assert counts.total - counts.embedding == pytest.approx(31.2e9, rel=0.002)


def test_llama_3_1_has_the_long_context_of_the_same_shape():
    old, new = load_model("llama-3-70b"), load_model("llama-3.1-70b")
    shape = ("num_layers", "d_model", "d_ff", "num_heads", "num_kv_heads", "head_dim", "vocab_size")
    assert [getattr(old, f) for f in shape] == [getattr(new, f) for f in shape]
    assert (old.max_position_embeddings, new.max_position_embeddings) == (8192, 131072)
