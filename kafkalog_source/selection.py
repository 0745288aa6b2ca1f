"""Which topics and partitions a read takes: Spark's Kafka source's ``subscribe``,
``subscribePattern`` and ``assign`` (at most one; none: everything under the paths).

Semantics (Spark's ``ConsumerStrategy.scala`` and ``KafkaSourceProvider.scala``, read in
apache/spark at 074bac90 and 04fc74dd, Spark 4.x):

* ``subscribe``: a comma-separated list of topics (names trimmed, empty ones dropped);
* ``subscribePattern``: a Java regular expression; a topic is taken when the pattern is found
  anywhere in its name (``Regex.findFirstIn``, the default offset fetching through the admin
  client since Spark 3.1; the deprecated consumer-based fetching used Kafka's whole-name match).
  As there, Kafka's internal topics (:data:`INTERNAL_TOPICS`) are never matched by a pattern,
  and ``__cluster_metadata`` is not a topic a client lists;
* ``assign``: JSON ``{"topicA":[0,1],"topicB":[2,4]}``, those partitions.

Spark's source leaves Kafka's internal topics out of ``subscribe`` and ``assign`` too (it
filters what the admin client describes by ``isInternal``): kafkalog reads an internal topic
that ``subscribe`` or ``assign`` names, since reading them (``decode``) is what an archive of
them is for.

A Java pattern is translated to Python's :mod:`re` where both read it the same way over topic
names (ASCII letters, digits, ``.``, ``_``, ``-``), and refused, saying what and why, where they
differ or Python has no equivalent (:func:`java_regex`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .errors import OptionError

# Topic.isInternal (Kafka 4.x): never matched by subscribePattern, as Spark's admin listing
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state")
# the KRaft metadata log: not a topic any client lists
UNLISTED_TOPICS = ("__cluster_metadata",)

# \p{...} POSIX classes of java.util.regex (US-ASCII only by default), as class bodies
_POSIX = {
    "Lower": "a-z",
    "Upper": "A-Z",
    "ASCII": "\\x00-\\x7f",
    "Alpha": "a-zA-Z",
    "Digit": "0-9",
    "Alnum": "a-zA-Z0-9",
    "Punct": "!-/:-@\\[-`{-~",
    "Graph": "!-~",
    "Print": " -~",
    "Blank": " \\t",
    "Cntrl": "\\x00-\\x1f\\x7f",
    "XDigit": "0-9a-fA-F",
    "Space": " \\t\\n\\x0b\\f\\r",
}
# escapes that mean the same in both (with re.ASCII)
_SAME = set("dDwWsSbBAtnrfa")
_WHY = {
    "G": "\\G (the end of the previous match) has no meaning for one match per topic",
    "h": "\\h (horizontal white space) has no Python equivalent",
    "H": "\\H (not horizontal white space) has no Python equivalent",
    "v": "\\v is vertical white space in Java but the vertical tab character in Python",
    "V": "\\V (not vertical white space) has no Python equivalent",
    "R": "\\R (a line break sequence) has no Python equivalent",
    "X": "\\X (a grapheme cluster) has no Python equivalent",
    "N": "\\N{name} is read differently by Java and Python",
    "k": "\\k<name> (a named back reference) is not translated",
    "b{": "\\b{g} (a grapheme boundary) has no Python equivalent",
}
_FLAGS_KEPT = set("ims")  # d (UNIX_LINES) and u (UNICODE_CASE) change nothing for topic names
_FLAGS_DROPPED = set("du")


def _refuse(pattern: str, at: int, what: str) -> OptionError:
    return OptionError(
        f"option 'subscribePattern': {pattern!r} at character {at}: {what}. kafkalog translates "
        "the Java regular expressions that Python's re reads the same way (literals, ., "
        "classes [...] with ranges and \\d \\w \\s, \\p{Alpha}-style POSIX classes, groups, "
        "alternatives, quantifiers, anchors, look-arounds, (?i)); write the pattern in that "
        "subset, or list the topics with 'subscribe'"
    )


def _class_body(pattern: str, i: int, out: list[str]) -> int:
    """Translate a character class starting at ``pattern[i] == '['``; return the index after
    its closing ``]``."""
    start = i
    out.append("[")
    i += 1
    if i < len(pattern) and pattern[i] == "^":
        out.append("^")
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        raise _refuse(pattern, i, "a ']' first in a class (Java and Python read it differently)")
    while i < len(pattern):
        c = pattern[i]
        if c == "]":
            out.append("]")
            return i + 1
        if c == "[":
            raise _refuse(pattern, i, "a class inside a class (a Java union) is not translated")
        if c == "&" and pattern.startswith("&&", i):
            raise _refuse(pattern, i, "'&&' in a class (a Java intersection) is not translated")
        if c == "\\":
            i = _escape(pattern, i, out, in_class=True)
            continue
        out.append("\\" + c if c in "-~|&" and i + 1 < len(pattern) and pattern[i + 1] == c else c)
        i += 1
    raise _refuse(pattern, start, "a class '[' that is never closed")


def _escape(pattern: str, i: int, out: list[str], in_class: bool) -> int:
    """Translate the escape at ``pattern[i] == '\\'``; return the index after it."""
    if i + 1 >= len(pattern):
        raise _refuse(pattern, i, "a '\\' at the end")
    c = pattern[i + 1]
    if not c.isascii() or not c.isalnum():
        out.append("\\" + c)  # a quoted character, in both
        return i + 2
    if c in "bBA" and in_class:
        raise _refuse(pattern, i, f"\\{c} inside a class is read differently by Java and Python")
    if c in _SAME:
        out.append("\\" + c)
        return i + 2
    if c in "zZ" and not in_class:
        out.append("\\Z")  # the end of the name (no line terminator in a topic name)
        return i + 2
    if c == "e":
        out.append("\\x1b")
        return i + 2
    if c == "x":
        m = re.compile(r"x([0-9a-fA-F]{2})|x\{([0-9a-fA-F]{1,6})\}").match(pattern, i + 1)
        if m is None:
            raise _refuse(pattern, i, "a \\x escape without its hexadecimal digits")
        out.append(f"\\U{int(m.group(1) or m.group(2), 16):08x}")
        return m.end()
    if c == "u":
        m = re.compile(r"u([0-9a-fA-F]{4})").match(pattern, i + 1)
        if m is None:
            raise _refuse(pattern, i, "a \\u escape without its four hexadecimal digits")
        out.append("\\u" + m.group(1))
        return m.end()
    if c == "c" and i + 2 < len(pattern):
        out.append(f"\\x{ord(pattern[i + 2]) ^ 64:02x}")
        return i + 3
    if c == "Q":
        end = pattern.find("\\E", i + 2)
        text = pattern[i + 2 :] if end < 0 else pattern[i + 2 : end]
        out.append("".join("\\" + ch if not ch.isalnum() else ch for ch in text))
        return len(pattern) if end < 0 else end + 2
    if c in "pP":
        m = re.compile(r"[pP]\{([A-Za-z]+)\}").match(pattern, i + 1)
        body = _POSIX.get(m.group(1)) if m is not None else None
        if body is None:
            raise _refuse(
                pattern,
                i,
                "only the POSIX classes \\p{Lower}, \\p{Upper}, \\p{Alpha}, \\p{Digit}, "
                "\\p{Alnum}, ... are translated, not Unicode properties or blocks",
            )
        if in_class:
            if c == "P":
                raise _refuse(pattern, i, "a negated class \\P{...} inside a class")
            out.append(body)
        else:
            out.append(("[^" if c == "P" else "[") + body + "]")
        assert m is not None
        return m.end()
    if c.isdigit():
        what = "an octal escape" if c == "0" else "a back reference"
        raise _refuse(pattern, i, f"{what} is read differently by Java and Python")
    why = _WHY.get("b{" if c == "b" else c)
    raise _refuse(pattern, i, why or f"\\{c} is not a Java escape Python reads the same way")


def _group(pattern: str, i: int, out: list[str]) -> int:
    """Translate a ``(`` construct; return the index after its opening part."""
    if not pattern.startswith("(?", i):
        out.append("(")
        return i + 1
    for opening in ("(?:", "(?=", "(?!", "(?<=", "(?<!", "(?>"):
        if pattern.startswith(opening, i):
            out.append(opening)
            return i + len(opening)
    m = re.compile(r"\(\?<([A-Za-z][A-Za-z0-9]*)>").match(pattern, i)
    if m is not None:
        out.append(f"(?P<{m.group(1)}>")
        return m.end()
    m = re.compile(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?([:)])").match(pattern, i)
    if m is None:
        raise _refuse(pattern, i, "a '(?' construct that is not translated")
    on, off, end = m.group(1), m.group(2) or "", m.group(3)
    unknown = set(on + off) - _FLAGS_KEPT - _FLAGS_DROPPED
    if unknown:
        raise _refuse(
            pattern,
            i,
            f"the flag{'s' if len(unknown) > 1 else ''} "
            f"{''.join(sorted(unknown))} (only i, m, s, d and u are translated)",
        )
    on = "".join(f for f in on if f in _FLAGS_KEPT)
    off = "".join(f for f in off if f in _FLAGS_KEPT)
    if end == ")":
        if i != 0 or off:
            raise _refuse(
                pattern,
                i,
                "flags (?...) that apply from the middle of a pattern on (use "
                "(?i:...) around the part, or put (?i) first)",
            )
        out.append(f"(?{on})" if on else "")
        return m.end()
    out.append(f"(?{on}{'-' + off if off else ''}:" if on or off else "(?:")
    return m.end()


@lru_cache(maxsize=64)
def java_regex(pattern: str) -> re.Pattern:
    """``pattern`` (a ``java.util.regex.Pattern``) as a compiled Python expression that finds
    the same topic names; OptionError for what is not in the translated subset."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i = _escape(pattern, i, out, in_class=False)
        elif c == "[":
            i = _class_body(pattern, i, out)
        elif c == "(":
            i = _group(pattern, i, out)
        elif c == "{":
            m = re.compile(r"\{[0-9]+(,[0-9]*)?\}").match(pattern, i)
            if m is None or not out:
                raise _refuse(
                    pattern,
                    i,
                    "a '{' that starts no repetition {n}, {n,} or {n,m} (Java "
                    "refuses it; write \\{ for the character)",
                )
            out.append(m.group(0))
            i = m.end()
        else:
            out.append(c)
            i += 1
    try:
        return re.compile("".join(out), re.ASCII)
    except re.error as e:
        raise OptionError(
            f"option 'subscribePattern': {pattern!r} is not a regular expression kafkalog can "
            f"use: {e}"
        ) from None


@dataclass(frozen=True)
class TopicSelection:
    """The partitions one of ``subscribe``, ``subscribePattern`` or ``assign`` takes."""

    option: str  # which of the three
    topics: frozenset[str] = frozenset()  # subscribe
    pattern: str | None = None  # subscribePattern, as given (Java)
    partitions: frozenset[tuple[str, int]] = frozenset()  # assign

    def takes_topic(self, topic: str) -> bool:
        """Whether any partition of ``topic`` may be taken."""
        if self.option == "subscribe":
            return topic in self.topics
        if self.option == "assign":
            return any(t == topic for t, _ in self.partitions)
        if topic in INTERNAL_TOPICS or topic in UNLISTED_TOPICS:
            return False
        return java_regex(self.pattern or "").search(topic) is not None

    def takes(self, topic: str, partition: int) -> bool:
        """Whether partition ``partition`` of ``topic`` is taken."""
        if self.option == "assign":
            return (topic, partition) in self.partitions
        return self.takes_topic(topic)

    def describe(self) -> str:
        """The option as a message shows it."""
        if self.option == "subscribe":
            return f"subscribe={','.join(sorted(self.topics))}"
        if self.option == "assign":
            shown = ", ".join(f"{t}-{p}" for t, p in sorted(self.partitions))
            return f"assign={{{shown}}}"
        return f"subscribePattern={self.pattern}"


def topic_selection(options: object) -> TopicSelection | None:
    """The selection a :class:`~kafkalog_source.options.ReadOptions` sets (its ``subscribe``,
    ``subscribe_pattern`` or ``assign``), or None: everything under the paths."""
    topics = getattr(options, "subscribe", None)
    if topics is not None:
        return TopicSelection("subscribe", topics=frozenset(topics))
    pattern = getattr(options, "subscribe_pattern", None)
    if pattern is not None:
        return TopicSelection("subscribePattern", pattern=pattern)
    assign = getattr(options, "assign", None)
    if assign is not None:
        return TopicSelection("assign", partitions=frozenset(assign))
    return None


__all__ = [
    "INTERNAL_TOPICS",
    "UNLISTED_TOPICS",
    "TopicSelection",
    "java_regex",
    "topic_selection",
]
