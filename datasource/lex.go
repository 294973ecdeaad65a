package datasource

import (
	"fmt"
	"strings"
)

// tokKind is the kind of a lexical token.
type tokKind uint8

const (
	tokWord   tokKind = iota // a keyword or bare identifier
	tokQuoted                // a quoted identifier ("x", `x`, [x])
	tokString                // a string, blob or bit literal
	tokNumber
	tokParam // $1, ?, :name, @name
	tokPunct // ; ( ) , . and operators
)

// token is one token of a statement. Text is the source text, except for
// words, which are upper-cased, and quoted identifiers, which are unquoted
// and lower-cased (names are compared case-insensitively).
type token struct {
	kind       tokKind
	text       string
	start, end int // byte offsets in the statement
}

func (t token) is(kind tokKind, text string) bool { return t.kind == kind && t.text == text }

// lex splits a statement into tokens by the lexical rules of the dialect:
// its strings (with their escapes), quoted identifiers, comments and
// dollar quoting. Whatever is inside a string or comment is never a
// keyword, so SELECT 'DROP TABLE x' is one SELECT of one string. It fails
// on an unterminated string, identifier or comment, and on a comment the
// server would execute (MySQL's /*! … */).
func lex(d Dialect, s string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(s) {
		c := s[i]
		start := i
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case c == '-' && i+1 < len(s) && s[i+1] == '-' && (d != MySQL || i+2 >= len(s) || isSpace(s[i+2])):
			// MySQL starts a comment at "-- " only: 1--1 is arithmetic.
			for i < len(s) && s[i] != '\n' {
				i++
			}
			continue
		case c == '#' && d == MySQL:
			for i < len(s) && s[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			if d == MySQL && i+2 < len(s) && (s[i+2] == '!' || (s[i+2] == 'M' && i+3 < len(s) && s[i+3] == '!')) {
				return nil, refuse("comments that MySQL executes (/*! … */) are not allowed")
			}
			end, ok := blockComment(d, s, i)
			if !ok {
				return nil, refuse("the statement has an unterminated comment")
			}
			i = end
			continue
		case c == '\'':
			end, err := quoted(s, i, '\'', d == MySQL)
			if err != nil {
				return nil, err
			}
			i = end
			toks = append(toks, token{tokString, s[start:i], start, i})
			continue
		case c == '"':
			end, err := quoted(s, i, '"', d == MySQL)
			if err != nil {
				return nil, err
			}
			i = end
			// In MySQL "x" is a string (unless ANSI_QUOTES); it is kept as a
			// quoted name too, so that "sleep"(1) is still seen as a call.
			toks = append(toks, token{tokQuoted, unquote(s[start:i]), start, i})
			continue
		case c == '`' && d != Postgres:
			end, err := quoted(s, i, '`', false)
			if err != nil {
				return nil, err
			}
			i = end
			toks = append(toks, token{tokQuoted, unquote(s[start:i]), start, i})
			continue
		case c == '[' && d == SQLite:
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return nil, refuse("the statement has an unterminated [identifier]")
			}
			i += end + 1
			toks = append(toks, token{tokQuoted, strings.ToLower(s[start+1 : i-1]), start, i})
			continue
		case c == '$' && d == Postgres:
			if end, ok, err := dollarQuoted(s, i); err != nil {
				return nil, err
			} else if ok {
				i = end
				toks = append(toks, token{tokString, s[start:i], start, i})
				continue
			}
			i++
			for i < len(s) && isDigit(s[i]) {
				i++
			}
			toks = append(toks, token{tokParam, s[start:i], start, i})
			continue
		case isDigit(c) || (c == '.' && i+1 < len(s) && isDigit(s[i+1])):
			for i < len(s) && (isDigit(s[i]) || s[i] == '.' || s[i] == '_' || isLetter(s[i])) {
				if (s[i] == 'e' || s[i] == 'E') && i+1 < len(s) && (s[i+1] == '+' || s[i+1] == '-') {
					i++
				}
				i++
			}
			toks = append(toks, token{tokNumber, s[start:i], start, i})
			continue
		case isLetter(c) || c >= 0x80:
			for i < len(s) && (isLetter(s[i]) || isDigit(s[i]) || s[i] == '$' || s[i] >= 0x80) {
				i++
			}
			word := s[start:i]
			// A prefixed string: E'…' (Postgres escapes), X'…', B'…', N'…',
			// U&'…', _utf8mb4'…'.
			if i < len(s) && s[i] == '\'' || (i+1 < len(s) && s[i] == '&' && s[i+1] == '\'' && strings.EqualFold(word, "u")) {
				if s[i] == '&' {
					i++
				}
				var end int
				var err error
				if d == Postgres && strings.EqualFold(word, "e") {
					end, err = eString(s, i)
				} else {
					end, err = quoted(s, i, '\'', d == MySQL)
				}
				if err != nil {
					return nil, err
				}
				i = end
				toks = append(toks, token{tokString, s[start:i], start, i})
				continue
			}
			toks = append(toks, token{tokWord, strings.ToUpper(word), start, i})
			continue
		case (c == '?' && d != Postgres) || ((c == ':' || c == '@') && i+1 < len(s) && (isLetter(s[i+1]) || s[i+1] == '@')):
			i++
			for i < len(s) && (isLetter(s[i]) || isDigit(s[i]) || s[i] == '@' || s[i] == '_' || s[i] == '.') {
				i++
			}
			toks = append(toks, token{tokParam, s[start:i], start, i})
			continue
		}
		// Punctuation and operators; := is one token (MySQL assignment).
		i++
		if c == ':' && i < len(s) && (s[i] == '=' || s[i] == ':') {
			i++
		}
		toks = append(toks, token{tokPunct, s[start:i], start, i})
	}
	return toks, nil
}

// quoted returns the end of the quoted text starting at s[i] == q. A
// doubled quote is an escaped quote; with backslash, so is \q.
func quoted(s string, i int, q byte, backslash bool) (int, error) {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			if backslash {
				if j+1 < len(s) && s[j+1] == q {
					// Under NO_BACKSLASH_ESCAPES MySQL ends the string here,
					// so the rest would be read differently: refuse.
					return 0, refuse(`a backslash before a quote (\') is ambiguous; write a quote in a string as ''`)
				}
				j++
			}
		case q:
			if j+1 < len(s) && s[j+1] == q {
				j++
				continue
			}
			return j + 1, nil
		}
	}
	if q == '\'' {
		return 0, refuse("the statement has an unterminated string")
	}
	return 0, refuse("the statement has an unterminated quoted name")
}

// eString returns the end of a Postgres E'…' string starting at s[i],
// where a backslash escapes the next character, quote included.
func eString(s string, i int) (int, error) {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '\'':
			if j+1 < len(s) && s[j+1] == '\'' {
				j++
				continue
			}
			return j + 1, nil
		}
	}
	return 0, refuse("the statement has an unterminated string")
}

// unquote strips the quotes of a quoted identifier, undoubles inner quotes
// and lower-cases it.
func unquote(s string) string {
	q := s[:1]
	return strings.ToLower(strings.ReplaceAll(s[1:len(s)-1], q+q, q))
}

// blockComment returns the end of the comment starting at s[i:i+2] ==
// "/*". Postgres nests comments; SQLite and MySQL do not.
func blockComment(d Dialect, s string, i int) (int, bool) {
	depth := 0
	for j := i; j+1 < len(s); j++ {
		switch {
		case s[j] == '/' && s[j+1] == '*' && (d == Postgres || depth == 0):
			depth++
			j++
		case s[j] == '*' && s[j+1] == '/':
			depth--
			j++
			if depth == 0 {
				return j + 1, true
			}
		}
	}
	return 0, false
}

// dollarQuoted returns the end of a Postgres dollar-quoted string starting
// at s[i] == '$', or ok false when s[i:] is not one ($1 is a parameter).
func dollarQuoted(s string, i int) (end int, ok bool, err error) {
	j := i + 1
	for j < len(s) && (isLetter(s[j]) || s[j] >= 0x80 || (j > i+1 && isDigit(s[j]))) {
		j++
	}
	if j >= len(s) || s[j] != '$' {
		return 0, false, nil
	}
	tag := s[i : j+1]
	k := strings.Index(s[j+1:], tag)
	if k < 0 {
		return 0, false, refuse("the statement has an unterminated %s string", tag)
	}
	return j + 1 + k + len(tag), true, nil
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c == '_' || (c|0x20) >= 'a' && (c|0x20) <= 'z' }

// describeToken names a token in a refusal.
func describeToken(t token) string {
	switch t.kind {
	case tokWord:
		return t.text
	case tokPunct:
		return fmt.Sprintf("%q", t.text)
	}
	return t.text
}
