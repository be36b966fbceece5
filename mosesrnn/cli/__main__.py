"""``python -m mosesrnn.cli``."""
from . import main

main()
