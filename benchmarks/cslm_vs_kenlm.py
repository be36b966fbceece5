"""A CSLM against the system's KenLM n-gram model on the same tokens, and their interpolation.

Every word and ``</s>`` of each line of DEV and TEST is scored by both models (``<s>`` is not).
Words outside the CSLM's shortlist are treated two ways, both fair to both models:

- **in-shortlist**: only the tokens inside the CSLM's shortlist count, for both models (KenLM's
  own OOVs are then left out too: they are all outside the shortlist);
- **unk-class**: every token counts; outside the shortlist both models give the probability of
  the same class, "a word outside the shortlist": the CSLM its ``<unk>``, KenLM the sum of
  p(w | history) over its words outside the shortlist (the corpus's words it knows) plus its ``<unk>``.

KenLM's own figure (every token, its ``<unk>`` for its OOVs) is printed for reference: not
comparable, since the two models' unknown words differ. The interpolation
λ·p_CSLM + (1 − λ)·p_KenLM takes the λ (step 0.01) that is best on DEV and is measured on TEST.
The CSLM's log Z (mean, spread) says whether Moses' NeuralLM, which skips the normaliser, reads
it right. Needs the ``kenlm`` module (``pip install kenlm``).

    python benchmarks/cslm_vs_kenlm.py lm/best.pt ../shared/data/tatoeba-moses-en-fr/system/lm.fr.trie.kenlm \\
        --corpus ../shared/data/tatoeba-moses-en-fr/train.tok.fr.gz \\
        --dev ../shared/data/tatoeba-moses-en-fr/dev.tok.fr --test ../shared/data/tatoeba-moses-en-fr/test.tok.fr
"""
from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass

import kenlm
import numpy as np
import torch

from mosesrnn.cslm.data import BOS, ngrams
from mosesrnn.cslm.model_file import load_cslm
from mosesrnn.cslm.scoring import position_scores
from mosesrnn.io.compressed import open_input
from mosesrnn.text.vocab import UNK_ID

LN10 = math.log(10)


@dataclass
class Tokens:
    """Per-token natural-log probabilities of one text under both models."""

    cslm: np.ndarray  # log p_CSLM, <unk> for a word outside the shortlist
    log_z: np.ndarray  # the CSLM's log normaliser at each position
    inside: np.ndarray  # the token is in the shortlist (or </s>)
    kenlm: np.ndarray  # log p_KenLM of the token itself
    kenlm_oov: np.ndarray  # KenLM does not know the word
    kenlm_class: np.ndarray  # log p_KenLM of the token, or of the class outside the shortlist


def read_lines(path: str) -> list[str]:
    """The non-blank lines of a text file, gzip or not, stripped."""
    with open_input(path) as raw:
        return [text for text in (line.decode("utf-8").strip() for line in raw) if text]


def cslm_tokens(trained, lines: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log p, log Z, inside the shortlist) of every token of ``lines`` under the CSLM."""
    data = ngrams((trained.codec.ids(line) for line in lines), trained.model.config.order,
                  trained.codec.vocabulary.stoi[BOS])
    trained.model.eval()
    scores, log_z = position_scores(trained.model, data, 1024)
    return scores - log_z, log_z, data.tokens[data.positions] != UNK_ID


def kenlm_tokens(model: kenlm.Model, lines: list[str], shortlist: set[str], outside: list[str]):
    """(log p, OOV, log p of the token or its class outside the shortlist) under KenLM."""
    logp, oov, class_logp = [], [], []
    state, following, scratch = kenlm.State(), kenlm.State(), kenlm.State()
    for line in lines:
        model.BeginSentenceWrite(state)
        for word in line.split() + ["</s>"]:
            logp.append(model.BaseScore(state, word, following) * LN10)
            oov.append(word != "</s>" and word not in model)
            if word == "</s>" or word in shortlist:
                class_logp.append(logp[-1])
            else:
                mass = sum(10.0 ** model.BaseScore(state, other, scratch) for other in outside + ["<unk>"])
                class_logp.append(math.log(mass))
            state, following = following, state
    return np.array(logp), np.array(oov), np.array(class_logp)


def compared(tokens: Tokens, treatment: str) -> tuple[np.ndarray, np.ndarray]:
    """The CSLM's and KenLM's log-probabilities of the tokens that ``treatment`` compares."""
    if treatment == "in_shortlist":
        return tokens.cslm[tokens.inside], tokens.kenlm[tokens.inside]
    return tokens.cslm, tokens.kenlm_class


def perplexity(log_p: np.ndarray) -> float:
    """exp of the mean negative log-probability."""
    return math.exp(-float(np.mean(log_p)))


def mixture(cslm: np.ndarray, ngram: np.ndarray, weight: float) -> np.ndarray:
    """log(λ e^cslm + (1 − λ) e^ngram), token by token."""
    if weight in (0.0, 1.0):
        return cslm if weight == 1.0 else ngram
    return np.logaddexp(math.log(weight) + cslm, math.log1p(-weight) + ngram)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cslm", help="the CSLM's model file (best.pt)")
    parser.add_argument("kenlm", help="the system's KenLM model (ARPA or binary)")
    parser.add_argument("--corpus", required=True, help="the LM's training text: KenLM's words, for the unk class")
    parser.add_argument("--dev", required=True, help="tokenised dev text: tunes the interpolation weight")
    parser.add_argument("--test", required=True, help="tokenised test text")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    trained, ngram_model = load_cslm(args.cslm), kenlm.Model(args.kenlm)
    shortlist = set(trained.codec.vocabulary.itos)
    known = {word for line in read_lines(args.corpus) for word in line.split()}
    outside = sorted(word for word in known if word in ngram_model and word not in shortlist)
    sets = {}
    for name, path in (("dev", args.dev), ("test", args.test)):
        lines = read_lines(path)
        sets[name] = Tokens(*cslm_tokens(trained, lines), *kenlm_tokens(ngram_model, lines, shortlist, outside))
        if sets[name].kenlm_oov[sets[name].inside].any():
            raise SystemExit(f"{path}: a word KenLM does not know is inside the CSLM's shortlist")
    report = {"cslm": args.cslm, "kenlm": args.kenlm, "shortlist": len(shortlist)}
    for name, tokens in sets.items():
        inside = tokens.inside
        report[name] = {
            "tokens": int(len(tokens.cslm)), "outside_shortlist": int((~inside).sum()),
            "kenlm_oov": int(tokens.kenlm_oov.sum()),
            "in_shortlist": {"cslm": perplexity(tokens.cslm[inside]), "kenlm": perplexity(tokens.kenlm[inside])},
            "unk_class": {"cslm": perplexity(tokens.cslm), "kenlm": perplexity(tokens.kenlm_class)},
            "kenlm_own_oov_treatment": perplexity(tokens.kenlm),
            "log_z": {"mean": float(tokens.log_z.mean()), "std": float(tokens.log_z.std()),
                      "share_within_0.5": float((np.abs(tokens.log_z) <= 0.5).mean())}}
    weights = np.round(np.arange(0, 1.0001, 0.01), 2)
    for treatment in ("in_shortlist", "unk_class"):
        tuning, held_out = (compared(sets[name], treatment) for name in ("dev", "test"))
        weight = float(min(weights, key=lambda w: perplexity(mixture(*tuning, w))))
        report[f"interpolation_{treatment}"] = {"weight_of_cslm": weight,
                                                "test": perplexity(mixture(*held_out, weight))}
    test = report["test"]
    print(f"test set, {test['tokens']:,} tokens ({test['outside_shortlist']} outside the {len(shortlist):,}-word "
          f"shortlist, {test['kenlm_oov']} unknown to KenLM):")
    for treatment in ("in_shortlist", "unk_class"):
        mix = report[f"interpolation_{treatment}"]
        print(f"  {treatment:12}  CSLM {test[treatment]['cslm']:6.2f}   KenLM {test[treatment]['kenlm']:6.2f}   "
              f"interpolated {mix['test']:6.2f} (CSLM weight {mix['weight_of_cslm']:.2f}, tuned on dev)")
    print(f"  KenLM with its own <unk>: {test['kenlm_own_oov_treatment']:.2f} (not comparable)")
    print(f"  CSLM log Z: mean {test['log_z']['mean']:+.3f} ± {test['log_z']['std']:.3f}, "
          f"{100 * test['log_z']['share_within_0.5']:.1f}% of positions within ±0.5")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=1)


if __name__ == "__main__":
    main()
