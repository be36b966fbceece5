"""BLEU and speed of beam search by beam size, with and without length normalisation (prints a table).

Translates SRC with a sentence-level model at each beam size, scores the 1-best against REF with
sacreBLEU (``--tokenize none``: SRC and REF are already tokenised the way the model was trained,
so BLEU is on those tokens), and prints sentences/s (search only; loading excluded). Also counts
how often the beam's best is the greedy hypothesis (beam search keeps greedy's as a candidate).

    flock /tmp/mosesrnn-heavy.lock python benchmarks/beam_bleu.py -m sent-model/best.pt \\
        --src test.13a.en --ref test.13a.fr --beams 1,5,10 --threads 1
"""
from __future__ import annotations

import argparse
import time

import sacrebleu
import torch

from mosesrnn.encdec.generate import Searcher
from mosesrnn.encdec.model_file import load_encoder_decoder


def read(path: str) -> list[str]:
    with open(path, encoding="utf-8") as stream:
        return [line.rstrip("\n") for line in stream]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-m", "--model", required=True)
    parser.add_argument("--src", required=True)
    parser.add_argument("--ref", required=True)
    parser.add_argument("--beams", default="1,5,10")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--limit", type=int, help="Only the first N sentences.")
    parser.add_argument("--save", help="Write each run's 1-best to SAVE.beamK[.norm].")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sources, refs = read(args.src)[:args.limit], read(args.ref)[:args.limit]
    searcher = Searcher(load_encoder_decoder(args.model), batch_size=args.batch_size)
    greedy = [t.text if t else "" for t in searcher.greedy(sources)]
    print(f"{len(sources)} sentences, model {args.model}, torch threads {args.threads}, batch {args.batch_size}")
    print("| beam | length-normalised | BLEU | sentences/s | 1-best = greedy |")
    print("| --- | --- | --- | --- | --- |")
    signature = None
    for beam in (int(b) for b in args.beams.split(",")):
        for normalise in (False, True) if beam > 1 else (False,):
            start = time.perf_counter()
            found = searcher.translate(sources, beam_size=beam, length_normalize=normalise)
            seconds = time.perf_counter() - start
            hyps = [h[0].text if h else "" for h in found]
            bleu = sacrebleu.metrics.BLEU(tokenize="none")
            score = bleu.corpus_score(hyps, [refs])
            signature = bleu.get_signature()
            same = sum(h == g for h, g in zip(hyps, greedy)) / len(hyps)
            print(f"| {beam} | {'yes' if normalise else 'no'} | {score.score:.2f} | {len(sources) / seconds:.1f} "
                  f"| {same:.0%} |", flush=True)
            if args.save:
                with open(f"{args.save}.beam{beam}{'.norm' if normalise else ''}", "w", encoding="utf-8") as out:
                    out.writelines(h + "\n" for h in hyps)
    print(f"sacreBLEU signature: {signature}")


if __name__ == "__main__":
    main()
