"""Analysis: concepts of the sample ontology (hand-written data)."""

from __future__ import annotations

from pipelines.mirror.corpora.synthetic.ontology.model import Concept, define_concept

ANALYSIS: tuple[Concept, ...] = (
    define_concept(
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
    define_concept(
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
    define_concept(
        "analytic continuation",
        "technique",
        "math.CV",
        "The extension of a holomorphic function from a smaller domain to a larger one; by "
        "the identity theorem it is unique on a connected domain when it exists.",
        aliases=("meromorphic continuation", "holomorphic extension"),
        article="",
        msc="30B40",
    ),
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
