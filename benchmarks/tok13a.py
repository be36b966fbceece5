"""Tokenise raw Tatoeba text with sacrebleu's 13a tokenizer and lowercase it (stand-in for Moses'
tokenizer.perl + lowercase.perl, which are not installed). Usage: tok13a.py IN OUT (.gz both ways)."""
import gzip
import sys

from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a


def _open(path, mode):
    return gzip.open(path, mode + "t", encoding="utf-8") if path.endswith(".gz") else open(path, mode, encoding="utf-8")


tok = Tokenizer13a()
with _open(sys.argv[1], "r") as fin, _open(sys.argv[2], "w") as fout:
    for line in fin:
        fout.write(tok(line.strip()).lower() + "\n")
