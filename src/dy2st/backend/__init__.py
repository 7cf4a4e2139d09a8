"""Backends that run optimized graphs."""
