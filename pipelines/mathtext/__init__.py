"""The rules of mathematical text that several stages apply alike: a concept's names and
their normal form, the phrases that name a concept, masking a name out of a text,
cross-references, where a statement sits among its paper's passages, what a passage is
shown as ("Lemma (snake lemma)") and the text evaluate and search read for it (headed so).
Imports only the kernel (:mod:`pipelines.common`)."""
