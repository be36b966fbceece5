"""Training on several processes (torchrun, DistributedDataParallel, gloo on the CPU).

Two processes with a batch of 8 each make the same updates as one process with a batch of 16:
the same global minibatches (every rank draws the same seeded permutation and trains on every
other example of it), gradients averaged. The parameters agree to 1e-5 (float sums in another
order). A restart continues the two-process run exactly, and only rank 0 writes.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
import torch
import torch.multiprocessing as mp
from scoring_helpers import TABLE

from mosesrnn.encdec.model_file import load_encoder_decoder
from mosesrnn.encdec.task import EncoderDecoderTrainConfig, train_encoder_decoder

TINY = ["--embed-dim", "8", "--hidden-dim", "16", "--maxout-units", "8", "--output-rank", "6", "--vocab-size", "300",
        "--valid-share", "0.1", "--valid-every", "2", "--optimizer", "adam", "--threads", "1", "-q",
        "--lr-decay", "none"]  # the restart below changes --max-updates, which a decay would follow


def torchrun(output, updates: int) -> subprocess.CompletedProcess:
    """Two ranks of ``mosesrnn train``; one that outlives 300 s is killed with its ranks (torchrun, killed alone,
    leaves them running) and fails the test."""
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "mosesrnn",
               "train", TABLE, "-o", str(output), "--batch-size", "8", "--max-updates", str(updates), *TINY]
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment,
                          start_new_session=True) as process:
        try:
            stdout, stderr = process.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def test_two_processes_update_as_one_with_their_joint_batch_and_resume(tmp_path):
    first = torchrun(tmp_path / "two", 2)
    assert first.returncode == 0, first.stderr[-3000:]
    again = torchrun(tmp_path / "two", 4)  # a restart continues from the saved state
    assert again.returncode == 0, again.stderr[-3000:]
    single = train_encoder_decoder(EncoderDecoderTrainConfig(str(tmp_path / "one"), table=TABLE, batch_size=16,
                                                             max_updates=4, valid_every=2,
                               valid_share=0.1, vocab_size=300, optimizer="adam", lr_decay="none", threads=1,
                               quiet=True,
                               model_overrides=dict(embed_dim=8, hidden_dim=16, maxout_units=8, output_rank=6)))
    two = load_encoder_decoder(str(tmp_path / "two" / "last.pt"))
    assert two.info["updates"] == single.updates == 4 and two.info["pairs_seen"] == 64
    one = torch.load(single.last_path, weights_only=True)["state_dict"]
    for name, tensor in two.model.state_dict().items():
        torch.testing.assert_close(tensor, one[name], rtol=0, atol=1e-5, msg=name)
    records = [json.loads(line) for line in open(tmp_path / "two" / "train.jsonl")]
    assert [r["update"] for r in records if r["event"] == "valid"] == [2, 4]  # rank 0 alone wrote it
    assert sorted(os.listdir(tmp_path / "two")) == ["best.pt", "last.pt", "loss.png", "state.pt", "train.jsonl",
                                                     "vocab"]


def _fingerprints(rank: int, world: int, port: int, errors) -> None:
    import torch.distributed as dist

    from mosesrnn.train.distributed import Ranks, same_data
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        same_data(Ranks(rank, world), f"{1000 + rank} training pairs")
    except ValueError as error:
        errors.put(str(error))
    finally:
        dist.destroy_process_group()


def test_ranks_that_read_different_data_stop_with_one_line():
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    context = mp.get_context("spawn")
    errors = context.Queue()
    processes = [context.Process(target=_fingerprints, args=(rank, 2, port, errors)) for rank in range(2)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(120)
    messages = [errors.get(timeout=10) for _ in range(2)]
    assert messages[0] == messages[1] == ("the training processes read different data: rank 0 has 1000 training "
                                          "pairs, rank 1 has 1001 training pairs; give every rank the same files "
                                          "and options")


@pytest.mark.parametrize("optimizer", ["adadelta", "adam"])
def test_the_recipe_is_recorded(tmp_path, optimizer):
    result = train_encoder_decoder(EncoderDecoderTrainConfig(str(tmp_path), table=TABLE, max_updates=2, valid_every=2,
                                                             valid_share=0.1,
                               vocab_size=300, optimizer=optimizer, threads=1, quiet=True,
                               model_overrides=dict(embed_dim=4, hidden_dim=8, maxout_units=4, output_rank=4)))
    info = load_encoder_decoder(result.best_path).info
    assert info["optimizer"] == optimizer and info["learning_rate"] == {"adadelta": 1.0, "adam": 1e-2}[optimizer]
