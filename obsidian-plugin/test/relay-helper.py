"""A real relay for the plugin's tests: the production stack on 127.0.0.1, port 0.

Prints `url <URL>` once listening, then answers stdin lines: `invite KIND [VAULT]` ->
`invite CODE` (the relay fixes the device's kind from it), `new-vault KIND` -> `invite CODE` (a
code creating another vault), `revoke DEVICE` -> `ok`.
Run with PYTHONPATH at the repository root. Exits when stdin closes.
"""

import sys
import tempfile

from companion.relay.testing import running_relay

with tempfile.TemporaryDirectory(prefix="plugin-relay-") as tmp, running_relay(tmp) as relay:
    print("url", relay.url, flush=True)
    for line in sys.stdin:
        cmd, *args = line.split()
        if cmd == "invite":
            kind, vault = args[0], (args[1] if len(args) > 1 else None)
            print("invite", relay.invite(vault, kind=kind), flush=True)
        elif cmd == "new-vault":
            print("invite", relay.invite(new_vault=True, kind=args[0]), flush=True)
        elif cmd == "revoke":
            relay.revoke(args[0])
            print("ok", flush=True)
