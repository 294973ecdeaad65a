package render

import (
	"fmt"
	"strconv"
	"strings"
)

// Scope is what an expression can refer to.
type Scope struct {
	Fields, Params, Vars map[string]any
}

// errUnsupported marks an expression outside the subset Eval reads.
var errUnsupported = fmt.Errorf("unsupported expression")

// Eval evaluates the subset of JasperReports expressions the renderer
// reads: $F{}, $P{}, $V{}, string literals, numbers, + (concatenation,
// or addition of numbers), == and != comparisons, parentheses and a
// simple cond ? a : b. Anything else is errUnsupported.
func Eval(expr string, s Scope) (any, error) {
	p := &exprParser{src: strings.TrimSpace(expr), s: s}
	v, err := p.ternary()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.src) {
		return nil, errUnsupported
	}
	return v, nil
}

type exprParser struct {
	src   string
	i     int
	s     Scope
	depth int // of nested parentheses and conditions
}

// maxExprDepth bounds how deep parentheses and conditions nest.
const maxExprDepth = 50

func (p *exprParser) space() {
	for p.i < len(p.src) && strings.ContainsRune(" \t\r\n", rune(p.src[p.i])) {
		p.i++
	}
}

func (p *exprParser) eat(tok string) bool {
	p.space()
	if strings.HasPrefix(p.src[p.i:], tok) {
		p.i += len(tok)
		return true
	}
	return false
}

func (p *exprParser) ternary() (any, error) {
	if p.depth++; p.depth > maxExprDepth {
		return nil, errUnsupported
	}
	defer func() { p.depth-- }()
	c, err := p.compare()
	if err != nil {
		return nil, err
	}
	if !p.eat("?") {
		return c, nil
	}
	a, err := p.ternary()
	if err != nil {
		return nil, err
	}
	if !p.eat(":") {
		return nil, errUnsupported
	}
	b, err := p.ternary()
	if err != nil {
		return nil, err
	}
	if truthy(c) {
		return a, nil
	}
	return b, nil
}

func truthy(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case nil:
		return false
	}
	return true
}

func (p *exprParser) compare() (any, error) {
	a, err := p.sum()
	if err != nil {
		return nil, err
	}
	for _, op := range []string{"==", "!="} {
		if p.eat(op) {
			b, err := p.sum()
			if err != nil {
				return nil, err
			}
			eq := Format(a) == Format(b) && (a == nil) == (b == nil)
			return eq == (op == "=="), nil
		}
	}
	return a, nil
}

func (p *exprParser) sum() (any, error) {
	a, err := p.term()
	if err != nil {
		return nil, err
	}
	var text *strings.Builder // once a string is met, the sum is text
	for p.eat("+") {
		b, err := p.term()
		if err != nil {
			return nil, err
		}
		if text != nil {
			text.WriteString(Format(b))
			continue
		}
		x, xok := number(a)
		y, yok := number(b)
		if xok && yok {
			a = x + y
		} else {
			text = &strings.Builder{}
			text.WriteString(Format(a))
			text.WriteString(Format(b))
		}
	}
	if text != nil {
		return text.String(), nil
	}
	return a, nil
}

func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	}
	return 0, false
}

func (p *exprParser) term() (any, error) {
	p.space()
	if p.i >= len(p.src) {
		return nil, errUnsupported
	}
	rest := p.src[p.i:]
	switch {
	case p.eat("("):
		v, err := p.ternary()
		if err != nil || !p.eat(")") {
			return nil, errUnsupported
		}
		return v, nil
	case rest[0] == '"':
		var b strings.Builder
		for j := 1; j < len(rest); j++ {
			switch rest[j] {
			case '\\':
				if j+1 < len(rest) {
					j++
					switch rest[j] {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					case 'u':
						if j+4 < len(rest) {
							if r, err := strconv.ParseUint(rest[j+1:j+5], 16, 32); err == nil {
								b.WriteRune(rune(r))
								j += 4
								continue
							}
						}
						b.WriteByte('u')
					default:
						b.WriteByte(rest[j])
					}
				}
			case '"':
				p.i += j + 1
				return b.String(), nil
			default:
				b.WriteByte(rest[j])
			}
		}
		return nil, errUnsupported
	case len(rest) > 3 && rest[0] == '$' && strings.ContainsRune("FPV", rune(rest[1])) && rest[2] == '{':
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			return nil, errUnsupported
		}
		name := rest[3:end]
		p.i += end + 1
		m := map[byte]map[string]any{'F': p.s.Fields, 'P': p.s.Params, 'V': p.s.Vars}[rest[1]]
		return m[name], nil
	case rest[0] >= '0' && rest[0] <= '9' || rest[0] == '-':
		j := 1
		for j < len(rest) && (rest[j] >= '0' && rest[j] <= '9' || rest[j] == '.') {
			j++
		}
		f, err := strconv.ParseFloat(rest[:j], 64)
		if err != nil {
			return nil, errUnsupported
		}
		p.i += j
		return f, nil
	case strings.HasPrefix(rest, "true"):
		p.i += 4
		return true, nil
	case strings.HasPrefix(rest, "false"):
		p.i += 5
		return false, nil
	case strings.HasPrefix(rest, "null"):
		p.i += 4
		return nil, nil
	}
	return nil, errUnsupported
}

// Format is how a value prints: numbers without trailing zeros, nil as
// empty.
func Format(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprint(v)
}
