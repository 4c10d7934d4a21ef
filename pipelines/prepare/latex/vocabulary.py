"""What the converter knows of LaTeX: the commands and environments it drops, keeps or
rewrites, and the symbols and accents it turns into text."""

from __future__ import annotations

from pipelines.mathtext.passages import CITE_PLACEHOLDER, REF_PLACEHOLDER  # noqa: F401 - re-export
from pipelines.prepare.latex.source import name_set

SECTION_COMMANDS = frozenset({"section", "chapter", "part"})
#: A statement's one-line summary by its authors (the Stacks Project's): kept out of the
#: text, as the statement's ``slogan``.
SLOGAN_ENVIRONMENTS = frozenset({"slogan"})
HEADING_COMMANDS = frozenset({"subsection", "subsubsection", "paragraph", "subparagraph"})
REF_COMMANDS = name_set("ref eqref autoref cref Cref pageref nameref vref Vref labelcref cpageref")
# Commands whose first arguments are layout (a URL, a colour, a size) and whose last is
# text: name → number of leading arguments dropped.
LAYOUT_ARGUMENTS = {
    "href": 1, "textcolor": 1, "colorbox": 1, "scalebox": 1, "resizebox": 2, "raisebox": 1,
    "fcolorbox": 2, "parbox": 1, "rotatebox": 1, "hyperref": 0,
}  # fmt: skip
# Lean blueprint markup: links to the Lean code (\lean, \leanok, \mathlibok), the
# dependency graph (\uses, \proves), the project's planning (\notready, \discussion: an
# issue number) and, in the analytic number theory exponent database (teorth/expdb), to
# its Python code (\literature \code{name}, \python{file}, ...). None of it is
# mathematics: dropped with its arguments (name → mandatory arguments), also where the
# paper defines it (macros.py leaves these to the converter: print.tex's no-op
# definitions differ from project to project and web.tex has none).
BLUEPRINT_MARKUP: dict[str, int] = {
    **dict.fromkeys(name_set("uses lean proves discussion python code"), 1),
    **dict.fromkeys(
        name_set("leanok mathlibok notready literature derived nopython unintegrated"), 0
    ),
}
# Commands dropped with their arguments: name → number of mandatory arguments.
DROP_COMMANDS: dict[str, int] = {
    **BLUEPRINT_MARKUP,
    **dict.fromkeys(
        name_set(
            "label vspace hspace bibliographystyle bibliography pagestyle thispagestyle "
            "pagenumbering index nocite usepackage RequirePackage documentclass input include "
            "includegraphics includeonly theoremstyle title author date address email thanks "
            "urladdr curraddr dedicatory affil affiliation institute color hypersetup "
            "graphicspath enlargethispage linespread newcounter phantom hphantom vphantom "
            "bibitem markright footnotemark settowidth translator contrib "
            "orcid keyword MSC PACS received accepted communicated"
        ),
        1,
    ),
    **dict.fromkeys(
        name_set("setlength addtolength setcounter addtocounter numberwithin markboth rule"),
        2,
    ),
    **dict.fromkeys(name_set("addcontentsline crefname Crefname"), 3),
    **dict.fromkeys(
        name_set(
            "maketitle tableofcontents listoffigures listoftables newpage clearpage "
            "cleardoublepage pagebreak nopagebreak noindent indent centering raggedright "
            "raggedleft smallskip medskip bigskip vfill hfill hfil vfil qed qedhere "
            "makeatletter makeatother appendix frontmatter mainmatter backmatter "
            "allowdisplaybreaks normalsize small footnotesize scriptsize tiny large Large "
            "LARGE huge Huge bf it rm sf tt sc sl em normalfont bfseries itshape mdseries "
            "upshape scshape slshape rmfamily sffamily ttfamily boldmath unboldmath "
            "hline toprule midrule bottomrule protect relax leavevmode null nobreak "
            "sloppy fussy displaystyle textstyle today"
        ),
        0,
    ),
}
SYMBOLS = {
    "ss": "ß", "o": "ø", "O": "Ø", "ae": "æ", "AE": "Æ", "oe": "œ", "OE": "Œ", "aa": "å",
    "AA": "Å", "l": "ł", "L": "Ł", "i": "ı", "j": "ȷ", "dots": "…", "ldots": "…",
    "textendash": "–", "textemdash": "—", "LaTeX": "LaTeX", "TeX": "TeX", "S": "§",
    "P": "¶", "copyright": "©", "dag": "†", "ddag": "‡", "textbackslash": "",
    "textasciitilde": "~", "textbar": "|", "textless": "<", "textgreater": ">",
    "slash": "/", "quad": " ", "qquad": " ", "par": "\n\n", "newline": " ",
    "linebreak": " ", "break": " ", "space": " ", "enspace": " ", "thinspace": " ",
    "textquotedblleft": '"', "textquotedblright": '"', "textquoteleft": "'",
    "textquoteright": "'", "etal": "et al.", "ie": "i.e.", "eg": "e.g.",
}  # fmt: skip
ACCENTS = {
    "'": "\u0301", "`": "\u0300", "^": "\u0302", '"': "\u0308", "~": "\u0303",
    "=": "\u0304", ".": "\u0307", "c": "\u0327", "v": "\u030c", "u": "\u0306",
    "H": "\u030b", "r": "\u030a", "k": "\u0328", "d": "\u0323", "b": "\u0331",
}  # fmt: skip
TEXT_SYMBOLS = {
    "%": "%", "&": "&", "#": "#", "_": "_", "{": "{", "}": "}", "$": "\\$", " ": " ",
    "\n": " ", "\t": " ", ",": " ", ";": " ", ":": " ", "!": "", "/": "", "-": "", "@": "",
    "\\": " ", "|": "|", "<": "", ">": "",
}  # fmt: skip

# Environments dropped whole; those naming figures or tables keep their captions.
SKIP_ENVIRONMENTS = name_set(
    "figure table tikzpicture tikzcd thebibliography comment verbatim lstlisting minted "
    "picture pspicture filecontents xy wrapfigure wraptable algorithm algorithmic "
    "sidewaysfigure sidewaystable subfigure subtable SCfigure longtable forest"
)
# Environments whose mandatory arguments are layout, not text.
ENVIRONMENT_ARGS = {
    "tabular": 1, "tabular*": 2, "tabularx": 2, "tabulary": 2, "minipage": 1,
    "multicols": 1, "list": 2, "adjustbox": 1, "wrapfigure": 2, "array": 1,
}  # fmt: skip
