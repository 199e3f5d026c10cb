"""`RemoteVault` given a key loader: the key is built on first use, once, whatever the threads."""

from __future__ import annotations

import threading

from companion.crypto import file_id
from companion.crypto.keys import VaultKey
from companion.relayclient.client import RelayClient
from companion.sync.remote.vault import RemoteVault

VAULT = "0123456789abcdef"


def test_the_key_is_built_on_first_use_and_only_once() -> None:
    key = VaultKey.generate()
    built: list[int] = []
    start = threading.Barrier(4)

    def load() -> VaultKey:
        built.append(1)
        return key

    client = RelayClient("http://127.0.0.1:9", None, VAULT)  # never contacted
    remote = RemoteVault(client, load, VAULT)
    assert built == []
    ids: list[str] = []

    def use() -> None:
        start.wait()
        ids.append(remote.file_id("Home.md"))

    threads = [threading.Thread(target=use) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert built == [1]
    assert ids == [file_id(key, "Home.md")] * 4
    assert remote.key is key
    client.close()


def test_a_key_given_directly_is_used_as_is() -> None:
    key = VaultKey.generate()
    client = RelayClient("http://127.0.0.1:9", None, VAULT)
    assert RemoteVault(client, key, VAULT).key is key
    client.close()
