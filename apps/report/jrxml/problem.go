package jrxml

import "fmt"

// Severity says whether a Problem makes a template unusable.
type Severity string

const (
	// Error is a problem JasperReports refuses the template for.
	Error Severity = "error"
	// Warning is a problem that is likely a mistake but compiles.
	Warning Severity = "warning"
)

// Problem is one thing wrong with a template, where it is and what to do
// about it.
type Problem struct {
	// Element is the local name of the element the problem is about.
	Element string `json:"element,omitempty"`
	// Line and Column are where that element starts, from 1 (Column 0
	// when only the line is known).
	Line   int `json:"line"`
	Column int `json:"column,omitempty"`
	// Message says what is wrong; Hint what to do about it.
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
	// Severity is Error or Warning.
	Severity Severity `json:"severity"`
	// Check names the check that found it: syntax, reference, query,
	// page, bounds, band, required, order, value, namespace, external
	// (a declaration, XInclude or schema location that would read
	// another file), limit (past a size Loom reads) or xsd.
	Check string `json:"check"`
}

// Error formats the problem as line:column: <element> message (hint).
func (p *Problem) Error() string { return p.Where() + ": " + p.Describe() }

// Where is line:column, or the line alone when the column is unknown.
func (p *Problem) Where() string {
	if p.Column > 0 {
		return fmt.Sprintf("%d:%d", p.Line, p.Column)
	}
	return fmt.Sprint(p.Line)
}

// Describe is <element> message (hint).
func (p *Problem) Describe() string {
	s := p.Message
	if p.Element != "" {
		s = "<" + p.Element + "> " + s
	}
	if p.Hint != "" {
		s += " (" + p.Hint + ")"
	}
	return s
}
