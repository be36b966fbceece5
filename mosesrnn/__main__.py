"""``python -m mosesrnn``, e.g. ``torchrun --nproc-per-node 8 -m mosesrnn train ...``."""
from .entry import main

main()
