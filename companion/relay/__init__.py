"""The relay: the server every copy of a vault syncs through, which stores only ciphertext.

`app.create_app(storage)` is the HTTP API (FastAPI; routes in `routes_*.py`), `storage` the
interface it programs against and `sqlite_storage` the embedded backend, `server` the uvicorn
runner and `cli` the `companion relay` commands. The sync engine's side is a package of its own,
`companion.relayclient`, which this one never imports; the two share the wire format
(`blobframes`, `replies`). See docs/relay.md.
"""
