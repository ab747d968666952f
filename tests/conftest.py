import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


import pytest  # noqa: E402


def _verify_dict(report):
    """A SegmentReport as data, without the wall-clock field (the only one allowed to differ between two runs)."""
    d = {k: v for k, v in vars(report).items() if k not in ("seconds", "problems", "notes")}
    return d, [p.to_dict() for p in report.problems], [p.to_dict() for p in report.notes]


@pytest.fixture(autouse=True)
def _verify_accel_equality(request, monkeypatch):
    """In every tests/test_verify_*.py test, each in-process ``verify_segment`` call (direct, or through
    ``verify_paths`` / the CLI under CliRunner) also runs with deep=False with and without the compiled accelerator
    (KAFKALOG_NO_ACCEL) and asserts identical reports: the Python walk is the reference for the C fast path, and this
    reuses every corruption case of those modules as an equality case."""
    if not request.module.__name__.rsplit(".", 1)[-1].startswith("test_verify_"):
        yield
        return
    import os

    from kafkalog_cli.ops import verify
    from kafkalog_cli.storage import accel

    orig = verify.verify_segment
    if accel.module() is None:
        yield
        return

    def dual(path, **kw):
        res = orig(path, **kw)
        shallow = dict(kw, deep=False)
        saved = os.environ.pop("KAFKALOG_NO_ACCEL", None)
        try:
            fast = res if not kw.get("deep") and saved is None else orig(path, **shallow)
            os.environ["KAFKALOG_NO_ACCEL"] = "1"
            ref = orig(path, **shallow)
        finally:
            os.environ.pop("KAFKALOG_NO_ACCEL", None)
            if saved is not None:
                os.environ["KAFKALOG_NO_ACCEL"] = saved
        assert _verify_dict(fast) == _verify_dict(ref), path
        return res

    monkeypatch.setattr(verify, "verify_segment", dual)
    if getattr(request.module, "verify_segment", None) is orig:
        monkeypatch.setattr(request.module, "verify_segment", dual)
    yield


@pytest.fixture(scope="session")
def kafka_real(tmp_path_factory):
    """Kafka's own storage code (``../shared/kafka-real``, built once into its cache) as an ``Oracle`` with one shared
    Batch JVM. Skips where it cannot be built; fails under CI=true (see tests/kafka_real.py)."""
    import kafka_real as kr

    oracle = kr.Oracle(kr.launcher(), tmp_path_factory.mktemp("kafka-real-io"))
    yield oracle
    oracle.close()


@pytest.fixture(scope="session")
def kafka_dump_tool():
    """``kafka_dump_tool(version)`` -> the launcher of that release's own DumpLogSegments (versions/ of kafka-real)."""
    import kafka_real as kr

    return kr.dump_launcher
