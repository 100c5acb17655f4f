"""The ``sasl.jaas.config`` property, parsed as Kafka's JaasConfig does.

Format: ``<login module class> <flag> key=value ... ;`` with values bare words or
double-quoted strings (backslash escapes), ``//`` and ``/* */`` comments. Kafka's property
holds exactly one login module ("JAAS config property contains N login modules, should be
1 module"); the flag must be required, requisite, sufficient or optional.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FLAGS = ("required", "requisite", "sufficient", "optional")

_TOKEN = re.compile(
    r"""\s+|//[^\n]*|/\*.*?\*/|(?P<quoted>"(?:[^"\\]|\\.)*")|(?P<word>[^\s=;"]+)|(?P<punct>[=;])""",
    re.DOTALL,
)


class JaasError(ValueError):
    pass


@dataclass(frozen=True)
class JaasEntry:
    login_module: str
    flag: str
    options: tuple[tuple[str, str], ...]

    def option(self, key: str) -> str | None:
        for k, v in self.options:
            if k == key:
                return v
        return None


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise JaasError(f"unexpected character {text[pos]!r} in JAAS config")
        pos = match.end()
        if match.group("quoted") is not None:
            body = match.group("quoted")[1:-1]
            tokens.append(("value", re.sub(r"\\(.)", r"\1", body)))
        elif match.group("word") is not None:
            tokens.append(("value", match.group("word")))
        elif match.group("punct") is not None:
            tokens.append((match.group("punct"), match.group("punct")))
    return tokens


def parse(text: str) -> JaasEntry:
    tokens = _tokens(text)
    entries: list[JaasEntry] = []
    i = 0
    while i < len(tokens):
        kind, module = tokens[i]
        if kind != "value":
            raise JaasError(f"expected a login module class, found {module!r}")
        if i + 1 >= len(tokens):
            raise JaasError("Login module control flag not specified in JAAS config")
        flag = tokens[i + 1][1]
        if flag.lower() not in FLAGS:
            raise JaasError(f"Invalid login module control flag '{flag}' in JAAS config")
        i += 2
        options: list[tuple[str, str]] = []
        while i < len(tokens) and tokens[i][0] != ";":
            key = tokens[i][1]
            if i + 2 >= len(tokens) or tokens[i + 1][0] != "=" or tokens[i + 2][0] != "value":
                raise JaasError(f"Value not specified for key '{key}' in JAAS config")
            options.append((key, tokens[i + 2][1]))
            i += 3
        if i >= len(tokens):
            raise JaasError("JAAS config entry not terminated by semi-colon")
        i += 1
        entries.append(JaasEntry(module, flag.lower(), tuple(options)))
    if len(entries) != 1:
        raise JaasError(
            f"JAAS config property contains {len(entries)} login modules, should be 1 module"
        )
    return entries[0]
