"""The commands that put the features into Moses: ``moses-ini``, ``binarize``, ``tune``, ``mert-report``.

Each parses its options and calls one function of :mod:`moses_integration`, the library that knows Moses
and nothing of the command line; a missing or failing Moses program is one line too.
"""
from __future__ import annotations

import logging
import os

import click
from click.core import ParameterSource
from sacrebleu.metrics.bleu import BLEU

from moses_integration import route
from moses_integration.binarize import FORMATS, binarize_table, binarized_path
from moses_integration.ini_update import update_moses_ini
from moses_integration.mert_report import report_work_dir
from moses_integration.new_columns import DEFAULT_WEIGHTS
from moses_integration.route.plan import PLAN
from moses_integration.route.published import COMMANDS, publish_report
from moses_integration.route.report_file import REPORT_JSON, REPORT_MD
from moses_integration.tools import MosesToolError, format_command

from ..io.roles import input_file
from ..models import DECODER_FEATURES, MODEL_OPTIONS
from .common import DEVICE, DTYPE, QUIET, Command, FiniteFloat, setup_logging
from .features import check_feature_names, model_options, with_options
from .paths import (
    INPUT,
    INPUT_FOLDER,
    OUTPUT,
    PLACE,
    PROGRAM_OUTPUT,
    PathParam,
    input_with,
    output_folder_writing,
)

__all__ = ["MosesCommand", "moses_ini", "binarize", "tune", "mert_report"]

log = logging.getLogger("mosesrnn")
#: What ``mert-report --publish`` writes into its folder.
PUBLISHED = (REPORT_JSON, PLAN, REPORT_MD)
#: sacreBLEU's tokenizers, for --tokenize.
BLEU_TOKENIZERS = tuple(sorted(BLEU.TOKENIZERS))


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
    """Split ``0.1,-0.1`` into a tuple of finite floats (None stays None)."""
    items = _comma_list(ctx, param, value)
    try:
        numbers = None if items is None else tuple(float(item) for item in items)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a comma-separated list of numbers", ctx, param) from None
    return None if numbers is None else tuple(FiniteFloat().convert(number, param, ctx) for number in numbers)


_DEFAULTS_TEXT = ", ".join(f"{name} {weight:+g}" for name, weight in DEFAULT_WEIGHTS.items())


def _decoder_feature_options(command):
    """``--cslm NPLM`` and ``--cslm-weight W``, and the like for each family of the model registry that goes inside
    the decoder (:data:`~mosesrnn.models.DECODER_FEATURES`), in its order."""
    for feature in reversed(DECODER_FEATURES.values()):
        command = click.option(f"--{feature.name}-weight", default=0.1, show_default=True, type=FiniteFloat(),
                               help=feature.weight_help)(command)
        kind = PathParam(input_file(*feature.companions)) if feature.companions else INPUT
        command = click.option(f"--{feature.name}", type=kind, metavar="NPLM", help=feature.help)(command)
    return command


@click.command("moses-ini", cls=MosesCommand)
@click.argument("ini", type=INPUT)
@click.option("--table", type=input_with(".json"),
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
@click.option("--binary", metavar="PATH", type=PLACE,
              help="For a PhraseDictionaryCompact or PhraseDictionaryOnDisk feature: the binarized table "
                   "to point at (default: what `binarize` writes, TABLE without .gz plus .minphr/.ondisk).")
@click.option("--absolute-paths", is_flag=True,
              help="Write every file path of the ini (each feature's path=, the legacy [ttable-file], "
                   "[lmodel-file], [distortion-file], [generation-file] lines) as an absolute path, as "
                   "mert-moses.pl needs; ${...} placeholders are kept. --table and --binary are taken from "
                   "the current directory.")
@click.option("--relative-to", type=PLACE, metavar="DIR",
              help="With --absolute-paths: the directory the ini's relative paths are relative to (default: "
                   "the current directory, where Moses resolves them; often the ini's own folder).")
@_decoder_feature_options
@click.option("-o", "--output", default="-", show_default=True, type=OUTPUT,
              help="The new moses.ini ('-' for stdout; written whole or not at all; never over INI).")
def moses_ini(ini, table, add, features, weights, feature_name, binary, absolute_paths, relative_to, output,
              **decoder_options):
    """Point the phrase table of INI at a scored TABLE and add weights for its new columns; or (and)
    make every path of INI absolute.

    Raises the feature's num-features, appends the initial weights to its [weight] line (or to
    [weight-t] in the legacy format), extends tuneable-components, and leaves every other line
    untouched. The defaults start the new features small (the weights decide, before tuning,
    which table-limit translations survive) with the sign that helps: +0.1 rewards a higher RNN
    log-probability, -0.1 penalises each unknown word. With --cslm, a NeuralLM feature (the CSLM
    in the decoder) and its weight are added too; with --bilm, a BilingualNPLM (the joint model).

    \b
    Example:
      mosesrnn moses-ini moses.ini --table $PWD/phrase-table.rnn.gz -o moses.rnn.ini
      mosesrnn moses-ini system/moses.ini --absolute-paths --relative-to system -o moses.abs.ini
      mosesrnn moses-ini moses.rnn.ini --cslm $PWD/lm.nplm -o moses.rnn.cslm.ini
      mosesrnn moses-ini moses.ini --bilm $PWD/bilm.nplm -o moses.bilm.ini
    """
    decoder = {name: (decoder_options[name], decoder_options[f"{name}_weight"]) for name in DECODER_FEATURES
               if decoder_options[name] is not None}
    _check_moses_ini_options(table, absolute_paths, relative_to, bool(decoder),
                             dict(add=add, features=features, weights=weights, feature=feature_name, binary=binary))
    base = (relative_to or os.getcwd()) if absolute_paths else None
    rewrite = update_moses_ini(ini, table, output, add, features, weights, feature_name, binary, base, decoder)
    for line in rewrite.messages(output):
        click.echo(line, err=True)


def _check_moses_ini_options(table, absolute_paths, relative_to, neural: bool, table_options) -> None:
    if relative_to is not None and not absolute_paths:
        raise click.UsageError("--relative-to goes with --absolute-paths")
    if table is None:
        if not absolute_paths and not neural:
            flags = "".join(f"--{name}, " for name in DECODER_FEATURES)
            raise click.UsageError(f"give --table (a scored phrase table to point at), {flags}"
                                   "--absolute-paths, or several")
        given = [f"--{name}" for name, value in table_options.items() if value is not None]
        if given:
            raise click.UsageError(f"{', '.join(given)} only go with --table")


def _binarized_output(params: dict) -> dict:
    """``binarize``'s output when -o is not given: what :func:`binarized_path` names."""
    return {"output": binarized_path(params["table"], params["fmt"], params["output"])}


@click.command("binarize", cls=MosesCommand, derive=_binarized_output)
@click.argument("table", type=INPUT)
@click.option("--format", "fmt", type=click.Choice(list(FORMATS)), default="compact", show_default=True,
              help="compact: for PhraseDictionaryCompact (processPhraseTableMin writes file OUT.minphr); "
                   "ondisk: for PhraseDictionaryOnDisk (CreateOnDiskPt writes folder OUT).")
@click.option("-o", "--output", metavar="OUT", type=PROGRAM_OUTPUT,
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
@click.option("--moses-bin", type=PLACE,
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
    result = binarize_table(table, fmt, output, threads, moses_bin, dry_run, rankscore, add_empty_alignment)
    if dry_run:
        if result.copy:
            click.echo(f"# first: {table} with an empty alignment field written to {result.copy} "
                       "(removed after the run)")
        click.echo(format_command(result.command))
    else:
        click.echo(f"wrote {result.output} ({result.num_scores} scores, ranked by score {result.rankscore})",
                   err=True)


def _baseline_features(ctx, param, value):
    """``--rescore-baseline`` alone: ``()``, the baseline's control without features; else the names, checked."""
    return () if value == "" else check_feature_names(ctx, param, value)


@click.command("tune", cls=MosesCommand)
@click.argument("dev_src", type=INPUT)
@click.argument("dev_ref", type=INPUT)
@click.argument("ini", type=INPUT)
@click.option("--test-src", required=True, type=INPUT, help="The test set's source text, decoded with each tuned ini.")
@click.option("--test-ref", required=True, type=INPUT, help="Its reference, for the test BLEU.")
@click.option("--baseline", type=INPUT,
              help="A baseline moses.ini (the system without the new columns), tuned and tested the same way: the "
                   "report compares every stage with it.")
@click.option("--also", "others", multiple=True, type=(str, INPUT), metavar="NAME INI",
              help="Another system to tune and report the same way beside the system (repeatable), e.g. --also "
                   "pruned-50 pruned.ini: a ladder of systems against one baseline, in one folder.")
@click.option("--work-dir", default="tune", show_default=True, type=output_folder_writing(),
              help="Where the runs go (baseline-run1, system-run1, ...), with plan.json, report.md and report.json. "
                   "The same command continues a tuning stopped there.")
@click.option("--runs-from", type=INPUT_FOLDER,
              help="Another tuning's --work-dir (of the same dev and test sets, MERT settings and n-best size): its "
                   "finished Moses MERT runs of the same moses.ini files, their test decodes and n-best lists are "
                   "linked here, not run again, so new rescoring features cost no decoding. Lists without the word "
                   "alignment a joint model needs are decoded again. A run is lent only while the moses.ini, every "
                   "file it names and the decoder (with the libraries it loads) hash the same as when it was made "
                   "(its made-with.json); otherwise one line names what changed, before any work.")
@click.option("--runs", type=click.IntRange(min=1), default=3, show_default=True,
              help="Tuning runs per system: MERT is unstable, Clark et al. (2011) recommend at least 3.")
@click.option("--select-on", type=click.Choice(route.SELECT_ON), default="none", show_default=True,
              help="half: choose the stage on dev, not on test. Every MERT, Moses' (mert-moses.pl, for every system) "
                   "and mosesrnn's (every rescored stage and control), tunes on the dev sentences at odd lines (1st, "
                   "3rd, ...) only; every stage is also measured on those at even lines (2nd, 4th, ...), held out, "
                   "with the same significance test, and the report's headline is the stage of the highest BLEU "
                   "there. Every system also decodes the dev set once. Runs tuned on the whole dev set are not lent "
                   "(--runs-from) to a selecting tuning, nor the reverse. none: no selection, the report as before.")
@click.option("--rescore", "features", callback=check_feature_names, metavar="FEATURES",
              help="Rescore the system's n-best lists with these n-best features (as `mosesrnn nbest --features`: "
                   "unk, cslm, bilm, bilm-t2s, bilm-r2l, bilm-t2s-r2l, rnn, rnn-rev), then tune all weights on the "
                   "dev lists with mosesrnn's MERT and "
                   "rerank the test lists; the same lists re-tuned without them are the control [default with --lm, "
                   "--bilm, -m or --reverse-model: the features of the models given].")
@click.option("--rescore-baseline", "baseline_features", is_flag=False, flag_value="", callback=_baseline_features,
              metavar="[FEATURES]",
              help="Rescore the baseline's n-best lists too, with these features (the same models), e.g. cslm: "
                   "Table 1's +CSLM row, reported as baseline-rescored, beside its control baseline-retuned. With no "
                   "feature (the flag alone, not right before DEV_SRC), only the control: the baseline's dev and "
                   "test lists re-tuned by mosesrnn's MERT, which measures what a second tuning pass alone adds.")
@with_options(*model_options(whole_sentences=True, rescoring=True), *model_options(whole_sentences=False,
                                                                                   rescoring=True))
@click.option("--vocab", type=INPUT_FOLDER, help="Word shortlists (`mosesrnn vocab`) for unk, without -m.")
@click.option("--nbest-size", type=click.IntRange(min=1), default=100, show_default=True,
              help="n-best list size of the rescoring stage.")
@click.option("--nbest-distinct", is_flag=True,
              help="The rescoring stage's n-best lists hold distinct translations (Moses' `-n-best-list FILE N "
                   "distinct`): a plain list repeats a translation once for each derivation of it (27 distinct "
                   "in 100 on the Tatoeba dev set), so its rescoring chooses among fewer.")
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True,
              help="Threads for the decoder (--decoder-flags \"-threads N\", and when decoding test and n-best "
                   "lists), the optimiser (mert-moses.pl --threads N, given when N > 1) and the rescoring models.")
@DEVICE
@DTYPE
@click.option("--moses-bin", type=PLACE, help="Folder with the moses decoder (default: $MOSES_BIN, then PATH).")
@click.option("--moses-scripts", type=PLACE,
              help="Moses' scripts folder holding training/mert-moses.pl (default: $MOSES_SCRIPTS, then PATH).")
@click.option("--mertdir", type=PLACE,
              help="Folder with extractor, mert, kbmira, pro, evaluator (default: the decoder's folder).")
@click.option("--batch-mira", is_flag=True, help="Tune with batch MIRA (Cherry and Foster, 2012) instead of MERT.")
@click.option("--nbest", type=click.IntRange(min=1), help="n-best list size per MERT iteration (mert-moses.pl: 100).")
@click.option("--maximum-iterations", type=click.IntRange(min=1),
              help="Maximum MERT iterations (mert-moses.pl default: 25).")
@click.option("--return-best-dev", is_flag=True,
              help="Keep the weights of the iteration with the best dev BLEU, not the last.")
@click.option("--tokenize", type=click.Choice(BLEU_TOKENIZERS), default="none", show_default=True,
              help="sacreBLEU's tokenizer for the test BLEU: none for Moses-tokenised text, as Moses outputs it "
                   "(13a for detokenised text).")
@click.option("--dry-run", is_flag=True, help="Print the commands (and any problems found) without running anything.")
@QUIET
def tune(dry_run, quiet, **options):
    """Tune INI on DEV_SRC/DEV_REF with Moses' MERT several times, rescore its n-best lists, and report test
    BLEU with its significance: the route from new columns to a measured gain, in one command.

    For each of --runs runs: mert-moses.pl tunes the baseline (if given) and the system; each tuned ini
    decodes the test set; with rescoring features, the system's dev and test n-best lists get them
    (`mosesrnn nbest`), mosesrnn's MERT tunes every weight on the dev lists from the tuned weights, and
    the test lists are reranked (the baseline's too, with --rescore-baseline FEATURES); the control of each
    rescored row re-tunes the same lists with the same MERT without the features (--rescore-baseline alone:
    the baseline's control only, what a second tuning pass adds). The report (stdout,
    WORK_DIR/report.md and report.json; `mosesrnn mert-report WORK_DIR` shows it again) gives per stage:
    test BLEU per run, mean ± std, the difference to the baseline (and a rescored row's to its control),
    sacreBLEU's paired approximate
    randomisation between the median runs and how many run pairs agree at p < 0.05, the new weights'
    shares of L1, MERT's iterations, decoding speed, and the signatures of what made them. Ctrl-C or a
    crash loses nothing finished: the same command continues at the run and stage where it stopped (a
    stopped MERT run after its last finished iteration).

    \b
    Example: the route of the paper's Table 1 (baseline, +RNN columns, +CSLM rescoring, each with its control)
      mosesrnn tune dev.en dev.fr moses.rnn.ini --baseline moses.abs.ini --test-src test.en --test-ref test.fr \\
          --rescore cslm --rescore-baseline cslm --lm $PWD/lm/best.pt --runs 3 --work-dir tune/
    Example: the stage chosen on a held-out dev half, the MERT runs taken from tune/ (the same inis, by content)
      mosesrnn tune dev.en dev.fr moses.rnn.ini --baseline moses.abs.ini --test-src test.en --test-ref test.fr \\
          --rescore cslm --rescore-baseline cslm --lm $PWD/lm/best.pt --runs 3 --select-on half \\
          --runs-from tune/ --work-dir tune-selected/
    """
    setup_logging(quiet)
    _check_rescoring_options_read(options)
    if options["baseline_features"] is not None and not options["baseline"]:
        raise click.UsageError("--rescore-baseline needs --baseline")
    if options["vocab"] and options["features"] is None and not any(options[name] for name in MODEL_OPTIONS):
        raise click.UsageError("--vocab serves the unk feature: name it with --rescore unk")
    text = route.tune(route.RouteOptions.from_options(**options), lambda message: log.info("tune: %s", message),
                      dry_run, lambda message: log.warning("warning: %s", message))
    click.echo(text, nl=False)


#: tune's options that only a rescoring stage reads.
_RESCORING_ONLY = ("nbest_size", "device", "dtype")


def _check_rescoring_options_read(options: dict) -> None:
    """Refuse the options of a rescoring stage (:data:`_RESCORING_ONLY`) given to a tuning without one: they would
    change nothing, in silence."""
    if options["features"] is not None or options["baseline_features"] is not None or \
            any(options[name] for name in MODEL_OPTIONS):
        return
    context = click.get_current_context()
    given = [f"--{name.replace('_', '-')}" for name in _RESCORING_ONLY
             if context.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)]
    if given:
        raise click.UsageError(f"{', '.join(given)}: for the rescoring stage, and this tuning has none (give "
                               f"--rescore FEATURES or a model file, or --rescore-baseline): leave out what it "
                               f"would not read")


@click.command("mert-report", cls=MosesCommand)
@click.argument("work_dir", type=INPUT_FOLDER)
@click.option("--dev-ref", type=INPUT,
              help="The dev reference: also score each iteration's decoded dev set (runK.out) with sacreBLEU.")
@click.option("--tokenize", type=click.Choice(BLEU_TOKENIZERS), default="none", show_default=True,
              help="sacreBLEU tokenizer for --dev-ref (none: the dev text Moses tuned on is tokenised already).")
@click.option("--apply", "which", metavar="ITER|best|last",
              help="Write --ini with the weights of this iteration (best: highest dev BLEU) to -o.")
@click.option("--against", metavar="STAGE",
              help="With a `mosesrnn tune` report: compare every stage with this one (e.g. system: the pruned "
                   "systems against the full one) instead of the baseline.")
@click.option("--ini", "full_ini", type=INPUT,
              help="With --apply: the full moses.ini that was tuned (the run*.moses.ini name filtered tables).")
@click.option("-o", "--output", type=OUTPUT,
              help="With --apply: the new moses.ini ('-' for stdout, the report then on stderr; written whole or "
                   "not at all; never over --ini).")
@click.option("--publish", metavar="DIR", type=output_folder_writing(*PUBLISHED),
              help="Copy the report of the finished `mosesrnn tune` in WORK_DIR into DIR (docs/results/NAME, to "
                   "commit): report.json, plan.json with every absolute path written relative to the current "
                   "directory (run it from the folder the tuning's commands ran in), report.md rendered from them, and "
                   "every run's translations and the references gzipped under DIR/hyp and DIR/ref, which report.json "
                   "names there (the docs test recomputes every figure from them). Add DIR/COMMANDS.md with the exact "
                   "commands: every BLEU table of the docs names such a folder. "
                   "Never into a tuning's working folder; a DIR holding a publication only with --force.")
@click.option("--force", is_flag=True,
              help="With --publish: replace the publication in DIR (its COMMANDS.md or commands.sh is removed, to be "
                   "written again for the new report).")
def mert_report(work_dir, dev_ref, tokenize, which, against, full_ini, output, publish, force):
    """Report a finished or stopped tuning in WORK_DIR, and apply one of its iterations.

    WORK_DIR is a mert-moses.pl working directory, or one of `mosesrnn tune` holding one per run. For
    a finished `mosesrnn tune` it shows the report again (its table, from WORK_DIR/report.json). For each
    iteration K of each run it prints the weights of runK.moses.ini and the dev BLEU: the optimiser's
    estimate from run(K-1).mert.log and, with --dev-ref, that of runK.out. With --publish, it copies a finished
    tuning's report where it is committed, instead (docs/results/README.md).

    \b
    Example:
      mosesrnn mert-report tune/
      mosesrnn mert-report tune/system-run2 --dev-ref dev.fr --apply best --ini moses.rnn.ini -o moses.tuned.ini
      mosesrnn mert-report tune-ladder/ --publish $REPO/docs/results/ladder
    """
    if publish is not None:
        if any(value is not None for value in (dev_ref, which, against, full_ini, output)):
            raise click.UsageError("--publish goes alone: it copies the report as `mosesrnn tune` wrote it")
        for path in publish_report(work_dir, publish, os.getcwd(), force):
            click.echo(f"wrote {path}", err=True)
        click.echo(f"now write {os.path.join(publish, COMMANDS[0])}: the exact commands, from {os.getcwd()}", err=True)
        return
    if force:
        raise click.UsageError("--force goes with --publish")
    if which is not None and (full_ini is None or output is None):
        raise click.UsageError("--apply needs --ini (the full moses.ini) and -o (the new one)")
    if which is None and (full_ini is not None or output is not None):
        raise click.UsageError("--ini and -o go with --apply")
    if against is not None and not os.path.isfile(os.path.join(work_dir, REPORT_JSON)):
        raise click.UsageError(f"--against compares the stages of a `mosesrnn tune` report: "
                               f"{os.path.join(work_dir, REPORT_JSON)} is missing")
    chosen = report_work_dir(work_dir, lambda text: click.echo(text, err=output == "-"), dev_ref, tokenize, against,
                             which, full_ini, output)
    if chosen is not None:
        click.echo(f"wrote {'(stdout)' if output == '-' else output}: {full_ini} with the weights of iteration "
                   f"{chosen.number} ({chosen.ini})", err=True)
