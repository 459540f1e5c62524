"""Print every declared family's power from its judged runs: per comparison the pairs, the spread of
the paired differences, the smallest detectable effect at Holm's strictest level (α / m, 80 %
power), the smallest equivalence margin it could establish, or a time endpoint's lowest reachable
p; then the family's declared margin and whether it could ever reach it. A tool of the checkout
(``stiefel_book.family_power`` computes; these figures are computed after the runs).

    python tools/detectable.py                 # every family
    python tools/detectable.py routing_mqar    # some
"""

from __future__ import annotations

import argparse
import sys

from stiefel_book import family_power, protocol
from stiefel_book.wording.power import effect_text


def lines(name: str) -> list[str]:
    """One family's report, a header line then one line per comparison."""
    f = protocol.family(name)
    found = family_power.family_power(name)
    margin = "no margin" if f.margin is None else f"margin ±{f.margin:g} {f.margin_unit}"
    head = family_power.primary(found)
    out = [f"{name} ({len(found)} comparisons, α = {f.alpha:g}, {margin})"]
    if head is None:
        return out + ["    no judged runs yet"]
    for c in found:
        p = c.power
        if p.floor is not None:
            numbers = f"n = {p.n}, lowest reachable p {p.floor:.3g}"
        else:
            numbers = f"n = {p.n}, sd {p.sd:.3g}, {effect_text(p)}, equivalence within ±{p.equivalence:.3g}"
        mark = "*" if c is head else " "
        could = "can decide" if p.could_decide else "cannot reach its margin"
        out.append(f"  {mark} {c.what}: {c.word}; {numbers} ({could})")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/detectable.py", description=__doc__.splitlines()[0])
    parser.add_argument("families", nargs="*", help="family names (default: every declared family)")
    args = parser.parse_args(argv)
    names = args.families or list(protocol.load().families)
    for name in names:
        try:
            print("\n".join(lines(name)))
        except (KeyError, protocol.ProtocolError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
