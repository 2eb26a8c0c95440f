"""Datasets: importers of the public benchmark formats, filters, and the shipped examples.

Everything becomes `core.records.Task`; the project's own format is one task a JSONL line
(schema in `task.schema.json`, described in docs/task-format.md).
"""

from formalbench.datasets.filters import parse_labels, select
from formalbench.datasets.loader import LoadedDataset, Problem, load_tasks
from formalbench.datasets.schema import task_json_schema
from formalbench.datasets.shipped import DatasetInfo, list_datasets, shipped_names

__all__ = [
    "DatasetInfo",
    "LoadedDataset",
    "Problem",
    "list_datasets",
    "load_tasks",
    "parse_labels",
    "select",
    "shipped_names",
    "task_json_schema",
]
