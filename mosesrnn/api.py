"""mosesrnn as a library: load a model file and score, translate or sample; run the streaming jobs.

    import mosesrnn

    model = mosesrnn.load("model/best.pt")
    model.log_prob(["the house"], ["la maison"])          # [-2.31]: log p(target | source), EOS included
    model.translate(["the house"])[0].text                # 'la maison' (beam search, beam 10)
    mosesrnn.score_table("phrase-table.gz", "scored.gz", model="model/best.pt")
    mosesrnn.score_nbest("dev.100best", "dev.tok.en", "dev.100best.rnn", model="sent-model/best.pt")

The numbers are those of the command line: :meth:`Model.log_prob` computes the ``rnn`` column of
``mosesrnn score`` (the same batching, the same model code), and the jobs are the commands'
own, with the same care for files (:class:`~mosesrnn.job.Job`: outputs written whole or not at
all, never over an input, locked while written). Errors are exceptions: ValueError (and its
kinds: :class:`~mosesrnn.formats.errors.FileLineError`, :class:`~mosesrnn.models.model_file.ModelFileError`,
:class:`~mosesrnn.locks.LockedError`), OSError, and :class:`~mosesrnn.job.Interrupted`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Sequence

from .features.registry import FeatureOptions
from .features.selection import select_features
from .job import Job

__all__ = ["Model", "load", "score_table", "score_nbest"]

log = logging.getLogger("mosesrnn")


@dataclass(frozen=True)
class _Pair:
    source: str
    target: str


class Model:
    """A trained RNN Encoder–Decoder with its codecs, ready to score, translate and sample text.

    Sources and targets are text tokenised as the model's training data (Moses words); the
    model's own codecs turn them into ids, so nothing else is needed. Made by :func:`load`.
    """

    def __init__(self, trained, device: str, dtype: str = "fp32", batch_size: int = 32):
        from .generate import Searcher
        self._searcher = Searcher(trained, device=device, batch_size=batch_size, dtype=dtype)
        self.trained, self.device, self.dtype = trained, device, self._searcher.precision.name
        self._features: dict = {}

    @property
    def direction(self) -> str:
        """``source-to-target`` (scores p(target | source)) or ``target-to-source``."""
        return self.trained.direction

    @property
    def info(self) -> dict:
        """What the training recorded: updates, validation perplexity, data, ..."""
        return self.trained.info

    def log_prob(self, sources: Sequence[str], targets: Sequence[str], *, length_normalize: bool = False,
                 batch_tokens: int = 4096) -> list[float]:
        """log p(target | source) of each pair in natural log, EOS included (per predicted token with
        ``length_normalize``); for a ``target-to-source`` model p(source | target). The values of
        ``mosesrnn score``'s rnn column (before its ``e^v``)."""
        from .features.rnn import RNNFeature
        if len(sources) != len(targets):
            raise ValueError(f"{len(sources)} sources but {len(targets)} targets")
        key = (batch_tokens, length_normalize)
        if key not in self._features:  # built once: an int8 model is quantised when built
            self._features[key] = RNNFeature(self.trained, device=self.device, dtype=self.dtype,
                                             batch_tokens=batch_tokens, length_normalize=length_normalize)
        feature = self._features[key]
        return feature.values([_Pair(source, target) for source, target in zip(sources, targets)])

    def translate(self, sources: Sequence[str], *, beam_size: int = 10, length_normalize: bool = False,
                  allow_unk: bool = False):
        """The best translation of each source by beam search (Cho et al. 2014b), a
        :class:`~mosesrnn.generate.Translation` (``.text``, ``.log_prob``, ``.score``) each."""
        return [hyps[0] for hyps in self.nbest(sources, 1, beam_size=beam_size,
                                               length_normalize=length_normalize, allow_unk=allow_unk)]

    def nbest(self, sources: Sequence[str], n: int, *, beam_size: int = 10, length_normalize: bool = False,
              allow_unk: bool = False):
        """The ``n`` best translations (``n`` <= ``beam_size``) of each source, best first."""
        if n > beam_size:
            raise ValueError(f"n ({n}) must be at most the beam size ({beam_size})")
        return self._searcher.translate(list(sources), beam_size=beam_size, nbest=n,
                                        length_normalize=length_normalize, exclude_unk=not allow_unk)

    def sample(self, sources: Sequence[str], num_samples: int = 50, *, top: int | None = 5, seed: int = 1):
        """Ancestral samples of each source, deduplicated and ranked by log p (C14 Table 3)."""
        return self._searcher.sample(list(sources), num_samples, top=top, seed=seed)


def load(path: str, device: str = "auto", dtype: str = "fp32") -> Model:
    """The model of a model file (``best.pt``), on ``device`` (``auto``: a GPU if there is one), running its
    matmuls in ``dtype`` (fp32, bf16, int8 or auto: see :mod:`mosesrnn.models.precision`)."""
    from .devices import resolve_device
    from .models.model_file import load_trained_model
    device = resolve_device(device)
    return Model(load_trained_model(path, map_location=device), device, dtype)


def _feature_options(model, reverse_model, vocab, unk_side, direction, length_normalize, device, dtype,
                     batch_tokens, lm=None) -> FeatureOptions:
    from .devices import resolve_device
    return FeatureOptions(model=model, reverse_model=reverse_model, lm=lm, vocab=vocab, unk_side=unk_side,
                          direction=direction, device=resolve_device(device), dtype=dtype, batch_tokens=batch_tokens,
                          length_normalize=length_normalize)


def score_table(table: str, output: str, *, features: str | Sequence[str] | None = None, model: str | None = None,
                reverse_model: str | None = None, vocab: str | None = None, unk_side: str = "both",
                direction: str | None = None, length_normalize: bool = False, device: str = "auto",
                dtype: str = "fp32", batch_tokens: int = 4096, encoding: str = "utf-8", chunk_lines: int = 20000,
                shard: str = "1/1", resume: bool = False, checkpoint_every: int = 25,
                checkpoint_minutes: float = 5.0, progress: Callable[[int, int, int | None], None] | None = None):
    """``mosesrnn score``: append the feature columns to every line of a phrase table.

    ``features``: ``"rnn,unk"``, a list of names, or None for the defaults of the model files given.
    The options are those of ``mosesrnn score --help``. Returns a
    :class:`~mosesrnn.pipeline.score.ScoreSummary`; warnings about the table (scored already, the
    other direction) go to the ``mosesrnn`` logger.
    """
    from .pipeline.score import score_table as run
    from .pipeline.shards import ShardSpec
    from .pipeline.table_checks import table_warnings
    shard_spec = ShardSpec.parse(shard)
    options = _feature_options(model, reverse_model, vocab, unk_side, direction, length_normalize, device, dtype,
                               batch_tokens)
    with Job(inputs=[table, model, reverse_model, vocab], outputs=[output]):
        columns = select_features(features, options, tables=True)
        if table != "-":
            for warning in table_warnings(table, encoding, options.trained_model("rnn") if model else None):
                log.warning("warning: %s", warning)
        return run(table, output, columns, encoding=encoding, chunk_lines=chunk_lines, shard=shard_spec,
                   resume=resume, checkpoint_every=checkpoint_every, checkpoint_seconds=60 * checkpoint_minutes,
                   progress=progress)


def score_nbest(nbest: str, source: str, output: str, *, features: str | Sequence[str] | None = None,
                model: str | None = None, reverse_model: str | None = None, lm: str | None = None,
                vocab: str | None = None,
                unk_side: str = "both", direction: str | None = None, length_normalize: bool = False,
                device: str = "auto", dtype: str = "fp32", batch_tokens: int = 4096, encoding: str = "utf-8",
                chunk_lines: int = 20000, progress: Callable[[int], None] | None = None):
    """``mosesrnn nbest``: add the features' values to every hypothesis of a Moses n-best list whose
    source sentences are the lines of ``source`` (``lm``: a CSLM file, for the ``cslm`` feature).
    Returns a :class:`~mosesrnn.pipeline.nbest.NbestSummary`."""
    from .pipeline.nbest import score_nbest as run
    options = _feature_options(model, reverse_model, vocab, unk_side, direction, length_normalize, device, dtype,
                               batch_tokens, lm)
    with Job(inputs=[nbest, source, model, reverse_model, lm, vocab], outputs=[output]):
        return run(nbest, source, output, select_features(features, options), chunk_lines=chunk_lines,
                   encoding=encoding, progress=progress)
