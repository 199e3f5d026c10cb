"""Regenerate the reference systemd user units in this folder.

They are what `companion install-service` writes, for a companion installed with pipx (or
`pip install --user`) as `~/.local/bin/companion`, with the relay's data in
`~/.local/share/vault-companion/relay` and the dream at 02:00 Europe/Madrid. A test checks
that they match the code, so run this after changing `companion/services/units.py`:

    python installers/linux/generate.py
"""

from __future__ import annotations

from pathlib import Path

from companion.services.units import Specifier, UnitFile, dream_units, relay_units, watch_units

HERE = Path(__file__).resolve().parent
COMMAND = [Specifier("%h/.local/bin/companion")]
RELAY_DATA = Specifier("%h/.local/share/vault-companion/relay")


def reference_units() -> list[UnitFile]:
    return [
        *relay_units(COMMAND, RELAY_DATA, forwarded_allow_ips="127.0.0.1"),
        *watch_units(COMMAND),
        *dream_units(COMMAND, "02:00", "Europe/Madrid"),
    ]


def main() -> None:
    for unit in reference_units():
        (HERE / unit.name).write_text(unit.text, encoding="utf-8")
        print(f"wrote {HERE / unit.name}")


if __name__ == "__main__":
    main()
