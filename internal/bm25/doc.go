// Package bm25 is the lexical retrieval every Loom agent shares: a
// tokenizer for mixed Chinese and English text (words, each Han rune on
// its own, and character n-grams, so Chinese needs no segmenter), hashed
// into a fixed term space, and an Okapi BM25 index over documents of those
// terms with scoring and top-k search.
//
// Texts are first folded with Normalize; an Analyzer turns them into
// hashed terms; New indexes one slice of terms per document; Search ranks
// the documents for a query's terms. The intent engine's retrieval stage
// and the data analyst's evidence and schema recall use it, so a question
// is tokenised the same way everywhere.
package bm25
