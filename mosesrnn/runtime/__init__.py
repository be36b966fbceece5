"""Where and how the computation runs: devices, precisions, CPU flags, progress reporting.

The choices are listed here, without torch, so that options can offer them and ``--help`` stays fast.
"""

#: ``--device``: auto is cuda if a GPU is available, else cpu.
DEVICES = ("auto", "cpu", "cuda")
#: ``--dtype``: the precision of the matmuls when a model scores or searches (:mod:`mosesrnn.runtime.precision`).
DTYPES = ("fp32", "bf16", "int8", "auto")
