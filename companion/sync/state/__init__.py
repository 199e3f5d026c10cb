"""The per-copy state: the sync index (`index.py`, with a store per table), the device file, the
saved status and who last wrote each file. Imports only the local disk.
"""
