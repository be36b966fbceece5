"""The order in which the training loop visits its examples."""
from __future__ import annotations

import numpy as np

__all__ = ["Shuffler"]


class Shuffler:
    """Minibatches of pair indices: a fresh permutation per epoch, seeded by (seed, epoch), so a
    run can resume at (epoch, position) without storing the order."""

    def __init__(self, size: int, batch_size: int, seed: int, epoch: int = 0, position: int = 0):
        if size < 1 or batch_size < 1:
            raise ValueError("need at least one pair and a positive batch size")
        self.size, self.batch_size, self.seed = size, batch_size, seed
        self.epoch, self.position = epoch, position
        self._order_epoch, self._order = -1, np.empty(0, dtype=np.int64)

    def order(self, epoch: int) -> np.ndarray:
        """The permutation of the pair indices used in ``epoch``."""
        if epoch != self._order_epoch:
            self._order = np.random.default_rng([self.seed, epoch]).permutation(self.size)
            self._order_epoch = epoch
        return self._order

    def next_batch(self) -> np.ndarray:
        """The next ``batch_size`` indices (fewer at the end of an epoch), advancing the position."""
        if self.position >= self.size:
            self.epoch, self.position = self.epoch + 1, 0
        batch = self.order(self.epoch)[self.position:self.position + self.batch_size]
        self.position += len(batch)
        return batch
