"""Fault injection for the reliability tests (see sitecustomize.py)."""
