"""A choice among the stages of several tunings, made on the held-out dev half before test is read: the record that
``benchmarks/choose_on_dev.py --publish`` commits (``choice.json``) and its text (``choice.md``, rendered from it).

The ranking reads dev figures only: every stage of the tunings whose MERTs all tuned on the tuning half (the odd dev
lines; a report's ``selection["moses_tuned_on"]`` is ``tuning half``) and each single translation whose settings were
chosen on the odd lines or on nothing, by mean BLEU on the held-out half (the even lines); the first is chosen.
Stages and singles that saw the held-out half (``--allow-in-sample``) are listed below it, not ranked. Only then is
test read: the chosen stage's test BLEU, and its comparisons with the baseline, its control, the runner-up on dev
and each single (``after_choice``)::

    {"format": "mosesrnn-choice", "version": 2, "tunings": ["A", "B"], "held_out": 682,
     "ranking": [{"label": "A: rescored", "about": "...", "dev-half BLEU": "47.59 ± 0.33"}, ...],
     "chosen": "A: rescored", "not_ranked": [{"label": ..., "about": ..., "dev-half BLEU": ..., "why": ...}],
     "singles": {"nmt": {"name": "nmt", "chosen_on": "none", "dev-half BLEU": "43.74 (1 run)",
                         "test BLEU": "42.21 (1 run)", "dev": "hyp/nmt.dev.gz", "test": "hyp/nmt.test.gz"}},
     "after_choice": {"test BLEU": "48.78 ± 0.28", "comparisons": [
         {"against": "the baseline", "label": "A: baseline", "test BLEU": "44.65 ± 0.04", "delta": 4.13,
          "p_value": 0.0001, "pairs_agreeing": 9, "pairs": 9}, ...]}}

An older ``choice.json`` (no ``format``: the ranking printed with every row's test BLEU) holds ``tunings`` and
``singles`` alone.
"""
from __future__ import annotations

from .report_file import RouteReport

__all__ = ["FORMAT", "VERSION", "TUNING_HALF", "WHOLE_DEV", "SINGLE_CHOSEN_ON", "in_sample", "comparison_text",
           "choice_markdown"]

FORMAT, VERSION = "mosesrnn-choice", 2
#: What a report's ``selection["moses_tuned_on"]`` says: Moses' MERT tuned on the odd dev lines, or (absent: a report
#: of before) on the whole dev set.
TUNING_HALF, WHOLE_DEV = "tuning half", "whole dev"
#: Where a single translation's settings (a beam size...) were chosen, and why it is not ranked (None: it is).
SINGLE_CHOSEN_ON = {"odd": None, "none": None, "whole": "its settings were chosen on the whole dev set"}


def in_sample(report: RouteReport) -> str | None:
    """Why the held-out dev BLEU of ``report``'s stages is in-sample (None: it is held out): Moses' MERT, whose
    weights decode every n-best list, tuned on the whole dev set."""
    tuned_on = (report.selection or {}).get("moses_tuned_on", WHOLE_DEV)
    return None if tuned_on == TUNING_HALF else "tuned on the whole dev set"


def comparison_text(comparison: dict) -> str:
    """``+4.13 (p 0.0001, 9 of 9 run pairs at p < 0.05)``: a comparison of ``after_choice``."""
    return (f"{comparison['delta']:+.2f} (p {comparison['p_value']:.4f}, {comparison['pairs_agreeing']} of "
            f"{comparison['pairs']} run pairs at p < 0.05)")


def choice_markdown(record: dict) -> str:
    """``choice.md``: the ranking on the held-out dev half and the choice, then, labelled so, what test gives."""
    lines = [f"Ranked by BLEU on the {record['held_out']} held-out dev sentences (even lines; sacreBLEU tok:none), "
             f"best first: every stage of {', '.join(record['tunings'])} whose MERTs tuned on the other half, and "
             f"each single translation. The test set is not read for this ranking.", "",
             "| stage | dev-half BLEU (mean ± std) |", "|---|---|"]
    lines += [f"| {'**' + row['label'] + '**' if row['label'] == record['chosen'] else row['label']} | "
              f"{row['dev-half BLEU']} |" for row in record["ranking"]]
    chosen = record["ranking"][0]
    lines += ["", f"Chosen on dev: **{chosen['label']}** ({chosen['about']}), the highest held-out dev BLEU of the "
                  f"{len(record['ranking'])} ranked."]
    if record["not_ranked"]:
        lines += ["", "Not ranked: their held-out dev BLEU is in-sample (listed with --allow-in-sample).", "",
                  "| stage | dev-half BLEU (mean ± std) | why not ranked |", "|---|---|---|"]
        lines += [f"| {row['label']} | {row['dev-half BLEU']} | {row['why']} |" for row in record["not_ranked"]]
    after = record["after_choice"]
    lines += ["", "## Read after the choice", "",
              "Test BLEU, read once the choice above was made, of the chosen stage and of what it is compared with "
              "(paired approximate randomisation between the median runs, 10,000 samples; run pairs apart at "
              "p < 0.05). None of it chose anything.", "",
              f"- {chosen['label']} (chosen): test BLEU {after['test BLEU']}"]
    for comparison in after["comparisons"]:
        named = "" if comparison["label"] == comparison["against"] else f"{comparison['label']}, "
        lines.append(f"- against {comparison['against']} ({named}test BLEU {comparison['test BLEU']}): "
                     f"{comparison_text(comparison)}")
    return "\n".join(lines) + "\n"

