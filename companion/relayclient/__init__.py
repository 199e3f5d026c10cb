"""The relay client: the sync engine's side of the relay's HTTP API (`client.RelayClient`), its
errors and its transport (proxies, hosts). Shares only the wire format
(`companion.relay.blobframes`, `companion.relay.replies`) with the server, which never imports
it.
"""
