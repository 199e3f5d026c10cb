"""Random sequences of operations against a simple model of the spec (hypothesis, rule-based).

After every step: the file is within its limit, reads back to exactly the model, survives
read/write unchanged, and holds every entry that was not explicitly removed or replaced.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from companion.memory import MemoryRefused, MemoryStore, Op, guard
from companion.memory import format as fmt

D = "\n§\n"
LIMIT = 60
# small alphabet: collisions (duplicates, ambiguous matches, delimiter lines) happen often
TEXT = st.text(st.sampled_from(list("abc §\n\r\t")), max_size=14)


class Refused(Exception):
    pass


def norm(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


def check_content(content: str) -> str:
    c = norm(content)
    if not c or "§" in c.split("\n") or guard.check(c) is not None:
        raise Refused
    return c


def find(model: list[str], old: str) -> int:
    o = norm(old)
    if not o:
        raise Refused
    hits = [i for i, e in enumerate(model) if o in e]  # as Hermes: every entry containing it
    if not hits or len({model[i] for i in hits}) > 1:
        raise Refused
    return hits[0]


def model_apply(model: list[str], ops: list[Op]) -> tuple[list[str], set[str]]:
    """The spec, written as plainly as possible. Returns (new model, entries taken out)."""
    for op in ops:  # everything is validated before anything is looked up
        if op.action in ("add", "replace"):
            check_content(op.content)
        if op.action in ("replace", "remove") and not norm(op.old_text):
            raise Refused
    work = list(model)
    gone: set[str] = set()
    for op in ops:
        if op.action == "add":
            c = norm(op.content)
            if c not in work:
                work.append(c)
        elif op.action == "replace":
            i = find(work, op.old_text)
            gone.add(work[i])
            work[i] = norm(op.content)
            work = list(dict.fromkeys(work))
        else:
            i = find(work, op.old_text)
            gone.add(work.pop(i))
    size = len(D.join(work))
    if work != model and size > LIMIT:  # the file never starts over its limit here
        raise Refused
    return work, gone


class MemoryMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="memory-stateful-"))
        self.store = MemoryStore(self.dir, "memory", LIMIT)
        self.model: list[str] = []

    def teardown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def _old_text(self, data: st.DataObject) -> str:
        kind = data.draw(st.sampled_from(["exact", "slice", "random"]))
        if self.model and kind != "random":
            entry = data.draw(st.sampled_from(self.model))
            if kind == "exact":
                return entry
            start = data.draw(st.integers(0, len(entry) - 1))
            end = data.draw(st.integers(start + 1, len(entry)))
            return entry[start:end]
        return data.draw(TEXT)

    def _content(self, data: st.DataObject) -> str:
        """Mostly random text; sometimes an existing entry, or text that just fits the limit."""
        kind = data.draw(st.sampled_from(["random", "random", "existing", "fit"]))
        if kind == "existing" and self.model:
            padding = data.draw(st.sampled_from(["", " ", "\n"]))
            return data.draw(st.sampled_from(self.model)) + padding
        if kind == "fit":
            room = LIMIT - len(D.join(self.model)) - (len(D) if self.model else 0)
            size = room + data.draw(st.sampled_from([-1, 0, 1]))
            if size > 0:
                return data.draw(st.sampled_from("xyz")) * size
        return data.draw(TEXT)

    def _run(self, ops: list[Op], call) -> None:
        before = list(self.model)
        try:
            expected, gone = model_apply(self.model, ops)
        except Refused:
            expected, gone = None, set()
        try:
            result = call()
        except MemoryRefused:
            assert expected is None, f"refused, but the spec allows {ops}"
            assert self.store.read() == before
            return
        assert expected is not None, f"accepted, but the spec refuses {ops}"
        assert list(result.entries) == expected
        self.model = expected
        # nothing vanished that the operations did not take out themselves
        assert set(before) - gone <= set(self.model)

    @rule(data=st.data())
    def add(self, data: st.DataObject) -> None:
        content = self._content(data)
        self._run([Op("add", content=content)], lambda: self.store.add(content))

    @rule(data=st.data())
    def replace(self, data: st.DataObject) -> None:
        old = self._old_text(data)
        content = self._content(data)
        self._run(
            [Op("replace", content=content, old_text=old)], lambda: self.store.replace(old, content)
        )

    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        old = self._old_text(data)
        self._run([Op("remove", old_text=old)], lambda: self.store.remove(old))

    @rule(data=st.data())
    def batch(self, data: st.DataObject) -> None:
        ops = []
        for _ in range(data.draw(st.integers(1, 4))):
            action = data.draw(st.sampled_from(["add", "replace", "remove"]))
            ops.append(Op(action, content=self._content(data), old_text=self._old_text(data)))
        self._run(ops, lambda: self.store.apply_batch(ops))

    @rule()
    def reopen(self) -> None:
        """A new process would see the same thing."""
        self.store = MemoryStore(self.dir, "memory", LIMIT)

    @invariant()
    def file_matches_model(self) -> None:
        if not self.store.path.exists():
            assert self.model == []
            return
        raw = self.store.path.read_bytes()
        text = raw.decode("utf-8")
        assert len(text) <= LIMIT
        assert text == D.join(self.model)  # byte for byte
        assert fmt.round_trips(text)
        assert fmt.serialise(fmt.parse(text)) == text
        assert self.store.read() == self.model


MemoryMachine.TestCase.settings = settings(
    max_examples=80,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestMemoryMachine = MemoryMachine.TestCase
