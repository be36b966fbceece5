"""The version of mosesrnn: written into model files, scored tables' signatures and ``--version``."""

__version__ = "0.3.0"
