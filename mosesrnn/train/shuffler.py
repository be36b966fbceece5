"""The order in which the training loop visits its examples."""
from __future__ import annotations

import numpy as np

from ..errors import MosesRNNError

__all__ = ["Shuffler"]


class Shuffler:
    """Minibatches of pair indices: a fresh permutation per epoch, seeded by (seed, epoch), so a
    run can resume at (epoch, position) without storing the order.

    With ``lengths`` and ``window`` > 0 (length bucketing), each window of ``window`` minibatches of
    the permutation is sorted by length and cut into minibatches, and the epoch's minibatches are
    then shuffled: batches of similar lengths, in random order (less padding in the encoder).
    """

    def __init__(self, size: int, batch_size: int, seed: int, epoch: int = 0, position: int = 0,
                 lengths: np.ndarray | None = None, window: int = 0):
        if size < 1 or batch_size < 1:
            raise MosesRNNError("need at least one pair and a positive batch size")
        self.size, self.batch_size, self.seed = size, batch_size, seed
        self.epoch, self.position = epoch, position
        self.lengths, self.window = (lengths, window) if lengths is not None and window > 0 else (None, 0)
        self._order_epoch, self._order, self._bounds = -1, np.empty(0, dtype=np.int64), None

    def order(self, epoch: int) -> np.ndarray:
        """The permutation of the pair indices used in ``epoch``."""
        if epoch != self._order_epoch:
            rng = np.random.default_rng([self.seed, epoch])
            order, self._bounds = rng.permutation(self.size), None
            if self.lengths is not None:
                span = self.window * self.batch_size
                order = np.concatenate([chunk[np.argsort(self.lengths[chunk], kind="stable")]
                                        for chunk in np.split(order, range(span, self.size, span))])
                batches = np.split(order, range(self.batch_size, self.size, self.batch_size))
                batches = [batches[i] for i in rng.permutation(len(batches))]
                order = np.concatenate(batches)
                self._bounds = np.r_[0, np.cumsum([len(batch) for batch in batches])]
            self._order, self._order_epoch = order, epoch
        return self._order

    def next_batch(self) -> np.ndarray:
        """The next ``batch_size`` indices (fewer at the end of an epoch), advancing the position."""
        if self.position >= self.size:
            self.epoch, self.position = self.epoch + 1, 0
        order = self.order(self.epoch)
        end = self.position + self.batch_size
        if self._bounds is not None:  # bucketed: the epoch's short minibatch may come anywhere
            end = int(self._bounds[np.searchsorted(self._bounds, self.position, side="right")])
        batch = order[self.position:end]
        self.position += len(batch)
        return batch
