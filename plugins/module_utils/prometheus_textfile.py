# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Prometheus text exposition format (version 0.0.4), as node_exporter's textfile collector reads it.

``render(families)`` writes metric families: for each one ``# HELP``, ``# TYPE``, then its samples
``name{label="value",...} value``, labels in the order given, label values escaped (backslash,
double quote, newline), values as Go's ParseFloat reads them (``NaN``, ``+Inf``, ``-Inf``).
A family without samples is left out (node_exporter accepts it, but it says nothing). Samples
whose value is None are left out.

``validate(text)`` checks a text strictly (what node_exporter would refuse, and more): metric and
label names, HELP and TYPE once per family and before its samples, every sample of a family
together, no duplicate series, values that parse, a final newline. It returns the list of family
names; a problem is a ValueError naming the line.
"""

from __future__ import annotations

import math
import re

METRIC_NAME_RE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL_NAME_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
TYPES = ("counter", "gauge", "untyped")  # the types render() writes; histogram/summary are not used here
_SAMPLE_RE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$")
_LABEL_RE = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"\s*(,|$)')
_FLOAT_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


class Family:
    """One metric family: name, type, help and its samples ``[(labels (list of pairs), value)]``."""

    def __init__(self, name, mtype, help_text):
        if not METRIC_NAME_RE.match(name):
            raise ValueError(f"invalid metric name {name!r}")
        if mtype not in TYPES:
            raise ValueError(f"invalid metric type {mtype!r} for {name}")
        self.name = name
        self.type = mtype
        self.help = help_text
        self.samples = []

    def add(self, labels, value):
        """Add a sample; ``labels`` a dict or list of pairs (order kept); a None value is skipped."""
        if value is None:
            return self
        pairs = list(labels.items()) if isinstance(labels, dict) else list(labels)
        for key, _val in pairs:
            if not LABEL_NAME_RE.match(key) or key.startswith("__"):
                raise ValueError(f"invalid label name {key!r} for {self.name}")
        self.samples.append(([(k, "" if v is None else str(v)) for k, v in pairs], value))
        return self


def escape_label(value):
    return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def escape_help(text):
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def render(families):
    """The exposition text of ``families`` (a list of Family); an empty string when none has samples."""
    out = []
    for fam in families:
        if not fam.samples:
            continue
        out.append(f"# HELP {fam.name} {escape_help(fam.help)}")
        out.append(f"# TYPE {fam.name} {fam.type}")
        for labels, value in fam.samples:
            label_text = ",".join(f'{k}="{escape_label(v)}"' for k, v in labels)
            out.append(f"{fam.name}{{{label_text}}} {format_value(value)}" if labels
                       else f"{fam.name} {format_value(value)}")
    return "\n".join(out) + "\n" if out else ""


def _parse_labels(text, line):
    labels = []
    pos = 0
    while pos < len(text):
        m = _LABEL_RE.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"invalid labels: {line!r}")
        labels.append((m.group(1), m.group(2)))
        pos = m.end()
    names = [k for k, _v in labels]
    if len(set(names)) != len(names):
        raise ValueError(f"a label twice: {line!r}")
    return tuple(sorted(labels))


def validate(text):
    """Check ``text`` strictly; returns the family names in order. Raises ValueError naming the line."""
    if text == "":
        return []
    if not text.endswith("\n"):
        raise ValueError("the text does not end with a newline")
    helps, types, seen_series, order = {}, {}, set(), []
    done = set()  # families whose samples are over (another family's lines came after them)
    current = None
    for line in text[:-1].split("\n"):
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not METRIC_NAME_RE.match(name):
                    raise ValueError(f"invalid metric name: {line!r}")
                table = helps if parts[1] == "HELP" else types
                if name in table:
                    raise ValueError(f"a second # {parts[1]} for {name}: {line!r}")
                if name in done or (name == current and any(s[0] == name for s in seen_series)):
                    raise ValueError(f"# {parts[1]} after the samples of {name}: {line!r}")
                if parts[1] == "TYPE" and (len(parts) != 4 or parts[3] not in TYPES + ("histogram", "summary")):
                    raise ValueError(f"invalid # TYPE: {line!r}")
                if parts[1] == "HELP" and len(parts) != 4:
                    raise ValueError(f"# HELP without text: {line!r}")
                table[name] = parts[3] if len(parts) == 4 else ""
                if current is not None and current != name:
                    done.add(current)
                if name not in order:
                    order.append(name)
                current = name
            continue
        if not line.strip():
            raise ValueError("an empty line inside the text")
        m = _SAMPLE_RE.match(line)
        if not m:
            raise ValueError(f"not a sample line 'name{{labels}} value': {line!r}")
        name, value = m.group(1), m.group(4)
        labels = _parse_labels(m.group(3), line) if m.group(2) else ()
        if name in done:
            raise ValueError(f"the samples of {name} are not together: {line!r}")
        if current is not None and current != name:
            done.add(current)
        if name not in order:
            order.append(name)
        current = name
        if name not in types or name not in helps:
            raise ValueError(f"a sample before its family's # HELP and # TYPE: {line!r}")
        if value not in ("NaN", "+Inf", "-Inf") and not _FLOAT_RE.match(value):
            raise ValueError(f"invalid value: {line!r}")
        if (name, labels) in seen_series:
            raise ValueError(f"the same series twice: {line!r}")
        seen_series.add((name, labels))
    return order
