"""The remote: the encrypted, verified view of the relay over `companion.relayclient`. Imports no
other sync layer.
"""
