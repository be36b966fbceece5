"""Test BLEU of a real Moses system with and without mosesrnn's features: K MERT runs per variant.

The measurement behind README's "Does it help BLEU?" table. Needs a Moses build and the shared
Tatoeba system (../shared/data/tatoeba-moses-en-fr). For every ``--variant NAME=SCORE-OPTIONS``:

1. ``mosesrnn score`` the phrase table with those options (an empty right-hand side is the
   baseline: the table as it is),
2. ``mosesrnn moses-ini --absolute-paths`` points the system's moses.ini at it, with the default
   initial weights of the new columns,
3. ``mosesrnn mert-moses --runs K --test-src --test-ref`` tunes K times on the dev set and decodes
   the test set with each tuned moses.ini,

then prints one Markdown row per variant: test BLEU mean ± sample std over the runs, each run,
and the tuned weights of the new columns (L1-normalised over all weights, mean over the runs).

Every variant scores the same table: the system's, filtered to the phrases the (whole) dev and
test sentences can use (their n-grams up to --max-phrase-len words), which changes no translation
of those sentences (Moses looks up only the input's n-grams, and table-limit prunes per source
phrase) and spares scoring phrases no sentence uses. ``--dev-lines N`` tunes on the first N dev
sentences when the whole set does not fit the time (the number of runs is never cut). A variant
whose report exists is not run again, nor a scored table scored again: rerun the same command
after a crash (delete a variant's folder to redo it).

    python benchmarks/moses_bleu.py --moses-dir ~/mosesdecoder --work bleu-work --runs 3 \\
        --variant 'baseline=' \\
        --variant 'rnn,unk=-m small/best.pt --features rnn,unk' \\
        --variant 'rnn,rnn-rev,unk=-m small/best.pt --reverse-model small-rev/best.pt'
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from moses_integration.mert import corpus_bleu, mean_std
from moses_integration.moses_ini import read_weights

TATOEBA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "tatoeba-moses-en-fr"
MOSESRNN = [sys.executable, "-m", "mosesrnn.cli"]


def source_ngrams(paths: list[str], max_len: int) -> set[str]:
    """Every n-gram of up to ``max_len`` words of the lines of ``paths``: the source phrases Moses can look up."""
    grams = set()
    for path in paths:
        with open(path, encoding="utf-8") as stream:
            for line in stream:
                words = line.split()
                for i in range(len(words)):
                    grams.update(" ".join(words[i:j]) for j in range(i + 1, min(len(words), i + max_len) + 1))
    return grams


def filter_table(table: str, grams: set[str], output: str) -> int:
    """Copy the lines of ``table`` whose source phrase is in ``grams`` to ``output`` (gzip); return how many."""
    kept = 0
    with gzip.open(table, "rt", encoding="utf-8") as src, gzip.open(output + ".part", "wt", encoding="utf-8") as out:
        for line in src:
            if line[:line.index(" ||| ")] in grams:
                out.write(line)
                kept += 1
    os.replace(output + ".part", output)
    return kept


def run(command: list[str], log: Path) -> None:
    """Run a command, its output appended to ``log``; exit with its message if it fails."""
    print("+", shlex.join(command), file=sys.stderr, flush=True)
    with open(log, "a", encoding="utf-8") as out:
        if subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False).returncode:
            sys.exit(f"failed: {shlex.join(command)} (see {log})")


def first_lines(path: str, count: int | None, output: Path) -> str:
    """``output`` holding the first ``count`` lines of ``path`` (all of them for None)."""
    with open(path, encoding="utf-8") as stream:
        text = "".join(stream.readlines()[:count])
    if not output.exists() or output.read_text(encoding="utf-8") != text:  # a second run may be reading it
        output.write_text(text, encoding="utf-8")
    return str(output)


def new_weight_shares(ini: str, feature: str, added: int) -> list[float]:
    """The last ``added`` weights of ``feature`` in a tuned ini, divided by the sum of all |weights|."""
    weights = read_weights(ini)
    total = sum(abs(w) for values in weights.values() for w in values)
    return [w / total for w in weights[feature][-added:]] if added else []


def measure_variant(name: str, score_options: str, args, table: str, dev: tuple[str, str]) -> dict:
    """Score, write the ini, tune ``args.runs`` times, decode the test set; return the results."""
    folder = Path(args.work) / re.sub(r"[^\w.+-]+", "-", name.replace(",", "+"))  # Moses splits paths at spaces
    report = folder / "report.json"
    if report.exists():
        return json.loads(report.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "log.txt"
    started = time.time()
    columns: list[str] = []
    scored = table
    if score_options.strip():
        scored = str(folder / "table.gz")
        if not os.path.exists(scored + ".json"):  # scored and complete in an earlier run: kept
            run(MOSESRNN + ["score", table, *shlex.split(score_options), "--threads", str(args.threads),
                            "-q", "-o", scored], log)
        columns = json.loads(Path(scored + ".json").read_text())["appended_columns"]
    ini = str(folder / "moses.ini")
    system_ini = str(Path(args.system) / "moses.ini")
    if columns:
        run(MOSESRNN + ["moses-ini", system_ini, "--table", scored, "--features", ",".join(columns),
                        "--absolute-paths", "--relative-to", args.system, "-o", ini], log)
    else:
        run(MOSESRNN + ["moses-ini", system_ini, "--absolute-paths", "--relative-to", args.system, "-o", ini], log)
        point_at_table(ini, args.feature, scored)
    mert_dir = folder / "mert"
    shutil.rmtree(mert_dir, ignore_errors=True)
    run(MOSESRNN + ["mert-moses", dev[0], dev[1], ini, "--work-dir", str(mert_dir), "--runs", str(args.runs),
                    "--threads", str(args.threads), "--moses-bin", str(Path(args.moses_dir) / "bin"),
                    "--moses-scripts", str(Path(args.moses_dir) / "scripts"), "--test-src", args.test_src,
                    "--test-ref", args.test_ref, "--tokenize", "none"]
        + (["--maximum-iterations", str(args.maximum_iterations)] if args.maximum_iterations else []), log)
    runs = sorted(mert_dir.glob("run[0-9]*/"), key=lambda p: int(p.name[3:]))
    bleu = [corpus_bleu(str(r / "test.hyp"), args.test_ref, "none")[0] for r in runs]
    shares = [new_weight_shares(str(r / "moses.ini"), args.feature, len(columns)) for r in runs]
    result = {"variant": name, "score_options": score_options, "columns": columns, "bleu": bleu,
              "weight_shares": [statistics.mean(s[i] for s in shares) for i in range(len(columns))],
              "iterations": [len(list(r.glob("run*.moses.ini"))) for r in runs],
              "minutes": (time.time() - started) / 60}
    report.write_text(json.dumps(result, indent=1))
    return result


def point_at_table(ini: str, feature: str, table: str) -> None:
    """Make the ``path=`` of ``feature``'s line in ``ini`` read ``table`` (the baseline's filtered table)."""
    lines = Path(ini).read_text(encoding="utf-8").splitlines(keepends=True)
    for i, line in enumerate(lines):
        if f"name={feature} " in line + " ":
            lines[i] = re.sub(r"(?<=\spath=)\S+", table, line)
    Path(ini).write_text("".join(lines), encoding="utf-8")


def markdown(results: list[dict], signature_note: str) -> str:
    """One row per variant: test BLEU mean ± std, the runs, the new columns' weight shares."""
    rows = ["| variant | test BLEU (mean ± std) | runs | Δ vs first | new weights (share of L1) | iterations |",
            "|---|---|---|---|---|---|"]
    reference = statistics.mean(results[0]["bleu"])
    for result in results:
        mean, std = mean_std(result["bleu"])
        shares = ", ".join(f"{c} {s:+.3f}" for c, s in zip(result["columns"], result["weight_shares"])) or "-"
        rows.append(f"| {result['variant']} | {mean:.2f} ± {std or 0:.2f} | "
                    f"{', '.join(f'{b:.2f}' for b in result['bleu'])} | {mean - reference:+.2f} | {shares} | "
                    f"{', '.join(map(str, result['iterations']))} |")
    return "\n".join(rows) + f"\n\n{signature_note}"


def main() -> None:
    """Measure every variant in order, then print the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--moses-dir", required=True, help="a built mosesdecoder checkout (bin/, scripts/)")
    parser.add_argument("--system", default=str(TATOEBA / "system"), help="folder of the system's moses.ini")
    parser.add_argument("--table", default=str(TATOEBA / "phrase-table.gz"), help="its phrase table")
    parser.add_argument("--dev-src", default=str(TATOEBA / "dev.tok.en"))
    parser.add_argument("--dev-ref", default=str(TATOEBA / "dev.tok.fr"))
    parser.add_argument("--test-src", default=str(TATOEBA / "test.tok.en"))
    parser.add_argument("--test-ref", default=str(TATOEBA / "test.tok.fr"))
    parser.add_argument("--dev-lines", type=int, help="tune on the first N dev sentences (default: all)")
    parser.add_argument("--max-phrase-len", type=int, default=7, help="the table's longest source phrase")
    parser.add_argument("--feature", default="TranslationModel0", help="the phrase table's feature in moses.ini")
    parser.add_argument("--runs", type=int, default=3, help="MERT runs per variant")
    parser.add_argument("--maximum-iterations", type=int, help="mert-moses.pl's cap (default: its own, 25)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--work", required=True, help="working folder (rerun to continue)")
    parser.add_argument("--variant", action="append", required=True, metavar="NAME=SCORE-OPTIONS",
                        help="a system: mosesrnn score options, or nothing for the baseline")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    dev = (first_lines(args.dev_src, args.dev_lines, work / "dev.src"),
           first_lines(args.dev_ref, args.dev_lines, work / "dev.ref"))
    table = str(work / "table.gz")
    if not os.path.exists(table):
        kept = filter_table(args.table, source_ngrams([args.dev_src, args.test_src], args.max_phrase_len), table)
        print(f"{table}: {kept} lines of {args.table} usable by the dev and test sentences", file=sys.stderr)
    results = []
    for variant in args.variant:
        name, _, options = variant.partition("=")
        results.append(measure_variant(name, options, args, table, dev))
        print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    dev_size = sum(1 for _ in open(dev[0], encoding="utf-8"))
    print(markdown(results, f"sacreBLEU tok none on the lowercased tokenised test set ({args.test_src}); "
                            f"tuned on {dev_size} dev sentences, {args.runs} MERT runs per variant."))


if __name__ == "__main__":
    main()
