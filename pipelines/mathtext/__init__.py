"""The rules of mathematical text that several stages apply alike: a concept's names and
their normal form, the phrases that name a concept, masking a name out of a text,
cross-references, and where a statement sits among its paper's passages. Imports only the
kernel (:mod:`pipelines.common`)."""
