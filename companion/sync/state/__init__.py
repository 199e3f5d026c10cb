"""The per-copy state: the sync index, the device file, the saved status and who last wrote each
file. Imports only the local disk.
"""
