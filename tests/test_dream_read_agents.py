"""Claude Code and OpenClaw transcripts as those agents write them (issue 15, items 10 and 11).

The samples follow the agents' published formats, not this project's fixtures: Claude Code's
session JSONL (``uuid`` / ``parentUuid`` / ``sessionId`` lines, ``isCompactSummary``,
``isSidechain`` and ``subagents/agent-*.jsonl``, ``queued_command`` attachments, bash-mode and
local-command tags), and pi's session format that OpenClaw uses (a ``session`` header, entries
linked by ``id`` / ``parentId``, the active leaf last, ``*.jsonl.reset.<ts>`` archives, and
OpenClaw's channel envelope on inbound messages).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from companion.dream.distill_rules import distill_rules
from companion.dream.read import SourceSpec, Window, read_transcripts

NOW = dt.datetime(2026, 11, 28, 1, 0, tzinfo=dt.UTC)
WINDOW = Window(NOW - dt.timedelta(hours=48), NOW)


def _ts(minute: int) -> str:
    return (
        (NOW - dt.timedelta(hours=12) + dt.timedelta(minutes=minute))
        .isoformat()
        .replace("+00:00", "Z")
    )


def _write(path: Path, lines: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")


SID = "5f2c6a0e-1b7d-4c61-9a38-0d7e2b4f9c11"


def _claude(n: int, kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "parentUuid": f"u{n - 1}" if n > 1 else None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/ana/weather",
        "sessionId": SID,
        "version": "2.1.12",
        "gitBranch": "main",
        "type": kind,
        "message": {"role": kind, "content": content},
        "uuid": f"u{n}",
        "timestamp": _ts(n),
        **extra,
    }


def _claude_tree(root: Path) -> Path:
    project = root / "projects" / "-home-ana-weather"
    _write(
        project / f"{SID}.jsonl",
        [
            {
                "type": "queue-operation",
                "operation": "dequeue",
                "timestamp": _ts(0),
                "sessionId": SID,
            },
            _claude(1, "user", "remember: the NAS is called atlas."),
            _claude(2, "assistant", [{"type": "text", "text": "Noted."}]),
            _claude(
                3,
                "user",
                "This session is being continued from a previous conversation."
                "\nremember: a stale fact from the compaction summary.",
                isCompactSummary=True,
                isVisibleInTranscriptOnly=True,
            ),
            _claude(4, "user", "<bash-input>cat notes.txt</bash-input>"),
            _claude(
                5,
                "user",
                "<bash-stdout>lesson: printed by cat, not said by Ana."
                "</bash-stdout><bash-stderr></bash-stderr>",
            ),
            _claude(
                6,
                "user",
                "<command-name>/cost</command-name>\n<command-message>cost"
                "</command-message>\n<command-args></command-args>",
            ),
            _claude(
                7, "user", "<local-command-stdout>remember: output of /cost</local-command-stdout>"
            ),
            {
                "type": "attachment",
                "uuid": "u8",
                "parentUuid": "u7",
                "sessionId": SID,
                "timestamp": _ts(8),
                "isSidechain": False,
                "attachment": {
                    "type": "queued_command",
                    "commandMode": "prompt",
                    "origin": {"kind": "human"},
                    "prompt": "remember: typed while the agent worked.",
                },
            },
            {
                "type": "attachment",
                "uuid": "u9",
                "parentUuid": "u8",
                "sessionId": SID,
                "timestamp": _ts(9),
                "attachment": {
                    "type": "queued_command",
                    "commandMode": "task-notification",
                    "prompt": "<task-notification>remember: a helper finished</task-notification>",
                },
            },
            _claude(
                10,
                "assistant",
                [{"type": "text", "text": "remember: a sidechain reply."}],
                isSidechain=True,
            ),
            _claude(
                11,
                "user",
                "Please also note <system-reminder>remember: injected"
                "</system-reminder>the weather.",
            ),
        ],
    )
    sub = {"isSidechain": True, "agentId": "a1b2"}
    _write(
        project / SID / "subagents" / "agent-a1b2.jsonl",
        [_claude(1, "user", "remember: the prompt the main agent wrote.", **sub)],
    )
    _write(
        project / "agent-c3d4.jsonl",
        [_claude(1, "user", "remember: an older subagent file.", **sub)],
    )
    return root / "projects"


def test_claude_code_reads_only_the_persons_and_agents_words(tmp_path: Path) -> None:
    """Item 10: compaction summaries, subagent transcripts (both layouts and sidechain lines),
    bash-mode and local-command output are not read; queued prompts are."""
    root = _claude_tree(tmp_path / "claude")
    res = read_transcripts([SourceSpec("claude", str(root))], WINDOW)
    assert not res.problems
    assert [(m.role, m.text) for m in res.messages] == [
        ("user", "remember: the NAS is called atlas."),
        ("assistant", "Noted."),
        ("user", "remember: typed while the agent worked."),
        ("user", "Please also note the weather."),
    ]
    d = distill_rules([], res.messages, lambda _t: False)
    assert sorted(c.text for c in d.candidates) == [
        "The NAS is called atlas.",
        "Typed while the agent worked.",
    ]


def _entry(
    eid: str, parent: str | None, minute: int, role: str, content: Any, **msg: Any
) -> dict[str, Any]:
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": _ts(minute),
        "message": {"role": role, "content": content, "timestamp": minute, **msg},
    }


def _text(t: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": t}]


def test_openclaw_reads_the_active_branch_archives_and_channel_messages(tmp_path: Path) -> None:
    """Item 11: channel envelopes are removed before markers are matched, abandoned branches
    are not read, and sessions archived by /new or /reset are."""
    sessions = tmp_path / "openclaw" / "agents" / "main" / "sessions"
    header = {
        "type": "session",
        "version": 3,
        "id": "oc-1",
        "timestamp": _ts(0),
        "cwd": "/home/ana",
    }
    _write(
        sessions / "oc-1.jsonl",
        [
            header,
            {
                "type": "model_change",
                "id": "e0",
                "parentId": None,
                "timestamp": _ts(0),
                "provider": "anthropic",
                "modelId": "claude-sonnet-4-5",
            },
            _entry(
                "e1",
                "e0",
                1,
                "user",
                _text(
                    "[Telegram Ana +5m 2026-11-27 09:14 UTC] remember: the gate code "
                    "changed on Monday."
                ),
            ),
            _entry(
                "e2",
                "e1",
                2,
                "assistant",
                _text("Got it."),
                provider="anthropic",
                model="claude-sonnet-4-5",
                stopReason="stop",
            ),
            # a branch the person abandoned with /tree
            _entry("e3", "e2", 3, "user", _text("remember: the backup runs at 02:00.")),
            _entry("e4", "e3", 4, "assistant", _text("OK, 02:00.")),
            # the current branch, continued from e2
            {
                "type": "branch_summary",
                "id": "e5",
                "parentId": "e2",
                "timestamp": _ts(5),
                "fromId": "e4",
                "summary": "remember: summary of the abandoned branch.",
            },
            _entry("e6", "e5", 6, "user", _text("remember: the backup runs at 03:00.")),
            _entry(
                "e7",
                "e6",
                7,
                "assistant",
                [
                    {
                        "type": "toolCall",
                        "id": "call_1",
                        "name": "bash",
                        "arguments": {"command": "crontab -l"},
                    }
                ],
            ),
            _entry(
                "e8",
                "e7",
                8,
                "toolResult",
                _text("0 3 * * * restic backup"),
                toolCallId="call_1",
                toolName="bash",
                isError=False,
            ),
            _entry("e9", "e8", 9, "assistant", _text("Confirmed: 03:00.")),
        ],
    )
    _write(
        sessions / "oc-0.jsonl.reset.2026-11-27T08-00-00.000Z",
        [
            {**header, "id": "oc-0"},
            _entry(
                "r1",
                None,
                0,
                "user",
                _text(
                    "[WebChat ana mac-mini 2026-11-27T08:00Z] remember: the router reboots "
                    "at 04:00."
                ),
            ),
            _entry("r2", "r1", 1, "assistant", _text("Noted.")),
        ],
    )
    res = read_transcripts([SourceSpec("openclaw", str(sessions))], WINDOW)
    assert not res.problems
    texts = [m.text for m in res.messages]
    assert "remember: the backup runs at 02:00." not in texts
    assert "OK, 02:00." not in texts
    assert "remember: the router reboots at 04:00." in texts
    calls = [c for m in res.messages for c in m.tool_calls]
    assert [c.result for c in calls] == ["0 3 * * * restic backup"]
    d = distill_rules([], res.messages, lambda _t: False)
    assert sorted(c.text for c in d.candidates) == [
        "The backup runs at 03:00.",
        "The gate code changed on Monday.",
        "The router reboots at 04:00.",
    ]
