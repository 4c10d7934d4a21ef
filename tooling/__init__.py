"""The developer's tooling, no part of the product: the import analyser
(:mod:`tooling.imports`) that derives each DVC stage's code dependencies and that the
layering test reads the code with."""
