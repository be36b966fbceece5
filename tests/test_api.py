"""The Python API: the same numbers as the commands, the same care for files, and the example runs."""
from __future__ import annotations

import gzip
import math
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from scoring_helpers import TABLE

import mosesrnn
from mosesrnn.cli import main
from mosesrnn.formats.phrase_table import read_entries

EXAMPLES = Path(__file__).parent.parent / "examples"


def test_log_prob_is_the_rnn_column_of_score(model_path, tmp_path):
    scored = tmp_path / "scored.gz"
    assert CliRunner().invoke(main, ["score", TABLE, "-m", model_path, "--features", "rnn", "-o", str(scored)]
                              ).exit_code == 0
    entries = list(read_entries(str(scored)))[:200]
    model = mosesrnn.load(model_path, device="cpu")
    values = model.log_prob([e.source for e in entries], [e.target for e in entries])
    for entry, log_p in zip(entries, values):
        assert math.log(entry.scores[-1]) == pytest.approx(log_p, abs=1e-6)  # 9 digits of e^v


def test_translate_and_nbest_agree(model_path):
    model = mosesrnn.load(model_path, device="cpu")
    sources = ["i promise .", "", "i &apos;ll wait ."]
    best, lists = model.translate(sources, beam_size=4), model.nbest(sources, 3, beam_size=4)
    assert [hyp.text for hyp in best] == [hyps[0].text for hyps in lists]
    assert best[1].text == "" and len(lists[1]) == 1  # an empty line keeps its place
    with pytest.raises(ValueError, match="at most the beam size"):
        model.nbest(sources, 5, beam_size=4)


def test_score_table_takes_the_commands_care(model_path, tmp_path):
    table = tmp_path / "table.gz"
    table.write_bytes(Path(TABLE).read_bytes())
    features = mosesrnn.FeatureOptions(model=model_path, device="cpu")
    with pytest.raises(ValueError, match="is the input"):
        mosesrnn.score_table(str(table), str(table), features)
    summary = mosesrnn.score_table(str(table), str(tmp_path / "out.gz"), features)
    assert summary.lines == gzip.decompress(table.read_bytes()).count(b"\n")
    assert "rnn(" in summary.signature and "unk(" in summary.signature


def test_the_api_leaves_the_callers_threads_alone(model_path, tmp_path):
    """A job's torch threads (FeatureOptions.threads, or the cores its workers leave) are the job's alone."""
    import torch
    before, during = torch.get_num_threads(), []
    features = mosesrnn.FeatureOptions(model=model_path, device="cpu", threads=before + 1)
    mosesrnn.score_table(TABLE, str(tmp_path / "out.gz"), features, workers=0,
                         progress=lambda *_: during.append(torch.get_num_threads()))
    mosesrnn.score_table(TABLE, str(tmp_path / "workers.gz"), mosesrnn.FeatureOptions(model=model_path, device="cpu"),
                         workers=1)
    assert set(during) == {before + 1} and torch.get_num_threads() == before


@pytest.mark.parametrize("text", ["not a model\n", "la maison ||| the house ||| 0.5\n", ""])
def test_a_file_that_is_not_a_model(tmp_path, text):
    from mosesrnn.io.model_store import ModelFileError
    (tmp_path / "notes.txt").write_text(text)
    with pytest.raises(ModelFileError, match="notes.txt is not a mosesrnn model file"):
        mosesrnn.load(str(tmp_path / "notes.txt"))


def test_one_string_for_a_list_of_texts_is_refused(model_path):
    """A string would be read as a list of one-character texts."""
    model = mosesrnn.load(model_path, device="cpu")
    with pytest.raises(TypeError, match="must be a list of texts, not one string"):
        model.log_prob("the house", "la maison")
    with pytest.raises(TypeError, match="must be a list of texts, not one string"):
        model.translate("the house .")
    assert len(model.log_prob(["the house"], ["la maison"])) == 1


def test_the_example_runs_and_its_shipped_model_translates(tmp_path):
    """The example with its default, the model shipped in examples/model/: the newcomer's first translations
    are French a reader recognises, and its scores are far from the unigram model's."""
    result = subprocess.run([sys.executable, str(EXAMPLES / "api_example.py")], capture_output=True, text=True,
                            timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "log p(" in result.stdout and "scored 6229 lines" in result.stdout
    assert "i &apos;m late .  ->  je suis en retard ." in result.stdout
    assert "i promise .  ->  je promets ." in result.stdout


def test_the_shipped_model_knows_the_test_set():
    """Per-token perplexity of the bundled test set's gold targets: far below the unigram model's."""
    model = mosesrnn.load(str(EXAMPLES / "model" / "tatoeba-small.pt"), device="cpu")
    lines = [(EXAMPLES / name).read_text(encoding="utf-8").splitlines()[:50] for name in ("test.tok.en",
                                                                                         "test.tok.fr")]
    log_p = model.log_prob(*lines)
    tokens = sum(len(target.split()) + 1 for target in lines[1])
    assert math.exp(-sum(log_p) / tokens) < model.info["unigram_ppl"] / 20
