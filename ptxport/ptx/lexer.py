"""PTX tokens (PTX ISA chapter 4, "Syntax").

The lexer is lazy: `Lexer.next()` returns one token at a time, so that a 5 MB file never exists
as a list of a million token objects. The parser asks for tokens only where a statement is not
one of the common simple forms (see parser.py, which reads those straight from the text).

Tokens are `(kind, text, pos)` tuples. Kinds: 'id' identifier, 'dot' a `.word` (directive or
modifier; `::` parts stay inside: `.shared::cluster`), 'int', 'hexf' (0f/0d float bits),
'flt' (decimal float), 'str', 'eof', and for punctuation the punctuation itself (',', ';', ...).
"""

from __future__ import annotations

import re

# A directive or modifier: `.global`, `.shared::cluster`, `.L2::cache_hint`, `.sp::2:4`.
MODIFIER = r"\.[\w$]+(?:::[\w$]+(?::[\w$]+)*)*"

# PTX ISA 4.3 "Identifiers": [a-zA-Z][a-zA-Z0-9_$]* | [_$%][a-zA-Z0-9_$]+
# PTX ISA 4.5.1 "Constants": hex/octal/binary/decimal integers with an optional U suffix;
# 0fXXXXXXXX and 0dXXXXXXXXXXXXXXXX floats.
_TOKEN = re.compile(
    r"""
    (?:[ \t\r\n]+|//[^\n]*|/\*[\s\S]*?\*/)*     # whitespace and comments before the token
    (?:(?P<hexf>0[fF][0-9a-fA-F]{8}(?![\w$])|0[dD][0-9a-fA-F]{16}(?![\w$]))
    |(?P<flt>\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
    |(?P<int>0[xX][0-9a-fA-F]+U?|0[bB][01]+U?|\d+U?)
    |(?P<dot>""" + MODIFIER + r""")
    |(?P<id>[A-Za-z][\w$]*|[_$%][\w$]+)
    |(?P<str>"(?:[^"\\\n]|\\.)*")
    |(?P<punct><<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^~!<>=?:,;{}\[\]()@_])
    |(?P<bad>[\s\S])
    |(?P<eof>$))
    """,
    re.VERBOSE,
)

Token = tuple  # (kind, text, pos)

EOF = "eof"


class Lexer:
    """Tokens of `text` from `pos` on, one at a time; 'skip' tokens are dropped.

    A character no token starts with comes out as kind 'bad', for the parser to report; the end
    of the text as kind 'eof' (again and again if asked).
    """

    __slots__ = ("text", "pos", "_match")

    def __init__(self, text: str, pos: int = 0):
        self.text = text
        self.pos = pos
        self._match = _TOKEN.match

    def next(self) -> Token:
        m = self._match(self.text, self.pos)
        kind = m.lastgroup
        value = m.group(kind)
        start = m.start(kind)
        self.pos = m.end()
        if kind == "punct":
            if value == "/" and self.text.startswith("*", start + 1):  # only if never closed
                # The comment runs to the end of the text: stop there, rather than look for
                # its end again at every later '/' (quadratic time).
                self.pos = len(self.text)
                return ("bad", "unterminated comment: '/*' without a closing '*/'", start)
            return (value, value, start)
        if kind == "bad" and value == '"':
            return ("bad", "unterminated string: '\"' without a closing '\"' on its line", start)
        return (kind, value, start)


def int_value(text: str) -> int:
    """The value of an integer token (PTX ISA 4.5.1: a leading 0 means octal)."""
    body = text[:-1] if text.endswith("U") else text
    if body[:2] in ("0x", "0X"):
        return int(body[2:], 16)
    if body[:2] in ("0b", "0B"):
        return int(body[2:], 2)
    if len(body) > 1 and body[0] == "0":
        return int(body, 8)
    return int(body)
