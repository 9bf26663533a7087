"""Backends without a Ray runtime: the local backend, choosing a backend, and the Ray backend's errors (issue 14)."""

import io
import subprocess
import sys

import pytest

from fairrag_core.backends import LocalBackend, make_backend
from fairrag_core.backends.ray_backend import RayBackend
from fairrag_core.cli import main
from fairrag_core.errors import BackendError, InvalidParameterError


class _Spec:
    uses_models = False

    def __init__(self):
        self.built = 0

    def build(self):
        self.built += 1
        return 10


def _add(state, task):
    return state + task


def test_local_backend_builds_once_and_keeps_task_order():
    spec, seen = _Spec(), []
    out = LocalBackend().map(_add, [3, 1, 2], spec=spec, progress=lambda d, t: seen.append((d, t)))
    assert out == [13, 11, 12] and spec.built == 1 and seen == [(1, 3), (2, 3), (3, 3)]
    assert LocalBackend().map(_add, [1], spec=spec, state=100) == [101] and spec.built == 1


def test_make_backend_names_and_misuse():
    assert isinstance(make_backend("local"), LocalBackend)
    with pytest.raises(InvalidParameterError, match="--ray-address needs --backend ray"):
        make_backend("local", address="auto")
    with pytest.raises(InvalidParameterError, match="local, ray"):
        make_backend("spark")
    with pytest.raises(InvalidParameterError, match="not a Ray address"):
        RayBackend("nowhere")


def test_an_unreachable_cluster_is_a_clear_error_on_the_command_line(capsys):
    code = main(["exposure-sweep", "--backend", "ray", "--ray-address", "ray://nowhere:1", "-N", "5"],
                out=io.StringIO())
    err = capsys.readouterr().err
    assert code == 2 and "no Ray cluster answers at 'ray://nowhere:1'" in err and "ray start --head" in err
    assert "Traceback" not in err


def test_ray_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError, as without the package
    with pytest.raises(BackendError, match=r"pip install 'ray\[client\]==2\.60\.0'"):
        RayBackend()


def test_the_package_imports_without_ray():
    code = "import sys, fairrag_core, fairrag_core.backends, fairrag_core.cli; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
