"""Wake long-polling `GET /changes` requests the moment a commit lands in their vault.

One `asyncio.Event` per vault and generation: a waiter takes the current event *before* it
reads the store, so a commit that lands between the read and the wait still wakes it (no lost
wake-up). `notify` swaps in a fresh event and sets the old one. Everything runs on the event
loop; a commit made in a worker thread is announced with `loop.call_soon_threadsafe`.

Commits made by other relay processes arrive through `RelayStorage.subscribe` (PostgreSQL
LISTEN/NOTIFY), which the app hands to `notify_any` on the event loop.
"""

from __future__ import annotations

import asyncio


class VaultNotifier:
    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}
        self._closed = False

    def current(self, vault_id: str) -> asyncio.Event:
        """The event the next commit to `vault_id` will set; take it before reading."""
        ev = self._events.get(vault_id)
        if ev is None:
            ev = asyncio.Event()
            if self._closed:
                ev.set()
            self._events[vault_id] = ev
        return ev

    def notify(self, vault_id: str) -> None:
        ev = self._events.pop(vault_id, None)
        if ev is not None:
            ev.set()

    def notify_all(self) -> None:
        """Wake every waiter (a notification from another process may have been missed)."""
        events, self._events = self._events, {}
        for ev in events.values():
            ev.set()

    def notify_any(self, vault_id: str | None) -> None:
        if vault_id is None:
            self.notify_all()
        else:
            self.notify(vault_id)

    def close(self) -> None:
        """Release every waiter now (server shutdown) and any that arrive later."""
        self._closed = True
        for ev in self._events.values():
            ev.set()
        self._events.clear()

    @property
    def closed(self) -> bool:
        return self._closed

    @staticmethod
    async def wait(event: asyncio.Event, timeout: float) -> bool:
        """True when woken, False on timeout."""
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            return False
        return True
