"""LaTeX to text: the source scanner, macro expansion, the converter and its vocabulary."""
