"""The hand-written ontology behind the offline sample corpus: real mathematical concepts.

Each :class:`Concept` has a display name, aliases, LaTeX notation, a one- or two-sentence
description written for this project, a type, the arXiv category a paper about it would
be filed under, and typed relations to other concepts of the ontology. The generator
(:mod:`pipelines.sample.generator`) writes papers about a few related concepts each and
records them in the mirror's manifest as the papers' true concepts, so later stages can
be checked against a known answer.

Conventions the generator relies on (and the tests check):

* a description starting with "A", "An" or "The" is a noun phrase (it completes
  "we call ... a *name*"); any other description starts with a verb agreeing with the
  display name ("Counts ...", "States that ...", "Equate ..." for a plural name);
* descriptions and formulas are LaTeX-ready: math is in ``$...$``, an en dash in a name
  ("Rogers–Ramanujan") is written ``--`` by :func:`latex_text`;
* ``notation`` holds LaTeX math without delimiters; ``formula`` is a display formula.

Pure data plus small lookup helpers; nothing happens at import time beyond building the
tuples below.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Literal, get_args

ConceptType = Literal[
    "object", "theorem", "definition", "technique", "identity", "conjecture", "other"
]
RelationKind = Literal["generalizes", "uses", "is_instance_of", "implies", "related_to"]

CONCEPT_TYPES: tuple[str, ...] = get_args(ConceptType)
RELATION_KINDS: tuple[str, ...] = get_args(RelationKind)


@dataclass(frozen=True)
class Relation:
    """``source --kind--> target``; the source is the concept holding the relation."""

    kind: RelationKind
    target: str  # display name of another concept in the ontology


@dataclass(frozen=True)
class Concept:
    name: str  # display name, lower case except proper nouns: "Schur function"
    type: ConceptType
    category: str  # arXiv category of a paper focused on this concept
    description: str
    aliases: tuple[str, ...] = ()
    notation: tuple[str, ...] = ()  # LaTeX math without $ delimiters
    formula: str = ""  # a display formula (LaTeX, no delimiters) stating or defining it
    relations: tuple[Relation, ...] = ()
    article: str = "the"  # "" for possessive or mass-noun names ("Bailey's lemma")
    macro: str = ""  # name of a \newcommand authors use as shorthand for the name
    plural: str = ""  # plural of a countable name ("Schur functions"); "" if unique or mass
    msc: str = ""  # Mathematics Subject Classification 2020 code of the topic

    @property
    def is_noun_phrase(self) -> bool:
        """Whether the description is a noun phrase (else it starts with a verb)."""
        return self.description.split(" ", 1)[0] in {"A", "An", "The"}

    @property
    def the_name(self) -> str:
        """The name with its article, for use as a sentence subject."""
        return f"{self.article} {self.name}".strip()

    def mentions(self) -> tuple[str, ...]:
        """Every surface form of the concept: name, aliases and ``$notation$``."""
        return (self.name, *self.aliases, *(f"${symbol}$" for symbol in self.notation))


def latex_text(text: str) -> str:
    """Plain prose → LaTeX source: en and em dashes become ``--`` and ``---``."""
    return text.replace("—", "---").replace("–", "--")


def _concept(
    name: str,
    type_: ConceptType,
    category: str,
    description: str,
    *,
    aliases: Iterable[str] = (),
    notation: Iterable[str] = (),
    formula: str = "",
    relations: Iterable[tuple[RelationKind, str]] = (),
    article: str | None = None,
    macro: str = "",
    plural: str = "",
    msc: str = "",
) -> Concept:
    if article is None:
        article = "" if "'s " in f"{name} " else "the"
    return Concept(
        name=name,
        type=type_,
        category=category,
        description=description,
        aliases=tuple(aliases),
        notation=tuple(notation),
        formula=formula,
        relations=tuple(Relation(kind, target) for kind, target in relations),
        article=article,
        macro=macro,
        plural=plural,
        msc=msc,
    )


# -- algebraic combinatorics and symmetric functions ----------------------------------

_COMBINATORICS = (
    _concept(
        "integer partition",
        "object",
        "math.CO",
        "A way of writing a positive integer $n$ as a sum of positive integers in which the "
        "order of the summands does not matter; the summands, called parts, are usually "
        "listed in weakly decreasing order.",
        aliases=("partition of an integer", "number partition"),
        notation=(r"\lambda \vdash n",),
        formula=r"n = \lambda_1 + \lambda_2 + \cdots + \lambda_\ell, "
        r"\qquad \lambda_1 \geq \lambda_2 \geq \cdots \geq \lambda_\ell > 0",
        relations=(("related_to", "Young diagram"),),
        plural="integer partitions",
        msc="05A17",
    ),
    _concept(
        "partition function",
        "object",
        "math.NT",
        "The arithmetic function that counts the partitions of $n$; its generating function "
        "is the reciprocal of the infinite product of the factors $1 - q^k$.",
        aliases=("number of partitions", "unrestricted partition function"),
        notation=("p(n)",),
        formula=r"\sum_{n \geq 0} p(n) q^n = \prod_{k \geq 1} \frac{1}{1 - q^k}",
        relations=(
            ("uses", "integer partition"),
            ("uses", "generating function"),
            ("related_to", "Dedekind eta function"),
        ),
        msc="11P82",
    ),
    _concept(
        "Young diagram",
        "object",
        "math.CO",
        "A left-justified array of boxes whose row lengths, read from top to bottom, are the "
        "parts of a partition.",
        aliases=("Ferrers diagram", "Ferrers graph"),
        relations=(("uses", "integer partition"),),
        plural="Young diagrams",
        msc="05A17",
    ),
    _concept(
        "Young tableau",
        "object",
        "math.CO",
        "A filling of the boxes of a Young diagram with positive integers that weakly "
        "increase along rows and strictly increase down columns; it is standard when the "
        "entries are $1, \\dots, n$, each used once.",
        aliases=("semistandard Young tableau", "standard Young tableau", "tableau"),
        notation=(r"\mathrm{SSYT}(\lambda)", r"\mathrm{SYT}(\lambda)"),
        relations=(("uses", "Young diagram"),),
        plural="Young tableaux",
        msc="05E10",
    ),
    _concept(
        "hook length formula",
        "theorem",
        "math.CO",
        "Counts the standard Young tableaux of a given shape as $n!$ divided by the product "
        "of the hook lengths of all boxes of the diagram.",
        aliases=("Frame–Robinson–Thrall formula", "hook formula"),
        notation=("f^\\lambda",),
        formula=r"f^\lambda = \frac{n!}{\prod_{c \in \lambda} h(c)}",
        relations=(("uses", "Young tableau"), ("related_to", "Specht module")),
        macro="HLF",
        msc="05E10",
    ),
    _concept(
        "symmetric function",
        "object",
        "math.CO",
        "A formal power series of bounded degree in infinitely many variables that is "
        "unchanged by every permutation of the variables; such series form a graded ring.",
        aliases=("ring of symmetric functions", "symmetric polynomial"),
        notation=(r"\Lambda", r"\mathrm{Sym}"),
        formula=r"f(x_{\sigma(1)}, x_{\sigma(2)}, \dots) = f(x_1, x_2, \dots) "
        r"\quad \text{for every permutation } \sigma",
        relations=(("related_to", "symmetric group"), ("related_to", "Hopf algebra")),
        plural="symmetric functions",
        msc="05E05",
    ),
    _concept(
        "Schur function",
        "object",
        "math.CO",
        "The generating function of the semistandard Young tableaux of a fixed shape, "
        "weighted by their contents; these functions form an orthonormal basis of the ring "
        "of symmetric functions.",
        aliases=("Schur polynomial", "Schur symmetric function"),
        notation=(r"s_\lambda",),
        formula=r"s_\lambda = \sum_{T \in \mathrm{SSYT}(\lambda)} x^{T}",
        relations=(
            ("is_instance_of", "symmetric function"),
            ("uses", "Young tableau"),
            ("generalizes", "complete homogeneous symmetric function"),
            ("generalizes", "elementary symmetric function"),
        ),
        plural="Schur functions",
        msc="05E05",
    ),
    _concept(
        "complete homogeneous symmetric function",
        "object",
        "math.CO",
        "The sum of all monomials of a given degree $k$ in the variables; it is the Schur "
        "function indexed by a single row.",
        aliases=("complete symmetric function", "complete homogeneous symmetric polynomial"),
        notation=("h_k", r"h_\lambda"),
        formula=r"\sum_{k \geq 0} h_k t^k = \prod_{i \geq 1} \frac{1}{1 - x_i t}",
        relations=(("is_instance_of", "symmetric function"),),
        plural="complete homogeneous symmetric functions",
        msc="05E05",
    ),
    _concept(
        "elementary symmetric function",
        "object",
        "math.CO",
        "The sum of all products of $k$ distinct variables; these functions are "
        "algebraically independent and generate the ring of symmetric functions.",
        aliases=("elementary symmetric polynomial",),
        notation=("e_k", r"e_\lambda"),
        formula=r"\sum_{k \geq 0} e_k t^k = \prod_{i \geq 1} (1 + x_i t)",
        relations=(("is_instance_of", "symmetric function"),),
        plural="elementary symmetric functions",
        msc="05E05",
    ),
    _concept(
        "Kostka number",
        "object",
        "math.CO",
        "The number of semistandard Young tableaux with a given shape and a given content; "
        "these numbers expand Schur functions in the monomial basis.",
        aliases=("Kostka coefficient",),
        notation=(r"K_{\lambda\mu}",),
        formula=r"s_\lambda = \sum_{\mu} K_{\lambda\mu}\, m_\mu",
        relations=(("uses", "Young tableau"), ("related_to", "Schur function")),
        plural="Kostka numbers",
        msc="05E10",
    ),
    _concept(
        "Jacobi–Trudi identity",
        "identity",
        "math.CO",
        "Expresses a Schur function as the determinant of a matrix of complete homogeneous "
        "symmetric functions indexed by the parts of the partition.",
        aliases=("Jacobi–Trudi formula", "Jacobi–Trudi determinant"),
        formula=r"s_\lambda = \det\bigl(h_{\lambda_i - i + j}\bigr)_{1 \leq i, j \leq \ell}",
        relations=(
            ("uses", "Schur function"),
            ("uses", "complete homogeneous symmetric function"),
        ),
        macro="JT",
        msc="05E05",
    ),
    _concept(
        "Littlewood–Richardson rule",
        "theorem",
        "math.CO",
        "Describes the coefficients of a product of two Schur functions in the Schur basis "
        "as numbers of certain skew tableaux whose reading words are lattice words, so "
        "that they are nonnegative integers.",
        aliases=("LR rule", "Littlewood–Richardson coefficients"),
        notation=(r"c^{\nu}_{\lambda\mu}",),
        formula=r"s_\lambda s_\mu = \sum_{\nu} c^{\nu}_{\lambda\mu}\, s_\nu",
        relations=(
            ("uses", "Schur function"),
            ("uses", "Young tableau"),
            ("related_to", "jeu de taquin"),
        ),
        macro="LR",
        msc="05E10",
    ),
    _concept(
        "RSK correspondence",
        "technique",
        "math.CO",
        "A bijection, built from repeated row insertion, between matrices with nonnegative "
        "integer entries and pairs of semistandard Young tableaux of the same shape; on "
        "permutations it gives pairs of standard tableaux.",
        aliases=(
            "Robinson–Schensted–Knuth correspondence",
            "RSK algorithm",
            "Robinson–Schensted correspondence",
        ),
        formula=r"\sum_{\lambda \vdash n} \bigl(f^\lambda\bigr)^2 = n!",
        relations=(
            ("uses", "Young tableau"),
            ("related_to", "symmetric group"),
            ("related_to", "hook length formula"),
        ),
        macro="RSK",
        msc="05E10",
    ),
    _concept(
        "jeu de taquin",
        "technique",
        "math.CO",
        "The sliding procedure of Schützenberger that moves entries of a skew tableau into "
        "empty boxes until a tableau of straight shape remains; the result does not depend "
        "on the order of the slides.",
        aliases=("Schützenberger's sliding", "rectification of skew tableaux"),
        relations=(("uses", "Young tableau"),),
        article="",
        msc="05E10",
    ),
    _concept(
        "plethysm",
        "definition",
        "math.CO",
        "An operation on symmetric functions that substitutes the monomials of one symmetric "
        "function for the variables of another; it describes the composition of polynomial "
        "representations of general linear groups.",
        aliases=("plethystic substitution", "composition of symmetric functions"),
        notation=("f[g]",),
        formula=r"p_k[f] = f(x_1^k, x_2^k, \dots)",
        relations=(("uses", "symmetric function"), ("related_to", "Schur function")),
        article="",
        msc="05E05",
    ),
    _concept(
        "Hall–Littlewood polynomial",
        "object",
        "math.CO",
        "A symmetric function depending on a parameter $t$ that interpolates between the "
        "Schur function at $t = 0$ and the monomial symmetric function at $t = 1$.",
        aliases=("Hall–Littlewood function", "Hall–Littlewood symmetric function"),
        notation=(r"P_\lambda(x;t)",),
        formula=r"P_\lambda(x;0) = s_\lambda(x), \qquad P_\lambda(x;1) = m_\lambda(x)",
        relations=(
            ("is_instance_of", "symmetric function"),
            ("generalizes", "Schur function"),
            ("related_to", "Kostka number"),
        ),
        macro="HL",
        plural="Hall–Littlewood polynomials",
        msc="05E05",
    ),
    _concept(
        "Macdonald polynomial",
        "object",
        "math.CO",
        "A symmetric function depending on two parameters $q$ and $t$ that specializes to "
        "Hall–Littlewood polynomials at $q = 0$ and to Schur functions when $q = t$.",
        aliases=("Macdonald symmetric function", "Macdonald function"),
        notation=(r"P_\lambda(x;q,t)", r"\tilde{H}_\mu(x;q,t)"),
        formula=r"P_\lambda(x;0,t) = P_\lambda(x;t), \qquad P_\lambda(x;q,q) = s_\lambda(x)",
        relations=(
            ("is_instance_of", "symmetric function"),
            ("generalizes", "Hall–Littlewood polynomial"),
            ("generalizes", "Schur function"),
        ),
        plural="Macdonald polynomials",
        msc="05E05",
    ),
    _concept(
        "Macdonald positivity",
        "theorem",
        "math.CO",
        "Asserts that the $q,t$-Kostka coefficients expressing modified Macdonald "
        "polynomials in Schur functions are polynomials in $q$ and $t$ with nonnegative "
        "integer coefficients; Haiman proved it using Hilbert schemes of points in the plane.",
        aliases=("Macdonald positivity conjecture", "positivity of q,t-Kostka coefficients"),
        notation=(r"\tilde{K}_{\lambda\mu}(q,t)",),
        formula=r"\tilde{H}_\mu(x;q,t) = \sum_{\lambda} \tilde{K}_{\lambda\mu}(q,t)\, s_\lambda, "
        r"\qquad \tilde{K}_{\lambda\mu}(q,t) \in \mathbb{N}[q,t]",
        relations=(
            ("uses", "Macdonald polynomial"),
            ("uses", "Schur function"),
            ("related_to", "Kostka number"),
        ),
        article="",
        msc="05E05",
    ),
    _concept(
        "Catalan number",
        "object",
        "math.CO",
        "The $n$-th term of the sequence $1, 1, 2, 5, 14, 42, \\dots$, which counts Dyck "
        "paths, binary trees, triangulations of a convex polygon and many other families.",
        aliases=("Catalan numbers", "Catalan sequence"),
        notation=("C_n",),
        formula=r"C_n = \frac{1}{n+1} \binom{2n}{n}",
        relations=(("related_to", "Dyck path"), ("uses", "generating function")),
        plural="Catalan numbers",
        msc="05A15",
    ),
    _concept(
        "Dyck path",
        "object",
        "math.CO",
        "A lattice path from $(0,0)$ to $(2n,0)$ with up-steps $(1,1)$ and down-steps "
        "$(1,-1)$ that never goes below the horizontal axis.",
        aliases=("Dyck word", "balanced parenthesis word"),
        relations=(("is_instance_of", "lattice path"), ("related_to", "Catalan number")),
        plural="Dyck paths",
        msc="05A15",
    ),
    _concept(
        "lattice path",
        "object",
        "math.CO",
        "A path in the integer lattice built from steps in a fixed finite set, such as unit "
        "north and east steps.",
        aliases=("lattice walk", "staircase walk"),
        formula=r"\#\{\text{north-east paths from } (0,0) \text{ to } (a,b)\} = \binom{a+b}{a}",
        relations=(("related_to", "Gaussian binomial coefficient"),),
        plural="lattice paths",
        msc="05A15",
    ),
    _concept(
        "generating function",
        "technique",
        "math.CO",
        "A formal power series whose coefficients are the terms of a sequence, so that "
        "operations on combinatorial classes become algebraic operations on series.",
        aliases=("ordinary generating function", "generating series", "formal power series"),
        formula=r"F(q) = \sum_{n \geq 0} a_n q^n",
        plural="generating functions",
        msc="05A15",
    ),
    _concept(
        "Stirling numbers of the second kind",
        "object",
        "math.CO",
        "The numbers counting the ways to split a set of $n$ labelled elements into $k$ "
        "nonempty unlabelled blocks.",
        aliases=("Stirling partition numbers", "Stirling set numbers"),
        notation=("S(n,k)",),
        formula=r"S(n,k) = S(n-1,k-1) + k\, S(n-1,k)",
        relations=(("uses", "generating function"),),
        plural="Stirling numbers of the second kind",
        msc="11B73",
    ),
    _concept(
        "pattern avoidance",
        "definition",
        "math.CO",
        "The property of a permutation having no subsequence whose entries appear in the "
        "same relative order as those of a given pattern.",
        aliases=("permutation pattern", "pattern-avoiding permutation"),
        notation=(r"\mathrm{Av}_n(\sigma)",),
        formula=r"|\mathrm{Av}_n(123)| = |\mathrm{Av}_n(132)| = C_n",
        relations=(("related_to", "symmetric group"), ("related_to", "Catalan number")),
        article="",
        msc="05A05",
    ),
    _concept(
        "Burnside's lemma",
        "theorem",
        "math.CO",
        "Counts the orbits of a finite group acting on a set as the average number of points "
        "fixed by an element of the group.",
        aliases=("orbit-counting lemma", "Cauchy–Frobenius lemma", "Burnside's counting theorem"),
        formula=r"|X/G| = \frac{1}{|G|} \sum_{g \in G} |X^{g}|",
        relations=(("uses", "group action"),),
        msc="05E18",
    ),
)

# -- q-series and partitions ----------------------------------------------------------

_Q_SERIES = (
    _concept(
        "q-Pochhammer symbol",
        "object",
        "math.CO",
        "The product of the factors $1 - aq^k$ for $k = 0, \\dots, n-1$, or over all "
        "$k \\geq 0$ when $n$ is infinite; it plays the role for $q$-series that factorials "
        "play for hypergeometric series.",
        aliases=("q-shifted factorial", "q-rising factorial"),
        notation=("(a;q)_n", r"(a;q)_\infty"),
        formula=r"(a;q)_n = \prod_{k=0}^{n-1} (1 - a q^k)",
        relations=(("is_instance_of", "q-analogue"),),
        plural="q-Pochhammer symbols",
        msc="05A30",
    ),
    _concept(
        "q-analogue",
        "definition",
        "math.CO",
        "A formula or quantity depending on a parameter $q$ that reduces to a classical one "
        "as $q$ tends to $1$, as the $q$-integer $1 + q + \\dots + q^{n-1}$ reduces to $n$.",
        aliases=("q-deformation", "q-version"),
        notation=("[n]_q",),
        formula=r"[n]_q = \frac{1 - q^n}{1 - q} = 1 + q + \cdots + q^{n-1}",
        article="a",
        plural="q-analogues",
        msc="05A30",
    ),
    _concept(
        "Gaussian binomial coefficient",
        "object",
        "math.CO",
        "The $q$-analogue of the binomial coefficient; it is a polynomial in $q$ whose "
        "coefficients count partitions that fit inside a $k \\times (n-k)$ rectangle.",
        aliases=("q-binomial coefficient", "Gaussian polynomial"),
        notation=(r"\binom{n}{k}_q",),
        formula=r"\binom{n}{k}_q = \frac{(q;q)_n}{(q;q)_k\, (q;q)_{n-k}}",
        relations=(
            ("is_instance_of", "q-analogue"),
            ("uses", "q-Pochhammer symbol"),
            ("related_to", "integer partition"),
            ("related_to", "lattice path"),
        ),
        plural="Gaussian binomial coefficients",
        msc="05A30",
    ),
    _concept(
        "q-binomial theorem",
        "theorem",
        "math.CA",
        "Sums the series of $(a;q)_n z^n / (q;q)_n$ in closed form as a quotient of two "
        "infinite products; it is the $q$-analogue of Newton's binomial series.",
        aliases=("Cauchy's q-binomial theorem", "q-binomial series"),
        formula=r"\sum_{n \geq 0} \frac{(a;q)_n}{(q;q)_n} z^n = "
        r"\frac{(az;q)_\infty}{(z;q)_\infty}, \qquad |z| < 1,\ |q| < 1",
        relations=(
            ("uses", "q-Pochhammer symbol"),
            ("is_instance_of", "q-analogue"),
            ("related_to", "basic hypergeometric series"),
        ),
        msc="33D15",
    ),
    _concept(
        "basic hypergeometric series",
        "object",
        "math.CA",
        "A power series in which the ratio of consecutive coefficients is a rational "
        "function of $q^n$; it is the $q$-analogue of a hypergeometric series.",
        aliases=("q-hypergeometric series", "basic hypergeometric function"),
        notation=(r"{}_r\phi_s", r"{}_2\phi_1(a,b;c;q,z)"),
        formula=r"{}_2\phi_1(a,b;c;q,z) = "
        r"\sum_{n \geq 0} \frac{(a;q)_n (b;q)_n}{(q;q)_n (c;q)_n} z^n",
        relations=(("uses", "q-Pochhammer symbol"), ("is_instance_of", "q-analogue")),
        plural="basic hypergeometric series",
        msc="33D15",
    ),
    _concept(
        "Jacobi triple product",
        "identity",
        "math.NT",
        "Expresses the two-sided series of $z^n q^{n^2}$ over all integers $n$ as a product "
        "of three infinite products; many classical partition identities are special cases.",
        aliases=("Jacobi triple product identity", "triple product identity"),
        formula=r"\sum_{n=-\infty}^{\infty} z^n q^{n^2} = "
        r"\prod_{m \geq 1} (1 - q^{2m})(1 + z q^{2m-1})(1 + z^{-1} q^{2m-1})",
        relations=(
            ("uses", "q-Pochhammer symbol"),
            ("related_to", "theta function"),
            ("implies", "Euler's pentagonal number theorem"),
        ),
        macro="JTP",
        msc="05A30",
    ),
    _concept(
        "Euler's pentagonal number theorem",
        "theorem",
        "math.NT",
        "Expands the infinite product of the factors $1 - q^k$ as an alternating series over "
        "the generalized pentagonal numbers, which gives a fast recurrence for the "
        "partition function.",
        aliases=("pentagonal number theorem", "Euler's pentagonal theorem"),
        formula=r"\prod_{k \geq 1} (1 - q^k) = \sum_{n=-\infty}^{\infty} (-1)^n q^{n(3n-1)/2}",
        relations=(
            ("related_to", "partition function"),
            ("related_to", "Dedekind eta function"),
        ),
        macro="EPNT",
        msc="11P84",
    ),
    _concept(
        "Rogers–Ramanujan identities",
        "identity",
        "math.NT",
        "Equate two $q$-series with denominators $(q;q)_n$ and infinite products over parts "
        "congruent to $\\pm 1$, respectively $\\pm 2$, modulo $5$; combinatorially, "
        "partitions whose parts differ by at least two are as numerous as partitions into "
        "such parts.",
        aliases=("Rogers–Ramanujan partition identities", "Rogers–Ramanujan formulas"),
        notation=("G(q)", "H(q)"),
        formula=r"\sum_{n \geq 0} \frac{q^{n^2}}{(q;q)_n} = "
        r"\prod_{n \geq 0} \frac{1}{(1 - q^{5n+1})(1 - q^{5n+4})}",
        relations=(
            ("uses", "q-Pochhammer symbol"),
            ("uses", "Jacobi triple product"),
            ("related_to", "integer partition"),
            ("related_to", "Bailey's lemma"),
        ),
        macro="RRi",
        msc="11P84",
    ),
    _concept(
        "Andrews–Gordon identities",
        "identity",
        "math.NT",
        "Extend the Rogers–Ramanujan identities from the modulus $5$ to every odd modulus "
        "$2k+1$, equating multiple $q$-series with products over parts not congruent to $0$ "
        "or $\\pm i$.",
        aliases=("Gordon–Andrews identities", "Rogers–Ramanujan–Gordon identities"),
        formula=r"\sum_{n_1 \geq \cdots \geq n_{k-1} \geq 0} "
        r"\frac{q^{n_1^2 + \cdots + n_{k-1}^2 + n_i + \cdots + n_{k-1}}}"
        r"{(q;q)_{n_1 - n_2} \cdots (q;q)_{n_{k-2} - n_{k-1}} (q;q)_{n_{k-1}}} = "
        r"\prod_{\substack{n \geq 1 \\ n \not\equiv 0, \pm i \pmod{2k+1}}} \frac{1}{1 - q^n}",
        relations=(
            ("generalizes", "Rogers–Ramanujan identities"),
            ("uses", "Bailey's lemma"),
            ("uses", "q-Pochhammer symbol"),
        ),
        macro="AG",
        msc="11P84",
    ),
    _concept(
        "Bailey pair",
        "definition",
        "math.NT",
        "A pair of sequences $(\\alpha_n)$ and $(\\beta_n)$ related, relative to a parameter "
        "$a$, by a fixed triangular transform whose coefficients are reciprocals of "
        "$q$-Pochhammer symbols.",
        aliases=("Bailey pairs",),
        notation=(r"(\alpha_n, \beta_n)",),
        formula=r"\beta_n = \sum_{r=0}^{n} \frac{\alpha_r}{(q;q)_{n-r}\, (aq;q)_{n+r}}",
        relations=(("uses", "q-Pochhammer symbol"),),
        plural="Bailey pairs",
        msc="33D15",
    ),
    _concept(
        "Bailey's lemma",
        "theorem",
        "math.NT",
        "Turns a Bailey pair into a new Bailey pair with two extra free parameters; "
        "iterating it produces the Bailey chain, a systematic way of proving identities of "
        "Rogers–Ramanujan type.",
        aliases=("Bailey lemma", "Bailey chain"),
        formula=r"\alpha'_n = \frac{(\rho_1;q)_n (\rho_2;q)_n}{(aq/\rho_1;q)_n (aq/\rho_2;q)_n} "
        r"\left(\frac{aq}{\rho_1 \rho_2}\right)^{n} \alpha_n",
        relations=(("uses", "Bailey pair"), ("related_to", "basic hypergeometric series")),
        msc="33D15",
    ),
    _concept(
        "Durfee square",
        "object",
        "math.CO",
        "The largest square of boxes that fits in the upper-left corner of a Young diagram; "
        "cutting a diagram along it gives classical $q$-series identities.",
        aliases=("Durfee square of a partition", "Durfee rank"),
        formula=r"\prod_{k \geq 1} \frac{1}{1 - q^k} = \sum_{s \geq 0} \frac{q^{s^2}}{(q;q)_s^2}",
        relations=(("uses", "Young diagram"), ("related_to", "partition function")),
        plural="Durfee squares",
        msc="05A17",
    ),
    _concept(
        "Dyson's rank",
        "definition",
        "math.NT",
        "The largest part of a partition minus its number of parts; Dyson introduced it to "
        "explain two of Ramanujan's congruences combinatorially.",
        aliases=("rank of a partition", "partition rank"),
        notation=(r"\operatorname{rank}(\lambda)",),
        formula=r"\operatorname{rank}(\lambda) = \lambda_1 - \ell(\lambda)",
        relations=(
            ("uses", "integer partition"),
            ("related_to", "Ramanujan's congruences"),
        ),
        msc="11P83",
    ),
    _concept(
        "partition crank",
        "definition",
        "math.NT",
        "The partition statistic found by Andrews and Garvan that divides the partitions of "
        "$11n + 6$ into eleven classes of equal size, which the rank fails to do.",
        aliases=("crank of a partition", "Andrews–Garvan crank"),
        formula=r"M(m, 11, 11n+6) = \frac{p(11n+6)}{11}, \qquad 0 \leq m \leq 10",
        relations=(
            ("related_to", "Dyson's rank"),
            ("related_to", "Ramanujan's congruences"),
        ),
        msc="11P83",
    ),
    _concept(
        "Ramanujan's congruences",
        "theorem",
        "math.NT",
        "Assert that the partition function is divisible by $5$, $7$ and $11$ along the "
        "progressions $5n+4$, $7n+5$ and $11n+6$.",
        aliases=("Ramanujan's partition congruences", "Ramanujan congruences"),
        notation=(r"p(5n+4) \equiv 0 \pmod{5}",),
        formula=r"p(5n+4) \equiv 0 \pmod 5, \quad p(7n+5) \equiv 0 \pmod 7, "
        r"\quad p(11n+6) \equiv 0 \pmod{11}",
        relations=(("uses", "partition function"), ("related_to", "modular form")),
        msc="11P83",
    ),
    _concept(
        "Euler's partition theorem",
        "theorem",
        "math.CO",
        "States that the partitions of $n$ into distinct parts are as numerous as the "
        "partitions of $n$ into odd parts; Glaisher's bijection proves it by merging equal "
        "parts in pairs.",
        aliases=("distinct parts and odd parts theorem", "Euler's odd-distinct theorem"),
        formula=r"\prod_{k \geq 1} (1 + q^k) = \prod_{k \geq 1} \frac{1}{1 - q^{2k-1}}",
        relations=(("uses", "integer partition"), ("uses", "generating function")),
        msc="05A17",
    ),
    _concept(
        "mock theta function",
        "object",
        "math.NT",
        "A $q$-series of the kind introduced by Ramanujan in his last letter to Hardy, such "
        "as the third order function $f(q)$; Zwegers showed that these are holomorphic parts "
        "of harmonic Maass forms.",
        aliases=("Ramanujan's mock theta functions", "mock modular form"),
        notation=("f(q)",),
        formula=r"f(q) = \sum_{n \geq 0} \frac{q^{n^2}}{(-q;q)_n^2}",
        relations=(
            ("related_to", "modular form"),
            ("related_to", "Dyson's rank"),
            ("related_to", "theta function"),
        ),
        plural="mock theta functions",
        msc="11F37",
    ),
)

# -- number theory --------------------------------------------------------------------

_NUMBER_THEORY = (
    _concept(
        "modular form",
        "object",
        "math.NT",
        "A holomorphic function on the upper half-plane that transforms like a power of "
        "$c\\tau + d$ under the modular group or one of its congruence subgroups and is "
        "holomorphic at the cusps.",
        aliases=("holomorphic modular form", "elliptic modular form"),
        notation=(r"M_k(\Gamma)",),
        formula=r"f\!\left(\frac{a\tau + b}{c\tau + d}\right) = (c\tau + d)^k f(\tau)",
        relations=(("uses", "modular group"),),
        plural="modular forms",
        msc="11F11",
    ),
    _concept(
        "cusp form",
        "object",
        "math.NT",
        "A modular form whose Fourier expansion has vanishing constant term at every cusp.",
        aliases=("cuspidal modular form", "cuspidal form"),
        notation=(r"S_k(\Gamma)",),
        formula=r"f(\tau) = \sum_{n \geq 1} a(n) q^n, \qquad q = e^{2\pi i \tau}",
        relations=(("is_instance_of", "modular form"),),
        plural="cusp forms",
        msc="11F11",
    ),
    _concept(
        "modular group",
        "object",
        "math.NT",
        "The group of two by two integer matrices of determinant one, acting on the upper "
        "half-plane by fractional linear transformations; it is generated by a translation "
        "and an inversion.",
        aliases=("full modular group", "special linear group over the integers"),
        notation=(r"\mathrm{SL}_2(\mathbb{Z})",),
        formula=r"S = \begin{pmatrix} 0 & -1 \\ 1 & 0 \end{pmatrix}, "
        r"\qquad T = \begin{pmatrix} 1 & 1 \\ 0 & 1 \end{pmatrix}",
        relations=(("related_to", "group action"),),
        msc="11F06",
    ),
    _concept(
        "Eisenstein series",
        "object",
        "math.NT",
        "The modular form of weight $k$ obtained by summing $(m\\tau + n)^{-k}$ over all "
        "pairs of integers other than $(0,0)$; its Fourier coefficients are divisor sums.",
        aliases=("holomorphic Eisenstein series",),
        notation=(r"E_k(\tau)", r"G_k(\tau)"),
        formula=r"E_k(\tau) = 1 - \frac{2k}{B_k} \sum_{n \geq 1} \sigma_{k-1}(n) q^n",
        relations=(("is_instance_of", "modular form"),),
        plural="Eisenstein series",
        msc="11F11",
    ),
    _concept(
        "Dedekind eta function",
        "object",
        "math.NT",
        "The modular form of weight one half given by $q^{1/24}$ times the infinite product "
        "of the factors $1 - q^n$; its reciprocal is essentially the generating function of "
        "the partition function.",
        aliases=("eta function", "Dedekind's eta function"),
        notation=(r"\eta(\tau)",),
        formula=r"\eta(\tau) = q^{1/24} \prod_{n \geq 1} (1 - q^n), \qquad q = e^{2\pi i \tau}",
        relations=(("related_to", "modular form"),),
        msc="11F20",
    ),
    _concept(
        "theta function",
        "object",
        "math.NT",
        "A quasi-periodic function of a complex variable and a point of the upper half-plane, "
        "such as the sum of $q^{n^2}$ over all integers $n$; theta functions are basic "
        "examples of modular forms of half-integral weight.",
        aliases=("Jacobi theta function", "theta series"),
        notation=(r"\vartheta_3(z \mid \tau)", r"\theta(q)"),
        formula=r"\vartheta_3(z \mid \tau) = \sum_{n=-\infty}^{\infty} "
        r"e^{\pi i n^2 \tau + 2\pi i n z}",
        relations=(
            ("related_to", "modular form"),
            ("related_to", "Jacobi triple product"),
            ("uses", "Poisson summation formula"),
        ),
        plural="theta functions",
        msc="11F27",
    ),
    _concept(
        "Ramanujan tau function",
        "object",
        "math.NT",
        "The arithmetic function given by the Fourier coefficients of the discriminant form, "
        "the 24th power of the Dedekind eta function; it is multiplicative, a fact explained "
        "by Hecke operators.",
        aliases=("Ramanujan's tau function", "tau function"),
        notation=(r"\tau(n)", r"\Delta(\tau)"),
        formula=r"\Delta(\tau) = \eta(\tau)^{24} = \sum_{n \geq 1} \tau(n) q^n",
        relations=(
            ("uses", "Dedekind eta function"),
            ("related_to", "cusp form"),
            ("related_to", "Hecke operator"),
        ),
        msc="11F30",
    ),
    _concept(
        "Lehmer's conjecture",
        "conjecture",
        "math.NT",
        "Asserts that the Ramanujan tau function never vanishes; it has been checked for all "
        "$n$ up to very large bounds but remains open.",
        aliases=("Lehmer's tau conjecture", "non-vanishing of the tau function"),
        formula=r"\tau(n) \neq 0 \quad \text{for all } n \geq 1",
        relations=(("related_to", "Ramanujan tau function"),),
        msc="11F30",
    ),
    _concept(
        "Hecke operator",
        "object",
        "math.NT",
        "A linear operator on a space of modular forms that averages over sublattices of "
        "index $n$; these operators commute, and their simultaneous eigenforms have "
        "multiplicative Fourier coefficients.",
        aliases=("Hecke operators", "Hecke algebra of modular forms"),
        notation=("T_n", "T_p"),
        formula=r"(T_p f)(\tau) = \sum_{n \geq 0} \bigl(a(pn) + p^{k-1} a(n/p)\bigr) q^n",
        relations=(("uses", "modular form"),),
        plural="Hecke operators",
        msc="11F25",
    ),
    _concept(
        "Riemann zeta function",
        "object",
        "math.NT",
        "The Dirichlet series of the constant function one, continued to a meromorphic "
        "function on the complex plane with a single pole at $s = 1$; its Euler product ties "
        "it to the primes.",
        aliases=("zeta function", "Euler–Riemann zeta function"),
        notation=(r"\zeta(s)",),
        formula=r"\zeta(s) = \sum_{n \geq 1} n^{-s} = \prod_{p} \frac{1}{1 - p^{-s}}, "
        r"\qquad \operatorname{Re} s > 1",
        relations=(("uses", "analytic continuation"),),
        msc="11M06",
    ),
    _concept(
        "Riemann hypothesis",
        "conjecture",
        "math.NT",
        "Asserts that every nontrivial zero of the Riemann zeta function has real part one half.",
        aliases=("RH", "Riemann's conjecture on the zeros of zeta"),
        formula=r"\zeta(\rho) = 0,\ 0 < \operatorname{Re} \rho < 1 \implies "
        r"\operatorname{Re} \rho = \tfrac{1}{2}",
        relations=(
            ("related_to", "Riemann zeta function"),
            ("related_to", "prime number theorem"),
        ),
        msc="11M26",
    ),
    _concept(
        "prime number theorem",
        "theorem",
        "math.NT",
        "States that the number of primes up to $x$ is asymptotic to $x / \\log x$; classical "
        "proofs rest on the non-vanishing of the zeta function on the line "
        "$\\operatorname{Re} s = 1$.",
        aliases=("PNT", "Hadamard–de la Vallée Poussin theorem"),
        notation=(r"\pi(x) \sim x / \log x",),
        formula=r"\pi(x) \sim \frac{x}{\log x} \qquad (x \to \infty)",
        relations=(("uses", "Riemann zeta function"),),
        msc="11N05",
    ),
    _concept(
        "Dirichlet L-function",
        "object",
        "math.NT",
        "The Dirichlet series attached to a Dirichlet character; its non-vanishing at "
        "$s = 1$ gives Dirichlet's theorem on primes in arithmetic progressions.",
        aliases=("Dirichlet L-series", "L-function of a Dirichlet character"),
        notation=(r"L(s,\chi)",),
        formula=r"L(s,\chi) = \sum_{n \geq 1} \frac{\chi(n)}{n^{s}}",
        relations=(("generalizes", "Riemann zeta function"),),
        plural="Dirichlet L-functions",
        msc="11M06",
    ),
    _concept(
        "quadratic reciprocity",
        "theorem",
        "math.NT",
        "States that for distinct odd primes $p$ and $q$ the Legendre symbols $(p/q)$ and "
        "$(q/p)$ agree unless both primes are congruent to $3$ modulo $4$, in which case "
        "they differ in sign.",
        aliases=("law of quadratic reciprocity", "Gauss's reciprocity law"),
        formula=r"\left(\frac{p}{q}\right)\left(\frac{q}{p}\right) = "
        r"(-1)^{\frac{p-1}{2} \cdot \frac{q-1}{2}}",
        relations=(("related_to", "Dirichlet L-function"),),
        article="",
        msc="11A15",
    ),
    _concept(
        "Möbius inversion",
        "technique",
        "math.NT",
        "The principle that recovers an arithmetic function from its sums over divisors by "
        "weighting with the Möbius function; it holds on every locally finite partially "
        "ordered set.",
        aliases=("Möbius inversion formula", "inversion by the Möbius function"),
        notation=(r"\mu(n)",),
        formula=r"g(n) = \sum_{d \mid n} f(d) \iff f(n) = \sum_{d \mid n} \mu(d)\, g(n/d)",
        relations=(("related_to", "Riemann zeta function"),),
        article="",
        msc="11A25",
    ),
    _concept(
        "Goldbach's conjecture",
        "conjecture",
        "math.NT",
        "Asserts that every even integer greater than two is a sum of two primes; it is "
        "open, while the weak ternary version was proved by Helfgott.",
        aliases=("Goldbach conjecture", "strong Goldbach conjecture"),
        formula=r"2n = p_1 + p_2 \qquad (n \geq 2,\ p_1, p_2 \text{ prime})",
        relations=(("related_to", "circle method"), ("related_to", "prime number theorem")),
        msc="11P32",
    ),
    _concept(
        "circle method",
        "technique",
        "math.NT",
        "A method for estimating the coefficients of a generating function through Cauchy's "
        "integral over a circle close to the unit circle, split into major arcs near "
        "rationals with small denominators, which give the main term, and minor arcs, which "
        "are bounded.",
        aliases=("Hardy–Littlewood circle method", "Hardy–Ramanujan–Littlewood method"),
        formula=r"a_n = \frac{1}{2\pi i} \oint_{|q| = r} \frac{F(q)}{q^{n+1}}\, dq",
        relations=(("uses", "Cauchy's integral formula"), ("uses", "generating function")),
        msc="11P55",
    ),
    _concept(
        "Hardy–Ramanujan asymptotic formula",
        "theorem",
        "math.NT",
        "Gives the growth of the partition function, "
        "$p(n) \\sim e^{\\pi\\sqrt{2n/3}} / (4n\\sqrt{3})$; Rademacher later turned it into "
        "an exact convergent series.",
        aliases=("Hardy–Ramanujan formula", "asymptotic formula for partitions"),
        formula=r"p(n) \sim \frac{1}{4n\sqrt{3}} \exp\!\left(\pi \sqrt{\frac{2n}{3}}\right)",
        relations=(
            ("uses", "circle method"),
            ("uses", "Dedekind eta function"),
            ("related_to", "partition function"),
        ),
        macro="HR",
        msc="11P82",
    ),
)

# -- topology -------------------------------------------------------------------------

_TOPOLOGY = (
    _concept(
        "fundamental group",
        "object",
        "math.AT",
        "The group of homotopy classes of loops at a base point, multiplied by concatenating "
        "loops; it is the first of the homotopy groups.",
        aliases=("first homotopy group", "Poincaré group"),
        notation=(r"\pi_1(X, x_0)",),
        formula=r"\pi_1(S^1) \cong \mathbb{Z}",
        relations=(("related_to", "covering space"),),
        plural="fundamental groups",
        msc="57M05",
    ),
    _concept(
        "homotopy group",
        "object",
        "math.AT",
        "The group of based homotopy classes of maps from the $n$-sphere into a space; it is "
        "abelian when $n \\geq 2$.",
        aliases=("higher homotopy group", "homotopy groups of a space"),
        notation=(r"\pi_n(X)",),
        formula=r"\pi_n(X, x_0) = [(S^n, *), (X, x_0)]",
        relations=(("generalizes", "fundamental group"),),
        plural="homotopy groups",
        msc="55Q05",
    ),
    _concept(
        "covering space",
        "object",
        "math.AT",
        "A space mapping onto another so that each point of the base has a neighbourhood "
        "whose preimage is a disjoint union of homeomorphic copies; connected covers "
        "correspond to conjugacy classes of subgroups of the fundamental group.",
        aliases=("covering map", "universal cover"),
        notation=(r"p \colon \tilde{X} \to X",),
        formula=r"p_* \colon \pi_1(\tilde{X}, \tilde{x}_0) \hookrightarrow \pi_1(X, x_0)",
        relations=(("uses", "fundamental group"),),
        plural="covering spaces",
        msc="57M10",
    ),
    _concept(
        "CW complex",
        "object",
        "math.AT",
        "A space built inductively by attaching cells of increasing dimension along their "
        "boundary spheres; the letters stand for closure-finiteness and the weak topology.",
        aliases=("cell complex", "CW-complex"),
        formula=r"X^{(n)} = X^{(n-1)} \cup_{\varphi} \coprod_{\alpha} D^n_\alpha",
        relations=(("generalizes", "simplicial complex"),),
        plural="CW complexes",
        msc="57Q05",
    ),
    _concept(
        "simplicial complex",
        "object",
        "math.AT",
        "A collection of simplices closed under taking faces in which any two simplices meet "
        "in a common face or not at all.",
        aliases=("abstract simplicial complex", "triangulated space"),
        formula=r"\sigma \in \Delta,\ \tau \subseteq \sigma \implies \tau \in \Delta",
        relations=(("related_to", "Euler characteristic"),),
        plural="simplicial complexes",
        msc="55U10",
    ),
    _concept(
        "Euler characteristic",
        "object",
        "math.AT",
        "The alternating sum of the numbers of cells of each dimension of a finite cell "
        "complex; it equals the alternating sum of the Betti numbers and is therefore a "
        "homotopy invariant.",
        aliases=("Euler–Poincaré characteristic", "Euler number of a space"),
        notation=(r"\chi(X)",),
        formula=r"\chi(X) = \sum_{i \geq 0} (-1)^i c_i = "
        r"\sum_{i \geq 0} (-1)^i \operatorname{rank} H_i(X)",
        relations=(("uses", "singular homology"), ("related_to", "CW complex")),
        msc="55N10",
    ),
    _concept(
        "singular homology",
        "object",
        "math.AT",
        "The homology of the chain complex generated by continuous maps of standard simplices "
        "into a space; it is a homotopy invariant satisfying the Eilenberg–Steenrod axioms.",
        aliases=("singular homology groups", "homology groups of a space"),
        notation=(r"H_n(X)", r"H_n(X;\mathbb{Z})"),
        formula=r"H_n(X) = \ker \partial_n / \operatorname{im} \partial_{n+1}",
        relations=(("related_to", "homotopy group"),),
        article="",
        msc="55N10",
    ),
    _concept(
        "Seifert–van Kampen theorem",
        "theorem",
        "math.AT",
        "Computes the fundamental group of a union of two open path-connected sets with "
        "path-connected intersection as an amalgamated free product of their fundamental "
        "groups.",
        aliases=("van Kampen's theorem", "van Kampen theorem"),
        formula=r"\pi_1(U \cup V) \cong \pi_1(U) *_{\pi_1(U \cap V)} \pi_1(V)",
        relations=(("uses", "fundamental group"),),
        macro="SvK",
        msc="57M05",
    ),
    _concept(
        "Mayer–Vietoris sequence",
        "technique",
        "math.AT",
        "A long exact sequence relating the homology of a space to the homology of two open "
        "sets covering it and of their intersection.",
        aliases=("Mayer–Vietoris long exact sequence", "Mayer–Vietoris argument"),
        formula=r"\cdots \to H_n(U \cap V) \to H_n(U) \oplus H_n(V) \to H_n(X) "
        r"\xrightarrow{\partial} H_{n-1}(U \cap V) \to \cdots",
        relations=(
            ("uses", "singular homology"),
            ("related_to", "Seifert–van Kampen theorem"),
        ),
        macro="MV",
        msc="55N10",
    ),
    _concept(
        "Hurewicz theorem",
        "theorem",
        "math.AT",
        "States that for an $(n-1)$-connected space with $n \\geq 2$ the Hurewicz map from "
        "the $n$-th homotopy group to the $n$-th homology group is an isomorphism, and that "
        "first homology is the abelianized fundamental group.",
        aliases=("Hurewicz isomorphism theorem", "Hurewicz homomorphism"),
        formula=r"h \colon \pi_n(X) \xrightarrow{\ \cong\ } H_n(X), "
        r"\qquad \pi_1(X)^{\mathrm{ab}} \cong H_1(X)",
        relations=(("uses", "homotopy group"), ("uses", "singular homology")),
        msc="55Q05",
    ),
    _concept(
        "homotopy equivalence",
        "definition",
        "math.AT",
        "A map that has an inverse up to homotopy, so that both composites are homotopic to "
        "identity maps; spaces related by one have isomorphic homotopy and homology groups.",
        aliases=("homotopy equivalent spaces", "homotopy type"),
        notation=(r"X \simeq Y",),
        formula=r"g \circ f \simeq \mathrm{id}_X, \qquad f \circ g \simeq \mathrm{id}_Y",
        relations=(("related_to", "homotopy group"),),
        article="a",
        plural="homotopy equivalences",
        msc="55P10",
    ),
    _concept(
        "Brouwer fixed point theorem",
        "theorem",
        "math.AT",
        "States that every continuous map from a closed ball to itself has a fixed point; a "
        "standard proof shows that a retraction of the ball onto its boundary sphere would "
        "contradict homology.",
        aliases=("Brouwer's fixed point theorem", "Brouwer theorem"),
        formula=r"f \colon D^n \to D^n \text{ continuous} \implies "
        r"\exists\, x \in D^n,\ f(x) = x",
        relations=(("uses", "singular homology"),),
        msc="55M20",
    ),
    _concept(
        "fibration",
        "object",
        "math.AT",
        "A map with the homotopy lifting property; its fibre, total space and base are "
        "linked by a long exact sequence of homotopy groups.",
        aliases=("Serre fibration", "Hurewicz fibration"),
        notation=(r"F \to E \to B",),
        formula=r"\cdots \to \pi_n(F) \to \pi_n(E) \to \pi_n(B) \to \pi_{n-1}(F) \to \cdots",
        relations=(("uses", "homotopy group"), ("generalizes", "covering space")),
        article="a",
        plural="fibrations",
        msc="55R05",
    ),
)

# -- algebra and representation theory ------------------------------------------------

_ALGEBRA = (
    _concept(
        "symmetric group",
        "object",
        "math.GR",
        "The group of all bijections from a set of $n$ elements to itself under composition; "
        "it has order $n!$ and its irreducible complex representations are indexed by the "
        "partitions of $n$.",
        aliases=("full symmetric group", "group of permutations"),
        notation=(r"\mathfrak{S}_n", "S_n"),
        relations=(("related_to", "group action"),),
        msc="20B30",
    ),
    _concept(
        "Specht module",
        "object",
        "math.RT",
        "The irreducible representation of the symmetric group attached to a partition, "
        "spanned by polytabloids; over the complex numbers these modules are the irreducible "
        "representations, each occurring once.",
        aliases=("Specht representation", "irreducible representation of the symmetric group"),
        notation=(r"S^\lambda",),
        formula=r"\dim S^\lambda = f^\lambda",
        relations=(
            ("is_instance_of", "group representation"),
            ("uses", "Young tableau"),
            ("related_to", "Schur function"),
        ),
        plural="Specht modules",
        msc="20C30",
    ),
    _concept(
        "Kazhdan–Lusztig polynomial",
        "object",
        "math.RT",
        "A polynomial indexed by a pair of elements of a Coxeter group, read off from the "
        "canonical basis of the Iwahori–Hecke algebra; it computes local intersection "
        "cohomology of Schubert varieties.",
        aliases=("KL polynomial", "Kazhdan–Lusztig basis coefficient"),
        notation=(r"P_{x,w}(q)",),
        formula=r"C'_w = q^{-\ell(w)/2} \sum_{y \leq w} P_{y,w}(q)\, T_y",
        relations=(("related_to", "symmetric group"), ("related_to", "group representation")),
        macro="KL",
        plural="Kazhdan–Lusztig polynomials",
        msc="20C08",
    ),
    _concept(
        "crystal basis",
        "object",
        "math.QA",
        "A combinatorial model of a representation of a quantum group, obtained as $q$ tends "
        "to zero and drawn as a coloured directed graph whose edges are Kashiwara operators.",
        aliases=("Kashiwara crystal", "crystal graph"),
        notation=(r"\tilde{e}_i, \tilde{f}_i",),
        formula=r"\tilde{f}_i b = b' \iff \tilde{e}_i b' = b",
        relations=(
            ("uses", "quantum group"),
            ("related_to", "Young tableau"),
            ("related_to", "Littlewood–Richardson rule"),
        ),
        plural="crystal bases",
        msc="17B37",
    ),
    _concept(
        "group action",
        "definition",
        "math.GR",
        "A rule by which each element of a group permutes a set, the identity acting "
        "trivially and a product acting as the composite of its factors.",
        aliases=("action of a group", "G-set"),
        notation=(r"g \cdot x",),
        formula=r"e \cdot x = x, \qquad (gh) \cdot x = g \cdot (h \cdot x)",
        article="a",
        plural="group actions",
        msc="20B05",
    ),
    _concept(
        "group representation",
        "object",
        "math.RT",
        "A homomorphism from a group to the group of invertible linear maps of a vector "
        "space; for a finite group over the complex numbers every representation splits "
        "into irreducible ones.",
        aliases=("linear representation", "G-module"),
        notation=(r"\rho \colon G \to \mathrm{GL}(V)",),
        formula=r"\rho(gh) = \rho(g)\, \rho(h)",
        relations=(("related_to", "group action"),),
        article="a",
        plural="group representations",
        msc="20C15",
    ),
    _concept(
        "Schur's lemma",
        "theorem",
        "math.RT",
        "States that a homomorphism between irreducible representations is zero or an "
        "isomorphism, so that over an algebraically closed field an irreducible "
        "finite-dimensional representation has only scalar endomorphisms.",
        aliases=("Schur lemma", "Schur's lemma on intertwiners"),
        formula=r"\operatorname{End}_G(V) = \mathbb{C} \cdot \mathrm{id}_V "
        r"\quad \text{for irreducible } V",
        relations=(("uses", "group representation"),),
        msc="20C15",
    ),
    _concept(
        "Lie algebra",
        "object",
        "math.RT",
        "A vector space with an alternating bilinear bracket satisfying the Jacobi identity; "
        "the tangent space at the identity of a Lie group is the basic example.",
        aliases=("Lie bracket algebra",),
        notation=(r"\mathfrak{g}",),
        formula=r"[x,[y,z]] + [y,[z,x]] + [z,[x,y]] = 0",
        article="a",
        plural="Lie algebras",
        msc="17B05",
    ),
    _concept(
        "quantum group",
        "object",
        "math.QA",
        "A Hopf algebra deforming the universal enveloping algebra of a Lie algebra by a "
        "parameter $q$; at generic $q$ its finite-dimensional representations mirror those "
        "of the Lie algebra.",
        aliases=("quantized enveloping algebra", "Drinfeld–Jimbo quantum group"),
        notation=(r"U_q(\mathfrak{g})",),
        formula=r"K E K^{-1} = q^{2} E, \qquad [E, F] = \frac{K - K^{-1}}{q - q^{-1}}",
        relations=(("is_instance_of", "Hopf algebra"), ("uses", "Lie algebra")),
        article="a",
        plural="quantum groups",
        msc="17B37",
    ),
    _concept(
        "Hopf algebra",
        "object",
        "math.QA",
        "An algebra that is also a coalgebra, with compatible product and coproduct, "
        "together with an antipode; group algebras and the ring of symmetric functions are "
        "examples.",
        aliases=("bialgebra with antipode", "Hopf algebras"),
        formula=r"m \circ (S \otimes \mathrm{id}) \circ \Delta = \eta \circ \varepsilon",
        article="a",
        plural="Hopf algebras",
        msc="16T05",
    ),
)

# -- analysis -------------------------------------------------------------------------

_ANALYSIS = (
    _concept(
        "Cauchy's integral formula",
        "theorem",
        "math.CV",
        "Recovers the values of a holomorphic function inside a disc from its values on the "
        "boundary circle through a contour integral, with similar integrals for all "
        "derivatives.",
        aliases=("Cauchy integral formula", "Cauchy's formula"),
        formula=r"f(a) = \frac{1}{2\pi i} \oint_{|z - z_0| = r} \frac{f(z)}{z - a}\, dz",
        relations=(("related_to", "residue theorem"),),
        msc="30E20",
    ),
    _concept(
        "residue theorem",
        "theorem",
        "math.CV",
        "Evaluates the contour integral of a meromorphic function around a closed curve as "
        "$2\\pi i$ times the sum of the residues at the enclosed poles, counted with "
        "winding numbers.",
        aliases=("Cauchy's residue theorem", "residue calculus"),
        notation=(r"\operatorname{Res}_{z=a} f",),
        formula=r"\oint_{\gamma} f(z)\, dz = 2\pi i \sum_{a} n(\gamma, a) "
        r"\operatorname{Res}_{z=a} f(z)",
        relations=(("generalizes", "Cauchy's integral formula"),),
        msc="30E20",
    ),
    _concept(
        "analytic continuation",
        "technique",
        "math.CV",
        "The extension of a holomorphic function from a smaller domain to a larger one; by "
        "the identity theorem it is unique on a connected domain when it exists.",
        aliases=("meromorphic continuation", "holomorphic extension"),
        article="",
        msc="30B40",
    ),
    _concept(
        "Mellin transform",
        "technique",
        "math.CA",
        "The integral transform that weights a function on the positive reals by $x^{s-1}$; "
        "it turns multiplicative convolutions into products and is a standard tool for the "
        "asymptotics of harmonic sums.",
        aliases=("Mellin transformation", "Mellin integral"),
        notation=(r"\mathcal{M}f(s)",),
        formula=r"\mathcal{M}f(s) = \int_{0}^{\infty} f(x)\, x^{s-1}\, dx",
        relations=(("related_to", "Gamma function"), ("related_to", "Riemann zeta function")),
        plural="Mellin transforms",
        msc="44A15",
    ),
    _concept(
        "Gamma function",
        "object",
        "math.CA",
        "The meromorphic extension of the factorial to the complex plane, given for positive "
        "real part by Euler's integral and satisfying $\\Gamma(s+1) = s\\,\\Gamma(s)$.",
        aliases=("Euler's gamma function", "Euler gamma function"),
        notation=(r"\Gamma(s)",),
        formula=r"\Gamma(s) = \int_{0}^{\infty} t^{s-1} e^{-t}\, dt, \qquad \Gamma(n+1) = n!",
        relations=(("uses", "analytic continuation"),),
        msc="33B15",
    ),
    _concept(
        "Stirling's formula",
        "theorem",
        "math.CA",
        "Approximates $n!$ by $\\sqrt{2\\pi n}\\,(n/e)^n$ with relative error tending to "
        "zero; it extends to an asymptotic series for the logarithm of the Gamma function.",
        aliases=("Stirling's approximation", "Stirling asymptotic formula"),
        formula=r"n! \sim \sqrt{2\pi n} \left(\frac{n}{e}\right)^{n}",
        relations=(("related_to", "Gamma function"), ("related_to", "Euler–Maclaurin formula")),
        msc="41A60",
    ),
    _concept(
        "Euler–Maclaurin formula",
        "identity",
        "math.CA",
        "Compares a sum of values of a smooth function at the integers with its integral, "
        "with corrections given by Bernoulli numbers and derivatives at the endpoints.",
        aliases=("Euler–Maclaurin summation formula", "Euler–Maclaurin summation"),
        formula=r"\sum_{a \leq n < b} f(n) = \int_a^b f(x)\, dx + \sum_{k=1}^{m} "
        r"\frac{B_k}{k!} \bigl(f^{(k-1)}(b) - f^{(k-1)}(a)\bigr) + R_m",
        msc="65B15",
    ),
    _concept(
        "Poisson summation formula",
        "identity",
        "math.CA",
        "Equates the sum of a rapidly decaying function over the integers with the sum of "
        "its Fourier transform over the integers; applied to a Gaussian it gives the modular "
        "transformation of theta functions.",
        aliases=("Poisson summation", "Poisson's summation formula"),
        formula=r"\sum_{n \in \mathbb{Z}} f(n) = \sum_{k \in \mathbb{Z}} \hat{f}(k)",
        relations=(("related_to", "theta function"),),
        msc="42A38",
    ),
    _concept(
        "saddle point method",
        "technique",
        "math.CA",
        "A method for estimating contour integrals that depend on a large parameter by "
        "deforming the contour through a saddle point of the integrand, where a Gaussian "
        "approximation gives the main term.",
        aliases=("method of steepest descent", "saddle-point method"),
        formula=r"\int_{\gamma} e^{\lambda f(z)} g(z)\, dz \sim g(z_0)\, e^{\lambda f(z_0)} "
        r"\sqrt{\frac{2\pi}{-\lambda f''(z_0)}}",
        relations=(
            ("uses", "Cauchy's integral formula"),
            ("related_to", "Stirling's formula"),
        ),
        msc="41A60",
    ),
)

CONCEPTS: tuple[Concept, ...] = (
    *_COMBINATORICS,
    *_Q_SERIES,
    *_NUMBER_THEORY,
    *_TOPOLOGY,
    *_ALGEBRA,
    *_ANALYSIS,
)


@cache
def concepts_by_name() -> Mapping[str, Concept]:
    """Display name → concept (read-only)."""
    return MappingProxyType({concept.name: concept for concept in CONCEPTS})


def concept(name: str) -> Concept:
    """The concept with display name ``name``; ``KeyError`` naming it if there is none."""
    try:
        return concepts_by_name()[name]
    except KeyError:
        raise KeyError(f"no concept named {name!r} in the sample ontology") from None


def relations() -> list[tuple[str, RelationKind, str]]:
    """Every relation as ``(source, kind, target)``, in ontology order."""
    return [
        (source.name, relation.kind, relation.target)
        for source in CONCEPTS
        for relation in source.relations
    ]


@cache
def neighbours(name: str) -> tuple[str, ...]:
    """Concepts related to ``name`` in either direction, in ontology order, without repeats."""
    related: dict[str, None] = {}
    for source, _kind, target in relations():
        if source == name:
            related[target] = None
        elif target == name:
            related[source] = None
    related.pop(name, None)
    return tuple(related)


def concepts_in_category(category: str) -> tuple[Concept, ...]:
    return tuple(item for item in CONCEPTS if item.category == category)
