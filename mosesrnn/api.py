"""mosesrnn as a library: load a model file and score, translate or sample; run the streaming jobs.

    import mosesrnn
    from mosesrnn import FeatureOptions

    model = mosesrnn.load("model/best.pt")
    model.log_prob(["the house"], ["la maison"])          # log p(target | source), EOS included
    model.translate(["the house"])[0].text                # beam search, beam 10
    mosesrnn.score_table("phrase-table.gz", "scored.gz", FeatureOptions(model="model/best.pt"))
    mosesrnn.score_nbest("dev.100best", "dev.tok.en", "dev.100best.rnn", FeatureOptions(model="sent/best.pt"))

The numbers are those of the command line: :meth:`Model.log_prob` computes the ``rnn`` column of
``mosesrnn score`` (the same batching, the same model code), and the jobs are the commands'
own, taking the same :class:`~mosesrnn.features.options.FeatureOptions` the commands build, with
the same care for files (each runs in a :class:`~mosesrnn.io.job.Job` declared by its arguments:
outputs written whole or not at all, never over an input, locked while written). Errors are
exceptions: ValueError (and its kinds: :class:`~mosesrnn.formats.errors.FileLineError`,
:class:`~mosesrnn.io.model_store.ModelFileError`, :class:`~mosesrnn.io.locks.LockedError`),
OSError, and :class:`~mosesrnn.io.job.Interrupted`.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Callable, Sequence

from .errors import MosesRNNError
from .features.options import FeatureOptions
from .io.job import declares
from .io.roles import input_file, model_file, output_file
from .models import ENCODER_DECODER
from .runtime.cpu import cpu_threads

__all__ = ["Model", "FeatureOptions", "load", "score_table", "score_nbest", "prune_table"]

log = logging.getLogger("mosesrnn")

#: What ``score_table`` writes beside its output: the sidecar, and while it runs the resumable part.
SCORED_TABLE = output_file(".json", ".part", ".progress.json")


def _texts(values: Sequence[str], what: str) -> list[str]:
    """``values`` as a list of texts; a single string is refused (it would be read as its characters)."""
    if isinstance(values, str):
        raise TypeError(f"{what} must be a list of texts, not one string: [{values[:40]!r}]")
    return list(values)


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
        from .encdec.generate import Searcher
        self._searcher = Searcher(trained, device=device, batch_size=batch_size, dtype=dtype)
        self.trained, self.device, self.dtype = trained, device, self._searcher.precision.name
        self._scorers: dict = {}

    @property
    def direction(self) -> str:
        """``source-to-target`` (scores p(target | source)) or ``target-to-source``."""
        return self.trained.direction

    @property
    def info(self) -> dict:
        """What the training recorded: updates, validation perplexity, data, ..."""
        return self.trained.info

    def log_prob(self, sources: Sequence[str], targets: Sequence[str], *, length_normalize: bool = False,
                 batch_tokens: int = 4096, compile: bool | str = False) -> list[float]:
        """log p(target | source) of each pair in natural log, EOS included (per predicted token with
        ``length_normalize``); for a ``target-to-source`` model p(source | target). The values of
        ``mosesrnn score``'s rnn column (before its ``e^v``). ``compile``: the recurrent steps compiled
        (``score --compile``, :mod:`mosesrnn.encdec.compiled`; the values move by float rounding)."""
        sources, targets = _texts(sources, "sources"), _texts(targets, "targets")
        if len(sources) != len(targets):
            raise MosesRNNError(f"{len(sources)} sources but {len(targets)} targets")
        return self._scorer(batch_tokens, length_normalize, compile).log_probs(
            [_Pair(source, target) for source, target in zip(sources, targets)])

    def _scorer(self, batch_tokens: int, length_normalize: bool, compile: bool | str = False):
        from .encdec.scoring import PairScorer
        key = (batch_tokens, length_normalize, compile)
        if key not in self._scorers:  # built once: an int8 model is quantised when built
            self._scorers[key] = PairScorer(self.trained, device=self.device, dtype=self.dtype,
                                            batch_tokens=batch_tokens, length_normalize=length_normalize,
                                            compile=compile)
        return self._scorers[key]

    def token_log_probs(self, sources: Sequence[str], targets: Sequence[str], *,
                        batch_tokens: int = 4096) -> list[list[float]]:
        """log p of each token the model predicts for each pair: the target's tokens (words, or pieces of a
        subword model), then EOS; their sum is :meth:`log_prob`. Per-token scores, as CTranslate2's
        ``tokens_score`` and Marian's ``--word-scores`` give them."""
        sources, targets = _texts(sources, "sources"), _texts(targets, "targets")
        if len(sources) != len(targets):
            raise MosesRNNError(f"{len(sources)} sources but {len(targets)} targets")
        return self._scorer(batch_tokens, False).token_log_probs(
            [_Pair(source, target) for source, target in zip(sources, targets)])

    def translate(self, sources: Sequence[str], *, beam_size: int = 10, length_normalize: bool = False,
                  allow_unk: bool = False):
        """The best translation of each source by beam search (Cho et al. 2014b), a
        :class:`~mosesrnn.encdec.generate.Translation` (``.text``, ``.log_prob``, ``.score``) each."""
        return [hyps[0] for hyps in self.nbest(sources, 1, beam_size=beam_size,
                                               length_normalize=length_normalize, allow_unk=allow_unk)]

    def nbest(self, sources: Sequence[str], n: int, *, beam_size: int = 10, length_normalize: bool = False,
              allow_unk: bool = False):
        """The ``n`` best translations (``n`` <= ``beam_size``) of each source, best first."""
        if n > beam_size:
            raise MosesRNNError(f"n ({n}) must be at most the beam size ({beam_size})")
        return self._searcher.translate(_texts(sources, "sources"), beam_size=beam_size, nbest=n,
                                        length_normalize=length_normalize, exclude_unk=not allow_unk)

    def sample(self, sources: Sequence[str], num_samples: int = 50, *, top: int | None = 5, seed: int = 1):
        """Ancestral samples of each source, deduplicated and ranked by log p (C14 Table 3)."""
        return self._searcher.sample(_texts(sources, "sources"), num_samples, top=top, seed=seed)


@declares(path=model_file(ENCODER_DECODER))
def load(path: str, device: str = "auto", dtype: str = "fp32") -> Model:
    """The model of a model file (``best.pt``), on ``device`` (``auto``: a GPU if there is one), running its
    matmuls in ``dtype`` (fp32, bf16, int8 or auto: see :mod:`mosesrnn.runtime.precision`)."""
    from .encdec.model_file import load_encoder_decoder
    from .runtime.devices import resolve_device
    device = resolve_device(device)
    return Model(load_encoder_decoder(path, map_location=device), device, dtype)


@declares(table=input_file(".json"), output=SCORED_TABLE, features=FeatureOptions.declared_paths)
def score_table(table: str, output: str, features: FeatureOptions = FeatureOptions(), *, encoding: str = "utf-8",
                chunk_lines: int = 20000, shard: str = "1/1", resume: bool = True, checkpoint_every: int = 25,
                checkpoint_minutes: float = 5.0, workers: int | None = None,
                progress: Callable[[int, int, int | None], None] | None = None):
    """``mosesrnn score``: append the feature columns of ``features`` to every line of a phrase table.

    The options are those of ``mosesrnn score --help`` (``workers`` None: as many as the table's size and the
    machine's cores repay, :func:`~mosesrnn.pipeline.workers.default_workers`; more than the cores are capped,
    with a warning; with workers and no ``threads`` the model gets the cores the workers leave; torch's threads
    are the caller's again after it). Returns a
    :class:`~mosesrnn.pipeline.score.ScoreSummary`; warnings about the table (scored already, the
    other direction) go to the ``mosesrnn`` logger.
    """
    from .features.selection import select_features
    from .io.compressed import estimated_text_size
    from .pipeline.score import run_score_job
    from .pipeline.shards import ShardSpec
    from .pipeline.workers import default_workers, worker_count
    shard_spec = ShardSpec.parse(shard)
    workers = (default_workers(None if table == "-" else estimated_text_size(table)) if workers is None
               else worker_count(workers))
    threads = features.threads
    if workers and threads is None:  # the workers' cores are not torch's
        threads = max(1, len(os.sched_getaffinity(0)) - workers)
    with cpu_threads(threads):
        return run_score_job(table, output, select_features(features, tables=True), encoding=encoding,
                             chunk_lines=chunk_lines, shard=shard_spec, resume=resume,
                             checkpoint_every=checkpoint_every, checkpoint_seconds=60 * checkpoint_minutes,
                             workers=workers, progress=progress)


@declares(nbest=input_file(), source=input_file(), output=output_file(), features=FeatureOptions.declared_paths,
          word_scores=output_file())
def score_nbest(nbest: str, source: str, output: str, features: FeatureOptions = FeatureOptions(), *,
                word_scores: str | None = None, encoding: str = "utf-8", chunk_lines: int = 20000,
                progress: Callable[[int], None] | None = None):
    """``mosesrnn nbest``: add the values of ``features`` to every hypothesis of a Moses n-best list whose
    source sentences are the lines of ``source`` (``word_scores``: a file for the rnn model's per-token scores).
    Returns a :class:`~mosesrnn.pipeline.nbest.NbestSummary`; torch's threads are the caller's again after it."""
    from .features.selection import select_features
    from .pipeline.nbest import run_nbest_job
    with cpu_threads(features.threads):
        return run_nbest_job(nbest, source, output, select_features(features), dict(features.labels),
                             word_scores=word_scores, chunk_lines=chunk_lines, encoding=encoding, progress=progress)


@declares(table=input_file(".json"), output=output_file(".json"), weights=input_file(), reordering=input_file(),
          reordering_output=output_file())
def prune_table(table: str, output: str, *, top: int | None = None, margin: float | None = None,
                share: float | None = None, column: int | None = None, weights: str | None = None,
                feature_name: str | None = None, reordering: str | None = None, reordering_output: str | None = None,
                encoding: str = "utf-8", progress: Callable[[int], None] | None = None):
    """``mosesrnn prune``: keep each source phrase's best targets (``top`` K, within ``margin`` nats of the
    best, or a ``share`` of the lines) by the rnn column of a scored table, by score ``column``, or by the
    ``weights`` of a tuned moses.ini (``feature_name``: which of its weight groups, when several fit the table);
    the reordering table along. Returns a :class:`~mosesrnn.pipeline.prune.PruneSummary`."""
    from .pipeline.prune import Selection, ranking_for, run_prune_job, write_pruned_sidecar
    ranking, selection = ranking_for(table, column, weights, feature_name, encoding), Selection(top, margin, share)
    summary = run_prune_job(table, output, ranking, selection, reordering=reordering,
                            reordering_output=reordering_output, encoding=encoding, progress=progress)
    write_pruned_sidecar(table, output, ranking, selection, summary)
    return summary
