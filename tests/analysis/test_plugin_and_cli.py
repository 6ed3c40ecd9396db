"""One source: the plugin's ``api/report`` and ``api/diff`` bodies are byte for byte the JSON the
command line prints, and the routes refuse bad parameters the API's way."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tb_ad_layer.cli import main
from tests.analysis.test_diff import run
from tests.plugin.conftest import make_client


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    run(tmp_path, "base", 10, 30, 30.5)
    run(tmp_path, "slower", 15, 30, 30.5)
    return tmp_path


def _cli(args: list[str], capsysbinary: pytest.CaptureFixture[bytes]) -> bytes:
    main(args)
    out: bytes = capsysbinary.readouterr().out
    assert out.endswith(b"\n")
    return out[:-1]


def test_report_and_diff_json_are_the_plugins_bodies(logdir: Path,
                                                     capsysbinary: pytest.CaptureFixture[bytes]
                                                     ) -> None:
    client, _ = make_client(logdir)
    prefix = "/data/plugin/ad_layer/api"
    served = client.get(f"{prefix}/report?run=base")
    assert served.status_code == 200
    assert served.data == _cli(["report", str(logdir / "base"), "--format", "json"], capsysbinary)
    with_dims = client.get(f"{prefix}/report?run=base&dim=s70=4,kv_len=8&gpu=H100")
    assert with_dims.data == _cli(["report", str(logdir / "base"), "--format", "json", "--dim",
                                   "s70=4", "--dim", "kv_len=8", "--gpu", "H100"], capsysbinary)
    assert json.loads(with_dims.data)["dims"] == {"kv_len": 8, "s70": 4}
    diffed = client.get(f"{prefix}/diff?a_run=base&b_run=slower&gate=5")
    assert diffed.status_code == 200
    assert diffed.data == _cli(["diff", str(logdir / "base"), str(logdir / "slower"), "--format",
                                "json"], capsysbinary)
    assert json.loads(diffed.data)["verdict"] == "regression"


def test_routes_refuse_bad_parameters(logdir: Path) -> None:
    client, _ = make_client(logdir)
    prefix = "/data/plugin/ad_layer/api"
    assert client.get(f"{prefix}/report?run=nope").status_code == 404
    assert client.get(f"{prefix}/report?run=base&dim=s70").status_code == 400
    assert client.get(f"{prefix}/report?run=base&gpu=Voodoo").status_code == 400
    assert client.get(f"{prefix}/diff?a_run=base&b_run=slower&gate=-3").status_code == 400
    assert client.get(f"{prefix}/diff?a_run=base").status_code == 400


def test_a_run_without_a_trace_is_not_compared(logdir: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from tests.conftest import DUMPS

    assert main(["convert", str(DUMPS / "ad_llama"), "--logdir", str(logdir), "--run", "bare",
                 "-q"]) == 0
    assert main(["diff", str(logdir / "bare"), str(logdir / "base")]) == 2
    assert "has no trace" in capsys.readouterr().err
    client, _ = make_client(logdir)
    assert client.get("/data/plugin/ad_layer/api/diff?a_run=bare&b_run=base").status_code == 400
    assert main(["report", str(logdir / "bare")]) == 0  # says so in its notes
    assert "the run has no trace" in capsys.readouterr().out
