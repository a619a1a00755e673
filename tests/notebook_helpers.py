"""Write real ``.ipynb`` files the way Jupyter (nbformat 4.5) writes them."""

from __future__ import annotations

import json


def markdown(text: str) -> tuple[str, str]:
    return ("markdown", text)


def raw(text: str) -> tuple[str, str]:
    return ("raw", text)


def notebook_json(*cells, language: str = "python", one_string_sources: bool = False) -> str:
    """A notebook whose cells are code (a plain string) or ``markdown(...)``/``raw(...)``; sources
    as nbformat writes them (a list of lines, each but the last ending in a newline)."""
    written = []
    for index, cell in enumerate(cells):
        kind, text = cell if isinstance(cell, tuple) else ("code", cell)
        lines = text.split("\n")
        source = text if one_string_sources else [line + "\n" for line in lines[:-1]] + [lines[-1]]
        entry = {"cell_type": kind, "id": f"c{index}", "metadata": {}, "source": source}
        if kind == "code":
            entry.update(execution_count=None, outputs=[])
        written.append(entry)
    metadata = {
        "kernelspec": {"display_name": language, "language": language, "name": language},
        "language_info": {"name": language},
    }
    document = {"cells": written, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def write_notebook(path, *cells, **options):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(notebook_json(*cells, **options), encoding="utf-8")
    return path
