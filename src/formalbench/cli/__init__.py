"""Command-line entry points: parse input, call pipelines, render results."""
