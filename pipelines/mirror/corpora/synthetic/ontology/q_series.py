"""q-series and partitions: concepts of the sample ontology (hand-written data)."""

from __future__ import annotations

from pipelines.mirror.corpora.synthetic.ontology.model import Concept, define_concept

Q_SERIES: tuple[Concept, ...] = (
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
