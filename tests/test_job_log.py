"""Clean job logs (hybrid_ir.joblog.configure, hybrid_ir.joblog.native_output): a header naming the
job, every line timestamped and free of escape codes, transformers' notes about task heads said once
in a line of the project's own (and kept whole when they name anything else), and what a C
library prints counted into one line."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from hybrid_ir.joblog.configure import CleanFormatter, expected_note, header, strip_escapes
from hybrid_ir.joblog.native_output import Note, counted_stderr

REPO = Path(__file__).resolve().parents[1]
STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ ")

TIED = (
    "This checkpoint seem corrupted. The tied weights mapping for this model specifies to tie "
    "cls.predictions.bias to cls.predictions.decoder.bias, but both are absent from the "
    "checkpoint, and we could not find another related tied weight for those keys"
)
MISSING_HEADS = """\x1b[1mBertForPreTraining LOAD REPORT\x1b[0m from: /models/minilm
Key                                        | Status  |
-------------------------------------------+---------+-
cls.predictions.bias                       | \x1b[31mMISSING\x1b[0m |
cls.seq_relationship.weight                | \x1b[31mMISSING\x1b[0m |
cls.predictions.transform.dense.weight     | \x1b[31mMISSING\x1b[0m |

Notes:
- \x1b[31mMISSING:\x1b[0m\t\x1b[3mthose params were newly initialized because missing.\x1b[0m"""


def test_notes_about_missing_or_unused_heads_become_one_explained_line():
    assert expected_note(TIED) == (
        "note: the checkpoint has no cls.predictions.* head, so transformers initialises the "
        "tied pair anew (its 'checkpoint seem corrupted'): as it should where this job trains "
        "the head (pretraining), not where it uses the model as it is"
    )
    assert expected_note(strip_escapes(MISSING_HEADS)) == (
        "note: BertForPreTraining from /models/minilm: 3 head tensor(s) cls.predictions.*, "
        "cls.seq_relationship.* not in the checkpoint, newly initialised: as they should be "
        "where this job trains them (pretraining), not where it uses the model as it is"
    )
    unused = strip_escapes(MISSING_HEADS).replace("MISSING", "UNEXPECTED")
    assert expected_note(unused).endswith(
        "in the checkpoint, unused by this model (an encoder leaves them aside)"
    )


def test_a_report_naming_an_encoder_tensor_or_another_problem_is_kept_whole():
    encoder = strip_escapes(MISSING_HEADS).replace("cls.predictions.bias", "encoder.layer.0.output")
    assert expected_note(encoder) is None
    assert expected_note(strip_escapes(MISSING_HEADS).replace("MISSING |", "MISMATCH |")) is None
    assert expected_note(TIED.replace("cls.predictions.bias", "embeddings.weight")) is None
    pooler = strip_escapes(MISSING_HEADS).replace("cls.predictions.bias", "pooler.dense.bias")
    assert expected_note(pooler) is None  # a missing pooler is no head of pre-training
    assert expected_note("Some other warning") is None


def test_the_formatter_drops_escape_codes_and_names_a_third_party_logger():
    formatter = CleanFormatter("%(levelname)s %(message)s")
    record = logging.LogRecord(
        "transformers.modeling_utils",
        logging.WARNING,
        "x.py",
        1,
        "\x1b[1mbold\x1b[0m\rover",
        None,
        None,
    )
    assert formatter.format(record) == "WARNING transformers: boldover"
    own = logging.LogRecord("root", logging.INFO, "x.py", 1, "wrote %d lines", (3,), None)
    assert formatter.format(own) == "INFO wrote 3 lines"


def test_the_header_names_rule_wildcards_threads_device_start_and_process():
    job = SimpleNamespace(
        rule="encoder_index", wildcards={"collection": "cf"}, threads=4, resources={"gpu": 1}
    )
    line = header(job, "812", {"CUDA_VISIBLE_DEVICES": "1"})
    assert re.fullmatch(
        r"job encoder_index \(collection=cf\): 4 thread\(s\), device 1 GPU\(s\) requested, "
        r"CUDA_VISIBLE_DEVICES=1, started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d on \S+, "
        rf"process {os.getpid()}: forked from job server 812",
        line,
    )
    bare = header(SimpleNamespace(rule="all"), None, {})
    assert bare.startswith("job all: 1 thread(s), device cpu, started ")
    assert bare.endswith(": a fresh interpreter")


def test_what_a_c_library_prints_is_counted_into_one_line(caplog):
    notes = {"float cast": Note(re.compile(r"too long to cast"), "harmless here")}
    with caplog.at_level(logging.INFO), counted_stderr("lib", notes):
        for length in (61, 39):
            os.write(2, f"{'1' * length} is too long to cast into float number\n".encode())
        os.write(2, b"something else\n")
    said = [record.getMessage() for record in caplog.records]
    assert said == [
        "lib: something else",
        "lib printed 2 'float cast' note(s): harmless here; the first: "
        f"{'1' * 61} is too long to cast into float number",
    ]


STEP = """
import sys, warnings
from types import SimpleNamespace
from hybrid_ir.jobs.run import run_step

def step():
    from transformers import BertForPreTraining, BertModel
    pretraining = BertForPreTraining.from_pretrained(sys.argv[2])  # heads missing: expected
    pretraining.save_pretrained(sys.argv[3])
    BertForPreTraining.from_pretrained(sys.argv[2])  # the same note again: said once
    BertModel.from_pretrained(sys.argv[3])  # heads unused: expected
    warnings.warn("a library's deprecation", FutureWarning)

job = SimpleNamespace(rule="pretrain", wildcards={"backbone": "tiny"}, log=[sys.argv[1]],
                      config={"max_relevance": 1000, "max_line_chars": 1 << 20})
run_step(job, step)
"""


def test_a_jobs_log_is_timestamped_clean_and_explains_expected_head_notes(tiny_bert, tmp_path):
    log = tmp_path / "pretrain.log"
    command = [sys.executable, "-c", STEP, str(log), str(tiny_bert), str(tmp_path / "with-heads")]
    subprocess.run(command, check=True, timeout=300, env=os.environ | {"HF_HUB_OFFLINE": "1"})
    text = log.read_text()
    lines = text.splitlines()
    assert "\x1b" not in text and "\r" not in text
    assert all(STAMP.match(line) for line in lines), lines
    assert lines[0].split(" INFO ")[1].startswith("job pretrain (backbone=tiny): 1 thread(s)")
    assert "LOAD REPORT" not in text and "This checkpoint seem corrupted" not in text
    explained = [line for line in lines if " note: " in line]
    assert len(explained) == 3, explained  # the second load's notes are not said again
    assert any(
        "BertForPreTraining from" in line and "newly initialised" in line for line in explained
    )
    assert any("BertModel from" in line and "unused by this model" in line for line in explained)
    assert any("finished [Loading weights] " in line for line in lines)
    assert any(" WARNING " in line and "FutureWarning: a library's" in line for line in lines)
