"""Every reader of a JSON file mosesrnn writes refuses a damaged one naming it, and the line and column where JSON
says what is wrong: ``PATH:LINE:COLUMN: not WHAT (why)``, never a bare JSONDecodeError (issue 42)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from conftest import DATA

from moses_integration.bilingual_lm import read_joint_export
from moses_integration.route.checks import _plan_record_problems
from moses_integration.route.plan import PLAN
from moses_integration.route.report import _rescored_features
from moses_integration.route.report_file import read_report
from mosesrnn.cli import main
from mosesrnn.formats.sidecar import Sidecar, SidecarError, read_sidecar, write_sidecar
from mosesrnn.io.json_file import read_json
from mosesrnn.io.resumable import ResumableOutput, ResumeError
from mosesrnn.text.subwords import DESCRIPTOR, SubwordModels
from mosesrnn.train.log import TrainLog

#: A record cut short at its second line, and where JSON says it stops making sense.
CUT = b'{\n  "signature": "mosesrnn:0.3.0",\n  "lines": '
CUT_AT = "3:12"


def test_read_json_names_the_file_line_and_column(tmp_path):
    path = tmp_path / "record.json"
    path.write_bytes(CUT)
    with pytest.raises(ValueError, match=rf"^{path}:{CUT_AT}: not a record \(Expecting value\)$"):
        read_json(str(path), "a record")
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(ValueError, match=rf"^{path}: not a record \(not valid UTF-8 at byte 7\)$"):
        read_json(str(path), "a record")
    path.write_bytes(gzip.compress(b'{"a": 1}'))
    assert read_json(str(path), "a record") == {"a": 1}


def scored_table(folder: Path) -> str:
    """A table of three lines with an rnn and an unk column, and its sidecar; returns the table's path."""
    table = folder / "table.gz"
    table.write_bytes(gzip.compress(b"".join(f"la {w} ||| the {w} ||| 0.5 0.5 0.5 0.5 0.01 1 ||| 0-0 1-1\n".encode()
                                             for w in ("maison", "porte", "table"))))
    write_sidecar(str(table), Sidecar(signature="mosesrnn:0.3.0|features:rnn,unk", mosesrnn_version="0.3.0",
                                      input="/in.gz", input_bytes=10, shard="1/1", first_line=1, last_line=3, lines=3,
                                      total_lines=3, bytes=table.stat().st_size, appended_columns=("rnn", "unk"),
                                      features=("rnn", "unk")))
    return str(table)


def test_a_damaged_sidecar_is_refused_naming_it(tmp_path):
    table = scored_table(tmp_path)
    assert read_sidecar(table).appended_columns == ("rnn", "unk")
    sidecar = Path(table + ".json")
    record = json.loads(sidecar.read_text())
    sidecar.write_text(json.dumps({**record, "first_line": "1", "bytes": None}))
    with pytest.raises(SidecarError, match=rf"^{sidecar}: not the JSON record `mosesrnn score` writes \(first_line, "
                                           rf"bytes of the wrong type\)$"):
        read_sidecar(table)
    sidecar.write_bytes(CUT)
    with pytest.raises(SidecarError, match=rf"^{sidecar}:{CUT_AT}: not the JSON record `mosesrnn score` writes"):
        read_sidecar(table)


def test_a_command_reading_a_damaged_sidecar_says_one_line(tmp_path):
    table = scored_table(tmp_path)
    Path(table + ".json").write_bytes(CUT)
    out = tmp_path / "moses.ini"
    result = CliRunner().invoke(main, ["moses-ini", str(DATA / "moses" / "tatoeba-en-fr.moses.ini"), "--table",
                                       table, "-o", str(out)])
    assert result.exit_code == 1 and result.stderr.splitlines() == [
        f"Error: {table}.json:{CUT_AT}: not the JSON record `mosesrnn score` writes (Expecting value)"]
    assert not out.exists()


def test_a_damaged_subword_descriptor_is_refused_naming_it(tmp_path):
    (tmp_path / DESCRIPTOR).write_bytes(b'{"format": "mosesrnn-spm", "version": 1,}')
    with pytest.raises(ValueError, match=rf"^{tmp_path / DESCRIPTOR}:1:41: not a mosesrnn subword descriptor"):
        SubwordModels.load(str(tmp_path))


@pytest.mark.parametrize("text, message", [
    (b'{"order": 3, "source_window": ', r":1:31: not the record `mosesrnn bilm export` writes \(Expecting value\)"),
    (b'{"order": 3}', r": not the record `mosesrnn bilm export` writes \(no order, source_window, source_vocab and "
                      r"target_vocab\)"),
])
def test_a_damaged_joint_export_record_is_refused_naming_it(tmp_path, text, message):
    nplm = tmp_path / "bilm.nplm"
    nplm.write_text("\\config\nngram_size 6\n")
    Path(f"{nplm}.json").write_bytes(text)
    with pytest.raises(ValueError, match=rf"^{nplm}.json{message}"):
        read_joint_export(str(nplm))
    result = CliRunner().invoke(main, ["moses-ini", str(DATA / "moses" / "tatoeba-en-fr.moses.ini"), "--bilm",
                                       str(nplm), "-o", str(tmp_path / "moses.ini")])
    assert result.exit_code == 1 and len(result.stderr.splitlines()) == 1 and f"{nplm}.json" in result.stderr
    assert not (tmp_path / "moses.ini").exists()


@pytest.mark.parametrize("text, message", [
    (b'{"key": {"input": "t', r":1:19: not a progress record \(Unterminated string starting at\)"),
    (b"[]", r": not a progress record \(no key and state\)"),
])
def test_a_damaged_progress_record_is_refused_naming_it(tmp_path, text, message):
    out = tmp_path / "out.gz"
    Path(f"{out}.part").write_bytes(b"")
    Path(f"{out}.progress.json").write_bytes(text)
    with pytest.raises(ResumeError, match=rf"^{out}.progress.json{message}.*start over with --restart"):
        ResumableOutput(str(out), {"input": "table"}, resume=True)


def test_a_damaged_training_log_is_refused_naming_its_line(tmp_path):
    log = tmp_path / "train.jsonl"
    log.write_text('{"event": "valid", "update": 10}\n{"event": "val\n', encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{log}:2:11: not a training record \(Unterminated string starting at\)$"):
        TrainLog(str(log), str(tmp_path / "loss.png"), fresh=False).plot()


def test_a_damaged_tuning_plan_is_refused_naming_it(tmp_path):
    (tmp_path / PLAN).write_bytes(b'{"source": ')
    assert _plan_record_problems(SimpleNamespace(work_dir=str(tmp_path))) == [
        f"{tmp_path / PLAN}:1:12: not the plan `mosesrnn tune` writes (Expecting value): tune into a fresh folder"]
    (tmp_path / PLAN).write_bytes(b'["source"]')
    assert _plan_record_problems(SimpleNamespace(work_dir=str(tmp_path))) == [
        f"{tmp_path / PLAN}: not the plan `mosesrnn tune` writes (not an object): tune into a fresh folder"]


@pytest.mark.parametrize("text, message", [(b'{"features": [', r":1:15: not the record of the rescoring's features"),
                                           (b'{"features": 1}', r": not the record of the rescoring's features \(no "
                                                                r"lists of features and labels\)")])
def test_a_damaged_rescoring_record_is_refused_naming_it(tmp_path, text, message):
    path = tmp_path / "run1.rescored.features.json"
    path.write_bytes(text)
    with pytest.raises(ValueError, match=rf"^{path}{message}"):
        _rescored_features(str(path))


def test_a_damaged_tuning_report_is_refused_naming_it(tmp_path):
    path = tmp_path / "report.json"
    path.write_bytes(b'{"format": "mosesrnn-tune-report", "stages": [}')
    with pytest.raises(ValueError, match=rf"^{path}:1:47: not a tuning report of `mosesrnn tune`"):
        read_report(str(path))
