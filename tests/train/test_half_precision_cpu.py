"""--bf16 / --fp16 on a CPU that would emulate half-precision matrix products gets a warning."""

from __future__ import annotations

import pytest

from linformer_kit.train.training_arguments import cpu_flags, warn_if_no_native_half_matmul


def test_avx2_only_cpu_warns_for_bf16() -> None:
    with pytest.warns(UserWarning, match=r"--bf16 on a CPU without native bf16.*avx512_bf16, amx_bf16"):
        assert warn_if_no_native_half_matmul("bf16", {"avx2", "fma", "sse4_2"})


@pytest.mark.parametrize(
    ("precision", "flag"), [("bf16", "avx512_bf16"), ("bf16", "amx_bf16"), ("fp16", "avx512_fp16")]
)
def test_native_half_precision_cpus_do_not_warn(precision: str, flag: str, recwarn) -> None:
    assert not warn_if_no_native_half_matmul(precision, {"avx2", flag})
    assert not recwarn.list


def test_flags_are_read_from_cpuinfo(tmp_path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512_bf16\n\nprocessor\t: 1\n")
    assert cpu_flags(str(cpuinfo)) == {"fpu", "avx2", "avx512_bf16"}
    assert cpu_flags(str(tmp_path / "missing")) is None
