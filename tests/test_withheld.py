"""An exercise's ``withheld`` engine functions (exercise.toml): helpers that hold the answer, such as the kernel a
target launches. Trusted mode removes them from the learner's copy of the engine, so a submission that calls the
engine's own kernel is not accepted there; `check` refuses a withheld name the engine does not define."""

from __future__ import annotations

import dataclasses
import inspect

from judge.exercise import REPO_ROOT as REPO
from judge.exercise import Target, load_exercise
from judge.isolation import Judging, judge_isolated
from judge.trusted import judge_trusted, prepare_learner_tree
from judge.validate import withheld_problems


def _exercise():
    return load_exercise(REPO / "exercises" / "store-kv-kernel")


def test_the_learners_copy_lacks_the_withheld_kernel_and_keeps_the_rest(tmp_path):
    tree = prepare_learner_tree(_exercise(), tmp_path)
    store = (tree.code / "minisgl" / "kernel" / "store.py").read_text()
    kernel = store[store.index("def _store_kv_kernel"):store.index("def _gather_rows_kernel")]
    assert "NotImplementedError" in kernel and "tl.store" not in kernel, kernel
    gather = store[store.index("def _gather_rows_kernel"):store.index("def _cdiv")]
    assert "tl.store" in gather, "another exercise's kernel is not withheld here"


def test_check_refuses_a_withheld_name_the_engine_does_not_define():
    e = _exercise()
    assert withheld_problems(e) == []
    bad = dataclasses.replace(e, withheld=[Target.parse("minisgl.kernel.store:_no_such_kernel")])
    assert any("_no_such_kernel" in p for p in withheld_problems(bad))


def test_calling_the_engines_kernel_is_not_accepted_in_trusted_mode():
    from minisgl.kernel import store

    e = _exercise()
    delegates = "import torch\n\n\n" + inspect.getsource(store.store_kv)  # the engine's launcher: its kernel
    assert "_store_kv_kernel()" in delegates
    local = judge_isolated([Judging(e, delegates, "delegates.py", "local", seed=1)])[0].verdict
    assert local.status == "accepted", local.to_json()  # local mode promises less (docs/judge.md)
    trusted = judge_trusted([Judging(e, delegates, "delegates.py", "local", seed=1)])[0]
    assert trusted.status == "runtime_error", trusted.to_json()
    assert "not available in trusted judging" in trusted.to_json()
