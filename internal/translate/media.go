package translate

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strconv"
	"strings"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
)

// Bedrock's limits on images and documents (docs/BEDROCK.md K rule 1), checked here so that
// the client's 400 names the part rather than quoting Bedrock.
const (
	maxImages = 20
	// maxImageBytes is AWS's "3.75 MB" read as MiB (3.75 × 1024 × 1024): AWS does not say
	// which, and the larger reading refuses nothing Bedrock might take.
	maxImageBytes = 3_932_160
	// maxImageSide is the most pixels an image may have across and down.
	maxImageSide = 8000

	maxDocuments = 5
	// maxDocumentBytes is AWS's "4.5 MB" read as MiB, as for images.
	maxDocumentBytes = 4_718_592
	// maxDocumentName is the longest document name Bedrock takes.
	maxDocumentName = 200
)

// documentTypes maps the media types of file parts to Bedrock's document formats.
var documentTypes = map[string]string{
	"application/pdf":    "pdf",
	"text/csv":           "csv",
	"application/msword": "doc",
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
	"application/vnd.ms-excel": "xls",
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
	"text/html":     "html",
	"text/plain":    "txt",
	"text/markdown": "md",
}

// documentExtensions maps filename extensions (lower case) to Bedrock's document formats.
var documentExtensions = map[string]string{
	"pdf": "pdf", "csv": "csv", "doc": "doc", "docx": "docx", "xls": "xls", "xlsx": "xlsx",
	"html": "html", "htm": "html", "txt": "txt", "md": "md", "markdown": "md",
}

// media counts the images and documents of one request and names its documents. Not safe
// for concurrent use.
type media struct {
	images, documents int
	names             map[string]bool // document names handed out so far
}

// partPath names part j of message i as errors do.
func partPath(i, j int) string {
	return "messages[" + strconv.Itoa(i) + "].content[" + strconv.Itoa(j) + "]"
}

// image turns image_url part j of message i into an image block. Only data URLs are taken:
// the gateway fetches nothing on a client's behalf. The format comes from the bytes, never
// from the media type, which clients get wrong (image/jpg, a PNG sent as image/jpeg).
func (md *media) image(i, j int, p *chat.Part) (*bedrock.ImageBlock, error) {
	path := partPath(i, j)
	field := path + ".image_url.url"
	var url string
	if p.Image != nil {
		url = p.Image.URL
	}
	switch {
	case url == "":
		return nil, invalidf("%s is missing", field)
	case !isDataURL(url):
		return nil, unsupportedf("%s: remote image URLs are not fetched; send the image inline as a data URL (data:image/png;base64,...)", field)
	}
	mediaType, raw, err := decodeDataURL(field, url)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(mediaType, "image/") {
		return nil, invalidf("%s: media type %s is not an image type", field, clip.Quote(mediaType))
	}
	if md.images++; md.images > maxImages {
		return nil, invalidf("%s: more than %d images in the request; Bedrock takes at most %d", path, maxImages, maxImages)
	}
	if len(raw) > maxImageBytes {
		return nil, invalidf("%s: the image is %d bytes; Bedrock takes at most %d (3.75 MB)", field, len(raw), maxImageBytes)
	}
	format := imageFormat(raw)
	if format == "" {
		return nil, unsupportedf("%s: the image format is not png, jpeg, gif or webp", field)
	}
	if w, h, ok := imageSize(format, raw); ok && (w > maxImageSide || h > maxImageSide) {
		return nil, invalidf("%s: the image is %dx%d pixels; Bedrock takes at most %dx%d", field, w, h, maxImageSide, maxImageSide)
	}
	return &bedrock.ImageBlock{Format: format, Source: bedrock.ImageSource{Bytes: raw}}, nil
}

// imageFormat tells an image's format from its magic bytes; "" when it is none of
// Bedrock's four.
func imageFormat(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG")):
		return "png"
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return "jpeg"
	case bytes.HasPrefix(b, []byte("GIF8")):
		return "gif"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "webp"
	}
	return ""
}

// imageSize reads an image's width and height from its header; ok is false when the header
// cannot be read, and Bedrock then judges the image.
func imageSize(format string, b []byte) (w, h int, ok bool) {
	var decode func(*bytes.Reader) (image.Config, error)
	switch format {
	case "png":
		decode = func(r *bytes.Reader) (image.Config, error) { return png.DecodeConfig(r) }
	case "jpeg":
		decode = func(r *bytes.Reader) (image.Config, error) { return jpeg.DecodeConfig(r) }
	case "gif":
		decode = func(r *bytes.Reader) (image.Config, error) { return gif.DecodeConfig(r) }
	default:
		return webpSize(b)
	}
	cfg, err := decode(bytes.NewReader(b))
	return cfg.Width, cfg.Height, err == nil
}

// webpSize reads the canvas size of a WebP file from its first chunk (the standard library
// has no WebP decoder): VP8 (lossy) has 14-bit sizes after its start code, VP8L (lossless)
// 14-bit sizes less one after its signature byte, VP8X (extended) 24-bit sizes less one.
func webpSize(b []byte) (w, h int, ok bool) {
	if len(b) < 30 {
		return 0, 0, false
	}
	data := b[20:]
	switch string(b[12:16]) {
	case "VP8 ":
		if data[3] != 0x9d || data[4] != 0x01 || data[5] != 0x2a {
			return 0, 0, false
		}
		return int(binary.LittleEndian.Uint16(data[6:]) & 0x3fff), int(binary.LittleEndian.Uint16(data[8:]) & 0x3fff), true
	case "VP8L":
		if data[0] != 0x2f {
			return 0, 0, false
		}
		bits := binary.LittleEndian.Uint32(data[1:])
		return int(bits&0x3fff) + 1, int(bits>>14&0x3fff) + 1, true
	case "VP8X":
		return int(uint24(data[4:])) + 1, int(uint24(data[7:])) + 1, true
	}
	return 0, 0, false
}

func uint24(b []byte) uint32 { return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 }

// document turns file part j of message i into a document block (docs/BEDROCK.md K).
func (md *media) document(i, j int, p *chat.Part) (*bedrock.DocumentBlock, error) {
	path := partPath(i, j)
	f := p.File
	switch {
	case f == nil:
		return nil, invalidf("%s.file is missing", path)
	case f.Data == "" && f.FileID != "":
		return nil, unsupportedf("%s.file.file_id is not supported: the gateway stores no files; send the document in file.file_data", path)
	case f.Data == "":
		return nil, invalidf("%s.file.file_data is missing", path)
	}
	field := path + ".file.file_data"
	var mediaType string
	var raw []byte
	var err error
	if isDataURL(f.Data) {
		mediaType, raw, err = decodeDataURL(field, f.Data)
	} else {
		raw, err = decodeBase64(field, f.Data)
	}
	if err != nil {
		return nil, err
	}
	format, err := documentFormat(path, mediaType, f.Filename)
	if err != nil {
		return nil, err
	}
	if md.documents++; md.documents > maxDocuments {
		return nil, invalidf("%s: more than %d documents in the request; Bedrock takes at most %d", path, maxDocuments, maxDocuments)
	}
	if len(raw) > maxDocumentBytes {
		return nil, invalidf("%s: the document is %d bytes; Bedrock takes at most %d (4.5 MB)", field, len(raw), maxDocumentBytes)
	}
	return &bedrock.DocumentBlock{Format: format, Name: md.documentName(f.Filename, raw), Source: bedrock.DocumentSource{Bytes: raw}}, nil
}

// documentFormat is a document's Bedrock format: its media type's, else its filename
// extension's (clients send application/octet-stream too).
func documentFormat(path, mediaType, filename string) (string, error) {
	if format, ok := documentTypes[mediaType]; ok {
		return format, nil
	}
	ext := ""
	if k := strings.LastIndexByte(filename, '.'); k >= 0 {
		ext = strings.ToLower(filename[k+1:])
	}
	if format, ok := documentExtensions[ext]; ok {
		return format, nil
	}
	switch {
	case mediaType != "":
		return "", unsupportedf("%s.file.file_data: document type %s is not supported; send pdf, csv, doc, docx, xls, xlsx, html, txt or md", path, clip.Quote(mediaType))
	case filename == "":
		return "", invalidf("%s.file.filename is missing; file_data that is not a data URL needs a filename whose extension names the format", path)
	}
	return "", unsupportedf("%s.file.filename %s names no supported document format; send pdf, csv, doc, docx, xls, xlsx, html, txt or md", path, clip.Quote(filename))
}

// documentName is the name Bedrock gets for a document: the filename made of the characters
// Bedrock takes, else document-<the first 8 hex digits of the bytes' SHA-256>; a name handed
// out before in the request gets " (2)", " (3)" …, so a history sent again names its
// documents the same way.
func (md *media) documentName(filename string, data []byte) string {
	base := cleanName(filename)
	if base == "" {
		sum := sha256.Sum256(data)
		base = "document-" + hex.EncodeToString(sum[:4])
	}
	if md.names == nil {
		md.names = map[string]bool{}
	}
	name := base
	for n := 2; md.names[name]; n++ {
		suffix := " (" + strconv.Itoa(n) + ")"
		name = strings.TrimRight(base[:min(len(base), maxDocumentName-len(suffix))], " ") + suffix
	}
	md.names[name] = true
	return name
}

// cleanName keeps the letters, digits, hyphens, parentheses and square brackets of a
// filename (ASCII only) and turns every run of other characters into one space, trimmed at
// both ends, at most maxDocumentName characters: what Bedrock takes as a document name.
func cleanName(filename string) string {
	var b strings.Builder
	space := false
	for _, r := range filename {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', strings.ContainsRune("-()[]", r):
			if space {
				b.WriteByte(' ')
				space = false
			}
			b.WriteRune(r)
		default:
			space = b.Len() > 0
		}
	}
	name := b.String()
	if len(name) > maxDocumentName {
		name = strings.TrimRight(name[:maxDocumentName], " ")
	}
	return name
}

// isDataURL reports whether s is a data: URL.
func isDataURL(s string) bool { return len(s) >= 5 && strings.EqualFold(s[:5], "data:") }

// decodeDataURL reads a base64 data URL (data:<media type>[;<parameter>]*;base64,<data>):
// its media type, lower case and without parameters, and its bytes. field names the member
// in errors.
func decodeDataURL(field, url string) (string, []byte, error) {
	meta, data, ok := strings.Cut(url[len("data:"):], ",")
	if !ok {
		return "", nil, invalidf("%s is not a valid data URL", field)
	}
	params := strings.Split(meta, ";")
	isBase64 := false
	for _, prm := range params[1:] {
		isBase64 = isBase64 || strings.EqualFold(strings.TrimSpace(prm), "base64")
	}
	if !isBase64 {
		return "", nil, invalidf("%s: the data URL must be base64-encoded (data:<media type>;base64,...)", field)
	}
	raw, err := decodeBase64(field, data)
	return strings.ToLower(strings.TrimSpace(params[0])), raw, err
}

// decodeBase64 decodes standard base64, with or without padding; line breaks are ignored.
func decodeBase64(field, data string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		// Some clients drop the padding.
		if raw, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(data, "=")); err != nil {
			return nil, invalidf("%s: the data is not valid base64", field)
		}
	}
	if len(raw) == 0 {
		return nil, invalidf("%s holds no data", field)
	}
	return raw, nil
}
