"""The ```python examples of docs/python.md run, each in a fresh namespace."""
import os
import re

import pytest

import pixflow

from conftest import HAVE_YAML, SOURCE_DIR

DOC = os.path.join(SOURCE_DIR, "docs", "python.md")


def blocks():
    text = open(DOC).read()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_doc_has_examples():
    assert len(blocks()) >= 6


@pytest.mark.parametrize("index", range(len(blocks())))
def test_doc_example(index, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = blocks()[index]
    if "from_yaml" in code and not HAVE_YAML:
        pytest.skip("built without libyaml")
    if "pixflow.segment(" in code and not hasattr(pixflow, "segment"):
        pytest.skip("this libpixflow has no jobs API")
    exec(compile(code, "%s example %d" % (DOC, index + 1), "exec"), {"__name__": "__doc__"})
