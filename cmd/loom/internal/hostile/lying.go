package hostile

import (
	"archive/zip"
	"bytes"
	"math/rand/v2"
)

// lyingItems are files whose name or declared type is not what they are,
// and files that are nothing at all.
func lyingItems(string) ([]Item, error) {
	var z bytes.Buffer
	zw := zip.NewWriter(&z)
	w, _ := zw.Create("readme.txt")
	w.Write([]byte("not a picture"))
	if err := zw.Close(); err != nil {
		return nil, err
	}
	random := make([]byte, 64<<10)
	r := rand.NewChaCha8([32]byte{'l', 'o', 'o', 'm'})
	r.Read(random)
	tooLarge := make([]byte, 11<<20)
	copy(tooLarge, "\x89PNG\r\n\x1a\n")
	return []Item{
		{Name: "zip-named-png", Filename: "photo.png", ContentType: "image/png", Data: z.Bytes()},
		{Name: "jrxml-declared-png", Filename: "form.png", ContentType: "image/png", Data: []byte(template{}.String())},
		{Name: "png-declared-pdf", Filename: "form.pdf", ContentType: "application/pdf", Data: boxesPNG()},
		{Name: "empty-file", Filename: "empty.xlsx", ContentType: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", Data: []byte{}},
		{Name: "random-bytes", Filename: "random.jrxml", ContentType: "application/xml", Data: random},
		{Name: "too-large", Filename: "big.png", ContentType: "image/png", Data: tooLarge},
	}, nil
}
