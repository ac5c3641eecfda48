"""The side-by-side scripts' --isa switch (issue 28): AVX2 on any machine, stamped in the rows."""

import json
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BENCHMARKS = os.path.join(ROOT, "benchmarks")
sys.path.insert(0, ROOT)  # `benchmarks` runs from the repository root; it is not installed.

from benchmarks import isa  # noqa: E402

VERBOSE = ("onednn_verbose,v1,info,oneDNN v3.7.1\n"
           "onednn_verbose,v1,info,cpu,runtime:threadpool,nthr:2\n"
           "onednn_verbose,v1,info,cpu,isa:Intel AVX2\n")


def test_the_isa_line_of_onednns_verbose_output():
    assert isa.parse_isa_line(VERBOSE) == "Intel AVX2"
    assert isa.parse_isa_line("no oneDNN here\n") is None


def test_avx2_sets_the_variables_tensorflow_and_torch_read(capsys):
    isa.main(["env", "--isa=avx2"])
    lines = capsys.readouterr().out.splitlines()
    assert "export ONEDNN_MAX_CPU_ISA=AVX2" in lines
    assert "export MKL_ENABLE_INSTRUCTIONS=AVX2" in lines
    isa.main(["env", "--isa=native"])
    assert capsys.readouterr().out.strip() == ""


def test_the_setting_reaches_onednn(monkeypatch):
    """Under ONEDNN_MAX_CPU_ISA=AVX2 oneDNN reports AVX2, whatever the machine has."""
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    reported = isa.probe()
    assert reported is not None, "oneDNN wrote no ISA line (is TF_ENABLE_ONEDNN_OPTS off?)"
    assert "AVX2" in reported and "512" not in reported, reported


def test_stamp_adds_the_fields_and_keeps_what_rows_have(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"system": "torch", "cpu": "from the row"}) + "\n"
                    + json.dumps({"system": "t2t_lite"}) + "\n")
    assert isa.stamp(str(rows), "avx2", "Intel AVX2") == 2
    first, second = [json.loads(line) for line in rows.read_text().splitlines()]
    date = first.pop("date")
    assert first == {"system": "torch", "cpu": "from the row", "isa": "avx2",
                     "onednn_isa": "Intel AVX2"}
    assert re.fullmatch(r"20\d\d-\d\d-\d\d", date) and second["date"] == date
    assert second["isa"] == "avx2" and second["cpu"] == isa.cpu_model()
    assert not (tmp_path / "rows.jsonl.tmp").exists()


def test_the_scripts_refuse_an_unknown_isa_in_one_line():
    for name in ("train_side_by_side.sh", "decode_side_by_side.sh"):
        done = subprocess.run(["bash", os.path.join(BENCHMARKS, name), "--isa=sse"],
                              capture_output=True, text=True, check=False, timeout=120)
        assert done.returncode != 0
        assert "invalid choice: 'sse'" in done.stderr
        assert not os.path.exists(os.path.join(BENCHMARKS, "results",
                                               name.replace(".sh", "_sse.jsonl")))
