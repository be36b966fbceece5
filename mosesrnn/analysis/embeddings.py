"""Word embeddings e(x) and phrase representations c, their 2-D maps and cosine neighbours (C14 Sec. 4.4).

Words: rows of the encoder's embedding matrix e(x) for the ``n`` most frequent input words (ids 3..,
the shortlist is ordered by frequency). Phrases: the summary vector c the encoder gives each phrase
(:meth:`EncoderDecoder.encode`). Projections come from scikit-learn: PCA, and t-SNE (C14 used
Barnes-Hut t-SNE, van der Maaten 2013), seeded so that maps are reproducible.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ..encdec.batching import pad
from ..encdec.model_file import TrainedEncoderDecoder
from ..errors import MosesRNNError
from ..io.figures import save_png
from ..text.escapes import display_text
from ..text.vocab import RESERVED
from . import optional

__all__ = ["word_vectors", "phrase_vectors", "project", "neighbours", "PROJECTIONS", "plot_map"]

PROJECTIONS = ("pca", "tsne")


def word_vectors(trained: TrainedEncoderDecoder, n: int) -> tuple[list[str], np.ndarray]:
    """The ``n`` most frequent input words and their embeddings e(x), shape (n, E)."""
    embed = getattr(trained.model.encoder, "embed", None)
    if embed is None:
        raise MosesRNNError(f"the {trained.model.config.encoder} encoder has no word embedding matrix 'embed'")
    itos = trained.input_codec.vocabulary.itos
    ids = list(range(len(RESERVED), min(len(itos), len(RESERVED) + n)))
    return [itos[i] for i in ids], embed.weight.detach()[ids].float().cpu().numpy()


@torch.inference_mode()
def phrase_vectors(trained: TrainedEncoderDecoder, phrases: Sequence[str], batch_size: int = 256) -> np.ndarray:
    """The encoder's summary vector c of each (non-empty) phrase, shape (len(phrases), H)."""
    parts = []
    device = next(trained.model.parameters()).device
    for start in range(0, len(phrases), batch_size):
        src, lengths = pad([trained.input_codec.ids(p) for p in phrases[start:start + batch_size]])
        parts.append(trained.model.encode(src.to(device), lengths.to(device)).c.float().cpu())
    return torch.cat(parts).numpy()


def project(vectors: np.ndarray, method: str = "tsne", seed: int = 1) -> np.ndarray:
    """2-D coordinates of ``vectors`` (N, D) by PCA or t-SNE (scikit-learn), shape (N, 2)."""
    if method == "pca":
        return optional("sklearn.decomposition").PCA(n_components=2, random_state=seed).fit_transform(vectors)
    if method == "tsne":
        perplexity = min(30.0, max(2.0, (len(vectors) - 1) / 3))
        tsne = optional("sklearn.manifold").TSNE(n_components=2, init="pca", perplexity=perplexity, random_state=seed)
        return tsne.fit_transform(vectors)
    raise MosesRNNError(f"projection must be one of {', '.join(PROJECTIONS)}, not {method!r}")


def neighbours(labels: Sequence[str], vectors: np.ndarray, query: str, k: int = 5) -> list[tuple[str, float]]:
    """The ``k`` labels whose vectors are closest to ``query``'s by cosine, with the similarity."""
    if query not in labels:
        raise MosesRNNError(f"{query!r} is not among the embedded items")
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    index = list(labels).index(query)
    similarity = unit @ unit[index]  # (N,)
    similarity[index] = -np.inf
    order = np.argsort(-similarity, kind="stable")[:k]
    return [(labels[i], float(similarity[i])) for i in order]


def plot_map(points: np.ndarray, labels: Sequence[str], path: str, title: str, max_labels: int = 150) -> None:
    """A scatter of 2-D ``points`` with the first ``max_labels`` labels written next to theirs (PNG)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(10, 10), dpi=80)
    ax.scatter(points[:, 0], points[:, 1], s=4, alpha=0.5)
    for (x, y), label in zip(points[:max_labels], labels[:max_labels]):
        ax.annotate(display_text(label), (x, y), fontsize=7, alpha=0.8)
    ax.set_title(title)
    ax.set_xticks([])
    ax.set_yticks([])
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)
