"""The relay: the server every copy of a vault syncs through, which stores only ciphertext.

`app.create_app(storage)` is the HTTP API (FastAPI; routes in `routes_*.py`), `storage` the
interface it programs against and `sqlite_storage` the embedded backend, `client.RelayClient`
the sync engine's side, `server` the uvicorn runner and `cli` the `companion relay` commands.
See docs/relay.md.
"""
