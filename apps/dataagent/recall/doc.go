// Package recall finds what a data analyst needs to answer a question:
// evidence (business terms, documents, question → SQL examples) and the
// tables of the data source.
//
// A Retriever ranks documents by BM25 over their words (Loom's shared
// tokenizer: English words, Chinese characters and their bigrams) and,
// given an llm.Embedder, by the cosine of their embeddings, the rankings of
// every query fused by reciprocal rank (RRFK = 60). Identifiers in the
// texts are split into words, so orderItems, order_items and "order items"
// are the same words, and English plurals meet their singulars.
//
// A Schema indexes a data source's tables: table and column names,
// comments, the semantic model's business names, synonyms and enum
// meanings (Meaning), and a few sample values of text columns. Recall
// takes the canonical question and its rewordings (with the names' words
// that a question's word is another form of added: weigh → weight,
// located → location), keeps the K best
// tables, brings in the tables needed to join them along declared foreign
// keys and logical keys (a column named like another table's key, or
// customer_id for customers), and packs their description for a model to
// a token budget (tiktoken's cl100k_base): tables that do not fit whole
// are described by their matched and key columns only.
//
// Nothing here needs a model; embeddings only add a second ranking.
package recall
