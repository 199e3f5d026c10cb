"""Vault Companion: encrypted sync, secret guard and nightly dream for an agent's Markdown vault."""

__version__ = "0.1.0"
