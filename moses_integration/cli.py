"""Click commands ``moses-ini``, ``binarize``, ``mert-moses`` and ``mert-report``.

Each parses its options and calls one library function inside a :class:`~mosesrnn.job.Job`; the
``mosesrnn`` group turns the library's errors into one line on stderr and exit status 1.
Register them on a group with ``group.add_command(moses_ini)`` etc.
"""
from __future__ import annotations

import os

import click

from mosesrnn.cli.common import Command
from mosesrnn.job import Job

from .binarize import BINARY_FORMATS, FORMATS, binarize_table, binarized_path
from .ini_paths import write_absolute_paths
from .mert import BLEU_TOKENIZERS, MertOptions, tune
from .mert_report import apply_iteration, choose_iteration, format_tuning, read_tuning, tuning_dirs
from .moses_ini import update_moses_ini
from .neural_lm import write_with_neural_lm
from .tools import MosesToolError, format_command
from .weights import DEFAULT_WEIGHTS

__all__ = ["MosesCommand", "moses_ini", "binarize", "mert_moses", "mert_report"]


class MosesCommand(Command):
    """A mosesrnn command that runs Moses: a missing or failing Moses program is one line too."""

    user_errors = Command.user_errors + (MosesToolError,)


def _comma_list(ctx, param, value):
    """Split ``a,b`` into a tuple (None stays None)."""
    if value is None:
        return None
    items = tuple(item.strip() for item in value.split(",") if item.strip())
    if not items:
        raise click.BadParameter("give a comma-separated list", ctx, param)
    return items


def _float_list(ctx, param, value):
    """Split ``0.1,-0.1`` into a tuple of floats (None stays None)."""
    items = _comma_list(ctx, param, value)
    try:
        return None if items is None else tuple(float(item) for item in items)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a comma-separated list of numbers", ctx, param) from None


_DEFAULTS_TEXT = ", ".join(f"{name} {weight:+g}" for name, weight in DEFAULT_WEIGHTS.items())


@click.command("moses-ini", cls=MosesCommand)
@click.argument("ini", type=click.Path(exists=True, dir_okay=False))
@click.option("--table", type=click.Path(exists=True, dir_okay=False),
              help="The scored phrase table (text, usually .gz). Its first line must have exactly the new "
                   "num-features scores. Written to the ini as given (absolute with --absolute-paths): Moses "
                   "resolves a relative path against the directory it runs in.")
@click.option("--add", type=click.IntRange(min=1),
              help="How many score columns were appended (checked against --features/--weights).")
@click.option("--features", callback=_comma_list, metavar="NAMES",
              help=f"Names of the appended columns, in order, as given to `mosesrnn score --features` "
                   f"(default: read from TABLE.json, which `score` writes, else rnn,unk); they choose the "
                   f"default initial weights: {_DEFAULTS_TEXT}.")
@click.option("--weights", callback=_float_list, metavar="W1,W2",
              help="Initial weights of the appended columns, in order (overrides the defaults of "
                   "--features).")
@click.option("--feature", "feature_name", metavar="NAME",
              help="Which phrase-table feature to change, by its Moses name (e.g. TranslationModel0); "
                   "needed when the ini has several phrase tables.")
@click.option("--binary", metavar="PATH",
              help="For a PhraseDictionaryCompact or PhraseDictionaryOnDisk feature: the binarized table "
                   "to point at (default: what `binarize` writes, TABLE without .gz plus .minphr/.ondisk).")
@click.option("--absolute-paths", is_flag=True,
              help="Write every file path of the ini (each feature's path=, the legacy [ttable-file], "
                   "[lmodel-file], [distortion-file], [generation-file] lines) as an absolute path, as "
                   "mert-moses.pl needs; ${...} placeholders are kept. --table and --binary are taken from "
                   "the current directory.")
@click.option("--relative-to", type=click.Path(file_okay=False), metavar="DIR",
              help="With --absolute-paths: the directory the ini's relative paths are relative to (default: "
                   "the current directory, where Moses resolves them; often the ini's own folder).")
@click.option("--cslm", type=click.Path(exists=True, dir_okay=False), metavar="NPLM",
              help="Add the CSLM inside the decoder: a NeuralLM feature (Moses built --with-nplm) reading this NPLM "
                   "file from `mosesrnn lm export`, its order read from the file, and its weight.")
@click.option("--cslm-weight", default=0.1, show_default=True, type=float,
              help="The NeuralLM feature's initial weight (tune it with mert-moses).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The new moses.ini (written atomically; must differ from INI).")
def moses_ini(ini, table, add, features, weights, feature_name, binary, absolute_paths, relative_to, cslm,
              cslm_weight, output):
    """Point the phrase table of INI at a scored TABLE and add weights for its new columns; or (and)
    make every path of INI absolute.

    Raises the feature's num-features, appends the initial weights to its [weight] line (or to
    [weight-t] in the legacy format), extends tuneable-components, and leaves every other line
    untouched. The defaults start the new features small (the weights decide, before tuning,
    which table-limit translations survive) with the sign that helps: +0.1 rewards a higher RNN
    log-probability, -0.1 penalises each unknown word. With --cslm, a NeuralLM feature (the CSLM
    in the decoder) and its weight are added too.

    \b
    Example:
      mosesrnn moses-ini moses.ini --table $PWD/phrase-table.rnn.gz -o moses.rnn.ini
      mosesrnn moses-ini system/moses.ini --absolute-paths --relative-to system -o moses.abs.ini
      mosesrnn moses-ini moses.rnn.ini --cslm $PWD/lm.nplm -o moses.rnn.cslm.ini
    """
    _check_moses_ini_options(table, absolute_paths, relative_to, cslm,
                             dict(add=add, features=features, weights=weights, feature=feature_name, binary=binary))
    base = (relative_to or os.getcwd()) if absolute_paths else None
    changes = []
    with Job(inputs=[ini, table, cslm], outputs=[output]):
        if table is not None:
            update = update_moses_ini(ini, table, output, add, features, weights, feature_name, binary, base)
            changes = update.path_changes
        elif absolute_paths:
            changes = write_absolute_paths(ini, output, base)
        if cslm is not None:
            line = write_with_neural_lm(output if table or absolute_paths else ini, output, cslm, cslm_weight,
                                        absolute_paths)
    if table is not None:
        click.echo(f"{output}: {update.feature} ({update.type}, line {update.feature_line}) now reads "
                   f"{update.table_path} with num-features={update.new_num_features}; added weights "
                   f"{' '.join(repr(w) for w in update.weights)}", err=True)
    if cslm is not None:
        click.echo(f"{output}: added NeuralLM {line.name} (order {line.order}) reading {line.path}, weight "
                   f"{line.weight!r}; Moses must be built --with-nplm", err=True)
    if absolute_paths:
        _report_path_changes(output, changes, base)
    if table is not None and update.type in BINARY_FORMATS:
        click.echo(f"{update.type} reads the binarized table: build it with\n  mosesrnn binarize "
                   f"{table} --format {BINARY_FORMATS[update.type]} -o {update.table_path}", err=True)


def _check_moses_ini_options(table, absolute_paths, relative_to, cslm, table_options) -> None:
    if relative_to is not None and not absolute_paths:
        raise click.UsageError("--relative-to goes with --absolute-paths")
    if table is None:
        if not absolute_paths and cslm is None:
            raise click.UsageError("give --table (a scored phrase table to point at), --cslm, --absolute-paths, "
                                   "or several")
        given = [f"--{name}" for name, value in table_options.items() if value is not None]
        if given:
            raise click.UsageError(f"{', '.join(given)} only go with --table")


def _report_path_changes(output, changes, base) -> None:
    click.echo(f"{output}: {len(changes)} relative path(s) made absolute against {base}", err=True)
    for change in changes:
        click.echo(f"  line {change.line_no}: {change.old} -> {change.new}", err=True)
    missing = [change for change in changes if not change.exists]
    for change in missing:
        click.echo(f"warning: line {change.line_no}: nothing at {change.new}", err=True)
    if missing:
        click.echo("  (are the paths relative to another directory? name it with --relative-to)", err=True)


@click.command("binarize", cls=MosesCommand)
@click.argument("table", type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(list(FORMATS)), default="compact", show_default=True,
              help="compact: for PhraseDictionaryCompact (processPhraseTableMin writes file OUT.minphr); "
                   "ondisk: for PhraseDictionaryOnDisk (CreateOnDiskPt writes folder OUT).")
@click.option("-o", "--output", metavar="OUT",
              help="The binarized table, i.e. the path= for moses.ini (default: TABLE without .gz, plus "
                   ".minphr or .ondisk; .minphr is added to a compact OUT that lacks it).")
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True,
              help="Threads for processPhraseTableMin (CreateOnDiskPt has no such option).")
@click.option("--rankscore", type=click.IntRange(min=0), metavar="N",
              help="0-based index of the score p(e|f), by which translations are ranked: passed as "
                   "-rankscore N to processPhraseTableMin and as the sort index to CreateOnDiskPt. In a "
                   "standard table the scores are p(f|e) lex(f|e) p(e|f) lex(e|f) [phrase penalty], then "
                   "the appended ones (default: 2 with four scores or more, else 0).")
@click.option("--add-empty-alignment", is_flag=True,
              help="processPhraseTableMin needs a 4th field, the word alignment, on every line: binarize a "
                   "temporary copy (OUT.with-alignment.gz, removed afterwards) that adds an empty one where "
                   "it is missing, and pass -encoding None (PREnc, the default, codes target phrases through "
                   "their alignment and aborts on an empty one). Without it, such a table is refused before "
                   "anything runs.")
@click.option("--moses-bin", type=click.Path(file_okay=False),
              help="Folder with Moses' programs (default: $MOSES_BIN, then PATH).")
@click.option("--dry-run", is_flag=True, help="Print the command instead of running it.")
def binarize(table, fmt, output, threads, rankscore, add_empty_alignment, moses_bin, dry_run):
    """Rebuild the binarized form of a scored phrase TABLE with its new number of scores.

    The score count is read from the first line of TABLE, which is also checked for the fields
    the program needs. A failed or interrupted run removes its partial output.

    \b
    Example:
      mosesrnn binarize phrase-table.rnn.gz --format compact --threads 4 --moses-bin /opt/moses/bin
    """
    output = binarized_path(table, fmt, output)
    # an OnDisk table is a folder that CreateOnDiskPt rewrites: it is locked only while it is new
    declared = [] if dry_run or os.path.isdir(output) else [output]
    with Job(inputs=[table], outputs=declared):
        result = binarize_table(table, fmt, output, threads, moses_bin, dry_run, rankscore,
                                add_empty_alignment)
    if dry_run:
        if result.copy:
            click.echo(f"# first: {table} with an empty alignment field written to {result.copy} "
                       "(removed after the run)")
        click.echo(format_command(result.command))
    else:
        click.echo(f"wrote {result.output} ({result.num_scores} scores, ranked by score {result.rankscore})",
                   err=True)


@click.command("mert-moses", cls=MosesCommand)
@click.argument("dev_src", type=click.Path(dir_okay=False))
@click.argument("dev_ref", type=click.Path(dir_okay=False))
@click.argument("ini", type=click.Path(dir_okay=False))
@click.option("--work-dir", default="mert-work", show_default=True, type=click.Path(file_okay=False),
              help="Where the runs go (run1, run2, ...; baseline-run1, ...). Must be empty or absent.")
@click.option("--runs", type=click.IntRange(min=1), default=3, show_default=True,
              help="Tuning runs per system: MERT is unstable, Clark et al. (2011) recommend at least 3.")
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True,
              help="Threads for the decoder (--decoder-flags \"-threads N\", and when decoding the test "
                   "set) and for the optimiser (mert-moses.pl --threads N, given when N > 1).")
@click.option("--moses-bin", type=click.Path(file_okay=False),
              help="Folder with the moses decoder (default: $MOSES_BIN, then PATH).")
@click.option("--moses-scripts", type=click.Path(file_okay=False),
              help="Moses' scripts folder holding training/mert-moses.pl (default: $MOSES_SCRIPTS, then "
                   "PATH).")
@click.option("--mertdir", type=click.Path(file_okay=False),
              help="Folder with extractor, mert, kbmira, pro, evaluator (default: the decoder's folder).")
@click.option("--batch-mira", is_flag=True,
              help="Tune with batch MIRA (Cherry and Foster, 2012) instead of MERT.")
@click.option("--nbest", type=click.IntRange(min=1),
              help="n-best list size per iteration (mert-moses.pl default: 100).")
@click.option("--maximum-iterations", type=click.IntRange(min=1),
              help="Maximum tuning iterations (mert-moses.pl default: 25).")
@click.option("--return-best-dev", is_flag=True,
              help="Keep the weights of the iteration with the best dev BLEU, not the last.")
@click.option("--test-src", type=click.Path(dir_okay=False),
              help="Test source text to decode with each tuned ini.")
@click.option("--test-ref", type=click.Path(dir_okay=False),
              help="Test reference for BLEU (with --test-src).")
@click.option("--baseline", type=click.Path(dir_okay=False),
              help="A baseline moses.ini, tuned and tested the same way for comparison.")
@click.option("--tokenize", type=click.Choice(BLEU_TOKENIZERS), default="13a", show_default=True,
              help="sacreBLEU tokenizer for the test BLEU (none for text you tokenized yourself).")
@click.option("--dry-run", is_flag=True,
              help="Print the commands (and any problems found) without running anything.")
def mert_moses(dev_src, dev_ref, ini, work_dir, runs, threads, moses_bin, moses_scripts, mertdir, batch_mira,
               nbest, maximum_iterations, return_best_dev, test_src, test_ref, baseline, tokenize, dry_run):
    """Tune INI on DEV_SRC/DEV_REF with mert-moses.pl several times and report the results.

    Prints each run's tuned weights and, given a test set, BLEU as mean ± std over runs for the
    new system and the baseline.

    \b
    Example:
      mosesrnn mert-moses dev.en dev.fr moses.rnn.ini --work-dir tune --runs 3 \\
          --test-src test.en --test-ref test.fr --baseline moses.ini
    """
    options = MertOptions(dev_src, dev_ref, ini, work_dir, runs, threads, nbest, maximum_iterations,
                          batch_mira, return_best_dev, test_src, test_ref, baseline, tokenize)
    with Job(inputs=[dev_src, dev_ref, ini, test_src, test_ref, baseline], folders=[] if dry_run else [work_dir]):
        report = tune(options, moses_bin, moses_scripts, mertdir, dry_run,
                      log=lambda message: click.echo(message, err=True))
    click.echo(report)


@click.command("mert-report", cls=MosesCommand)
@click.argument("work_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--dev-ref", type=click.Path(exists=True, dir_okay=False),
              help="The dev reference: also score each iteration's decoded dev set (runK.out) with sacreBLEU.")
@click.option("--tokenize", type=click.Choice(BLEU_TOKENIZERS), default="none", show_default=True,
              help="sacreBLEU tokenizer for --dev-ref (none: the dev text Moses tuned on is tokenised already).")
@click.option("--apply", "which", metavar="ITER|best|last",
              help="Write --ini with the weights of this iteration (best: highest dev BLEU) to -o.")
@click.option("--ini", "full_ini", type=click.Path(exists=True, dir_okay=False),
              help="With --apply: the full moses.ini that was tuned (the run*.moses.ini name filtered tables).")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="With --apply: the new moses.ini (written atomically; must differ from --ini).")
def mert_report(work_dir, dev_ref, tokenize, which, full_ini, output):
    """Report the iterations of a finished or stopped tuning in WORK_DIR, and apply one.

    WORK_DIR is a mert-moses.pl working directory, or one of `mosesrnn mert-moses` holding one per
    run. For each iteration K it prints the weights of runK.moses.ini and the dev BLEU: the
    optimiser's estimate from run(K-1).mert.log and, with --dev-ref, that of runK.out.

    \b
    Example:
      mosesrnn mert-report tune/
      mosesrnn mert-report tune/run2 --dev-ref dev.fr --apply best --ini moses.rnn.ini -o moses.tuned.ini
    """
    if which is not None and (full_ini is None or output is None):
        raise click.UsageError("--apply needs --ini (the full moses.ini) and -o (the new one)")
    if which is None and (full_ini is not None or output is not None):
        raise click.UsageError("--ini and -o go with --apply")
    with Job(inputs=[work_dir, dev_ref, full_ini], outputs=[output]):
        tunings = [read_tuning(directory, dev_ref, tokenize) for directory in tuning_dirs(work_dir)]
        if which is not None and len(tunings) > 1:
            raise ValueError(f"{work_dir} holds {len(tunings)} tunings: --apply to one of them, e.g. "
                             f"{tunings[0].path}")
        click.echo("\n\n".join(format_tuning(tuning) for tuning in tunings))
        if which is not None:
            chosen = choose_iteration(tunings[0], which)
            apply_iteration(chosen, full_ini, output)
            click.echo(f"wrote {output}: {full_ini} with the weights of iteration {chosen.number} "
                       f"({chosen.ini})", err=True)
