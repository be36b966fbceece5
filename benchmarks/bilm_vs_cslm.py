"""The joint model against the CSLM on the same held-out target tokens: what the source window buys.

Both models score every word and ``</s>`` of each held-out target sentence (``<s>`` is not), the
joint model given its history and the 2m+1 source words around the affiliated one (the sentence's
word alignment), the CSLM given its history alone. A word outside a model's shortlist is its
``<unk>`` class in both; the share of such tokens is printed beside each figure (the two shortlists
are the most frequent target words of nearly the same training text). Sentence pairs without any
alignment link are left out for both. Perplexities are exact (full softmax); log Z says how well
each self-normalises (Moses reads the raw scores).

    python benchmarks/bilm_vs_cslm.py bilm/best.pt cslm/best.pt heldout.en heldout.fr heldout.align [--unseen train.fr]
"""
from __future__ import annotations

import argparse
import json
import math

import numpy as np
import torch

from mosesrnn.bilm.data import aligned_sentences, examples
from mosesrnn.bilm.model_file import load_joint
from mosesrnn.cslm.data import BOS, ngrams
from mosesrnn.cslm.model_file import load_cslm
from mosesrnn.cslm.scoring import position_scores
from mosesrnn.formats.text_file import read_lines
from mosesrnn.text.vocab import UNK_ID


def measure(scores: np.ndarray, log_z: np.ndarray, unknown: np.ndarray) -> dict:
    """Perplexity per token, the share of <unk> tokens, and log Z's mean and spread."""
    nll = log_z - scores
    return {"tokens": len(nll), "perplexity": math.exp(nll.mean()), "unk_share": float(unknown.mean()),
            "perplexity_known": math.exp(nll[~unknown].mean()), "log_z_mean": float(log_z.mean()),
            "log_z_std": float(log_z.std())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bilm")
    parser.add_argument("cslm")
    parser.add_argument("source")
    parser.add_argument("target")
    parser.add_argument("alignment")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--unseen", metavar="TRAIN_TARGET",
                        help="Leave out the held-out pairs whose target sentence occurs in this training text (Tatoeba "
                             "repeats sentences: both models have seen those).")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    joint, lm = load_joint(args.bilm), load_cslm(args.cslm)
    pairs = [pair for pair in aligned_sentences(args.source, args.target, args.alignment) if any(pair[2])]
    if args.unseen:
        seen = {" ".join(line.split()) for line in read_lines(args.unseen)}
        pairs = [pair for pair in pairs if " ".join(pair[1]) not in seen]
    data = examples(pairs, joint.vocabulary, joint.source_window, joint.order)
    scores, log_z = position_scores(joint.network, data, 1024)
    results = {"joint model": measure(scores, log_z, data.targets() == 0)}
    sentences = [" ".join(trg) for _, trg, _ in pairs]
    grams = ngrams((lm.codec.ids(text) for text in sentences), lm.model.config.order, lm.codec.vocabulary.stoi[BOS])
    scores, log_z = position_scores(lm.model, grams, 1024)
    results["CSLM"] = measure(scores, log_z, grams.targets() == UNK_ID)
    print(f"{len(pairs)} sentence pairs, {len(data)} target tokens (words and </s>)")
    print("| model | perplexity | over in-shortlist tokens | <unk> share | log Z |")
    print("|---|---|---|---|---|")
    for name, row in results.items():
        print(f"| {name} | {row['perplexity']:.2f} | {row['perplexity_known']:.2f} | {100 * row['unk_share']:.1f}% | "
              f"{row['log_z_mean']:+.3f} ± {row['log_z_std']:.3f} |")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
