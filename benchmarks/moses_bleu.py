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
a paired significance test against the first variant (sacreBLEU's approximate randomisation,
10,000 samples, between the median runs; and how many of the K x K run pairs differ the same way
at p < 0.05), the tuned weights of the new columns (L1-normalised over all weights, mean over the
runs), and the decoding speed of the test set (sentences/s, Moses' own per-sentence times).

A variant's options may also hold ``--cslm NPLM`` (and ``--cslm-weight W``): the CSLM inside the
decoder, a NeuralLM feature added by ``mosesrnn moses-ini --cslm`` (Moses built --with-nplm).
``--nbest-variant NAME=BASE:NBEST-OPTIONS`` rescores instead: each tuned ini of the variant BASE
decodes 100-best lists of dev and test, ``mosesrnn nbest NBEST-OPTIONS`` adds the features,
``mosesrnn mert`` tunes on the dev lists (from the tuned weights), ``mosesrnn rerank`` picks the
test translations.

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
        --variant 'rnn,rnn-rev,unk=-m small/best.pt --reverse-model small-rev/best.pt' \\
        --variant '+CSLM=--cslm lm.nplm' --nbest-variant '+CSLM n-best=baseline:--lm lm/best.pt'
"""
from __future__ import annotations

import argparse
import gzip
import json
import math
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


def new_weight_shares(ini: str, feature: str, added: int, neural_lm: bool = False) -> list[float]:
    """The last ``added`` weights of ``feature`` (and the NeuralLM's) in a tuned ini, over the sum of |weights|."""
    weights = read_weights(ini)
    total = sum(abs(w) for values in weights.values() for w in values)
    shares = [w / total for w in weights[feature][-added:]] if added else []
    return shares + ([weights["NeuralLM0"][0] / total] if neural_lm else [])


def split_cslm(options: str) -> tuple[list[str], list[str]]:
    """(mosesrnn score options, mosesrnn moses-ini options): ``--cslm X`` and ``--cslm-weight W`` go to the ini."""
    words, score, ini = shlex.split(options), [], []
    while words:
        word = words.pop(0)
        (ini if word in ("--cslm", "--cslm-weight") else score).append(word)
        if word in ("--cslm", "--cslm-weight"):
            ini.append(str(Path(words.pop(0)).resolve()) if word == "--cslm" else words.pop(0))
    return score, ini


def decoding_speed(test_log: Path) -> float:
    """Sentences per second of a decode, from Moses' per-sentence 'Translation took X seconds total' lines."""
    times = [float(m) for m in re.findall(r"Translation took ([\d.]+) seconds total", test_log.read_text())]
    return len(times) / sum(times) if times and sum(times) else math.nan


def measure_variant(name: str, options: str, args, table: str, dev: tuple[str, str]) -> dict:
    """Score, write the ini, tune ``args.runs`` times, decode the test set; return the results."""
    folder = variant_folder(args, name)
    report = folder / "report.json"
    if report.exists():
        return json.loads(report.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "log.txt"
    started = time.time()
    score_options, ini_options = split_cslm(options)
    columns: list[str] = []
    scored = table
    if score_options:
        scored = str(folder / "table.gz")
        if not os.path.exists(scored + ".json"):  # scored and complete in an earlier run: kept
            run(MOSESRNN + ["score", table, *score_options, "--threads", str(args.threads), "-q", "-o", scored], log)
        columns = json.loads(Path(scored + ".json").read_text())["appended_columns"]
    ini = str(folder / "moses.ini")
    system_ini = str(Path(args.system) / "moses.ini")
    table_options = ["--table", scored, "--features", ",".join(columns)] if columns else []
    run(MOSESRNN + ["moses-ini", system_ini, *table_options, *ini_options, "--absolute-paths", "--relative-to",
                    args.system, "-o", ini], log)
    if not columns:
        point_at_table(ini, args.feature, scored)
    mert_dir = folder / "mert"
    shutil.rmtree(mert_dir, ignore_errors=True)
    run(MOSESRNN + ["mert-moses", dev[0], dev[1], ini, "--work-dir", str(mert_dir), "--runs", str(args.runs),
                    "--threads", str(args.threads), "--moses-bin", str(Path(args.moses_dir) / "bin"),
                    "--moses-scripts", str(Path(args.moses_dir) / "scripts"), "--test-src", args.test_src,
                    "--test-ref", args.test_ref, "--tokenize", "none"]
        + (["--maximum-iterations", str(args.maximum_iterations)] if args.maximum_iterations else []), log)
    runs = sorted(mert_dir.glob("run[0-9]*/"), key=lambda p: int(p.name[3:]))
    added = len(columns) + bool(ini_options)
    shares = [new_weight_shares(str(r / "moses.ini"), args.feature, len(columns), bool(ini_options)) for r in runs]
    result = {"variant": name, "options": options, "columns": columns + (["cslm"] if ini_options else []),
              "hypotheses": [str(r / "test.hyp") for r in runs],
              "bleu": [corpus_bleu(str(r / "test.hyp"), args.test_ref, "none")[0] for r in runs],
              "weight_shares": [statistics.mean(s[i] for s in shares) for i in range(added)],
              "iterations": [len(list(r.glob("run*.moses.ini"))) for r in runs],
              "sentences_per_second": statistics.mean(decoding_speed(Path(str(r) + ".test.log")) for r in runs),
              "minutes": (time.time() - started) / 60}
    report.write_text(json.dumps(result, indent=1))
    return result


def variant_folder(args, name: str) -> Path:
    """The variant's working folder (no spaces: Moses splits paths at them)."""
    return Path(args.work) / re.sub(r"[^\w.+-]+", "-", name.replace(",", "+"))


def measure_nbest_variant(name: str, spec: str, args, dev: tuple[str, str], results: dict) -> dict:
    """Rescore the 100-best lists of each tuned system of variant BASE with ``mosesrnn nbest OPTIONS``."""
    base, _, options = spec.partition(":")
    folder = variant_folder(args, name)
    report = folder / "report.json"
    if report.exists():
        return json.loads(report.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    log, started, moses = folder / "log.txt", time.time(), str(Path(args.moses_dir) / "bin" / "moses")
    hypotheses, iterations = [], []
    for k, tuned in enumerate(sorted((variant_folder(args, base) / "mert").glob("run[0-9]*/moses.ini")), start=1):
        lists = {}
        for part, source in (("dev", dev[0]), ("test", args.test_src)):
            nbest = folder / f"run{k}.{part}.100best"
            if not nbest.exists():
                run_to(nbest, [moses, "-f", str(tuned), "-threads", str(args.threads), "-input-file", source,
                               "-n-best-list", str(nbest) + ".part", "100"], log)
            lists[part] = folder / f"run{k}.{part}.100best.rescored.gz"
            run(MOSESRNN + ["nbest", str(nbest), "--source", source, *shlex.split(options), "--threads",
                            str(args.threads), "-q", "-o", str(lists[part])], log)
        weights = folder / f"run{k}.weights"
        run(MOSESRNN + ["mert", str(lists["dev"]), "--refs", dev[1], "--init", str(tuned), "--seed", str(k),
                        "-o", str(weights)], log)
        hypotheses.append(str(folder / f"run{k}.test.hyp"))
        run(MOSESRNN + ["rerank", str(lists["test"]), "--weights", str(weights), "-o", hypotheses[-1]], log)
        iterations.append(1)
    result = {"variant": name, "options": spec, "columns": ["cslm (n-best)"], "hypotheses": hypotheses,
              "bleu": [corpus_bleu(h, args.test_ref, "none")[0] for h in hypotheses], "weight_shares": [],
              "iterations": iterations, "sentences_per_second": math.nan, "minutes": (time.time() - started) / 60}
    report.write_text(json.dumps(result, indent=1))
    return result


def run_to(output: Path, command: list[str], log: Path) -> None:
    """Run a Moses command that writes ``output`` + '.part', then give the output its name."""
    run(command, log)
    os.replace(str(output) + ".part", output)


def significance(result: dict, baseline: dict, references: list[str]) -> tuple[float, int]:
    """p-value of sacreBLEU's paired approximate randomisation between the median runs, and how many run
    pairs differ in the same direction at p < 0.05."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    def read(path: str) -> list[str]:
        return Path(path).read_text(encoding="utf-8").splitlines()

    def median(entry: dict) -> str:
        return entry["hypotheses"][sorted(range(len(entry["bleu"])), key=entry["bleu"].__getitem__)[
            len(entry["bleu"]) // 2]]

    def test(ours: str, theirs: str, samples: int) -> tuple[float, float]:
        named = [("baseline", read(theirs)), ("system", read(ours))]
        _, scores = PairedTest(named, {"BLEU": BLEU(tokenize="none")}, [references], "ar", samples)()
        base, system = scores["BLEU"]
        return system.score - base.score, system.p_value

    difference, p_value = test(median(result), median(baseline), 10000)
    agreeing = sum(1 for ours in result["hypotheses"] for theirs in baseline["hypotheses"]
                   if (lambda d, p: p < 0.05 and (d > 0) == (difference > 0))(*test(ours, theirs, 1000)))
    return p_value, agreeing


def point_at_table(ini: str, feature: str, table: str) -> None:
    """Make the ``path=`` of ``feature``'s line in ``ini`` read ``table`` (the baseline's filtered table)."""
    lines = Path(ini).read_text(encoding="utf-8").splitlines(keepends=True)
    for i, line in enumerate(lines):
        if f"name={feature} " in line + " ":
            lines[i] = re.sub(r"(?<=\spath=)\S+", table, line)
    Path(ini).write_text("".join(lines), encoding="utf-8")


def markdown(results: list[dict], references: list[str], signature_note: str) -> str:
    """One row per variant: test BLEU mean ± std, the runs, Δ and significance against the first, the new
    columns' weight shares, iterations, decoding speed."""
    rows = ["| variant | test BLEU (mean ± std) | runs | Δ vs first | p (median runs) | run pairs agreeing "
            "| new weights (share of L1) | iterations | decoding (sent./s) |", "|---|---|---|---|---|---|---|---|---|"]
    reference = statistics.mean(results[0]["bleu"])
    for result in results:
        mean, std = mean_std(result["bleu"])
        shares = ", ".join(f"{c} {s:+.3f}" for c, s in zip(result["columns"], result["weight_shares"])) or "-"
        p_value, agreeing = significance(result, results[0], references) if result is not results[0] else (None, None)
        pairs = len(result["bleu"]) * len(results[0]["bleu"])
        speed = result["sentences_per_second"]
        rows.append(f"| {result['variant']} | {mean:.2f} ± {std or 0:.2f} | "
                    f"{', '.join(f'{b:.2f}' for b in result['bleu'])} | {mean - reference:+.2f} | "
                    f"{'-' if p_value is None else f'{p_value:.4f}'} | "
                    f"{'-' if agreeing is None else f'{agreeing} of {pairs}'} | {shares} | "
                    f"{', '.join(map(str, result['iterations']))} | {'-' if math.isnan(speed) else f'{speed:.1f}'} |")
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
                        help="a system: mosesrnn score options (and --cslm NPLM), or nothing for the baseline")
    parser.add_argument("--nbest-variant", action="append", default=[], metavar="NAME=BASE:NBEST-OPTIONS",
                        help="rescoring of variant BASE's 100-best lists with mosesrnn nbest options")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    dev = (first_lines(args.dev_src, args.dev_lines, work / "dev.src"),
           first_lines(args.dev_ref, args.dev_lines, work / "dev.ref"))
    table = str(work / "table.gz")
    if not os.path.exists(table):
        kept = filter_table(args.table, source_ngrams([args.dev_src, args.test_src], args.max_phrase_len), table)
        print(f"{table}: {kept} lines of {args.table} usable by the dev and test sentences", file=sys.stderr)
    results = {}
    for variant in args.variant:
        name, _, options = variant.partition("=")
        results[name] = measure_variant(name, options, args, table, dev)
        print(json.dumps(results[name]), file=sys.stderr, flush=True)
    for variant in args.nbest_variant:
        name, _, spec = variant.partition("=")
        results[name] = measure_nbest_variant(name, spec, args, dev, results)
        print(json.dumps(results[name]), file=sys.stderr, flush=True)
    dev_size = sum(1 for _ in open(dev[0], encoding="utf-8"))
    references = Path(args.test_ref).read_text(encoding="utf-8").splitlines()
    print(markdown(list(results.values()), references,
                   f"sacreBLEU tok none on the lowercased tokenised test set ({args.test_src}); tuned on {dev_size} "
                   f"dev sentences, {args.runs} MERT runs per variant; p: paired approximate randomisation."))


if __name__ == "__main__":
    main()
