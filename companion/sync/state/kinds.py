"""The two kinds of device, fixed by each device's invite: the person's (`human`) and an
agent's (`agent`). The index records the kind of the device whose version a copy last synced;
conflicts give the person's edit precedence; holds apply to agents' writes."""

HUMAN = "human"
AGENT = "agent"
KINDS = (HUMAN, AGENT)
