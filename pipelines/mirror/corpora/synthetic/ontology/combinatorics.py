"""Algebraic combinatorics and symmetric functions: concepts of the sample ontology
(hand-written data)."""

from __future__ import annotations

from pipelines.mirror.corpora.synthetic.ontology.model import Concept, define_concept

COMBINATORICS: tuple[Concept, ...] = (
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
