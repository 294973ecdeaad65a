package hostile

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
)

// pngChunk appends a PNG chunk.
func pngChunk(b *bytes.Buffer, kind string, data []byte) {
	binary.Write(b, binary.BigEndian, uint32(len(data)))
	start := b.Len()
	b.WriteString(kind)
	b.Write(data)
	binary.Write(b, binary.BigEndian, crc32.ChecksumIEEE(b.Bytes()[start:]))
}

// pngFile is a PNG of width × height at depth bits with color type
// ctype, whose image data are rows zero bytes compressed (the whole
// image when rows is height: row bytes are computed from the header).
func pngFile(width, height uint32, depth, ctype byte, rows int) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := binary.BigEndian.AppendUint32(nil, width)
	ihdr = binary.BigEndian.AppendUint32(ihdr, height)
	ihdr = append(ihdr, depth, ctype, 0, 0, 0)
	pngChunk(&b, "IHDR", ihdr)
	channels := map[byte]int{0: 1, 2: 3, 4: 2, 6: 4}[ctype]
	if channels == 0 {
		return nil, errors.New("hostile: unknown PNG color type")
	}
	rowBytes := 1 + int(width)*channels*int(depth)/8
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	zero := make([]byte, 1<<20)
	for left := rows * rowBytes; left > 0; left -= len(zero) {
		if _, err := zw.Write(zero[:min(left, len(zero))]); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	pngChunk(&b, "IDAT", z.Bytes())
	pngChunk(&b, "IEND", nil)
	return b.Bytes(), nil
}

// boxesPNG is a picture of an empty form: a box of two rows and two
// columns, with no text.
func boxesPNG() []byte {
	img := image.NewGray(image.Rect(0, 0, 600, 300))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	for x := 50; x < 550; x++ {
		for _, y := range []int{50, 150, 250} {
			img.SetGray(x, y, color.Gray{})
		}
	}
	for y := 50; y <= 250; y++ {
		for _, x := range []int{50, 300, 550} {
			img.SetGray(x, y, color.Gray{})
		}
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return b.Bytes()
}

// patched encodes a small image with enc and writes big-endian or
// little-endian 16-bit sizes at the offsets found by at.
func patched(enc func(io.Writer, image.Image) error, at func([]byte) []int, order binary.ByteOrder, size uint16) ([]byte, error) {
	var b bytes.Buffer
	img := image.NewPaletted(image.Rect(0, 0, 16, 16), []color.Color{color.White, color.Black})
	if err := enc(&b, img); err != nil {
		return nil, err
	}
	data := b.Bytes()
	offs := at(data)
	if len(offs) == 0 {
		return nil, errors.New("hostile: no size field to patch")
	}
	for _, o := range offs {
		order.PutUint16(data[o:], size)
	}
	return data, nil
}

// bmpHeader is a 24-bit BMP header declaring width × height, with a few
// bytes of pixels.
func bmpHeader(width, height int32) []byte {
	b := []byte("BM")
	b = binary.LittleEndian.AppendUint32(b, 54+64)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, 54)
	b = binary.LittleEndian.AppendUint32(b, 40)
	b = binary.LittleEndian.AppendUint32(b, uint32(width))
	b = binary.LittleEndian.AppendUint32(b, uint32(height))
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = binary.LittleEndian.AppendUint16(b, 24)
	b = append(b, make([]byte, 24)...)
	return append(b, make([]byte, 64)...)
}

// tiffHeader is an uncompressed 8-bit grey TIFF declaring width ×
// height in one strip, with a few bytes of pixels.
func tiffHeader(width, height uint32) []byte {
	type entry struct {
		tag, typ uint16
		value    uint32
	}
	const short, long = 3, 4
	entries := []entry{{256, long, width}, {257, long, height}, {258, short, 8}, {259, short, 1}, {262, short, 1},
		{273, long, 0}, {277, short, 1}, {278, long, height}, {279, long, 64}}
	ifdLen := 2 + 12*len(entries) + 4
	entries[5].value = uint32(8 + ifdLen)
	b := []byte("II*\x00")
	b = binary.LittleEndian.AppendUint32(b, 8)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(entries)))
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.typ)
		b = binary.LittleEndian.AppendUint32(b, 1)
		if e.typ == short {
			b = binary.LittleEndian.AppendUint16(b, uint16(e.value))
			b = binary.LittleEndian.AppendUint16(b, 0)
		} else {
			b = binary.LittleEndian.AppendUint32(b, e.value)
		}
	}
	b = binary.LittleEndian.AppendUint32(b, 0)
	return append(b, make([]byte, 64)...)
}

// imageItems are pictures whose headers declare far more than their
// bytes hold, and one just under the pixel limit at 8 bytes a pixel.
func imageItems(string) ([]Item, error) {
	var out []Item
	add := func(name, ext, ctype string, data []byte, err error) error {
		if err != nil {
			return err
		}
		out = append(out, Item{Name: name, Filename: name + "." + ext, ContentType: ctype, Data: data})
		return nil
	}
	out = append(out, Item{Name: "png-boxes-no-text", Filename: "form.png", ContentType: "image/png", Data: boxesPNG()})
	bomb, err := pngFile(30_000, 30_000, 8, 6, 16)
	if err := add("png-pixel-bomb", "png", "image/png", bomb, err); err != nil {
		return nil, err
	}
	row, err := pngFile(2_000_000_000, 1, 8, 6, 0)
	if err := add("png-one-long-row", "png", "image/png", row, err); err != nil {
		return nil, err
	}
	// 6,320 × 6,320 is 39.9 million pixels, 320 MB at 16-bit RGBA.
	deep, err := pngFile(6_320, 6_320, 16, 6, 6_320)
	if err := add("png-16bit-rgba", "png", "image/png", deep, err); err != nil {
		return nil, err
	}
	sof := func(data []byte) []int { // height and width of the baseline frame
		for i := 2; i+9 < len(data) && data[i] == 0xff; i += 2 + int(binary.BigEndian.Uint16(data[i+2:])) {
			if data[i+1] == 0xc0 {
				return []int{i + 5, i + 7}
			}
		}
		return nil
	}
	jpg, err := patched(func(w io.Writer, m image.Image) error { return jpeg.Encode(w, m, nil) }, sof, binary.BigEndian, 65_500)
	if err := add("jpeg-huge-dimensions", "jpg", "image/jpeg", jpg, err); err != nil {
		return nil, err
	}
	screenAndFrame := func(data []byte) []int { // logical screen, and the image descriptor's width and height
		i := bytes.IndexByte(data[13:], 0x2c)
		if i < 0 {
			return nil
		}
		i += 13
		return []int{6, 8, i + 5, i + 7}
	}
	gf, err := patched(func(w io.Writer, m image.Image) error { return gif.Encode(w, m, nil) }, screenAndFrame, binary.LittleEndian, 65_535)
	if err := add("gif-huge-dimensions", "gif", "image/gif", gf, err); err != nil {
		return nil, err
	}
	add("bmp-huge-dimensions", "bmp", "image/bmp", bmpHeader(50_000, 50_000), nil)
	add("tiff-huge-dimensions", "tif", "image/tiff", tiffHeader(100_000, 100_000), nil)
	return out, nil
}
