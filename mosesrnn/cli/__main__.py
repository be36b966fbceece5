"""``python -m mosesrnn.cli``."""
from . import run

run()
