package contract

import (
	"errors"
	"strings"

	"github.com/loomkit/loom/schema"
)

// ErrIncomplete is returned by Splitter.Result before the decision block is
// complete.
var ErrIncomplete = errors.New("contract: decision not complete yet")

// Splitter separates a streamed answer into the decision and the free text
// for the user. Feed it the chunks as they arrive with Write. The decision
// is
//
//   - a tag block <TAG>{…}</TAG> anywhere in the answer (WithTag, default
//     DECISION), or
//   - a ```json fence or a bare JSON object that opens the answer.
//
// It is decoded as soon as its end arrives; the text outside it is passed
// through as it arrives, except for the few bytes that might be the start
// of the opening tag, which are held back until they are known not to be.
// Whitespace right after the block is dropped. When the answer has no
// decision block, Close decodes the whole answer as Decode would (the text
// has then been passed through already).
//
// A Splitter is for one answer and one goroutine.
type Splitter[T any] struct {
	o       *options
	schema  *schema.Schema
	state   int
	raw     strings.Builder
	hold    string
	block   strings.Builder
	depth   int
	inStr   bool
	esc     bool
	done    bool
	trimmed bool // leading whitespace after the block has been dropped
	val     T
	err     error
}

const (
	stLead   = iota // only whitespace so far
	stText          // passing text through, looking for the open tag
	stTag           // inside <TAG>, looking for </TAG>
	stFence         // inside ```json, looking for ```
	stObject        // inside a bare object that opened the answer
	stAfter         // decision decoded; passing text through
)

// NewSplitter returns a Splitter that decodes the decision into T.
func NewSplitter[T any](opts ...Option) *Splitter[T] {
	s := &Splitter[T]{o: buildOptions(opts)}
	s.schema, s.err = schema.For[T]()
	return s
}

// Write feeds the next chunk. It returns ready = true exactly once, from
// the call in which the decision became available (see Result), and the
// text to pass through to the user now.
func (s *Splitter[T]) Write(chunk string) (ready bool, text string) {
	s.raw.WriteString(chunk)
	if s.state == stAfter {
		return false, s.after(chunk)
	}
	var out strings.Builder
	data := s.hold + chunk
	s.hold = ""
	wasDone := s.done
	for data != "" {
		switch s.state {
		case stLead:
			t := strings.TrimLeft(data, " \t\r\n")
			if t == "" {
				s.hold = data
				data = ""
				continue
			}
			switch {
			case t[0] == '{':
				s.state = stObject
				data = t
				continue
			case strings.HasPrefix("```", t):
				s.hold = data // "`" or "``": wait for more
				data = ""
				continue
			case strings.HasPrefix(t, "```"):
				nl := strings.IndexByte(t, '\n')
				if nl < 0 && len(t) < 64 {
					s.hold = data // wait for the end of the fence line
					data = ""
					continue
				}
				if nl >= 0 {
					switch strings.ToLower(strings.TrimSpace(t[3:nl])) {
					case "json", "jsonc", "json5", "":
						s.state = stFence
						data = t[nl+1:]
						continue
					}
				}
			}
			s.state = stText
		case stText:
			if s.o.tag == "" {
				out.WriteString(data)
				data = ""
				continue
			}
			open := "<" + s.o.tag + ">"
			if i := indexFold(data, open, 0); i >= 0 {
				out.WriteString(data[:i])
				data = data[i+len(open):]
				s.state = stTag
				continue
			}
			k := partialSuffix(data, open)
			out.WriteString(data[:len(data)-k])
			s.hold = data[len(data)-k:]
			data = ""
		case stTag, stFence:
			marker := "```"
			if s.state == stTag {
				marker = "</" + s.o.tag + ">"
			}
			prev := s.block.Len()
			s.block.WriteString(data)
			data = ""
			b := s.block.String()
			from := max(0, prev-len(marker)+1)
			var j int
			if s.state == stTag {
				j = indexFold(b, marker, from)
			} else if j = strings.Index(b[from:], marker); j >= 0 {
				j += from
			}
			if j >= 0 {
				s.finish(b[:j])
				data = b[j+len(marker):]
			}
		case stObject:
			end := s.scanObject(data)
			if end < 0 {
				s.block.WriteString(data)
				data = ""
				continue
			}
			s.block.WriteString(data[:end])
			s.finish(s.block.String())
			data = data[end:]
		case stAfter:
			out.WriteString(s.after(data))
			data = ""
		}
	}
	return s.done && !wasDone, out.String()
}

// scanObject continues the brace state machine over data and returns the
// offset just past the object's closing brace, or -1.
func (s *Splitter[T]) scanObject(data string) int {
	for i := 0; i < len(data); i++ {
		c := data[i]
		if s.inStr {
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.inStr = false
			}
			continue
		}
		switch c {
		case '"':
			s.inStr = true
		case '{', '[':
			s.depth++
		case '}', ']':
			s.depth--
			if s.depth <= 0 {
				return i + 1
			}
		}
	}
	return -1
}

func (s *Splitter[T]) finish(content string) {
	s.done = true
	s.state = stAfter
	s.block.Reset()
	if s.schema == nil { // the schema error is already in s.err
		return
	}
	var v T
	o := *s.o
	o.tag = "" // the block's contents are the whole answer now
	s.err = decodeInto(content, s.schema, &o, &v)
	s.val = v
}

func (s *Splitter[T]) after(data string) string {
	if s.trimmed {
		return data
	}
	t := strings.TrimLeft(data, " \t\r\n")
	if t != "" {
		s.trimmed = true
	}
	return t
}

// partialSuffix returns the length of the longest proper suffix of data
// that is a case-insensitive prefix of marker.
func partialSuffix(data, marker string) int {
	for k := min(len(marker)-1, len(data)); k > 0; k-- {
		if equalFoldASCII(data[len(data)-k:], marker[:k]) {
			return k
		}
	}
	return 0
}

// Ready reports whether the decision has been decoded (successfully or not).
func (s *Splitter[T]) Ready() bool { return s.done }

// Result returns the decoded decision, or the error that made it unusable
// (as Decode returns). Before the decision is ready it returns
// ErrIncomplete.
func (s *Splitter[T]) Result() (T, error) {
	if !s.done {
		var zero T
		if s.err != nil {
			return zero, s.err
		}
		return zero, ErrIncomplete
	}
	return s.val, s.err
}

// Raw returns the whole answer written so far, for a correction loop's
// record.
func (s *Splitter[T]) Raw() string { return s.raw.String() }

// Close ends the answer. It returns the text still held back and the
// result's error: an unterminated block is decoded as it stands, and an
// answer without a block is decoded whole.
func (s *Splitter[T]) Close() (text string, err error) {
	switch s.state {
	case stLead, stText:
		text, s.hold = s.hold, ""
		if !s.done {
			if s.schema != nil {
				s.finish(s.raw.String())
			}
			s.state = stAfter
		}
	case stTag, stFence, stObject:
		s.finish(s.block.String())
	}
	s.done = true
	_, err = s.Result()
	return text, err
}
