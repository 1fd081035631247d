"""What the offline tau users may say: the request, and the identity details they know.

In tau-bench and tau2-bench the agent never sees the user's instructions. The LLM user states
why it calls, gives its identity (``known_info``) when asked, and keeps the rest of its scenario
(conditions, persona, ``unknown_info``) to itself. The offline users follow the same protocol
with text derived once, at generation time, from the scenario:

- tau2-bench: the opening is ``reason_for_call`` and the identity answer is ``known_info``;
- tau-bench v1 (one free-text instruction): sentences naming who the user is (name, zip code,
  email, user id, where they live) form the identity answer; sentences stating what the user
  wants form the opening; conditions ("If the agent ..."), persona ("You are curious, ...") and
  directions to the simulator ("Try to ...", "... not want to reveal ...") are dropped.

Both are rewritten in the first person ("You want ..." -> "I want ..."), as a user speaks.
"""

from __future__ import annotations

import re

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z#\"'])")
_REQUEST_CLAUSE = re.compile(
    r",?\s+and\s+(?=you\s+(?:want|wish|would|need|just|recently|received|have|had|'d|are\s+"
    r"looking|ordered|bought|also))",
    re.I,
)
_IDENTITY = re.compile(
    r"\b(name is|zip ?code|e-?mail|user id|live in|living in|residing|from [A-Z][a-z]+)\b|@|"
    r"\b[a-z]+_[a-z]+_\d{4}\b|\b\d{5}\b",
    re.I,
)
_TOKEN = re.compile(r"\s*\(?(?:zip ?code\s*)?\b\d{5}\b\)?|\s*\S+@\S+\w|\s*\b[a-z]+_[a-z]+_\d{4}\b")
"""Identity details inside a sentence (zip code, email, user id)."""
_REQUEST = re.compile(
    r"\b(want|wish|would like|'d like|need|exchange|return|cancel|modify|change|update|book|"
    r"know|wonder|check|refund|order|reservation|flight|also)\b|#W\d",
    re.I,
)
_WITHHELD = re.compile(
    r"^(if|when|then|otherwise|unless|only|try|make sure|provide|mention|do not|don't|never|"
    r"be |you are (a|an|very|quite|not|[\w-]+,|[\w-]+ and)|you're (a|an|[\w-]+,))|reveal|"
    r"\bagent\b|conversation|persona|pretend|insist|\bsay\b|\btell\b",
    re.I,
)
_PERSON = [
    (r"\bYou (name|mobile|phone|line)\b", r"My \1"),
    (r"\b[Yy]ou are\b", "I am"),
    (r"\b[Yy]ou were\b", "I was"),
    (r"\b[Yy]ou're\b", "I'm"),
    (r"\b[Yy]ou've\b", "I've"),
    (r"\b[Yy]ou'd\b", "I'd"),
    (r"\b[Yy]ou'll\b", "I'll"),
    (r"\byourself\b", "myself"),
    (r"\byours\b", "mine"),
    (r"\bYour\b", "My"),
    (r"\byour\b", "my"),
    (r"\bYou\b", "I"),
    (
        r"\b(to|for|with|at|about|from|of|by|on|than|into|ask|asks|asked|tell|tells|told|give|"
        r"gives|gave|help|helps|let|lets|offer|offers|offered|send|sends|sent|show|shows|call|"
        r"calls|contact|contacts|charge|charged|remind|provide|provides|allow|allows|want|wants|"
        r"get|gets|owe|owes|refund|refunds|assist|assists|inform|informs|notify|pay|pays|paid|"
        r"treat|treats|convince|persuade|transfer|transfers|connect|give|make|makes|cost|costs)"
        r"\s+you\b",
        r"\1 me",
    ),
    (r"\byou(?=\s*(?:[.,;:!?)]|$))", "me"),
    (r"\byou\b", "I"),
]


def first_person(text: str) -> str:
    """Second-person scenario text as the user would say it ("You want" -> "I want")."""
    out = " ".join(text.split())
    for pattern, repl in _PERSON:
        out = re.sub(pattern, repl, out)
    return out


def sentences(text: str) -> list[str]:
    """The text's sentences (a request clause after the identity is split off)."""
    parts = [s.strip() for s in _SENTENCE.split(" ".join(text.split())) if s.strip()]
    if parts:
        head = _REQUEST_CLAUSE.split(parts[0], maxsplit=1)
        if len(head) == 2:
            parts[0:1] = [head[0].rstrip(",") + ".", head[1][:1].upper() + head[1][1:]]
    return parts


def split_instruction(instruction: str) -> tuple[str, str | None]:
    """(opening, known_info) of a free-text instruction, both in the first person."""
    identity, request = [], []
    for sentence in sentences(instruction):
        if _IDENTITY.search(sentence) and not _REQUEST.search(_strip_identity(sentence)):
            identity.append(sentence)
        elif _REQUEST.search(sentence) and not _WITHHELD.search(sentence):
            bare = _TOKEN.sub("", sentence)
            if bare != sentence:  # a request that names an identity detail: it stays back
                identity.append(sentence)
            request.append(_strip_asides(bare))
    opening = first_person(" ".join(request)) if request else "I need help with my account."
    return opening, first_person(" ".join(identity)) if identity else None


def _strip_identity(sentence: str) -> str:
    return _IDENTITY.sub("", sentence)


def _strip_asides(sentence: str) -> str:
    """A sentence without parenthetical asides that tell the simulator what to keep back."""
    return re.sub(r"\s*\([^)]*(reveal|prefer not|don't|do not)[^)]*\)", "", sentence, flags=re.I)
