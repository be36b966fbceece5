"""The Python API on the bundled example data: score pairs, translate, score a table.

    python examples/api_example.py examples/model/tatoeba-small.pt     # the shipped model

Every call is the library behind the commands: ``log_prob`` gives the values of `mosesrnn score`'s
rnn column, ``score_table`` is `mosesrnn score` itself (same files, same care).
"""
import gzip
import sys
import tempfile
from pathlib import Path

import mosesrnn

EXAMPLES = Path(__file__).parent


def main(model_path: str) -> None:
    model = mosesrnn.load(model_path, device="cpu")
    print(f"{model_path}: {model.direction}, {model.info.get('updates')} updates")

    # log p(target | source) of a few pairs of the phrase table, and the best of its targets
    with gzip.open(EXAMPLES / "phrase-table.gz", "rt", encoding="utf-8") as table:
        pairs = [line.split(" ||| ")[:2] for _, line in zip(range(5), table)]
    sources, targets = zip(*pairs)
    for source, target, log_p in zip(sources, targets, model.log_prob(sources, targets)):
        print(f"log p({target!r} | {source!r}) = {log_p:.3f}")

    # beam search on three test sentences
    test = (EXAMPLES / "test.tok.en").read_text(encoding="utf-8").splitlines()[:3]
    for source, best in zip(test, model.translate(test, beam_size=5)):
        print(f"{source}  ->  {best.text}  (log p {best.log_prob:.2f})")

    # the whole table, as `mosesrnn score` writes it
    with tempfile.TemporaryDirectory() as folder:
        output = str(Path(folder) / "scored.gz")
        features = mosesrnn.FeatureOptions(model=model_path, features="rnn,unk", device="cpu")
        summary = mosesrnn.score_table(str(EXAMPLES / "phrase-table.gz"), output, features)
        print(f"scored {summary.lines} lines ({summary.lines_per_second:.0f} lines/s): {summary.signature}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(EXAMPLES / "model" / "tatoeba-small.pt"))
