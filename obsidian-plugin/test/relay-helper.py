"""A real relay for the plugin's tests: the production stack on 127.0.0.1, port 0.

Prints `url <URL>` once listening, then answers stdin lines: `invite [VAULT]` -> `invite CODE`,
`new-vault` -> `invite CODE` (a code creating another vault), `revoke DEVICE` -> `ok`.
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
            print("invite", relay.invite(args[0] if args else None), flush=True)
        elif cmd == "new-vault":
            print("invite", relay.invite(new_vault=True), flush=True)
        elif cmd == "revoke":
            relay.revoke(args[0])
            print("ok", flush=True)
