// Package lexicon is the English lexical data of tool search: the stemmer
// (Snowball English), the stop words, and a table of related words derived
// from WordNet 3.0 (synonyms, hypernyms, derivationally related and irregular
// forms, and the words of definitions, of each word's senses common in
// WordNet's tagged corpus), with which registry.Search expands a query.
//
// The table, wordnet.bin, is generated from Debian's wordnet-base by
// scripts/lexicon-table.sh (Build) and committed, so that nothing is
// downloaded or installed to build or use it; TestTableIsBuiltFromWordNet
// checks that it is what Build derives. It is embedded read-only: looking
// words up allocates nothing and costs a loaded registry no heap. WordNet's
// licence, which allows redistribution with its notice, is WORDNET-LICENSE
// beside this file.
package lexicon
