"""``tb-ad-layer diff``: a planted regression is caught, a noisy change is let through, and the
command line's exit status is what CI gates on."""
from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from tb_ad_layer.analysis.commands import open_run
from tb_ad_layer.analysis.diff import diff_stores
from tb_ad_layer.cli import main
from tb_ad_layer.contract.analysis import Diff
from tests.analysis.builder import K, L, N, build

NODES = [N("qkv", "auto_deploy.torch_linear_simple.default", "attention"),
         N("attn", "auto_deploy.torch_attention.default", "attention"),
         N("up", "auto_deploy.torch_linear_simple.default", "mlp")]


def run(logdir: Path, name: str, qkv: float, attn: float, attn_p90: float) -> Path:
    """One layer; qkv and up are steady (p90 0.1 µs above the median), attn as given."""
    kernels = [K("nvjet_gemm", 0, qkv, node="qkv", median=qkv, p90=qkv + 0.1, p99=qkv + 0.2),
               K("fmha", qkv, qkv + attn, node="attn", median=attn, p90=attn_p90,
                 p99=attn_p90 + 1),
               K("nvjet_gemm", qkv + attn, qkv + attn + 20, node="up", median=20, p90=20.1,
                 p99=20.2)]
    return build(logdir, name, [L(0, nodes=NODES)], kernels)


@pytest.fixture
def runs(tmp_path: Path) -> dict[str, Path]:
    return {"base": run(tmp_path, "base", 10, 30, 30.5),
            # the QKV GEMM planted 50 % slower, its spread unchanged: a regression
            "slower": run(tmp_path, "slower", 15, 30, 30.5),
            # attention 8 % slower, but its replays spread by 6 µs: within the noise
            "noisy": run(tmp_path, "noisy", 10, 32.4, 38.4),
            "faster": run(tmp_path, "faster", 5, 30, 30.5)}


def diff(a: Path, b: Path, gate: float = 5.0) -> Diff:
    sa, sb = open_run(str(a)), open_run(str(b))
    try:
        return diff_stores(sa, sb, gate)
    finally:
        sa.close()
        sb.close()


def test_a_planted_regression_is_caught(runs: dict[str, Path]) -> None:
    d = diff(runs["base"], runs["slower"])
    assert d.verdict == "regression" and d.gate_pct == 5.0
    assert (d.step.a_us, d.step.b_us, d.step.delta_us) == (60.0, 65.0, 5.0)
    node = next(e for e in d.regressions if e.level == "node")
    assert (node.layer, node.group, node.node, node.delta_us, node.delta_pct) == (
        0, "attention", "qkv", 5.0, 50.0)
    assert {e.level for e in d.regressions} == {"step", "layer", "group", "node"}
    assert not d.improvements


def test_a_noisy_change_within_the_replay_spread_passes(runs: dict[str, Path]) -> None:
    d = diff(runs["base"], runs["noisy"])
    attn = 2.4
    assert d.step.delta_us == pytest.approx(attn) and d.step.noise_us > attn / 2
    assert d.verdict == "unchanged" and not d.regressions


def test_the_gate_decides_and_an_improvement_is_one(runs: dict[str, Path]) -> None:
    assert diff(runs["base"], runs["slower"], gate=60).verdict == "unchanged"
    d = diff(runs["base"], runs["faster"])
    assert d.verdict == "improvement" and d.improvements[0].delta_us == -5.0


def test_cli_exit_status_gates_ci(runs: dict[str, Path], capsysbinary: pytest.CaptureFixture[bytes]
                                  ) -> None:
    assert main(["diff", str(runs["base"]), str(runs["slower"])]) == 1
    out = capsysbinary.readouterr().out.decode()
    assert out.startswith("# slower against base: regression")
    assert main(["diff", str(runs["base"]), str(runs["noisy"]), "--format", "json"]) == 0
    d = msgspec.json.decode(capsysbinary.readouterr().out, type=Diff)
    assert d.verdict == "unchanged"
    assert main(["diff", str(runs["base"]), str(runs["slower"]), "--gate", "60"]) == 0


def test_bad_input_is_one_line_and_status_2(runs: dict[str, Path], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(runs["base"]), str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no run store here" in err
    assert main(["report", str(runs["base"]), "--dim", "s70"]) == 2
    assert "expected NAME=N" in capsys.readouterr().err
    assert main(["diff", str(runs["base"]), str(runs["base"]), "--gate", "-1"]) == 2
    assert main(["report", str(runs["base"]), "--gpu", "Voodoo 3"]) == 2


def test_an_activity_seen_in_one_replay_of_many_counts_as_noise(tmp_path: Path) -> None:
    """An eager copy between replays has no replay statistics: its change is not evidence."""
    def with_copy(name: str, copy_us: float) -> Path:
        kernels = [K("nvjet_gemm", 0, 10, node="qkv", median=10, p90=10.1, p99=10.2),
                   K("[CUDA memset]", 10, 10 + copy_us, node=None)]
        return build(tmp_path, name, [L(0, nodes=NODES)], kernels)

    d = diff(with_copy("a", 1.0), with_copy("b", 1.3))
    assert d.verdict == "unchanged" and d.step.delta_us == pytest.approx(0.3)
