"""What papers are written with: authors' names, universities, and real references."""

from __future__ import annotations

from collections.abc import Mapping

FIRST_NAMES = (
    "Ana", "Bruno", "Chen", "Dmitri", "Elena", "Fatima", "George", "Hana", "Ivan", "Julia",
    "Kenji", "Lucía", "Marek", "Nadia", "Omar", "Priya", "Quentin", "Rosa", "Sven", "Tomás",
    "Uma", "Viktor", "Wen", "Xavier", "Yuki", "Zoë", "Amélie", "Björn", "Carmen", "Dieter",
    "Eitan", "Frédéric", "Grace", "Hiro", "Ines", "Jonas", "Katarina", "Leon", "Mei", "Nils",
)  # fmt: skip
LAST_NAMES = (
    "Alvarez", "Bergström", "Castillo", "Dubois", "Eriksen", "Fischer", "García", "Hoffmann",
    "Iyer", "Jansen", "Kowalski", "Lindqvist", "Moreau", "Nakamura", "Okafor", "Petrov",
    "Quinn", "Rossi", "Schmidt", "Tanaka", "Ueda", "Varga", "Weber", "Xu", "Yilmaz", "Zhou",
    "Andersen", "Brandão", "Costa", "Dahl", "Esposito", "Ferreira", "Grünwald", "Haas",
    "Ibáñez", "Jung", "Kessler", "López", "Müller", "Novak",
)  # fmt: skip
UNIVERSITIES = (
    "University of Vienna", "Pennsylvania State University", "University of Florida",
    "Université de Strasbourg", "University of Cambridge", "Kyoto University",
    "Universidad de Buenos Aires", "University of Illinois at Urbana-Champaign",
    "Uppsala University", "University of Sydney", "Tsinghua University", "ETH Zürich",
    "Universität Bonn", "University of Toronto", "Indian Institute of Science",
)  # fmt: skip

# Real textbooks and papers; each category draws from its own shelf.
BIBLIOGRAPHY: Mapping[str, str] = {
    "Andrews1976": r"G.~E. Andrews, \emph{The Theory of Partitions}, Encyclopedia of "
    r"Mathematics and its Applications~2, Addison--Wesley, 1976.",
    "Macdonald1995": r"I.~G. Macdonald, \emph{Symmetric Functions and Hall Polynomials}, "
    r"2nd ed., Oxford University Press, 1995.",
    "Stanley1999": r"R.~P. Stanley, \emph{Enumerative Combinatorics, Vol.~2}, Cambridge "
    r"University Press, 1999.",
    "Fulton1997": r"W. Fulton, \emph{Young Tableaux}, London Mathematical Society Student "
    r"Texts~35, Cambridge University Press, 1997.",
    "Sagan2001": r"B.~E. Sagan, \emph{The Symmetric Group}, 2nd ed., Graduate Texts in "
    r"Mathematics~203, Springer, 2001.",
    "FlajoletSedgewick2009": r"P. Flajolet and R. Sedgewick, \emph{Analytic Combinatorics}, "
    r"Cambridge University Press, 2009.",
    "Knuth1970": r"D.~E. Knuth, Permutations, matrices, and generalized Young tableaux, "
    r"\emph{Pacific J. Math.} \textbf{34} (1970), 709--727.",
    "FRT1954": r"J.~S. Frame, G. de B. Robinson and R.~M. Thrall, The hook graphs of the "
    r"symmetric group, \emph{Canad. J. Math.} \textbf{6} (1954), 316--324.",
    "GasperRahman2004": r"G. Gasper and M. Rahman, \emph{Basic Hypergeometric Series}, "
    r"2nd ed., Cambridge University Press, 2004.",
    "Rogers1894": r"L.~J. Rogers, Second memoir on the expansion of certain infinite "
    r"products, \emph{Proc. London Math. Soc.} \textbf{25} (1894), 318--343.",
    "Bailey1948": r"W.~N. Bailey, Identities of the Rogers--Ramanujan type, \emph{Proc. "
    r"London Math. Soc. (2)} \textbf{50} (1948), 1--10.",
    "Andrews1984": r"G.~E. Andrews, Multiple series Rogers--Ramanujan type identities, "
    r"\emph{Pacific J. Math.} \textbf{114} (1984), 267--283.",
    "AndrewsGarvan1988": r"G.~E. Andrews and F.~G. Garvan, Dyson's crank of a partition, "
    r"\emph{Bull. Amer. Math. Soc.} \textbf{18} (1988), 167--171.",
    "Dyson1944": r"F.~J. Dyson, Some guesses in the theory of partitions, \emph{Eureka} "
    r"\textbf{8} (1944), 10--15.",
    "Zwegers2002": r"S.~P. Zwegers, \emph{Mock Theta Functions}, Ph.D. thesis, Universiteit "
    r"Utrecht, 2002.",
    "Apostol1976": r"T.~M. Apostol, \emph{Introduction to Analytic Number Theory}, "
    r"Springer, 1976.",
    "Serre1973": r"J.-P. Serre, \emph{A Course in Arithmetic}, Graduate Texts in "
    r"Mathematics~7, Springer, 1973.",
    "DiamondShurman2005": r"F. Diamond and J. Shurman, \emph{A First Course in Modular "
    r"Forms}, Graduate Texts in Mathematics~228, Springer, 2005.",
    "HardyRamanujan1918": r"G.~H. Hardy and S. Ramanujan, Asymptotic formulae in "
    r"combinatory analysis, \emph{Proc. London Math. Soc. (2)} \textbf{17} (1918), 75--115.",
    "Ono2004": r"K. Ono, \emph{The Web of Modularity}, CBMS Regional Conference Series "
    r"in Mathematics~102, American Mathematical Society, 2004.",
    "IrelandRosen1990": r"K. Ireland and M. Rosen, \emph{A Classical Introduction to Modern "
    r"Number Theory}, 2nd ed., Springer, 1990.",
    "Hatcher2002": r"A. Hatcher, \emph{Algebraic Topology}, Cambridge University Press, 2002.",
    "May1999": r"J.~P. May, \emph{A Concise Course in Algebraic Topology}, University of "
    r"Chicago Press, 1999.",
    "Munkres1984": r"J.~R. Munkres, \emph{Elements of Algebraic Topology}, Addison--Wesley, "
    r"1984.",
    "FultonHarris1991": r"W. Fulton and J. Harris, \emph{Representation Theory: A First "
    r"Course}, Graduate Texts in Mathematics~129, Springer, 1991.",
    "Humphreys1972": r"J.~E. Humphreys, \emph{Introduction to Lie Algebras and "
    r"Representation Theory}, Springer, 1972.",
    "KazhdanLusztig1979": r"D. Kazhdan and G. Lusztig, Representations of Coxeter groups "
    r"and Hecke algebras, \emph{Invent. Math.} \textbf{53} (1979), 165--184.",
    "Kashiwara1991": r"M. Kashiwara, On crystal bases of the $q$-analogue of universal "
    r"enveloping algebras, \emph{Duke Math. J.} \textbf{63} (1991), 465--516.",
    "Kassel1995": r"C. Kassel, \emph{Quantum Groups}, Graduate Texts in Mathematics~155, "
    r"Springer, 1995.",
    "Haiman2001": r"M. Haiman, Hilbert schemes, polygraphs, and the Macdonald positivity "
    r"conjecture, \emph{J. Amer. Math. Soc.} \textbf{14} (2001), 941--1006.",
    "BumpSchilling2017": r"D. Bump and A. Schilling, \emph{Crystal Bases: Representations "
    r"and Combinatorics}, World Scientific, 2017.",
    "Ahlfors1979": r"L.~V. Ahlfors, \emph{Complex Analysis}, 3rd ed., McGraw--Hill, 1979.",
    "Olver1974": r"F.~W.~J. Olver, \emph{Asymptotics and Special Functions}, Academic "
    r"Press, 1974.",
    "AndrewsAskeyRoy1999": r"G.~E. Andrews, R. Askey and R. Roy, \emph{Special Functions}, "
    r"Encyclopedia of Mathematics and its Applications~71, Cambridge University Press, 1999.",
}
SHELVES: Mapping[str, tuple[str, ...]] = {
    "math.CO": ("Stanley1999", "FlajoletSedgewick2009", "Sagan2001"),
    "math.NT": ("Apostol1976", "Serre1973", "DiamondShurman2005", "IrelandRosen1990"),
    "math.AT": ("Hatcher2002", "May1999", "Munkres1984"),
    "math.RT": ("FultonHarris1991", "Humphreys1972"),
    "math.QA": ("Kassel1995",),
    "math.GR": ("Sagan2001", "FultonHarris1991"),
    "math.CA": ("AndrewsAskeyRoy1999", "Olver1974"),
    "math.CV": ("Ahlfors1979",),
}  # fmt: skip
# Where a concept has a standard source, papers about it cite that source.
CONCEPT_REFERENCES: Mapping[str, tuple[str, ...]] = {
    "integer partition": ("Andrews1976",),
    "partition function": ("Andrews1976",),
    "Young diagram": ("Fulton1997",),
    "Young tableau": ("Fulton1997", "Sagan2001"),
    "hook length formula": ("FRT1954", "Sagan2001"),
    "symmetric function": ("Macdonald1995", "Stanley1999"),
    "Schur function": ("Macdonald1995", "Stanley1999"),
    "complete homogeneous symmetric function": ("Macdonald1995",),
    "elementary symmetric function": ("Macdonald1995",),
    "Kostka number": ("Macdonald1995", "Fulton1997"),
    "Jacobi–Trudi identity": ("Macdonald1995",),
    "Littlewood–Richardson rule": ("Fulton1997", "Macdonald1995"),
    "RSK correspondence": ("Knuth1970", "Fulton1997"),
    "jeu de taquin": ("Fulton1997",),
    "plethysm": ("Macdonald1995",),
    "Hall–Littlewood polynomial": ("Macdonald1995",),
    "Macdonald polynomial": ("Macdonald1995",),
    "Macdonald positivity": ("Haiman2001",),
    "q-Pochhammer symbol": ("GasperRahman2004",),
    "q-analogue": ("GasperRahman2004",),
    "Gaussian binomial coefficient": ("Andrews1976",),
    "q-binomial theorem": ("GasperRahman2004", "Andrews1976"),
    "basic hypergeometric series": ("GasperRahman2004",),
    "Jacobi triple product": ("Andrews1976", "GasperRahman2004"),
    "Euler's pentagonal number theorem": ("Andrews1976",),
    "Rogers–Ramanujan identities": ("Rogers1894", "Andrews1976"),
    "Andrews–Gordon identities": ("Andrews1984",),
    "Bailey pair": ("Bailey1948",),
    "Bailey's lemma": ("Bailey1948", "Andrews1984"),
    "Durfee square": ("Andrews1976",),
    "Dyson's rank": ("Dyson1944",),
    "partition crank": ("AndrewsGarvan1988",),
    "Ramanujan's congruences": ("Ono2004", "Andrews1976"),
    "Euler's partition theorem": ("Andrews1976",),
    "mock theta function": ("Zwegers2002",),
    "Dedekind eta function": ("Ono2004", "Apostol1976"),
    "Ramanujan tau function": ("Serre1973", "Ono2004"),
    "Hardy–Ramanujan asymptotic formula": ("HardyRamanujan1918", "Andrews1976"),
    "Kazhdan–Lusztig polynomial": ("KazhdanLusztig1979",),
    "crystal basis": ("Kashiwara1991", "BumpSchilling2017"),
    "quantum group": ("Kassel1995",),
    "Specht module": ("Sagan2001",),
    "Gamma function": ("AndrewsAskeyRoy1999",),
    "saddle point method": ("FlajoletSedgewick2009",),
    "Mellin transform": ("FlajoletSedgewick2009",),
}
