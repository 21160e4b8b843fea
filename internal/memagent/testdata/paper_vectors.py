"""Writes paper_vectors.json: predictions, gold answers and their scores
under the MemAgent evaluation scripts' protocol, computed with Python's own
string semantics, for TestScorePaperVectors.

The scoring below is written from the protocol's definition, not copied:
SQuAD's answer normalisation (lowercase; delete string.punctuation; replace
the whole words a, an, the with a space; join the whitespace-split words
with single spaces), then exact match, substring match in either direction
(Python's `in`, so an empty string is in every string), and token F1 with
no credit between yes/no/noanswer and anything else; each rounded to two
decimals; an empty prediction scores 0.

Usage: python3 paper_vectors.py   (any Python 3.8+; no packages)
"""
import json
import random
import re
import string
import sys
from collections import Counter

PUNCT = set(string.punctuation)
CLOSED = ("yes", "no", "noanswer")


def normalize(s):
    s = s.lower()
    s = "".join(ch for ch in s if ch not in PUNCT)
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def f1(p, g):
    if (p in CLOSED or g in CLOSED) and p != g:
        return 0.0
    pt, gt = p.split(), g.split()
    same = sum((Counter(pt) & Counter(gt)).values())
    if same == 0:
        return 0.0
    precision = 1.0 * same / len(pt)
    recall = 1.0 * same / len(gt)
    return (2 * precision * recall) / (precision + recall)


def score(pred, gold):
    if not pred:
        return {"em": 0, "sub_em": 0, "f1": 0}
    p, g = normalize(pred), normalize(gold)
    return {
        "em": round(float(p == g), 2),
        "sub_em": round(float(g in p or p in g), 2),
        "f1": round(f1(p, g), 2),
    }


HAND = [
    ("The Eiffel Tower.", "Eiffel Tower"),
    ("It is the Eiffel Tower in Paris", "Eiffel Tower"),
    ("Tower", "The Eiffel Tower"),
    ("Louvre", "Eiffel Tower"),
    # Empty normalisation: the prediction is in every gold.
    ("The", "Greenwich Village, New York City"),
    ("...", "Athens"),
    ("a an the", "the"),
    ("Athens", ""),
    ("Athens", "The."),
    ("", "Athens"),
    (" ", "Athens"),
    # yes / no / noanswer get no partial F1.
    ("yes", "no"),
    ("yes", "yes indeed"),
    ("no way", "no"),
    ("Yes.", "yes"),
    ("noanswer", "noanswer"),
    # F1 ties round to even: 2/15 / (16/15) = 0.125 -> 0.12.
    ("paris " + " ".join("w%d" % i for i in range(14)), "paris"),
    ("new york city", "york"),
    ("paris paris paris", "paris france"),
    # Python's lower(): dotted capital I, final sigma.
    ("İstanbul", "i̇stanbul"),
    ("İstanbul", "istanbul"),
    ("ΟΔΟΣ", "οδος"),
    ("ΟΔΟΣ", "οδοσ"),
    ("ΟΔΟΣ.", "οδος"),
    ("Σ", "σ"),
    ("ΑΣ'Α", "ασ'α"),
    # Python's whitespace includes the information separators.
    ("new\x1cyork", "new york"),
    ("new\x1fyork", "new york"),
    ("new\u00a0york", "new york"),
    ("new\u3000york", "new york"),
    ("new\u200byork", "new york"),
    # Unicode word boundaries around articles; ASCII-only punctuation.
    ("the\u0301 end", "end"),
    ("an\u00e9 b", "ané b"),
    ("théâtre", "théâtre"),
    ("東京 the 大学", "東京 大学"),
    ("«Paris»", "paris"),
    ("a-b_c", "abc"),
    ("Don't!", "dont"),
    ("the(the)the", "thethethe"),
    ("U.S.A.", "usa"),
    ("1,234", "1234"),
    ("Ⅻ the", "ⅻ"),
]

ALPHABET = (
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    + list(" .,;:'\"!?-_()[]")
    + ["a", "an", "the", "The", "AN", " a ", " the ", "yes", "no", "noanswer"]
    + ["İ", "Σ", "ς", "σ", "Ω", "ß", "ẞ", "ǅ", "é", "e\u0301", "\u0301", "\u00b7", "\u2019", "\u00ad"]
    + ["\x1c", "\x1d", "\x1e", "\x1f", "\u00a0", "\u2003", "\u3000", "\t", "\n", "\u200b", "\u0085"]
    + ["東", "京", "٣", "Ⅻ", "½", "²", "«", "»", "—", "…"]
)


def rand_text(rng):
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 12)))


def main():
    rng = random.Random(20250702)
    cases = [{"pred": p, "gold": g, **score(p, g)} for p, g in HAND]
    for _ in range(400):
        p = rand_text(rng)
        g = rng.choice([rand_text(rng), p.upper(), p + " the", "The " + p.lower()])
        cases.append({"pred": p, "gold": g, **score(p, g)})
    out = {"generator": "paper_vectors.py", "python": sys.version.split()[0], "unicode": __import__("unicodedata").unidata_version, "cases": cases}
    with open(__file__.rsplit("/", 1)[0] + "/paper_vectors.json", "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=0)
        f.write("\n")
    print("wrote %d cases (Python %s, Unicode %s)" % (len(cases), out["python"], out["unicode"]), file=sys.stderr)


if __name__ == "__main__":
    main()
