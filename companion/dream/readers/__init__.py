"""The transcript readers of the dream's step 1, one module a format (`companion.dream.read`
is the step itself, and what the rest of the dream imports).

- `hermes`: Hermes Agent's SQLite `state.db`;
- `claude`: Claude Code session JSONL files;
- `openclaw`: OpenClaw session JSONL files and their `/new` / `/reset` archives;
- `generic`: the documented generic JSONL format (kind `jsonl`), one message per line;
- `files`: what the three JSONL formats share (finding the files, skipping those untouched
  since before the window, reading the lines);
- `message`: the common shape every format's messages are put in (text, tool calls, tool
  results; never the dream's own output), and the time of a line;
- `source`: a configured source and the window;
- `registry`: which reader reads which kind;
- `journal`: the journal days, and the headings and markers not understood in them.
"""
