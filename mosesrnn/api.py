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
exceptions: :class:`~mosesrnn.errors.MosesRNNError` for everything the caller can fix (a ValueError; its
kinds include :class:`~mosesrnn.formats.errors.FileLineError`, :class:`~mosesrnn.io.model_store.ModelFileError`
and :class:`~mosesrnn.io.locks.LockedError`), OSError, and :class:`~mosesrnn.io.job.Interrupted` (Ctrl-C or
SIGTERM during a job). Any other exception is a bug.
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

    Sources and targets are lists of texts tokenised as the model's training data (Moses words); the
    model's own codecs turn them into ids, so nothing else is needed. Made by :func:`load`.

    Attributes:
        trained: the model file's contents (:class:`~mosesrnn.encdec.model_file.TrainedEncoderDecoder`).
        device: the resolved device (``cpu``, ``cuda``, ``cuda:N``).
        dtype: the precision its matmuls run in (``fp32``, ``bf16``, ``int8``; ``auto`` resolved).
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
        """The log-probability of each pair: the values of ``mosesrnn score``'s rnn column, before its ``e^v``.

        Args:
            sources: the source texts.
            targets: the target texts, one a source.
            length_normalize: divide each log p by the tokens predicted (the target's, and EOS).
            batch_tokens: tokens a batch (the values do not depend on it).
            compile: run the recurrent steps compiled (``score --compile``, :mod:`mosesrnn.encdec.compiled`;
                the values move by float rounding).

        Returns:
            log p(target | source) of each pair in natural log, EOS included; for a ``target-to-source``
            model, p(source | target).

        Raises:
            MosesRNNError: ``sources`` and ``targets`` differ in length.
            TypeError: ``sources`` or ``targets`` is one string, not a list of texts.
        """
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
        """The log-probability of each token the model predicts for each pair, as CTranslate2's
        ``tokens_score`` and Marian's ``--word-scores`` give them.

        Args:
            sources: the source texts.
            targets: the target texts, one a source.
            batch_tokens: tokens a batch (the values do not depend on it).

        Returns:
            For each pair, log p of the target's tokens (words, or pieces of a subword model), then of EOS;
            their sum is :meth:`log_prob`'s value.

        Raises:
            MosesRNNError: ``sources`` and ``targets`` differ in length.
            TypeError: ``sources`` or ``targets`` is one string, not a list of texts.
        """
        sources, targets = _texts(sources, "sources"), _texts(targets, "targets")
        if len(sources) != len(targets):
            raise MosesRNNError(f"{len(sources)} sources but {len(targets)} targets")
        return self._scorer(batch_tokens, False).token_log_probs(
            [_Pair(source, target) for source, target in zip(sources, targets)])

    def translate(self, sources: Sequence[str], *, beam_size: int = 10, length_normalize: bool = False,
                  allow_unk: bool = False):
        """The best translation of each source by beam search (Cho et al. 2014b): ``mosesrnn translate``.

        Args:
            sources: the source texts.
            beam_size: hypotheses kept at each step.
            length_normalize: rank the finished hypotheses by log p per token.
            allow_unk: let the search produce ``<unk>``.

        Returns:
            One :class:`~mosesrnn.encdec.generate.Translation` (``.text``, ``.log_prob``, ``.score``) a source;
            an empty source gets an empty translation.
        """
        return [hyps[0] for hyps in self.nbest(sources, 1, beam_size=beam_size,
                                               length_normalize=length_normalize, allow_unk=allow_unk)]

    def nbest(self, sources: Sequence[str], n: int, *, beam_size: int = 10, length_normalize: bool = False,
              allow_unk: bool = False):
        """The ``n`` best translations of each source by beam search.

        Args:
            sources: the source texts.
            n: translations a source, at most ``beam_size``.
            beam_size: hypotheses kept at each step.
            length_normalize: rank the finished hypotheses by log p per token.
            allow_unk: let the search produce ``<unk>``.

        Returns:
            For each source, its translations (:class:`~mosesrnn.encdec.generate.Translation`), best first.

        Raises:
            MosesRNNError: ``n`` is above ``beam_size``.
        """
        if n > beam_size:
            raise MosesRNNError(f"n ({n}) must be at most the beam size ({beam_size})")
        return self._searcher.translate(_texts(sources, "sources"), beam_size=beam_size, nbest=n,
                                        length_normalize=length_normalize, exclude_unk=not allow_unk)

    def sample(self, sources: Sequence[str], num_samples: int = 50, *, top: int | None = 5, seed: int = 1):
        """Ancestral samples of each source, deduplicated and ranked by log p (C14 Table 3): ``mosesrnn sample``.

        Args:
            sources: the source texts.
            num_samples: samples drawn a source.
            top: the distinct samples kept a source (None: all).
            seed: the random seed (the same seed, the same samples).

        Returns:
            For each source, its distinct samples (:class:`~mosesrnn.encdec.generate.Translation`, ``.count``
            the times drawn), best first.
        """
        return self._searcher.sample(_texts(sources, "sources"), num_samples, top=top, seed=seed)


@declares(path=model_file(ENCODER_DECODER))
def load(path: str, device: str = "auto", dtype: str = "fp32") -> Model:
    """Load the model of a model file from ``mosesrnn train``.

    Args:
        path: the model file (``model/best.pt``).
        device: ``auto`` (a GPU if there is one), ``cpu``, ``cuda`` or ``cuda:N``.
        dtype: the precision of the matmuls: ``fp32``, ``bf16``, ``int8`` or ``auto``
            (:mod:`mosesrnn.runtime.precision`).

    Returns:
        The :class:`Model`, ready to score, translate and sample.

    Raises:
        ModelFileError: ``path`` is not a model file of an RNN Encoder–Decoder (missing, damaged, another
            program's, a CSLM's...), saying why; a :class:`~mosesrnn.errors.MosesRNNError`.
        MosesRNNError: ``device`` or ``dtype`` cannot be had (``cuda`` without a GPU, ``int8`` on a GPU).
    """
    from .encdec.model_file import load_encoder_decoder
    from .runtime.devices import resolve_device
    device = resolve_device(device)
    return Model(load_encoder_decoder(path, map_location=device), device, dtype)


@declares(table=input_file(".json"), output=SCORED_TABLE, features=FeatureOptions.declared_paths)
def score_table(table: str, output: str, features: FeatureOptions = FeatureOptions(), *, encoding: str = "utf-8",
                chunk_lines: int = 20000, shard: str = "1/1", resume: bool = True, checkpoint_every: int = 25,
                checkpoint_minutes: float = 5.0, workers: int | None = None,
                progress: Callable[[int, int, int | None], None] | None = None):
    """Append the feature columns of ``features`` to every line of a phrase table: ``mosesrnn score``.

    The options are those of ``mosesrnn score --help``. Torch's threads are the caller's again after it;
    warnings about the table (scored already, the other direction) go to the ``mosesrnn`` logger.

    Args:
        table: the phrase table (gzip or plain; ``-``: stdin).
        output: the scored table (``.gz``: gzip; ``-``: stdout); its sidecar ``OUTPUT.json`` is written beside it.
        features: the features and their settings.
        encoding: the table's text encoding (the output is UTF-8).
        chunk_lines: lines a chunk (the values do not depend on it).
        shard: ``I/N``: score the I-th of N parts, cut at source-phrase boundaries; ``auto``: from torchrun
            or Slurm.
        resume: continue an interrupted run of the same job from its ``.part`` file.
        checkpoint_every: chunks between two checkpoints of the ``.part`` file...
        checkpoint_minutes: ...or minutes, whichever comes first.
        workers: processes parsing and formatting; None: as many as the table's size and the cores repay
            (:func:`~mosesrnn.pipeline.workers.default_workers`); more than the cores are capped, with a
            warning. With workers and no ``features.threads``, the model gets the cores the workers leave.
        progress: called after each chunk with ``(lines done, bytes read, bytes in all or None)``.

    Returns:
        A :class:`~mosesrnn.pipeline.score.ScoreSummary` (``lines``, ``lines_per_second``, ``signature``...).

    Raises:
        MosesRNNError: a bad line of the table (:class:`~mosesrnn.formats.phrase_table.PhraseTableError`,
            naming the file and line), a model file that cannot serve (``ModelFileError``), a refused output
            or one another run is writing (``LockedError``), options that conflict, or a ``.part`` of
            another job.
        OSError: a file that cannot be read or written.
        Interrupted: Ctrl-C or SIGTERM; what was kept is in the message (the same call continues it).
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
    """Add the values of ``features`` to every hypothesis of a Moses n-best list: ``mosesrnn nbest``.

    Torch's threads are the caller's again after it.

    Args:
        nbest: the n-best list (Moses' format, gzip or plain).
        source: the source sentences, one a line, the list's sentence ids being their line numbers from 0.
        output: the list with the features' values added, each group named by its feature (or its label).
        features: the features and their settings (``labels`` renames their groups).
        word_scores: a file for the rnn model's log-probability of each token of each hypothesis (None: none).
        encoding: the files' text encoding.
        chunk_lines: hypotheses a chunk (the values do not depend on it).
        progress: called with the hypotheses done as the job goes.

    Returns:
        A :class:`~mosesrnn.pipeline.nbest.NbestSummary`.

    Raises:
        MosesRNNError: a bad line of the list or the sources (``NbestError``, naming the file and line), a
            model file that cannot serve, a refused output, or options that conflict.
        OSError: a file that cannot be read or written.
        Interrupted: Ctrl-C or SIGTERM.
    """
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
    """Keep each source phrase's best targets in a phrase table: ``mosesrnn prune``.

    The targets are ranked by the rnn column of a scored table (its sidecar says which), by score ``column``,
    or by the ``weights`` of a tuned moses.ini; give one of ``top``, ``margin`` and ``share``.

    Args:
        table: the phrase table (sorted by source phrase, as Moses writes it).
        output: the pruned table; its sidecar ``OUTPUT.json`` is written beside it.
        top: keep the K best targets of each source phrase.
        margin: keep the targets within this many nats of the best.
        share: keep this share of the table's lines, in (0, 1] (the margin that keeps it, found first).
        column: rank by this score column (0-based; 2 is p(e|f) in Moses' order p(f|e) lex(f|e) p(e|f)
            lex(e|f)).
        weights: rank by the weighted sum of the scores, with the weights of this tuned moses.ini.
        feature_name: the moses.ini's phrase-table feature whose weights to use, when several fit the table.
        reordering: the reordering table to prune along (its lines of the pairs kept).
        reordering_output: where the pruned reordering table goes (given with ``reordering``).
        encoding: the tables' text encoding.
        progress: called with the lines done as the job goes.

    Returns:
        A :class:`~mosesrnn.pipeline.prune.PruneSummary`.

    Raises:
        MosesRNNError: no or several of ``top``/``margin``/``share``, both ``column`` and ``weights``, no
            column to rank by, weights that do not fit the table, a bad line, or a refused output.
        OSError: a file that cannot be read or written.
        Interrupted: Ctrl-C or SIGTERM.
    """
    from .pipeline.prune import Selection, ranking_for, run_prune_job, write_pruned_sidecar
    ranking, selection = ranking_for(table, column, weights, feature_name, encoding), Selection(top, margin, share)
    summary = run_prune_job(table, output, ranking, selection, reordering=reordering,
                            reordering_output=reordering_output, encoding=encoding, progress=progress)
    write_pruned_sidecar(table, output, ranking, selection, summary)
    return summary
