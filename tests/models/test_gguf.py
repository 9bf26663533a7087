import hashlib

import pytest

from fairrag_core import ModelUnavailableError
from fairrag_core.models import catalog, gguf
from fairrag_core.models.gguf import GGUFWeights, resolve_gguf


@pytest.fixture()
def parts(tmp_path, monkeypatch):
    chunks = [b"GGUF" + bytes(range(50)), bytes(range(200, 256)) * 3, b"tail"]
    files = []
    for i, data in enumerate(chunks):
        path = tmp_path / f"part{i}.bin"
        path.write_bytes(data)
        files.append(path)
    monkeypatch.setattr(gguf, "_package_file", lambda package, inner, weights: files[int(package[-1])])
    joined = b"".join(chunks)
    return joined, tmp_path / "cache"


def _weights(joined: bytes, sha: str) -> GGUFWeights:
    return GGUFWeights("toy", "toy.gguf", ("pkg0", "pkg1", "pkg2"), ("a", "b", "c"), len(joined), sha)


def test_split_weights_are_joined_in_order_and_verified(parts):
    joined, cache = parts
    path = resolve_gguf(_weights(joined, hashlib.sha256(joined).hexdigest()), directory=cache)
    assert path.read_bytes() == joined and path.name == "toy.gguf"
    assert resolve_gguf(_weights(joined, hashlib.sha256(joined).hexdigest()), directory=cache) == path


def test_a_wrong_sha256_is_refused_and_nothing_is_kept(parts):
    joined, cache = parts
    with pytest.raises(ModelUnavailableError, match="refusing .* sha256 .* does not match"):
        resolve_gguf(_weights(joined, "0" * 64), directory=cache)
    assert not any(cache.iterdir())


def test_a_wrong_size_is_refused(parts):
    joined, cache = parts
    bad = GGUFWeights("toy", "toy2.gguf", ("pkg0", "pkg1", "pkg2"), ("a", "b", "c"), len(joined) + 1, None)
    with pytest.raises(ModelUnavailableError, match="expected"):
        resolve_gguf(bad, directory=cache)


def test_a_missing_package_names_the_install_command():
    weights = GGUFWeights("ghost", "g.gguf", ("no_such_package_xyz",), ("x",), 1, None)
    with pytest.raises(ModelUnavailableError, match="run `make install`"):
        resolve_gguf(weights)


@pytest.mark.model
@pytest.mark.parametrize("weights", catalog.pinned_weights(), ids=lambda w: w.name)
def test_bundled_weights_match_the_catalogues_size_and_sha256(weights):
    """Hashes the installed parts in order (not the joined cache copy), so a wrong pin or a changed package fails."""
    folders = [gguf._package_dir(package) for package in weights.packages]
    if None in folders:
        pytest.skip(f"{weights.requirement} is not installed")
    digest, size = hashlib.sha256(), 0
    for folder, inner in zip(folders, weights.part_paths, strict=True):
        with open(folder / inner, "rb") as handle:
            while block := handle.read(1 << 22):
                digest.update(block)
                size += len(block)
    assert (size, digest.hexdigest()) == (weights.size, weights.sha256)
    with open(folders[0] / weights.part_paths[0], "rb") as handle:
        assert handle.read(4) == b"GGUF"


def test_weight_packages_installed_with_pip_target_are_found(tmp_path, monkeypatch):
    """make install puts weight-only packages in <venv>/weights (or $FAIRRAG_WEIGHTS), outside site-packages."""
    data = b"GGUF" + b"\x00" * 60
    folder = tmp_path / "toy_weights_pkg"
    folder.mkdir()
    (folder / "model.gguf").write_bytes(data)
    monkeypatch.setenv("FAIRRAG_WEIGHTS", str(tmp_path))
    weights = GGUFWeights("toy", "model.gguf", ("toy_weights_pkg",), ("model.gguf",), len(data),
                          hashlib.sha256(data).hexdigest())
    assert resolve_gguf(weights) == folder / "model.gguf"
    tampered = GGUFWeights("toy", "model.gguf", ("toy_weights_pkg",), ("model.gguf",), len(data), "1" * 64)
    gguf._verified.clear()
    with pytest.raises(ModelUnavailableError, match="refusing"):
        resolve_gguf(tampered)


def test_the_version_of_a_weights_package_outside_site_packages_is_found(tmp_path, monkeypatch):
    info = tmp_path / "toy_weights_pkg-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-weights-pkg\nVersion: 1.2.3\n")
    monkeypatch.setenv("FAIRRAG_WEIGHTS", str(tmp_path))
    assert gguf.package_version("toy_weights_pkg") == gguf.package_version("toy-weights-pkg") == "1.2.3"
    assert gguf.package_version("no_such_package_xyz") is None
