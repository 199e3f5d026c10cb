"""Sizes the format fixes (docs/security.md), in a module that loads nothing: the device state
checks a stored key's length without loading `cryptography`."""

KEY_SIZE = 32  # bytes in a vault key and in each key derived from it
