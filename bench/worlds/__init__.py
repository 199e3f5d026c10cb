"""A seeded generator of evaluation worlds for the dream (issue 40: many worlds, not one).

`make_world(seed, language, domain)` plans a world: a person, her agent, a vault of topic
notes with aliases, Home.md, and four nights of material (journal days with Learned-style
sections in the world's language, Hermes sessions, Claude Code and OpenClaw sessions) with
planted phenomena, each recorded in the world's key with what a careful person expects.
`World.build(root, hermes)` writes the vault; `World.before_night(k)` writes day k's material;
`World.after_night(k)` makes the person's edits of the morning after. The same seed, language
and domain give the same world, byte for byte (the dream's output aside).
"""

from __future__ import annotations

from .world import DOMAIN_NAMES, LANGUAGE_NAMES, World, make_world, world_plan

__all__ = ["DOMAIN_NAMES", "LANGUAGE_NAMES", "World", "make_world", "world_plan"]
