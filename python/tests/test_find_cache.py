"""The find cache of ``fastest`` (convgrad_torch.find_cache): file location,
round trip, merging, and files it must ignore. No torch, no GPU."""

import json
import os

from convgrad_torch import find_cache


class FakeTensor:
    def __init__(self, shape, strides):
        self.shape, self._strides = shape, strides

    def stride(self):
        return self._strides


def key(n):
    x = FakeTensor((n, 8, 5, 5), (200, 1, 40, 8))
    w = FakeTensor((4, 8, 3, 3), (72, 1, 24, 8))
    gy = FakeTensor((n, 4, 5, 5), (100, 1, 20, 4))
    conf = ((1, 1), (1, 1), (1, 1), 1, False, True)
    return find_cache.layer_key(conf, True, True, "torch.float16", x, w, gy)


def test_path_follows_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("CONVGRAD_FIND_CACHE", str(tmp_path / "f.json"))
    assert find_cache.path("setup") == str(tmp_path / "f.json")
    monkeypatch.setenv("CONVGRAD_FIND_CACHE", "off")
    assert find_cache.path("setup") is None
    monkeypatch.delenv("CONVGRAD_FIND_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    a, b = find_cache.path("GPU A | driver 1"), find_cache.path("GPU B | driver 1")
    assert a != b and os.path.dirname(a) == str(tmp_path / "convgrad")


def test_round_trip_and_merge(tmp_path):
    f = str(tmp_path / "sub" / "find.json")
    assert find_cache.load(f) == {}
    t1 = {"x": (0.5, 0.25), "w": (0.125, 1.0)}
    find_cache.store(f, "setup", key(2), t1)
    # Another process stored meanwhile: both entries survive.
    find_cache.store(f, "setup", key(3), {"w": (2.0, 3.0)})
    got = find_cache.load(f)
    assert got == {key(2): {"x": [0.5, 0.25], "w": [0.125, 1.0]}, key(3): {"w": [2.0, 3.0]}}
    assert key(2) != key(3)
    assert not [p for p in os.listdir(tmp_path / "sub") if p.startswith(".find-")]


def test_ignores_bad_files_and_entries(tmp_path):
    f = tmp_path / "find.json"
    f.write_text("{not json")
    assert find_cache.load(str(f)) == {}
    f.write_text(json.dumps({"version": 999, "entries": {"k": {"x": [1, 2]}}}))
    assert find_cache.load(str(f)) == {}
    good = {"x": [1.0, 2.0]}
    f.write_text(json.dumps({"version": find_cache.VERSION, "entries": {
        "a": good, "b": {"y": [1, 2]}, "c": {"x": [1]}, "d": {"w": ["fast", 2]}, "e": [1, 2]}}))
    assert find_cache.load(str(f)) == {"a": good}
    # A bad file is replaced by a good one on the next store.
    find_cache.store(str(f), "setup", "z", {"w": (1.0, 2.0)})
    assert find_cache.load(str(f)) == {"a": good, "z": {"w": [1.0, 2.0]}}


def test_off_stores_nothing(tmp_path):
    find_cache.store(None, "setup", "k", {"x": (1.0, 2.0)})
    assert find_cache.load(None) == {}
    assert os.listdir(tmp_path) == []
