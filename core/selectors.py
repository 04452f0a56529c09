"""Shop groups: tags on shops, and selectors that pick shops by name, platform and tag.

A selector is one line an operator types wherever a command takes shops
(``--shops "platform:pdd tag:north"``). Grammar::

    selector := term ("," term)*          comma: OR, a shop matching any term is picked
    term     := atom (("+" | " ") atom)*  space or plus: AND, a shop must match every atom
    atom     := ["!" | "-"] word          "!" or "-" in front: NOT
    word     := "platform:" GLOB          the shop's platform (pdd, temu, tiktok …)
              | "tag:" GLOB               one of the shop's tags
              | "shop:" GLOB              the shop's name (for names a bare word cannot say)
              | GLOB                      a bare word is a glob on the shop's name

A GLOB is text with ``*`` (any run), ``?`` (one character) and ``[abc]`` (one of). Names are
matched case-sensitively; platforms and tags ignore case (tags are stored in lower case).
There are no parentheses: any combination is written as an OR of ANDs.

Examples::

    pdd-*                         every shop whose name starts with "pdd-"
    platform:pdd                  every Pinduoduo shop
    platform:pdd tag:north        Pinduoduo shops tagged north (also "platform:pdd+tag:north")
    tag:north,tag:east            shops tagged north or east
    platform:temu -tag:paused     TEMU shops not tagged paused ("!" works too; in bash, "!"
                                  inside double quotes is history expansion: prefer "-")
    *                             every shop

A term made only of negations picks every shop except those (``-tag:test``). A bad selector
raises :class:`~core.errors.SpecError` naming the field (``--shops`` unless told) and why;
so does an empty one, and :meth:`Selector.select` when it picks no shop at all.

A tag is 1 to 40 letters (any script: ``华北`` is a tag), digits, ``_``, ``-`` or ``.``,
starting with a letter or a digit; it is stored NFC-normalised and in lower case.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Protocol

from .errors import SpecError

MAX_TAG_CHARS = 40
MAX_TAGS_PER_SHOP = 32
MAX_SELECTOR_CHARS = 1000

_TAG = re.compile(r"[^\W_][\w.\-]*\Z")
# A value in a selector: tag/platform/name characters plus glob characters.
_VALUE = re.compile(r"[\w.\-*?\[\]!^@~#%&=/]+\Z")
_KINDS = ("platform", "tag", "shop")


class ShopLike(Protocol):
    """What a selector looks at: a shop's name, platform and tags."""

    @property
    def name(self) -> str: ...

    @property
    def platform(self) -> str: ...

    @property
    def tags(self) -> Collection[str]: ...


@dataclass(frozen=True)
class ShopRef:
    """A minimal shop for selecting (the store's shop records satisfy :class:`ShopLike` too)."""

    name: str
    platform: str
    tags: frozenset[str] = frozenset()



def normalize_tag(tag: str, *, field: str = "tag") -> str:
    """The stored form of a tag (NFC, lower case), or :class:`SpecError` saying what is wrong."""
    if not isinstance(tag, str):
        raise SpecError(field, "a tag must be text")
    t = unicodedata.normalize("NFC", tag.strip()).lower()
    if not t:
        raise SpecError(field, "a tag must not be empty")
    if len(t) > MAX_TAG_CHARS:
        raise SpecError(field, f"tag {tag!r} is longer than {MAX_TAG_CHARS} characters")
    if not _TAG.match(t):
        raise SpecError(field, f"tag {tag!r} may hold only letters, digits, '_', '-' and '.', "
                               "and must start with a letter or a digit")
    return t


def normalize_tags(tags: Iterable[str], *, field: str = "tags") -> tuple[str, ...]:
    """Validate and normalise a shop's tags: sorted, without duplicates, at most
    ``MAX_TAGS_PER_SHOP``. The field of an error names the position (``tags[2]``)."""
    out: set[str] = set()
    for i, tag in enumerate(tags):
        out.add(normalize_tag(tag, field=f"{field}[{i}]"))
    if len(out) > MAX_TAGS_PER_SHOP:
        raise SpecError(field, f"a shop has at most {MAX_TAGS_PER_SHOP} tags, got {len(out)}")
    return tuple(sorted(out))


@dataclass(frozen=True)
class Atom:
    """One condition: ``kind`` is platform, tag or shop (the name); ``pattern`` a glob."""

    kind: str
    pattern: str
    negated: bool = False

    def matches(self, shop: ShopLike) -> bool:
        if self.kind == "shop":
            hit = fnmatchcase(shop.name, self.pattern)
        elif self.kind == "platform":
            hit = fnmatchcase(shop.platform.lower(), self.pattern)
        else:
            hit = any(fnmatchcase(_fold(t), self.pattern) for t in shop.tags)
        return hit != self.negated

    def __str__(self) -> str:
        return ("-" if self.negated else "") + f"{self.kind}:{self.pattern}"


def _fold(text: str) -> str:
    return unicodedata.normalize("NFC", text).lower()


@dataclass(frozen=True)
class Selector:
    """A parsed selector: an OR of terms, each an AND of atoms. Build with :func:`parse_selector`.

    ``text`` is what the operator typed (kept for display and storage); ``str()`` is the
    canonical spelling.
    """

    text: str
    terms: tuple[tuple[Atom, ...], ...]

    def matches(self, shop: ShopLike) -> bool:
        return any(all(a.matches(shop) for a in term) for term in self.terms)

    def select[S: ShopLike](self, shops: Iterable[S], *, field: str = "--shops") -> list[S]:
        """The shops this selector picks, sorted by name.

        Raises:
            SpecError: it picks none of them (a selector that picks nothing is a mistake to
                report, never a firing that silently does nothing).
        """
        pool = list(shops)
        picked = sorted((s for s in pool if self.matches(s)), key=lambda s: s.name)
        if not picked:
            raise SpecError(field, f"{self.text!r} matches none of the {len(pool)} shops")
        return picked

    def __str__(self) -> str:
        return ",".join(" ".join(str(a) for a in term) for term in self.terms)


def parse_selector(text: str, *, field: str = "--shops") -> Selector:
    """Parse a selector (grammar in the module docstring).

    Raises:
        SpecError: empty, too long, an empty term (``a,,b``), an unknown kind (``foo:x``), a
            kind without a value (``tag:``), or characters no name, tag or glob holds.
    """
    if not isinstance(text, str):
        raise SpecError(field, "a selector must be text")
    stripped = unicodedata.normalize("NFC", text).strip()
    if not stripped:
        raise SpecError(field, "an empty selector picks nothing; say which shops "
                               "(e.g. 'platform:pdd', 'tag:north', 'pdd-*' or '*' for all)")
    if len(stripped) > MAX_SELECTOR_CHARS:
        raise SpecError(field, f"a selector is at most {MAX_SELECTOR_CHARS} characters")
    terms: list[tuple[Atom, ...]] = []
    for n, raw_term in enumerate(stripped.split(","), start=1):
        words = raw_term.replace("+", " ").split()
        if not words:
            raise SpecError(field, f"term {n} of {stripped!r} is empty (a stray ',' or '+')")
        atoms = [_parse_atom(w, field=field) for w in words]
        if all(a.negated for a in atoms):
            # "-tag:test" alone: every shop except those.
            atoms.insert(0, Atom("shop", "*"))
        terms.append(tuple(atoms))
    return Selector(text=stripped, terms=tuple(terms))


def _parse_atom(word: str, *, field: str) -> Atom:
    negated = False
    if word[0] in "!-":
        negated, word = True, word[1:]
        if not word:
            raise SpecError(field, "a '!' or '-' must be followed by what to leave out")
    kind, sep, value = word.partition(":")
    if not sep:
        kind, value = "shop", word
    else:
        kind = kind.lower()
        if kind not in _KINDS:
            raise SpecError(field, f"unknown kind {kind + ':'!r} in {word!r} "
                                   "(use platform:, tag:, shop: or a bare name glob)")
        if not value:
            raise SpecError(field, f"{kind}: needs a value (e.g. {kind}:{_EXAMPLE[kind]})")
    if not _VALUE.match(value):
        raise SpecError(field, f"{value!r} is not a name, tag or glob (a value holds no "
                               "spaces, commas, quotes or colons)")
    if kind != "shop":
        value = value.lower()
    return Atom(kind, value, negated)


_EXAMPLE = {"platform": "pdd", "tag": "north", "shop": "pdd-1"}


def select_shops[S: ShopLike](selector: str | Selector, shops: Sequence[S], *,
                               field: str = "--shops") -> list[S]:
    """Parse (if needed) and apply a selector: the picked shops sorted by name."""
    sel = selector if isinstance(selector, Selector) else parse_selector(selector, field=field)
    return sel.select(shops, field=field)
