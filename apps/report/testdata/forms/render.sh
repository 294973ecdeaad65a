#!/bin/sh
# Draws each form's HTML page with headless Chromium: a picture at 1x and
# at 2x, a PDF with a text layer, and a PDF of a picture only (no text).
# Needs chromium and poppler-utils. Run from this folder.
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chrome() { chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --no-pdf-header-footer "$@" 2>/dev/null; }
for html in *.html; do
	name=${html%.html}
	chrome --window-size=800,720 --force-device-scale-factor=1 --screenshot="$PWD/$name.1x.png" "file://$PWD/$html"
	chrome --window-size=800,720 --force-device-scale-factor=2 --screenshot="$PWD/$name.2x.png" "file://$PWD/$html"
	chrome --print-to-pdf="$PWD/$name.text.pdf" "file://$PWD/$html"
	pdftoppm -r 110 -png -singlefile "$name.text.pdf" "$tmp/$name"
	printf '<!DOCTYPE html><html><head><style>@page{size:A4;margin:0}body{margin:0}img{width:210mm;height:297mm;display:block}</style></head><body><img src="%s"></body></html>' "$tmp/$name.png" >"$tmp/$name.html"
	chrome --allow-file-access-from-files --print-to-pdf="$PWD/$name.scan.pdf" "file://$tmp/$name.html"
done
