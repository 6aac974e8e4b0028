"""The worst URL Patterns known, for the cost-limit tests and the hostile benchmarks
(benchmarks/hostile/urlpattern_hostile.py).

Each is what an attacker would send to make a hub (or a TopicIndex) compile something big:
Unicode classes (``\\p{L}``, ``.``, ``[^/]``, ``\\s``), counted and nested repetition, many
groups, many components, case folding. Under the limits, or just past them.
"""

from __future__ import annotations

#: (name, pattern): the issue's pattern first.
HOSTILE: list[tuple[str, str]] = [
    ("\\w{150} (the issue's)", r"https://e.com/0/:id(\w{150})"),
    ("\\w{1000}", r"https://e.com/:id(\w{1000})"),
    ("\\d{1000}", r"https://e.com/:id(\d{1000})"),
    ("\\p{L}{150}", r"https://e.com/:id(\p{L}{150})"),
    ("\\p{L}{7}", r"https://e.com/:id(\p{L}{7})"),
    ("\\P{Cn}{7}", r"https://e.com/:id(\P{Cn}{7})"),
    ("[\\p{L}\\p{N}]{4}", r"https://e.com/:id([\p{L}\p{N}]{4})"),
    ("(?i)\\p{L}{7}", r"https://e.com/:id((?i)\p{L}{7})"),
    (".{200}", r"https://e.com/:id(.{200})"),
    (".{5000}", r"https://e.com/:id(.{5000})"),
    ("[^/]{200}", r"https://e.com/:id([^/]{200})"),
    ("\\W{200}", r"https://e.com/:id(\W{200})"),
    ("\\s{200}", r"https://e.com/:id(\s{200})"),
    ("\\S{100}", r"https://e.com/:id(\S{100})"),
    ("[\\x{80}-\\x{10FFFF}]{200}", r"https://e.com/:id([\x{80}-\x{10FFFF}]{200})"),
    ("(?i)[a-z]{200}", r"https://e.com/:id((?i)[a-z]{200})"),
    ("a{100}{100}", r"https://e.com/:id(a{100}{100})"),
    ("(?:(?:.{10}){10}){2}", r"https://e.com/:id((?:(?:.{10}){10}){2})"),
    ("(?:\\p{L}|.){6}", r"https://e.com/:id((?:\p{L}|.){6})"),
    ("(.{100})+", r"https://e.com/:id(.{100})+"),
    (
        "six components .{35}",
        r"https://:u(.{35}):p(.{35})@:h(.{35}).com/:id(.{35})\?:q(.{35})#:f(.{35})",
    ),
    ("200 named groups", "https://e.com/" + "/".join(f":a{i}" for i in range(200))),
    ("600 named groups", "https://e.com/" + "/".join(f":a{i}" for i in range(600))),
    ("200 wildcards", "https://e.com/" + "a*" * 200),
    ("1000 wildcards", "https://e.com/" + "a*" * 1000),
    ("780 alternatives", "https://e.com/(" + "|".join(f"a{i}" for i in range(780)) + ")"),
    ("4,000 literal characters", "https://e.com/" + "a" * 4000 + "/:id"),
    ("\\p{Greek}{100}", r"https://e.com/:id(\p{Greek}{100})"),
    ("\\x{10FFFF}{1000}", r"https://e.com/:id(\x{10FFFF}{1000})"),
]
