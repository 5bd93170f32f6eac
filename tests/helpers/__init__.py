"""Helpers the tests share (not tests themselves): `from helpers import corpus`.

On the import path through pyproject.toml's pytest `pythonpath` (tests/),
not through sys.path edits."""
