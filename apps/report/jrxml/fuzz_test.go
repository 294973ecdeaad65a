package jrxml_test

import (
	"bytes"
	"testing"

	"github.com/loomkit/loom/apps/report/jrxml"
	"github.com/loomkit/loom/apps/report/render"
)

// FuzzParse: any input is refused with a Problem or parsed; a parsed one
// reassembles byte for byte and checks without a panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte(Base))
	f.Add([]byte("</a>"))
	f.Add([]byte("<a><b></a>"))
	f.Add(bigTemplate(3))
	f.Add([]byte(`<jasperReport><detail><band height="x"><frame><reportElement x="a" y="-5" width="1e9" height="0"/><break><reportElement x="0" y="0" width="0" height="0"/></break></frame></band></detail></jasperReport>`))
	f.Fuzz(func(t *testing.T, src []byte) {
		doc, err := jrxml.Parse(src)
		if err != nil {
			if _, ok := err.(*jrxml.Problem); !ok {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		if !bytes.Equal(doc.Decompose().Reassemble(), src) {
			t.Fatal("not reassembled byte for byte")
		}
		doc.Check()
		render.Layout(doc, render.SampleRows(doc, 3), nil)
	})
}
