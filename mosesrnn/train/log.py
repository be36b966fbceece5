"""The training log: ``train.jsonl`` records and the loss curve drawn from them."""
from __future__ import annotations

import json

from ..errors import MosesRNNError
from ..formats.text_file import read_lines
from ..io.atomic import append_text, atomic_file
from ..io.figures import save_png

__all__ = ["TrainLog"]


class TrainLog:
    """``train.jsonl`` (one JSON object per event) and the loss-curve PNG redrawn from it."""

    def __init__(self, path: str, plot_path: str, fresh: bool, unit: str = "pair", writes: bool = True):
        self.path, self.plot_path, self.unit, self.writes = path, plot_path, unit, writes
        if writes and fresh:
            with atomic_file(path):
                pass  # a fresh run starts an empty log

    def write(self, event: str, **values) -> None:
        """Append one record ``{"event": event, **values}`` (nothing where ``writes`` is off: another
        process of the run writes the log)."""
        if self.writes:
            append_text(self.path, json.dumps({"event": event, **values}) + "\n")

    def validation(self, **values) -> None:
        """Append a validation record and redraw the plot."""
        self.write("valid", **values)
        if self.writes:
            self.plot()

    def _validations(self) -> list[dict]:
        """The log's validation records; a line that is not JSON (a damaged log) raises MosesRNNError naming it
        (``PATH:LINE:COLUMN``, as every reader of JSON does)."""
        records = []
        for line_no, text in enumerate(read_lines(self.path), start=1):
            if not text:
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as error:
                raise MosesRNNError(f"{self.path}:{line_no}:{error.colno}: not a training record "
                                    f"({error.msg})") from None
            if isinstance(record, dict) and record.get("event") == "valid":
                records.append(record)
        return records

    def plot(self) -> None:
        """Draw NLL per example (train, valid) and valid vs unigram perplexity against updates."""
        from matplotlib.figure import Figure
        records = self._validations()
        updates = [r["update"] for r in records]
        figure = Figure(figsize=(10, 4))
        nll, ppl = figure.subplots(1, 2)
        nll.plot(updates, [r["train_nll"] for r in records], label="train (mean since last validation)")
        nll.plot(updates, [r["valid_nll"] for r in records], label="validation")
        nll.set(xlabel="updates", ylabel=f"NLL per {self.unit} (nats)", title="loss")
        ppl.plot(updates, [r["valid_ppl"] for r in records], label="model")
        ppl.plot(updates, [r["unigram_ppl"] for r in records], "--", label="unigram baseline")
        ppl.set(xlabel="updates", ylabel="per-token perplexity", yscale="log", title="validation")
        for axes in (nll, ppl):
            axes.legend()
            axes.grid(alpha=0.3)
        figure.tight_layout()
        save_png(figure, self.plot_path)
