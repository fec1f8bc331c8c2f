"""Analyse a small program and look its facts up by the source text of an expression."""

from __future__ import annotations

import textwrap

import libcst as cst

from attnlint.analysis import analyze_module


def analyse(source: str):
    module = cst.parse_module(textwrap.dedent(source).lstrip("\n"))
    return analyze_module(module), module


def function(analysis, name: str, class_name=None):
    found = [f for f in analysis.functions if f.name == name and (class_name is None or f.class_name == class_name)]
    assert found, f"no function {name}"
    return found[-1]


def env(analysis, function_name: str, name: str, class_name=None):
    return function(analysis, function_name, class_name).final_env[name]


def dims_text(value):
    return tuple(None if d is None else d.text() for d in value.dims())


def only_softmax(analysis):
    sites = analysis.softmax_sites
    assert len(sites) == 1, f"{len(sites)} softmax sites"
    return sites[0]
