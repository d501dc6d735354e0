"""Shared test support: message models, actors and a worker process for multi-process tests."""
