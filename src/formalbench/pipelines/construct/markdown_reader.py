"""Placeholder"""
from formalbench.pipelines.construct.latex_reader import BookReading
from pathlib import Path
def read_markdown_book(folder: Path) -> BookReading:
    raise NotImplementedError
