"""Algebra and representation theory: concepts of the sample ontology (hand-written data)."""

from __future__ import annotations

from pipelines.mirror.corpora.synthetic.ontology.model import Concept, define_concept

ALGEBRA: tuple[Concept, ...] = (
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
    define_concept(
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
