"""The retrieval engine that evaluate, promote and search share: model folders and their
identities, sentence embeddings, the embedding store (LanceDB, checksummed rows, readers'
leases) and lexical ranking (BM25) with its fusion. Imports the kernel and
:mod:`pipelines.mathtext`."""
